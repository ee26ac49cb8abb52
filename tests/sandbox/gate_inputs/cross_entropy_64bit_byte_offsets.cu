// expect: ok
// task: cross_entropy
// mechanism: wide
// The correct twin of cross_entropy_32bit_byte_offsets: the byte offset in 64 bits.
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
  // The row's byte offset in 64 bits.
  unsigned long long offset = (unsigned long long)blockIdx.x * (unsigned)vocab * 4u;
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
