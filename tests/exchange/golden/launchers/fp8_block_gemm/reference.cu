// Reference FP8 block-scaled GEMM: one thread per output element; every e4m3 value decoded by the
// toolkit's conversion (exact in float), multiplied by its block's scale and accumulated in
// double; out rounded to bf16 once.
/* kopt:plan
{
  "launches": [{"kernel": "fp8_block_gemm_reference", "grid": ["ceil_div(n, 128)", "m"],
                "block": [128], "args": ["x", "x_scale", "w", "w_scale", "out", "m", "n", "k"]}]
}
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>

extern "C" __global__ void fp8_block_gemm_reference(const __nv_fp8_e4m3* x, const float* x_scale,
                                                    const __nv_fp8_e4m3* w, const float* w_scale,
                                                    __nv_bfloat16* out, int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n) return;
  int blocks = (k + 127) / 128;  // the last k block may be partial
  const __nv_fp8_e4m3* a = x + (long long)row * k;
  const __nv_fp8_e4m3* b = w + (long long)col * k;
  const float* sa = x_scale + (long long)row * blocks;
  const float* sb = w_scale + (long long)(col / 128) * blocks;
  double acc = 0.0;
  for (int i = 0; i < k; ++i) {
    double xv = (double)(float)a[i] * (double)sa[i / 128];
    double wv = (double)(float)b[i] * (double)sb[i / 128];
    acc += xv * wv;
  }
  out[(long long)row * n + col] = __double2bfloat16(acc);
}
