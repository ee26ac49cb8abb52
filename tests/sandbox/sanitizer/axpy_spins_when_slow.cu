// expect: sanitizer
// tool: memcheck
// finding: no shape finished
// Defence: a kernel that times itself and, once it runs slowly (as it does under a tool), spins
// forever instead of trapping, so the tool has no error to report. Every output is right, and at
// full speed each block's loop of barriers takes a few microseconds; a block that took over
// 100 us never ends. The run under memcheck times out at the timed shape, then again at the
// smallest shape, so no shape finished under the tool: that is the finding
// (unchecked_under_tool, sandbox/sanitizer_runner.h); were the smallest shape fast enough under
// memcheck, racecheck (smallest shape first, slower still) would be the tool. Its twin,
// axpy_waits_when_slow.cu, waits a bounded time instead and must pass.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  __shared__ float ring[256];
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? y[i] : 0.0f;
  float carry = 0.0f;
  for (int k = 0; k < 8; ++k) {
    ring[threadIdx.x] = v + k;
    __syncthreads();
    carry += ring[(threadIdx.x + 1) & 255];
    __syncthreads();
  }
  if (i < n) out[i] = alpha * x[i] + v + (carry == -1.0f ? 1.0f : 0.0f);
  unsigned long long t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  if (t1 - t0 > 100000ull) {
    for (;;) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  }
}
