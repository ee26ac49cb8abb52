// expect: timeout
// task: softmax
// Defence: the worker's per-launch hang limit. A correct softmax except that it spins forever
// when rows == 1, the first sweep shape. The reference takes microseconds there, so the worker's
// limit (20x the reference's time, at least 1 s) ends it within about a second, the worker gives
// up its context and exits, and the next candidate gets a fresh worker.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "softmax_rows", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*4", "args": ["x", "out", "rows", "cols"]}]
}
*/
__device__ int g_never_set;

extern "C" __global__ void softmax_rows(const float* x, float* out, int rows, int cols) {
  extern __shared__ float partial[];
  // The bug an LLM writes: a loop bound that never moves on a one-row input.
  if (rows == 1) {
    while (*(volatile int*)&g_never_set == 0) {
    }
  }
  const float* row = x + (long long)blockIdx.x * cols;
  float* out_row = out + (long long)blockIdx.x * cols;

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
