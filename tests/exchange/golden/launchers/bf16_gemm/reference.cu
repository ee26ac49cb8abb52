// Reference BF16 GEMM (C = A W^T): one thread per output element, accumulated in double, rounded
// to bf16 once. Operands pass through 16x16 shared-memory tiles (converted to double, zero outside
// the matrix) only because both are contiguous along k: read straight from global memory, each
// warp would touch 16 cache lines per step and the reference would be too slow to run every round.
/* kopt:plan
{
  "launches": [{"kernel": "bf16_gemm_reference", "grid": ["ceil_div(n, 16)", "ceil_div(m, 16)"], "block": [16, 16],
                "args": ["A", "W", "C", "m", "n", "k"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void bf16_gemm_reference(const __nv_bfloat16* A, const __nv_bfloat16* W,
                                               __nv_bfloat16* C, int m, int n, int k) {
  __shared__ double a_tile[16][17];  // a_tile[r][i] = A[row0 + r][k0 + i]
  __shared__ double w_tile[16][17];  // w_tile[i][c] = W[col0 + c][k0 + i]
  int tx = threadIdx.x, ty = threadIdx.y;
  int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16;
  double sum = 0.0;
  for (int k0 = 0; k0 < k; k0 += 16) {
    int a_row = row0 + ty, w_row = col0 + ty, kk = k0 + tx;
    a_tile[ty][tx] = a_row < m && kk < k ? (double)__bfloat162float(A[(long long)a_row * k + kk]) : 0.0;
    w_tile[tx][ty] = w_row < n && kk < k ? (double)__bfloat162float(W[(long long)w_row * k + kk]) : 0.0;
    __syncthreads();
    for (int i = 0; i < 16; ++i) sum += a_tile[ty][i] * w_tile[i][tx];
    __syncthreads();
  }
  int row = row0 + ty, col = col0 + tx;
  if (row < m && col < n) C[(long long)row * n + col] = __double2bfloat16(sum);
}
