// Planted bug for fp8_block_gemm's stress rounds (a run record, not part of the suite): the
// baseline with a hand-written e4m3 decoder that follows IEEE conventions: exponent 15 is infinity or NaN (in e4m3 it holds 256..448).
/* kopt:plan
{
  "launches": [{"kernel": "planted", "grid": ["ceil_div(n, 128)", "m"], "block": [128],
                "args": ["x", "x_scale", "w", "w_scale", "out", "m", "n", "k"]}]
}
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>

__device__ float decode(__nv_fp8_e4m3 v) {
  unsigned b = v.__x;
  int e = (b >> 3) & 15, m = b & 7;
  float mag = e == 15 ? (m ? __int_as_float(0x7fc00000) : __int_as_float(0x7f800000))  // planted
          : e == 0 ? ldexpf((float)m, -9) : ldexpf(1.0f + m / 8.0f, e - 7);
  return (b & 0x80) ? -mag : mag;
}

extern "C" __global__ void planted(const __nv_fp8_e4m3* x, const float* x_scale,
                                   const __nv_fp8_e4m3* w, const float* w_scale,
                                   __nv_bfloat16* out, int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n) return;
  int blocks = k / 128;
  const __nv_fp8_e4m3* a = x + (long long)row * k;
  const __nv_fp8_e4m3* b = w + (long long)col * k;
  const float* sa = x_scale + (long long)row * blocks;
  const float* sb = w_scale + (long long)(col / 128) * blocks;
  float acc = 0.0f;
  for (int blk = 0; blk < blocks; ++blk) {
    float part = 0.0f;
    for (int i = blk * 128; i < blk * 128 + 128; ++i) part += decode(a[i]) * decode(b[i]);
    acc += part * sa[blk] * sb[blk];
  }
  out[(long long)row * n + col] = __float2bfloat16(acc);
}
