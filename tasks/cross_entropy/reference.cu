// Reference cross-entropy: one thread per row, max then sum of exponentials, accumulated in double.
/* kopt:plan
{
  "launches": [{"kernel": "cross_entropy_reference", "grid": ["ceil_div(rows, 128)"], "block": [128],
                "args": ["logits", "targets", "loss", "rows", "vocab"]}]
}
*/
extern "C" __global__ void cross_entropy_reference(const float* logits, const int* targets, float* loss,
                                                   int rows, int vocab) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* row = logits + (long long)r * vocab;
  double max_value = row[0];
  for (int c = 1; c < vocab; ++c) max_value = row[c] > max_value ? row[c] : max_value;
  double sum = 0.0;
  for (int c = 0; c < vocab; ++c) sum += exp((double)row[c] - max_value);
  loss[r] = (float)(max_value + log(sum) - (double)row[targets[r]]);
}
