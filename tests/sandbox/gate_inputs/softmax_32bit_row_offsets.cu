// expect: incorrect|crash|out_of_bounds
// task: softmax
// mechanism: wide
// Planted bug: each row's element offset is computed in 32 bits (the conversion to int wraps, as
// `(int)row * cols` does; the unsigned product keeps the compiler from widening it). Every listed
// shape holds under 2^31 elements (the largest holdout, 4096 x 393216, 1.6e9); the task's round
// past 2^31 elements, 66000 x 32768, sends row 65536 on 2^31 elements before the tensor. The
// correct twin is the task's baseline (64-bit offsets), which passes the same round
// (SuiteOnGpu.BaselinePassesEveryNewRound/tasks_softmax).
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "softmax_rows", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*4", "args": ["x", "out", "rows", "cols"]}]
}
*/
extern "C" __global__ void softmax_rows(const float* x, float* out, int rows, int cols) {
  extern __shared__ float partial[];
  // The row's element offset in 32 bits: right while the tensor holds under 2^31 elements.
  int offset = (int)((unsigned)blockIdx.x * (unsigned)cols);
  const float* row = x + offset;
  float* out_row = out + offset;

  float local_max = -3.402823466e+38f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) local_max = fmaxf(local_max, row[c]);
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
