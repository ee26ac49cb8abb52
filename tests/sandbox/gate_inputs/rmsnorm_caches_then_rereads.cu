// expect: ok
// task: rmsnorm
// mechanism: draws
// The correct twin of rmsnorm_caches_32_per_thread: columns past the cache are read again.
#define EVERY_COLUMN 1
/* kopt:plan
{
  "tunables": {"BLOCK": [256]},
  "launches": [{"kernel": "rmsnorm_cached", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*4", "args": ["x", "weight", "out", "hidden", "eps"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void rmsnorm_cached(const __nv_bfloat16* x, const __nv_bfloat16* weight,
                                          __nv_bfloat16* out, int hidden, float eps) {
  extern __shared__ float partial[];
  const __nv_bfloat16* row = x + (long long)blockIdx.x * hidden;
  __nv_bfloat16* out_row = out + (long long)blockIdx.x * hidden;
  float cache[32];
  float squares = 0.0f;
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    int c = threadIdx.x + i * BLOCK;
    cache[i] = c < hidden ? __bfloat162float(row[c]) : 0.0f;
    squares += cache[i] * cache[i];
  }
#if EVERY_COLUMN
  for (int c = threadIdx.x + 32 * BLOCK; c < hidden; c += BLOCK) {
    float v = __bfloat162float(row[c]);
    squares += v * v;
  }
#endif
  partial[threadIdx.x] = squares;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  float rstd = rsqrtf(partial[0] / hidden + eps);
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    int c = threadIdx.x + i * BLOCK;
    if (c < hidden) out_row[c] = __float2bfloat16(cache[i] * rstd * __bfloat162float(weight[c]));
  }
#if EVERY_COLUMN
  for (int c = threadIdx.x + 32 * BLOCK; c < hidden; c += BLOCK)
    out_row[c] = __float2bfloat16(__bfloat162float(row[c]) * rstd * __bfloat162float(weight[c]));
#endif
}
