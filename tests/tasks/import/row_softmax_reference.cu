// Reference for row_softmax.py: one thread per row in double (max, sum of exp, outputs).
/* kopt:plan
{"launches": [{"kernel": "softmax_reference", "grid": ["ceil_div(rows, 64)"], "block": [64],
               "args": ["x", "out", "rows", "cols"]}]}
*/
extern "C" __global__ void softmax_reference(const float* x, float* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* row = x + (long long)r * cols;
  double m = row[0];
  for (int c = 1; c < cols; ++c) m = row[c] > m ? row[c] : m;
  double s = 0.0;
  for (int c = 0; c < cols; ++c) s += exp((double)row[c] - m);
  for (int c = 0; c < cols; ++c) out[(long long)r * cols + c] = (float)(exp((double)row[c] - m) / s);
}
