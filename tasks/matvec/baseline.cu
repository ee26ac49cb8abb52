// Baseline matrix-vector product: one warp per output row; lanes stride along the row with scalar
// bf16 loads (coalesced), accumulate in fp32 and combine with warp shuffles. WARPS (rows per
// block) is tunable.
/* kopt:plan
{
  "tunables": {"WARPS": [8, 4, 16, 32]},
  "launches": [{"kernel": "matvec_warp_per_row", "grid": ["ceil_div(m, WARPS)"], "block": ["WARPS*32"],
                "args": ["A", "x", "y", "m", "k"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void matvec_warp_per_row(const __nv_bfloat16* A, const __nv_bfloat16* x,
                                               __nv_bfloat16* y, int m, int k) {
  int lane = threadIdx.x % 32;
  int r = blockIdx.x * WARPS + threadIdx.x / 32;
  if (r >= m) return;  // whole warps leave together, so the shuffles below stay full-warp
  const __nv_bfloat16* row = A + (long long)r * k;
  float sum = 0.0f;
  for (int c = lane; c < k; c += 32) sum += __bfloat162float(row[c]) * __bfloat162float(x[c]);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[r] = __float2bfloat16(sum);
}
