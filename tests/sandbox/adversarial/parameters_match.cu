// expect: ok
// The twin of extra_parameter.cu and larger_struct_parameter.cu: every parameter the kernel
// declares is one the plan passes, at the same size (pointers 8 bytes, n as i64:n in a long long,
// alpha as f32), so the parameter check must let it through.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "i64:n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, long long n,
                                float alpha) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}
