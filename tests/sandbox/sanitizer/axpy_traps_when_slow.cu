// expect: sanitizer
// tool: any
// Defence: a run under a tool that finishes no shape is no pass (sandbox/sanitizer_runner.cc,
// unchecked_under_tool). Every output is right, and at full speed each block's loop of barriers
// takes a few microseconds; a block that took over 100 us (as one does under a tool, which
// instruments each shared-memory access) traps, so the tool would see only a crash, which was
// once the tool's cost, and the kernel would pass every tool unchecked. Its twin,
// axpy_times_itself.cu, is the same kernel without the trap.
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
  if (t1 - t0 > 100000ull) __trap();
}
