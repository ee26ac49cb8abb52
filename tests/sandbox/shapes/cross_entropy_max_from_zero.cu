// expect: incorrect
// task: cross_entropy
// Planted bug: the row max starts at 0, not at -FLT_MAX. Right whenever a row holds a logit
// above about -88 (every regular round, 'std 40' and 'mean 1000'); on the mirrored twin
// 'mean -1000' every exp underflows to 0 and the loss is -inf.
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
  const float* row = logits + (long long)blockIdx.x * vocab;

  float local_max = 0.0f;  // planted: the max starts at 0
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
