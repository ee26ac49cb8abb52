// Baseline FP8 block-scaled GEMM: one thread per output element; per 128-wide k block the raw
// e4m3 products are summed in fp32 (each product is exact in fp32), then scaled by the two
// blocks' scales and added to an fp32 total, as DeepGEMM promotes its tensor-core partial sums.
// The plain kernel before tensor cores, shared-memory tiles or TMA.
/* kopt:plan
{
  "launches": [{"kernel": "fp8_block_gemm_baseline", "grid": ["ceil_div(n, 128)", "m"],
                "block": [128], "args": ["x", "x_scale", "w", "w_scale", "out", "m", "n", "k"]}]
}
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>

extern "C" __global__ void fp8_block_gemm_baseline(const __nv_fp8_e4m3* x, const float* x_scale,
                                                   const __nv_fp8_e4m3* w, const float* w_scale,
                                                   __nv_bfloat16* out, int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n) return;
  int blocks = (k + 127) / 128;  // the last k block may be partial
  const __nv_fp8_e4m3* a = x + (long long)row * k;
  const __nv_fp8_e4m3* b = w + (long long)col * k;
  const float* sa = x_scale + (long long)row * blocks;
  const float* sb = w_scale + (long long)(col / 128) * blocks;
  float acc = 0.0f;
  for (int blk = 0; blk < blocks; ++blk) {
    float part = 0.0f;
    for (int i = blk * 128; i < min(k, blk * 128 + 128); ++i) part += (float)a[i] * (float)b[i];
    acc += part * sa[blk] * sb[blk];
  }
  out[(long long)row * n + col] = __float2bfloat16(acc);
}
