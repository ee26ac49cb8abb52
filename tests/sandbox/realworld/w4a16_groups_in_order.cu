// expect: incorrect
// task: w4a16_gemm
// plain: g_idx {"dist": "permutation", "divide": "group", "shuffle": false}
// Planted bug: act-order ignored: input channel i's group taken as i / group (a GPTQ checkpoint
// quantised without desc_act). Passes when g_idx is k / group; the shuffled g_idx exposes it.
/* kopt:plan
{
  "launches": [{"kernel": "w4a16_groups_in_order", "grid": ["ceil_div(n, 128)", "m"], "block": [128],
                "args": ["x", "w_packed", "scales", "zeros", "g_idx", "out", "m", "n", "k",
                         "i32:ceil_div(k, group)", "group"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void w4a16_groups_in_order(const __nv_bfloat16* x, const int* w_packed,
                                          const __nv_bfloat16* scales, const int* zeros,
                                          const int* g_idx, __nv_bfloat16* out, int m, int n, int k,
                                          int groups, int group) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n) return;
  const int* words = w_packed + (long long)col * (k / 8);
  const __nv_bfloat16* s = scales + (long long)col * groups;
  const int* z = zeros + (long long)col * ((groups + 7) / 8);
  const __nv_bfloat16* a = x + (long long)row * k;
  float acc = 0.0f;
  for (int j = 0; j < k / 8; ++j) {
    unsigned word = (unsigned)words[j];
    for (int i = 0; i < 8; ++i) {
      int g = (8 * j + i) / group;
      int zero = (int)(((unsigned)z[g / 8] >> (4 * (g % 8))) & 0xFu);
      float w = (float)((int)((word >> (4 * i)) & 0xFu) - zero) * __bfloat162float(s[g]);
      acc += __bfloat162float(a[8 * j + i]) * w;
    }
  }
  out[(long long)row * n + col] = __float2bfloat16(acc);
}
