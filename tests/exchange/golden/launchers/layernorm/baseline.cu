// Baseline LayerNorm: one block per row, scalar bf16 loads, fp32 statistics in two passes (the
// mean, then the squared deviations from it; shared-memory tree reductions), then a pass that
// normalizes. BLOCK is tunable.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "layernorm_rows", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*8", "args": ["x", "weight", "bias", "out", "hidden", "eps"]}]
}
*/
#include <cuda_bf16.h>

// The block's total of `v`; every thread gets it.
__device__ float block_sum(float v, float* partial) {
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  float total = partial[0];
  __syncthreads();  // everyone has read the total before the next use overwrites it
  return total;
}

extern "C" __global__ void layernorm_rows(const __nv_bfloat16* x, const __nv_bfloat16* weight,
                                          const __nv_bfloat16* bias, __nv_bfloat16* out, int hidden,
                                          float eps) {
  extern __shared__ float partial[];
  const __nv_bfloat16* row = x + (long long)blockIdx.x * hidden;
  __nv_bfloat16* out_row = out + (long long)blockIdx.x * hidden;
  // Two passes over the row (the second from cache): the mean, then the squared deviations from
  // it. One pass, E[x^2] - E[x]^2, cancels to noise when the mean is large against the spread.
  float sum = 0.0f;
  for (int c = threadIdx.x; c < hidden; c += BLOCK) sum += __bfloat162float(row[c]);
  float mean = block_sum(sum, partial) / hidden;
  float squares = 0.0f;
  for (int c = threadIdx.x; c < hidden; c += BLOCK) {
    float d = __bfloat162float(row[c]) - mean;
    squares += d * d;
  }
  float var = block_sum(squares, partial) / hidden;
  float rstd = rsqrtf(var + eps);

  for (int c = threadIdx.x; c < hidden; c += BLOCK) {
    float normed = (__bfloat162float(row[c]) - mean) * rstd;
    out_row[c] = __float2bfloat16(normed * __bfloat162float(weight[c]) + __bfloat162float(bias[c]));
  }
}
