// expect: invalid_plan
// Defence: the plan is checked against the device before launching. A block of 2048 threads is
// more than any CUDA device allows (1024).
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 2048)"], "block": [2048],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}
