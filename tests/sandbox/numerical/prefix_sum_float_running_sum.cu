// expect: incorrect
// task: prefix_sum
// stress: offset 500, long rows
// without-stress: ok
// Planted bug: one fp32 running sum along the row (a thread per row). Past 2^22 each add of
// 500.x rounds the fraction down: the running sum drifts by a thousand over 16384 columns.
/* kopt:plan
{
  "launches": [{"kernel": "prefix_sum_rows", "grid": ["ceil_div(rows, 128)"], "block": [128],
                "args": ["x", "out", "rows", "cols"]}]
}
*/
extern "C" __global__ void prefix_sum_rows(const float* x, float* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  long long base = (long long)r * cols;
  float sum = 0.0f;  // planted: one fp32 running sum over the whole row
  for (int c = 0; c < cols; ++c) {
    sum += x[base + c];
    out[base + c] = sum;
  }
}
