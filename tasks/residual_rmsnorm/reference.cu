// Reference residual add + RMSNorm: one block per row. The sum x + residual is exact in double and
// rounded to bf16 once; the sum of squares of the rounded values is accumulated in double; the
// normalized output is computed in double and rounded once.
/* kopt:plan
{
  "launches": [{"kernel": "residual_rmsnorm_reference", "grid": ["rows"], "block": [128],
                "args": ["x", "residual", "weight", "residual_out", "out", "hidden", "f64:eps"]}]
}
*/
#include <cuda_bf16.h>

__device__ double rounded_sum(const __nv_bfloat16* x, const __nv_bfloat16* residual, long long i) {
  double s = (double)__bfloat162float(x[i]) + (double)__bfloat162float(residual[i]);
  return (double)__bfloat162float(__double2bfloat16(s));
}

extern "C" __global__ void residual_rmsnorm_reference(const __nv_bfloat16* x,
                                                      const __nv_bfloat16* residual,
                                                      const __nv_bfloat16* weight,
                                                      __nv_bfloat16* residual_out,
                                                      __nv_bfloat16* out, int hidden, double eps) {
  __shared__ double partial[128];
  long long base = (long long)blockIdx.x * hidden;

  double squares = 0.0;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    double s = rounded_sum(x, residual, base + c);
    squares += s * s;
  }
  partial[threadIdx.x] = squares;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  double rstd = 1.0 / sqrt(partial[0] / hidden + eps);

  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    double s = rounded_sum(x, residual, base + c);
    residual_out[base + c] = __double2bfloat16(s);
    out[base + c] = __double2bfloat16(s * rstd * (double)__bfloat162float(weight[c]));
  }
}
