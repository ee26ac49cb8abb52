// expect: incorrect
// task: layernorm
// stress: mean 1000, tiny spread
// without-stress: ok
// Planted bug: one-pass variance E[x^2] - E[x]^2 in fp32 (kopt's layernorm baseline until issue 15).
// Right while the mean is small against the spread; with mean 1000 and std 1 the two terms agree
// in all their digits and the difference is rounding noise.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "layernorm_rows", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*8", "args": ["x", "weight", "bias", "out", "hidden", "eps"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void layernorm_rows(const __nv_bfloat16* x, const __nv_bfloat16* weight,
                                          const __nv_bfloat16* bias, __nv_bfloat16* out, int hidden,
                                          float eps) {
  extern __shared__ float partial[];  // [0, BLOCK): sums, [BLOCK, 2*BLOCK): sums of squares
  const __nv_bfloat16* row = x + (long long)blockIdx.x * hidden;
  __nv_bfloat16* out_row = out + (long long)blockIdx.x * hidden;

  float sum = 0.0f, squares = 0.0f;
  for (int c = threadIdx.x; c < hidden; c += BLOCK) {
    float v = __bfloat162float(row[c]);
    sum += v;
    squares += v * v;
  }
  partial[threadIdx.x] = sum;
  partial[BLOCK + threadIdx.x] = squares;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      partial[threadIdx.x] += partial[threadIdx.x + stride];
      partial[BLOCK + threadIdx.x] += partial[BLOCK + threadIdx.x + stride];
    }
    __syncthreads();
  }
  float mean = partial[0] / hidden;
  float var = fmaxf(partial[BLOCK] / hidden - mean * mean, 0.0f);
  float rstd = rsqrtf(var + eps);

  for (int c = threadIdx.x; c < hidden; c += BLOCK) {
    float normed = (__bfloat162float(row[c]) - mean) * rstd;
    out_row[c] = __float2bfloat16(normed * __bfloat162float(weight[c]) + __bfloat162float(bias[c]));
  }
}
