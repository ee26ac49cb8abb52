// expect: incorrect
// task: causal_attention
// stress: scores std 40
// without-stress: ok
// Planted bug: the softmax of the scores without the running max (p = exp(score)): fine for
// scores of std 2, inf / inf = NaN once a score passes 88.
/* kopt:plan
{
  "tunables": {"WARPS": [4, 2, 8, 16]},
  "launches": [{"kernel": "causal_attention_warp_per_row", "grid": ["ceil_div(bh*seq, WARPS)"],
                "block": ["WARPS*32"], "args": ["q", "k", "v", "out", "bh", "seq", "d", "scale"]}]
}
*/
#include <cuda_bf16.h>

#define MAX_DIMS_PER_LANE 4  // d <= 128

extern "C" __global__ void causal_attention_warp_per_row(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                         const __nv_bfloat16* v, __nv_bfloat16* out,
                                                         int bh, int seq, int d, float scale) {
  int lane = threadIdx.x % 32;
  long long row = (long long)blockIdx.x * WARPS + threadIdx.x / 32;  // over bh * seq query rows
  if (row >= (long long)bh * seq) return;  // whole warps leave together
  int i = (int)(row % seq);
  long long head = (row - i) * d;  // offset of this head's [seq, d] block

  float q_part[MAX_DIMS_PER_LANE], acc[MAX_DIMS_PER_LANE];
  for (int c = 0; c < MAX_DIMS_PER_LANE; ++c) {
    int dim = lane + 32 * c;
    q_part[c] = dim < d ? __bfloat162float(q[row * d + dim]) * scale : 0.0f;
    acc[c] = 0.0f;
  }
  float running_max = 0.0f;
  float running_sum = 0.0f;
  for (int j = 0; j <= i; ++j) {
    const __nv_bfloat16* key = k + head + (long long)j * d;
    const __nv_bfloat16* value = v + head + (long long)j * d;
    float score = 0.0f;
    for (int c = 0; c < MAX_DIMS_PER_LANE; ++c) {
      int dim = lane + 32 * c;
      if (dim < d) score += q_part[c] * __bfloat162float(key[dim]);
    }
    for (int offset = 16; offset > 0; offset /= 2) score += __shfl_xor_sync(0xffffffffu, score, offset);
    float new_max = 0.0f;  // planted: no running max
    float correction = expf(running_max - new_max);
    float p = expf(score - new_max);
    running_sum = running_sum * correction + p;
    for (int c = 0; c < MAX_DIMS_PER_LANE; ++c) {
      int dim = lane + 32 * c;
      float vj = dim < d ? __bfloat162float(value[dim]) : 0.0f;
      acc[c] = acc[c] * correction + p * vj;
    }
    running_max = new_max;
  }
  for (int c = 0; c < MAX_DIMS_PER_LANE; ++c) {
    int dim = lane + 32 * c;
    if (dim < d) out[row * d + dim] = __float2bfloat16(acc[c] / running_sum);
  }
}
