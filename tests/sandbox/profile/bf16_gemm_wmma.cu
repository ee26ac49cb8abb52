// Profile test kernel: a plain tensor-core BF16 GEMM (C = A W^T) through WMMA (mma.sync), for
// the tensor-pipe metrics against Nsight Compute. One warp per 16x16 tile of C, four warps per
// block; a tile inside the matrix with k a multiple of 16 runs on the tensor cores, any other
// (edges, odd k) on CUDA cores, so every verification shape stays exact. No shared-memory
// staging: operands come straight from L1/L2, so it is tensor-core work at modest efficiency.
/* kopt:plan
{
  "launches": [{"kernel": "bf16_gemm_wmma", "grid": ["ceil_div(n, 32)", "ceil_div(m, 32)"],
                "block": ["128"], "args": ["A", "W", "C", "m", "n", "k"]}]
}
*/
#include <cuda_bf16.h>
#include <mma.h>

using namespace nvcuda;

extern "C" __global__ void bf16_gemm_wmma(const __nv_bfloat16* A, const __nv_bfloat16* W,
                                          __nv_bfloat16* C, int m, int n, int k) {
  __shared__ float staged[4][16 * 16];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int row0 = blockIdx.y * 32 + (warp / 2) * 16;
  int col0 = blockIdx.x * 32 + (warp % 2) * 16;
  if (row0 >= m || col0 >= n) return;
  if (row0 + 16 <= m && col0 + 16 <= n && k % 16 == 0) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    // W^T viewed column-major: element (i, j) of B is W[j * k + i].
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < k; kk += 16) {
      wmma::load_matrix_sync(a, A + (long long)row0 * k + kk, k);
      wmma::load_matrix_sync(b, W + (long long)col0 * k + kk, k);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(staged[warp], acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32)
      C[(long long)(row0 + e / 16) * n + col0 + e % 16] = __float2bfloat16(staged[warp][e]);
    return;
  }
  for (int e = lane; e < 256; e += 32) {
    int r = row0 + e / 16, c = col0 + e % 16;
    if (r >= m || c >= n) continue;
    float sum = 0.0f;
    for (int i = 0; i < k; ++i)
      sum += __bfloat162float(A[(long long)r * k + i]) * __bfloat162float(W[(long long)c * k + i]);
    C[(long long)r * n + c] = __float2bfloat16(sum);
  }
}
