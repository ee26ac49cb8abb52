// Reference softmax: one thread per row, three passes, accumulated in double.
/* kopt:plan
{
  "launches": [{"kernel": "softmax_reference", "grid": ["ceil_div(rows, 128)"], "block": [128],
                "args": ["x", "out", "rows", "cols"]}]
}
*/
extern "C" __global__ void softmax_reference(const float* x, float* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* row = x + (long long)r * cols;
  double max_value = row[0];
  for (int c = 1; c < cols; ++c) max_value = row[c] > max_value ? row[c] : max_value;
  double sum = 0.0;
  for (int c = 0; c < cols; ++c) sum += exp((double)row[c] - max_value);
  for (int c = 0; c < cols; ++c) out[(long long)r * cols + c] = (float)(exp((double)row[c] - max_value) / sum);
}
