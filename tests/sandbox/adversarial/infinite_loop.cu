// expect: timeout
// Defence: the hard wall-clock deadline of every request. The kernel spins on a flag nobody
// sets, so the launch never completes; only killing the worker's process group ends it, and the
// next candidate must get a fresh worker.
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
