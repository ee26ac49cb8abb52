// Reference SGEMM: one thread per output element, accumulated in double. 16x16 blocks so that the
// rows of B a warp reads are shared through L1 by the block's other warps (keeps it fast enough).
/* kopt:plan
{
  "launches": [{"kernel": "sgemm_reference", "grid": ["ceil_div(n, 16)", "ceil_div(m, 16)"], "block": [16, 16],
                "args": ["A", "B", "C", "m", "n", "k"]}]
}
*/
extern "C" __global__ void sgemm_reference(const float* A, const float* B, float* C, int m, int n, int k) {
  int col = blockIdx.x * 16 + threadIdx.x;
  int row = blockIdx.y * 16 + threadIdx.y;
  if (row >= m || col >= n) return;
  double sum = 0.0;
  for (int i = 0; i < k; ++i) sum += (double)A[(long long)row * k + i] * (double)B[(long long)i * n + col];
  C[(long long)row * n + col] = (float)sum;
}
