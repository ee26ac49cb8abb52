// Reference LayerNorm: one block per row; mean, then variance around the mean, both accumulated
// in double (per thread, then a shared-memory tree); output computed in double, rounded once.
// One block rather than one thread per row so that the few-but-huge-rows holdout
// (KernelBench's 16 x 4194304) stays fast.
/* kopt:plan
{
  "launches": [{"kernel": "layernorm_reference", "grid": ["rows"], "block": [256],
                "args": ["x", "weight", "bias", "out", "hidden", "f64:eps"]}]
}
*/
#include <cuda_bf16.h>

__device__ double block_sum(double value, double* partial) {
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  double total = partial[0];
  __syncthreads();
  return total;
}

extern "C" __global__ void layernorm_reference(const __nv_bfloat16* x, const __nv_bfloat16* weight,
                                               const __nv_bfloat16* bias, __nv_bfloat16* out,
                                               int hidden, double eps) {
  __shared__ double partial[256];
  const __nv_bfloat16* row = x + (long long)blockIdx.x * hidden;
  __nv_bfloat16* out_row = out + (long long)blockIdx.x * hidden;

  double sum = 0.0;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) sum += (double)__bfloat162float(row[c]);
  double mean = block_sum(sum, partial) / hidden;

  double squares = 0.0;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    double d = (double)__bfloat162float(row[c]) - mean;
    squares += d * d;
  }
  double rstd = 1.0 / sqrt(block_sum(squares, partial) / hidden + eps);

  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    double normed = ((double)__bfloat162float(row[c]) - mean) * rstd;
    out_row[c] = __double2bfloat16(normed * (double)__bfloat162float(weight[c]) +
                                   (double)__bfloat162float(bias[c]));
  }
}
