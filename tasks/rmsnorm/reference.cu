// Reference RMSNorm: one block per row; the sum of squares is accumulated in double (per thread,
// then a shared-memory tree); the output is computed in double and rounded to bf16 once.
/* kopt:plan
{
  "launches": [{"kernel": "rmsnorm_reference", "grid": ["rows"], "block": [128],
                "args": ["x", "weight", "out", "hidden", "f64:eps"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void rmsnorm_reference(const __nv_bfloat16* x, const __nv_bfloat16* weight,
                                             __nv_bfloat16* out, int hidden, double eps) {
  __shared__ double partial[128];
  const __nv_bfloat16* row = x + (long long)blockIdx.x * hidden;
  __nv_bfloat16* out_row = out + (long long)blockIdx.x * hidden;

  double squares = 0.0;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    double v = (double)__bfloat162float(row[c]);
    squares += v * v;
  }
  partial[threadIdx.x] = squares;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  double rstd = 1.0 / sqrt(partial[0] / hidden + eps);

  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    out_row[c] = __double2bfloat16((double)__bfloat162float(row[c]) * rstd *
                                   (double)__bfloat162float(weight[c]));
  }
}
