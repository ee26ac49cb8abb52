// Baseline W4A16 GEMM (GPTQ with act-order and zero points): one thread per output element, a word
// of 8 weights unpacked at a time, each weight's group looked up in g_idx and dequantized in fp32,
// fp32 accumulation: the plain kernel before tensor cores, a tile of activations in shared memory,
// reordering k by the act-order permutation, or Marlin's layout.
/* kopt:plan
{
  "launches": [{"kernel": "w4a16_baseline", "grid": ["ceil_div(n, 128)", "m"], "block": [128],
                "args": ["x", "w_packed", "scales", "zeros", "g_idx", "out", "m", "n", "k",
                         "i32:ceil_div(k, group)"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void w4a16_baseline(const __nv_bfloat16* x, const int* w_packed,
                                          const __nv_bfloat16* scales, const int* zeros,
                                          const int* g_idx, __nv_bfloat16* out, int m, int n, int k,
                                          int groups) {
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
      int g = g_idx[8 * j + i];
      int zero = (int)(((unsigned)z[g / 8] >> (4 * (g % 8))) & 0xFu);
      float w = (float)((int)((word >> (4 * i)) & 0xFu) - zero) * __bfloat162float(s[g]);
      acc += __bfloat162float(a[8 * j + i]) * w;
    }
  }
  out[(long long)row * n + col] = __float2bfloat16(acc);
}
