// Reference W4A16 GEMM (GPTQ with act-order and zero points): one thread per output element, each
// weight dequantized exactly ((nibble - zero) * scale of its group g_idx[i], in double) and the
// dot product accumulated in double; out rounded to bf16 once.
/* kopt:plan
{
  "launches": [{"kernel": "w4a16_reference", "grid": ["ceil_div(n, 128)", "m"], "block": [128],
                "args": ["x", "w_packed", "scales", "zeros", "g_idx", "out", "m", "n", "k",
                         "i32:ceil_div(k, group)"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void w4a16_reference(const __nv_bfloat16* x, const int* w_packed,
                                           const __nv_bfloat16* scales, const int* zeros,
                                           const int* g_idx, __nv_bfloat16* out, int m, int n,
                                           int k, int groups) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n) return;
  const int* words = w_packed + (long long)col * (k / 8);
  const __nv_bfloat16* s = scales + (long long)col * groups;
  const int* z = zeros + (long long)col * ((groups + 7) / 8);
  const __nv_bfloat16* a = x + (long long)row * k;
  double acc = 0.0;
  for (int i = 0; i < k; ++i) {
    int g = g_idx[i];
    int nibble = (int)(((unsigned)words[i / 8] >> (4 * (i % 8))) & 0xFu);
    int zero = (int)(((unsigned)z[g / 8] >> (4 * (g % 8))) & 0xFu);
    double w = (double)(nibble - zero) * (double)__bfloat162float(s[g]);
    acc += (double)__bfloat162float(a[i]) * w;
  }
  out[(long long)row * n + col] = __double2bfloat16(acc);
}
