// Baseline SGEMM: one thread per output element, fp32 accumulation, operands read straight from
// global memory (no shared-memory tiling, no register blocking). BLOCK_X x BLOCK_Y is tunable.
/* kopt:plan
{
  "tunables": {"BLOCK_X": [32, 16, 8], "BLOCK_Y": [16, 8, 32]},
  "launches": [{"kernel": "sgemm_naive", "grid": ["ceil_div(n, BLOCK_X)", "ceil_div(m, BLOCK_Y)"],
                "block": ["BLOCK_X", "BLOCK_Y"], "args": ["A", "B", "C", "m", "n", "k"]}]
}
*/
extern "C" __global__ void sgemm_naive(const float* A, const float* B, float* C, int m, int n, int k) {
  int col = blockIdx.x * BLOCK_X + threadIdx.x;
  int row = blockIdx.y * BLOCK_Y + threadIdx.y;
  if (row >= m || col >= n) return;
  const float* a = A + (long long)row * k;
  float sum = 0.0f;
  for (int i = 0; i < k; ++i) sum += a[i] * B[(long long)i * n + col];
  C[(long long)row * n + col] = sum;
}
