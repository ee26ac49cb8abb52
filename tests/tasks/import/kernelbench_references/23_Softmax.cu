// Reference for KernelBench level1/23_Softmax (rows of 393216): one block per row, the max, the
// sum of exponentials and the outputs in double, block reductions through shared memory.
/* kopt:plan
{"launches": [{"kernel": "softmax_block_reference", "grid": ["rows"], "block": [256],
               "shared_bytes": "256 * 8", "args": ["x", "out", "cols"]}]}
*/
__device__ double block_reduce(double v, double* shared, bool is_max) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      double o = shared[threadIdx.x + s];
      shared[threadIdx.x] = is_max ? (o > shared[threadIdx.x] ? o : shared[threadIdx.x]) : shared[threadIdx.x] + o;
    }
    __syncthreads();
  }
  double r = shared[0];
  __syncthreads();
  return r;
}

extern "C" __global__ void softmax_block_reference(const float* x, float* out, int cols) {
  extern __shared__ double shared[];
  const float* row = x + (long long)blockIdx.x * cols;
  float* dst = out + (long long)blockIdx.x * cols;
  double m = -1.0e300;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = row[c] > m ? row[c] : m;
  m = block_reduce(m, shared, true);
  double s = 0.0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += exp((double)row[c] - m);
  s = block_reduce(s, shared, false);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = (float)(exp((double)row[c] - m) / s);
}
