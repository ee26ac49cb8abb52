// Reference for axpy: one thread per element, computed in double and rounded once.
/* kopt:plan
{
  "launches": [{"kernel": "axpy_reference", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "i64:n", "f64:alpha"]}]
}
*/
extern "C" __global__ void axpy_reference(const float* x, const float* y, float* out, long long n,
                                          double alpha) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = (float)(alpha * (double)x[i] + (double)y[i]);
}
