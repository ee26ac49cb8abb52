// Baseline W4A16 GEMM: one thread per output element, a word of 8 weights unpacked at a time and
// dequantized in fp32, fp32 accumulation: the plain kernel before tensor cores, a tile of
// activations in shared memory, or Marlin's reordered layout.
/* kopt:plan
{
  "launches": [{"kernel": "w4a16_baseline", "grid": ["ceil_div(n, 128)", "m"], "block": [128],
                "args": ["x", "w_packed", "scales", "out", "m", "n", "k", "group"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void w4a16_baseline(const __nv_bfloat16* x, const int* w_packed,
                                          const __nv_bfloat16* scales, __nv_bfloat16* out, int m,
                                          int n, int k, int group) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n) return;
  const int* words = w_packed + (long long)col * (k / 8);
  const __nv_bfloat16* s = scales + (long long)col * (k / group);
  const __nv_bfloat16* a = x + (long long)row * k;
  float acc = 0.0f;
  for (int j = 0; j < k / 8; ++j) {
    unsigned word = (unsigned)words[j];
    float scale = __bfloat162float(s[(8 * j) / group]);
    for (int i = 0; i < 8; ++i) {
      float w = (float)((int)((word >> (4 * i)) & 0xFu) - 8) * scale;
      acc += __bfloat162float(a[8 * j + i]) * w;
    }
  }
  out[(long long)row * n + col] = __float2bfloat16(acc);
}
