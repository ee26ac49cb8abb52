// Baseline MSE loss: one thread per element; each block reduces its squares through a
// shared-memory tree to one partial sum in scratch; a second launch (one block) reduces the
// partials the same way and divides by n. Deterministic (no atomics). BLOCK and FINISH are tunable.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024], "FINISH": [1024, 256]},
  "scratch": [{"name": "partial", "dtype": "f32", "count": "ceil_div(n, BLOCK)"}],
  "launches": [
    {"kernel": "mse_block_sums", "grid": ["ceil_div(n, BLOCK)"], "block": ["BLOCK"],
     "shared_bytes": "BLOCK*4", "args": ["pred", "target", "partial", "n"]},
    {"kernel": "mse_finish", "grid": [1], "block": ["FINISH"], "shared_bytes": "FINISH*4",
     "args": ["partial", "out", "i32:ceil_div(n, BLOCK)", "n"]}
  ]
}
*/
extern "C" __global__ void mse_block_sums(const float* pred, const float* target, float* partial, int n) {
  extern __shared__ float sums[];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  float d = i < n ? pred[i] - target[i] : 0.0f;
  sums[threadIdx.x] = d * d;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

extern "C" __global__ void mse_finish(const float* partial, float* out, int blocks, int n) {
  extern __shared__ float sums[];
  float sum = 0.0f;
  for (int b = threadIdx.x; b < blocks; b += FINISH) sum += partial[b];
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = FINISH / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = sums[0] / (float)n;
}
