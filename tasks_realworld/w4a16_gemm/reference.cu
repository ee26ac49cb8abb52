// Reference W4A16 GEMM: one thread per output element, each weight dequantized exactly
// ((nibble - 8) * scale, in double) and the dot product accumulated in double; out rounded to
// bf16 once.
/* kopt:plan
{
  "launches": [{"kernel": "w4a16_reference", "grid": ["ceil_div(n, 128)", "m"], "block": [128],
                "args": ["x", "w_packed", "scales", "out", "m", "n", "k", "group"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void w4a16_reference(const __nv_bfloat16* x, const int* w_packed,
                                           const __nv_bfloat16* scales, __nv_bfloat16* out, int m,
                                           int n, int k, int group) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n) return;
  const int* words = w_packed + (long long)col * (k / 8);
  const __nv_bfloat16* s = scales + (long long)col * (k / group);
  const __nv_bfloat16* a = x + (long long)row * k;
  double acc = 0.0;
  for (int i = 0; i < k; ++i) {
    unsigned word = (unsigned)words[i / 8];
    int nibble = (int)((word >> (4 * (i % 8))) & 0xFu);
    double w = (double)(nibble - 8) * (double)__bfloat162float(s[i / group]);
    acc += (double)__bfloat162float(a[i]) * w;
  }
  out[(long long)row * n + col] = __double2bfloat16(acc);
}
