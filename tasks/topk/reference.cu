// Reference top-k: one thread per row, one pass over the row keeping a sorted list of the best k
// (value descending). A new element moves ahead of an entry only when strictly greater, and the
// columns are visited in increasing order, so equal values keep the smaller column index first.
/* kopt:plan
{
  "launches": [{"kernel": "topk_reference", "grid": ["ceil_div(rows, 128)"], "block": [128],
                "args": ["x", "values", "indices", "rows", "cols", "k"]}]
}
*/
#define K_CAPACITY 16

extern "C" __global__ void topk_reference(const float* x, float* values, int* indices, int rows, int cols,
                                          int k) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows || k > K_CAPACITY || k > cols) return;
  const float* row = x + (long long)r * cols;
  float best[K_CAPACITY];
  int best_index[K_CAPACITY];
  int count = 0;
  for (int c = 0; c < cols; ++c) {
    float value = row[c];
    if (count == k && !(value > best[k - 1])) continue;
    int pos = count < k ? count : k - 1;  // the slot freed (or the last one, dropped)
    while (pos > 0 && value > best[pos - 1]) {
      best[pos] = best[pos - 1];
      best_index[pos] = best_index[pos - 1];
      --pos;
    }
    best[pos] = value;
    best_index[pos] = c;
    if (count < k) ++count;
  }
  for (int p = 0; p < k; ++p) {
    values[(long long)r * k + p] = best[p];
    indices[(long long)r * k + p] = best_index[p];
  }
}
