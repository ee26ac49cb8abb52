// Profile test kernel: axpy whose values pass through shared memory with a planted 32-way bank
// conflict. Thread t of a warp stores to and loads from word 32 * t of the block's tile, so all
// 32 lanes hit bank 0: every shared request takes 32 wavefronts, 31 of them conflicts (96.9%).
/* kopt:plan
{
  "launches": [{"kernel": "bank_conflict_axpy", "grid": ["ceil_div(n, 256)"], "block": ["256"],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void bank_conflict_axpy(const float* x, const float* y, float* out, int n,
                                              float alpha) {
  __shared__ float tile[8][32 * 32 + 1];  // one row per warp; lane t uses word 32 * t
  int i = blockIdx.x * 256 + threadIdx.x;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float value = i < n ? alpha * x[i] + y[i] : 0.0f;
  tile[warp][32 * lane] = value;
  __syncwarp();
  float back = tile[warp][32 * lane];
  if (i < n) out[i] = back;
}
