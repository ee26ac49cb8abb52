// Baseline transpose: one thread per element on a 2-D grid; threadIdx.x runs along rows of x (the
// contiguous dimension of out), so writes coalesce and reads are strided. BLOCK_X and BLOCK_Y are
// tunable.
/* kopt:plan
{
  "tunables": {"BLOCK_X": [32, 64, 16], "BLOCK_Y": [8, 4, 16]},
  "launches": [{"kernel": "transpose_naive", "grid": ["ceil_div(rows, BLOCK_X)", "ceil_div(cols, BLOCK_Y)"],
                "block": ["BLOCK_X", "BLOCK_Y"], "args": ["x", "out", "rows", "cols"]}]
}
*/
extern "C" __global__ void transpose_naive(const float* x, float* out, int rows, int cols) {
  int r = blockIdx.x * BLOCK_X + threadIdx.x;
  int c = blockIdx.y * BLOCK_Y + threadIdx.y;
  if (r < rows && c < cols) out[(long long)c * rows + r] = x[(long long)r * cols + c];
}
