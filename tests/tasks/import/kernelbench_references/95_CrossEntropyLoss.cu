// Reference for KernelBench level1/95_CrossEntropyLoss: the mean over rows of
// logsumexp(predictions[r]) - predictions[r, targets[r]], in double. One block: each thread
// takes rows r = tid, tid + 256, ... (max, sum of exp, the row's loss), then a block reduction.
/* kopt:plan
{"launches": [{"kernel": "cross_entropy_reference", "grid": [1], "block": [256],
               "shared_bytes": "256 * 8", "args": ["predictions", "targets", "out", "rows", "cols"]}]}
*/
extern "C" __global__ void cross_entropy_reference(const float* p, const long long* targets,
                                                   float* out, int rows, int cols) {
  extern __shared__ double shared[];
  double total = 0.0;
  for (int r = threadIdx.x; r < rows; r += blockDim.x) {
    const float* row = p + (long long)r * cols;
    double m = row[0];
    for (int c = 1; c < cols; ++c) m = row[c] > m ? row[c] : m;
    double s = 0.0;
    for (int c = 0; c < cols; ++c) s += exp((double)row[c] - m);
    total += m + log(s) - (double)row[targets[r]];
  }
  shared[threadIdx.x] = total;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = (float)(shared[0] / rows);
}
