// expect: incorrect
// task: softmax
// mechanism: families
// Planted bug: the row max starts one position late, so column 0 never counts. The max only
// keeps exp() in range, so on random rows (and on every stress round, whose large values are
// spread over the row) the answer is the same; the spike_rows family puts row 0's spike at
// column 0, exp(spike - max) overflows and the row is NaN. The correct twin is
// softmax_probes_whole_row (and the task's baseline).
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "softmax_rows", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*4", "args": ["x", "out", "rows", "cols"]}]
}
*/
extern "C" __global__ void softmax_rows(const float* x, float* out, int rows, int cols) {
  extern __shared__ float partial[];
  const float* row = x + (long long)blockIdx.x * cols;
  float* out_row = out + (long long)blockIdx.x * cols;

  float local_max = -3.402823466e+38f;
  // planted: the max's loop starts one late, so column 0 never counts
  for (int c = threadIdx.x + 1; c < cols; c += BLOCK) local_max = fmaxf(local_max, row[c]);
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
