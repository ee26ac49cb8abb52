// expect: incorrect
// task: rmsnorm
// stress: outliers std 1000
// without-stress: ok
// Planted bug: the per-thread sum of squares in fp16 (half the registers, "good enough" for
// unit-scale activations): x^2 overflows fp16 past 256, so outlier activations give inf and a
// zero output.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "rmsnorm_rows", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*4", "args": ["x", "weight", "out", "hidden", "eps"]}]
}
*/
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void rmsnorm_rows(const __nv_bfloat16* x, const __nv_bfloat16* weight,
                                        __nv_bfloat16* out, int hidden, float eps) {
  extern __shared__ float partial[];
  const __nv_bfloat16* row = x + (long long)blockIdx.x * hidden;
  __nv_bfloat16* out_row = out + (long long)blockIdx.x * hidden;

  __half squares = __float2half(0.0f);  // planted: fp16 squares, overflow past 65504
  for (int c = threadIdx.x; c < hidden; c += BLOCK) {
    __half v = __float2half(__bfloat162float(row[c]));
    squares = __hadd(squares, __hmul(v, v));
  }
  partial[threadIdx.x] = __half2float(squares);
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  float rstd = rsqrtf(partial[0] / hidden + eps);

  for (int c = threadIdx.x; c < hidden; c += BLOCK)
    out_row[c] = __float2bfloat16(__bfloat162float(row[c]) * rstd * __bfloat162float(weight[c]));
}
