// expect: timeout
// Defence: the worker's per-launch hang limit (and behind it the supervisor's wall-clock deadline).
// The kernel spins on a flag nobody sets, so the launch never completes; the worker reports
// `timeout` about a second in, gives up its context and exits, and the next candidate must get a
// fresh worker.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
__device__ int g_never_set;

extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  // volatile: without it the compiler may hoist the load and drop a side-effect-free loop.
  while (*(volatile int*)&g_never_set == 0) {
  }
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}
