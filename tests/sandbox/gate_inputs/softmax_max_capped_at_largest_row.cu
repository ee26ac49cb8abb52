// expect: incorrect
// task: softmax
// mechanism: thresholds
// needs: families
// Planted bug (the mutation harness's survivors 47b26b44735d, 80cd67f69b52): the row max stops at
// the task's largest listed row, 393216 columns. The max only keeps exp() in range, so on random
// rows the max of the columns it saw is as good as the row's, at every shape: plain rounds at
// cols = 393217 and 786433 (the shapes at the kernel's thresholds) pass. Those shapes also run
// with a spike at every row's last column (RowPattern::kTailSpikes): the capped max misses it,
// exp(1e5 - max) overflows and the row is NaN. Without the threshold shapes no row is that long
// (the spike_rows family runs at 128 x 32000). The correct twin: softmax_max_whole_row.
#define CAPPED 1
/* kopt:plan
{
  "tunables": {"BLOCK": [256]},
  "launches": [{"kernel": "softmax_rows", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*4", "args": ["x", "out", "rows", "cols"]}]
}
*/
extern "C" __global__ void softmax_rows(const float* x, float* out, int rows, int cols) {
  extern __shared__ float partial[];
  const float* row = x + (long long)blockIdx.x * cols;
  float* out_row = out + (long long)blockIdx.x * cols;

  float local_max = -3.402823466e+38f;
#if CAPPED
  // planted: the max looks at no more columns than the task's largest listed row (393216)
  for (int c = threadIdx.x; c < min(cols, 393216); c += BLOCK) local_max = fmaxf(local_max, row[c]);
#else
  for (int c = threadIdx.x; c < cols; c += BLOCK) local_max = fmaxf(local_max, row[c]);
#endif
  partial[threadIdx.x] = local_max;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + stride]);
    __syncthreads();
  }
  float row_max = partial[0];
  __syncthreads();

  float local_sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) local_sum += expf(row[c] - row_max);
  partial[threadIdx.x] = local_sum;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  float inv_sum = 1.0f / partial[0];
  for (int c = threadIdx.x; c < cols; c += BLOCK) out_row[c] = expf(row[c] - row_max) * inv_sum;
}
