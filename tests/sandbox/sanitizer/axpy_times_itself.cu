// expect: ok
// The twin of axpy_traps_when_slow.cu: the same loop of barriers and the same clock reads, with
// no trap. Every tool must pass it, however slowly it runs under them.
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
  if (i < n && t1 - t0 == 1ull) out[i] += 0.0f;  // the clock read is used, never the result
}
