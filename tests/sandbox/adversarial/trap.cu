// expect: crash
// Defence: crash isolation. __trap() kills the CUDA context (a sticky error); the worker must
// report it and exit, and the next request must get a fresh worker.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
  if (i == 0) __trap();
}
