// Reference MSE loss: 1024 blocks accumulate (pred - target)^2 in double over a grid-stride loop and
// reduce through a shared-memory tree to one double per block; one thread then adds the 1024
// partials in order and divides by n. The scratch holds doubles in 8-byte slots (the plan's
// dtypes have no f64); every slot is written before it is read.
/* kopt:plan
{
  "scratch": [{"name": "partial", "dtype": "i64", "count": "1024"}],
  "launches": [
    {"kernel": "mse_partials_reference", "grid": [1024], "block": [256],
     "args": ["pred", "target", "partial", "i64:n"]},
    {"kernel": "mse_finish_reference", "grid": [1], "block": [1],
     "args": ["partial", "out", "i64:n"]}
  ]
}
*/
extern "C" __global__ void mse_partials_reference(const float* pred, const float* target,
                                                  double* partial, long long n) {
  __shared__ double sums[256];
  double sum = 0.0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    double d = (double)pred[i] - (double)target[i];
    sum += d * d;
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

extern "C" __global__ void mse_finish_reference(const double* partial, float* out, long long n) {
  double total = 0.0;
  for (int b = 0; b < 1024; ++b) total += partial[b];
  out[0] = (float)(total / (double)n);
}
