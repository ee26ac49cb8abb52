// Reference for KernelBench level1/47_Sum_reduction_over_a_dimension: sum over dim 1 with
// keepdim, x[batch, rows, cols] -> out[batch, 1, cols], one thread per (batch, col), in double.
/* kopt:plan
{"launches": [{"kernel": "sum_dim1_reference", "grid": ["ceil_div(cols, 256)", "batch"], "block": [256],
               "args": ["x", "out", "rows", "cols"]}]}
*/
extern "C" __global__ void sum_dim1_reference(const float* x, float* out, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
  if (c >= cols) return;
  const float* base = x + (long long)b * rows * cols + c;
  double s = 0.0;
  for (int r = 0; r < rows; ++r) s += base[(long long)r * cols];
  out[(long long)b * cols + c] = (float)s;
}
