// Baseline BF16 GEMM (C = A W^T): one warp per output element. Both operands are contiguous along
// k, so the lanes stride along k together (coalesced scalar bf16 loads), accumulate in fp32 on CUDA
// cores and combine with warp shuffles; the warps of a block share one row of A through L1. No
// shared-memory tiling, no tensor cores. WARPS (output columns per block) is tunable.
/* kopt:plan
{
  "tunables": {"WARPS": [8, 4, 16, 32]},
  "launches": [{"kernel": "bf16_gemm_warp_per_output", "grid": ["ceil_div(n, WARPS)", "m"],
                "block": ["WARPS*32"], "args": ["A", "W", "C", "m", "n", "k"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void bf16_gemm_warp_per_output(const __nv_bfloat16* A, const __nv_bfloat16* W,
                                                     __nv_bfloat16* C, int m, int n, int k) {
  int lane = threadIdx.x % 32;
  int col = blockIdx.x * WARPS + threadIdx.x / 32;
  int row = blockIdx.y;
  if (col >= n) return;  // whole warps leave together, so the shuffles below stay full-warp
  const __nv_bfloat16* a = A + (long long)row * k;
  const __nv_bfloat16* w = W + (long long)col * k;
  float sum = 0.0f;
  for (int i = lane; i < k; i += 32) sum += __bfloat162float(a[i]) * __bfloat162float(w[i]);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) C[(long long)row * n + col] = __float2bfloat16(sum);
}
