// expect: incorrect
// task: decode_attention
// mechanism: thresholds
// Planted bug (the mutation harness's survivors de37e0e6d46c, 733eb26b92b2): the context loop
// stops at 16384 positions, the task's longest holdout. On random inputs the positions past it
// weigh about 1/ctx each, far within the tolerance, and before this no shape past 16384 ran
// (ctx's draw range stops at 5000). The shape at the kernel's threshold (ctx's threshold_max
// 28000 lets it cross to 16385) runs the task's stress rounds too, among them "keys rise along
// the context" (keys sorted ascending over each sequence's cache, queries positive): the last
// positions take most of the softmax's weight and the capped loop misses them. The correct
// twin: decode_attention_whole_context.
#define CAPPED 1
/* kopt:plan
{
  "tunables": {"WARPS": [4, 2, 8, 16]},
  "launches": [{"kernel": "decode_attention_warp_per_head", "grid": ["ceil_div(batch*q_heads, WARPS)"],
                "block": ["WARPS*32"],
                "args": ["q", "k_cache", "v_cache", "out", "batch", "q_heads", "kv_heads", "ctx", "d", "scale"]}]
}
*/
#include <cuda_bf16.h>

#define MAX_DIMS_PER_LANE 4  // d <= 128

extern "C" __global__ void decode_attention_warp_per_head(const __nv_bfloat16* q, const __nv_bfloat16* k_cache,
                                                          const __nv_bfloat16* v_cache, __nv_bfloat16* out,
                                                          int batch, int q_heads, int kv_heads, int ctx,
                                                          int d, float scale) {
  int lane = threadIdx.x % 32;
  int row = blockIdx.x * WARPS + threadIdx.x / 32;  // over batch * q_heads
  if (row >= batch * q_heads) return;  // whole warps leave together
  int b = row / q_heads, h = row % q_heads;
  int g = h / (q_heads / kv_heads);
  const __nv_bfloat16* keys = k_cache + ((long long)b * kv_heads + g) * ctx * d;
  const __nv_bfloat16* values = v_cache + ((long long)b * kv_heads + g) * ctx * d;

  float q_part[MAX_DIMS_PER_LANE], acc[MAX_DIMS_PER_LANE];
  for (int c = 0; c < MAX_DIMS_PER_LANE; ++c) {
    int dim = lane + 32 * c;
    q_part[c] = dim < d ? __bfloat162float(q[(long long)row * d + dim]) * scale : 0.0f;
    acc[c] = 0.0f;
  }
  float running_max = __int_as_float(0xff800000);  // -inf
  float running_sum = 0.0f;
  for (int j = 0; j < (CAPPED ? min(ctx, 16384) : ctx); ++j) {
    float score = 0.0f;
    for (int c = 0; c < MAX_DIMS_PER_LANE; ++c) {
      int dim = lane + 32 * c;
      if (dim < d) score += q_part[c] * __bfloat162float(keys[(long long)j * d + dim]);
    }
    for (int offset = 16; offset > 0; offset /= 2) score += __shfl_xor_sync(0xffffffffu, score, offset);
    float new_max = fmaxf(running_max, score);
    float correction = expf(running_max - new_max);
    float p = expf(score - new_max);
    running_sum = running_sum * correction + p;
    for (int c = 0; c < MAX_DIMS_PER_LANE; ++c) {
      int dim = lane + 32 * c;
      float vj = dim < d ? __bfloat162float(values[(long long)j * d + dim]) : 0.0f;
      acc[c] = acc[c] * correction + p * vj;
    }
    running_max = new_max;
  }
  for (int c = 0; c < MAX_DIMS_PER_LANE; ++c) {
    int dim = lane + 32 * c;
    if (dim < d) out[(long long)row * d + dim] = __float2bfloat16(acc[c] / running_sum);
  }
}
