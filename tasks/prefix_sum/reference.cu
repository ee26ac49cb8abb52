// Reference inclusive prefix sum: one thread per row, a running sum in double, rounded per output.
/* kopt:plan
{
  "launches": [{"kernel": "prefix_sum_reference", "grid": ["ceil_div(rows, 128)"], "block": [128],
                "args": ["x", "out", "rows", "cols"]}]
}
*/
extern "C" __global__ void prefix_sum_reference(const float* x, float* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  long long base = (long long)r * cols;
  double sum = 0.0;
  for (int c = 0; c < cols; ++c) {
    sum += (double)x[base + c];
    out[base + c] = (float)sum;
  }
}
