// Baseline BF16 GEMM (C = A W^T): one thread per output element, scalar bf16 loads straight from
// global memory, fp32 accumulation on CUDA cores (no tiling, no tensor cores). BLOCK_X x BLOCK_Y
// is tunable.
/* kopt:plan
{
  "tunables": {"BLOCK_X": [16, 32, 8], "BLOCK_Y": [16, 8, 32]},
  "launches": [{"kernel": "bf16_gemm_naive", "grid": ["ceil_div(n, BLOCK_X)", "ceil_div(m, BLOCK_Y)"],
                "block": ["BLOCK_X", "BLOCK_Y"], "args": ["A", "W", "C", "m", "n", "k"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void bf16_gemm_naive(const __nv_bfloat16* A, const __nv_bfloat16* W,
                                           __nv_bfloat16* C, int m, int n, int k) {
  int col = blockIdx.x * BLOCK_X + threadIdx.x;
  int row = blockIdx.y * BLOCK_Y + threadIdx.y;
  if (row >= m || col >= n) return;
  const __nv_bfloat16* a = A + (long long)row * k;
  const __nv_bfloat16* w = W + (long long)col * k;
  float sum = 0.0f;
  for (int i = 0; i < k; ++i) sum += __bfloat162float(a[i]) * __bfloat162float(w[i]);
  C[(long long)row * n + col] = __float2bfloat16(sum);
}
