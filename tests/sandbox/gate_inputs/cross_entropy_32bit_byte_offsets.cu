// expect: incorrect|crash|out_of_bounds
// task: cross_entropy
// mechanism: wide
// Planted bug: each row's byte offset is computed in 32 bits. Every listed shape's logits hold
// under 4 GiB (the largest, 1024 x 128256, 0.5 GiB), and the drawn ones under 4 MiB; the task's
// round past 2^31 elements, 16384 x 152064 (10 GB of logits), reads the wrong rows past row 7062.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "cross_entropy_rows", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*4", "args": ["logits", "targets", "loss", "vocab"]}]
}
*/
extern "C" __global__ void cross_entropy_rows(const float* logits, const int* targets, float* loss,
                                              int vocab) {
  extern __shared__ float partial[];
  // The row's byte offset in 32 bits: right while the logits hold under 4 GiB.
  unsigned offset = blockIdx.x * (unsigned)vocab * 4u;
  const float* row = (const float*)((const char*)logits + offset);

  float local_max = -3.402823466e+38f;
  for (int c = threadIdx.x; c < vocab; c += BLOCK) local_max = fmaxf(local_max, row[c]);
  partial[threadIdx.x] = local_max;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + stride]);
    __syncthreads();
  }
  float row_max = partial[0];
  __syncthreads();

  float local_sum = 0.0f;
  for (int c = threadIdx.x; c < vocab; c += BLOCK) local_sum += expf(row[c] - row_max);
  partial[threadIdx.x] = local_sum;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss[blockIdx.x] = row_max + logf(partial[0]) - row[targets[blockIdx.x]];
}
