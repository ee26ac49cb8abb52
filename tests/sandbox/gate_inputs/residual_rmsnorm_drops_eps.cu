// expect: incorrect
// task: residual_rmsnorm
// mechanism: families
// Planted bug: the mean of squares without eps (the mutation harness's survivor ab83db841dac).
// Zero and tiny rows came one input at a time, so x + residual, whose rows are what is
// normalized, was never zero or tiny, and this passed. Float inputs of one shape now also get
// those rows together (`family zero_rows in x+residual`): a zero row of the sum is 0 * inf = NaN,
// a tiny one (mean square about 5e-8 against eps 1e-6, or drawn up to 1e-2) is off many times.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "residual_rmsnorm_rows", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*4",
                "args": ["x", "residual", "weight", "residual_out", "out", "hidden", "eps"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void residual_rmsnorm_rows(const __nv_bfloat16* x, const __nv_bfloat16* residual,
                                                 const __nv_bfloat16* weight,
                                                 __nv_bfloat16* residual_out, __nv_bfloat16* out,
                                                 int hidden, float eps) {
  extern __shared__ float partial[];
  long long base = (long long)blockIdx.x * hidden;

  float squares = 0.0f;
  for (int c = threadIdx.x; c < hidden; c += BLOCK) {
    __nv_bfloat16 s = __float2bfloat16(__bfloat162float(x[base + c]) + __bfloat162float(residual[base + c]));
    residual_out[base + c] = s;
    float v = __bfloat162float(s);
    squares += v * v;
  }
  partial[threadIdx.x] = squares;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  float rstd = rsqrtf(partial[0] / hidden);  // eps dropped

  for (int c = threadIdx.x; c < hidden; c += BLOCK)
    out[base + c] = __float2bfloat16(__bfloat162float(residual_out[base + c]) * rstd * __bfloat162float(weight[c]));
}
