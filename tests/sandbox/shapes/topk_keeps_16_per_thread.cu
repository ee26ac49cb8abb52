// expect: ok
// task: topk
// The twin of topk_keeps_8_per_thread: 16 candidates per thread, enough for any k <= 16.
#define KEEP 16
/* kopt:plan
{
  "launches": [{"kernel": "topk_candidates", "grid": ["rows"], "block": [256],
                "args": ["x", "values", "indices", "cols", "k"]}]
}
*/
// Each thread keeps the KEEP largest of its strided elements (c = tid, tid + 256, ...), in
// descending order, ties by the smaller index; then k rounds of a block arg-max over the threads'
// heads, the winner's owner moving to its next candidate.
#define THREADS 256
__device__ __forceinline__ bool better(float v, int i, float w, int j) {
  return v > w || (v == w && i < j);
}

extern "C" __global__ void topk_candidates(const float* x, float* values, int* indices, int cols, int k) {
  __shared__ float best_v[THREADS];
  __shared__ int best_i[THREADS];
  const float* row = x + (long long)blockIdx.x * cols;
  float kept_v[KEEP];
  int kept_i[KEEP];
  int count = 0;
  for (int c = threadIdx.x; c < cols; c += THREADS) {
    float v = row[c];
    if (count == KEEP && !(v > kept_v[KEEP - 1])) continue;  // an equal value comes later: it loses
    int p = count < KEEP ? count++ : KEEP - 1;
    while (p > 0 && kept_v[p - 1] < v) {
      kept_v[p] = kept_v[p - 1];
      kept_i[p] = kept_i[p - 1];
      --p;
    }
    kept_v[p] = v;
    kept_i[p] = c;
  }
  int head = 0;
  for (int r = 0; r < k; ++r) {
    best_v[threadIdx.x] = head < count ? kept_v[head] : __int_as_float(0xff800000);
    best_i[threadIdx.x] = head < count ? kept_i[head] : 0x7fffffff;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride /= 2) {
      if (threadIdx.x < stride &&
          better(best_v[threadIdx.x + stride], best_i[threadIdx.x + stride], best_v[threadIdx.x], best_i[threadIdx.x])) {
        best_v[threadIdx.x] = best_v[threadIdx.x + stride];
        best_i[threadIdx.x] = best_i[threadIdx.x + stride];
      }
      __syncthreads();
    }
    int winner = best_i[0];
    if (threadIdx.x == 0) {
      values[(long long)blockIdx.x * k + r] = best_v[0];
      indices[(long long)blockIdx.x * k + r] = winner;
    }
    if (head < count && kept_i[head] == winner) ++head;
    __syncthreads();
  }
}
