// expect: sanitizer
// tool: memcheck
// Defence: a kernel that times itself and misbehaves only when it runs slowly, as it does under a
// tool, is still caught. Every output is right, and at full speed each block's loop of barriers
// takes a few microseconds; a block that took over 100 us (as one does under a tool, which
// instruments each shared-memory access) traps. The ordinary gate passes it (it is never slow
// there); memcheck reports the trap itself, with its line (H200, 2026-11-29); were a tool to see
// only the crash, the run's zero finished shapes would be the finding (unchecked_under_tool).
// A kernel that spins instead of trapping is the case only that rule catches: CPU-tested with the
// stand-in tool, not yet on a GPU. Its twin, axpy_times_itself.cu, is the same kernel without
// the trap.
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
