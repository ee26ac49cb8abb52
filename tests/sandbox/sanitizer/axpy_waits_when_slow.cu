// expect: ok
// The twin of axpy_spins_when_slow.cu: the same loop of barriers and clock reads, and a block that
// took over 100 us waits on the clock for 10 us more, then ends. Every tool must pass it: slow
// under a tool, it still finishes every shape.
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
    unsigned long long until = t1 + 10000ull;
    while (t1 < until) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  }
}
