// A wrong reference for row_softmax.py: exp without the max subtraction, in float. Right on
// std-1 inputs, inf/inf = NaN on the 'std 40' and 'mean 1000' stress rounds: import refuses it.
/* kopt:plan
{"launches": [{"kernel": "softmax_no_max", "grid": ["ceil_div(rows, 64)"], "block": [64],
               "args": ["x", "out", "rows", "cols"]}]}
*/
extern "C" __global__ void softmax_no_max(const float* x, float* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* row = x + (long long)r * cols;
  double s = 0.0;
  for (int c = 0; c < cols; ++c) s += expf(row[c]);
  for (int c = 0; c < cols; ++c) out[(long long)r * cols + c] = (float)(expf(row[c]) / s);
}
