// expect: modified_input
// Defence: inputs are checksummed before and after the run. The outputs are right, but the
// kernel then zeroes its input x (a published hack: a kernel that zeroed its inputs so that a
// reference computed afterwards on the same buffers agreed with it). The input check must come
// before the second run of the round, which would otherwise see different inputs.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = alpha * x[i] + y[i];
    x[i] = 0.0f;
  }
}
