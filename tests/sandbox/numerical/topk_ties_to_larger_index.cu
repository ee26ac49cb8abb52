// expect: incorrect
// task: topk
// stress: ties
// without-stress: ok
// Planted bug: among equal values the larger column index wins (the task says the smaller): never
// seen on continuous inputs, wrong on every row once values tie.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "topk_rows", "grid": ["rows"], "block": ["BLOCK"], "shared_bytes": "BLOCK*8",
                "args": ["x", "values", "indices", "cols", "k"]}]
}
*/
#define K_CAPACITY 16

extern "C" __global__ void topk_rows(const float* x, float* values, int* indices, int cols, int k) {
  extern __shared__ float shared_value[];
  int* shared_index = (int*)(shared_value + BLOCK);
  const float* row = x + (long long)blockIdx.x * cols;

  float best[K_CAPACITY];
  int best_index[K_CAPACITY];
  int count = 0;
  for (int c = threadIdx.x; c < cols; c += BLOCK) {
    float value = row[c];
    if (count == k && !(value >= best[k - 1])) continue;  // planted: later index wins ties
    int pos = count < k ? count : k - 1;
    while (pos > 0 && value >= best[pos - 1]) {
      best[pos] = best[pos - 1];
      best_index[pos] = best_index[pos - 1];
      --pos;
    }
    best[pos] = value;
    best_index[pos] = c;
    if (count < k) ++count;
  }

  int head = 0;
  for (int round = 0; round < k; ++round) {
    shared_value[threadIdx.x] = head < count ? best[head] : __int_as_float(0xff800000);  // -inf
    shared_index[threadIdx.x] = head < count ? best_index[head] : 0x7fffffff;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
      if (threadIdx.x < stride) {
        float other = shared_value[threadIdx.x + stride];
        int other_index = shared_index[threadIdx.x + stride];
        if (other > shared_value[threadIdx.x] ||
            (other == shared_value[threadIdx.x] && other_index > shared_index[threadIdx.x])  /* planted */) {
          shared_value[threadIdx.x] = other;
          shared_index[threadIdx.x] = other_index;
        }
      }
      __syncthreads();
    }
    int winner = shared_index[0];
    if (threadIdx.x == 0) {
      values[(long long)blockIdx.x * k + round] = shared_value[0];
      indices[(long long)blockIdx.x * k + round] = winner;
    }
    if (head < count && best_index[head] == winner) ++head;
    __syncthreads();  // everyone has read the winner before the next round overwrites it
  }
}
