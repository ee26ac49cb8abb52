// expect: ok
// task: prefix_sum
// The twin of prefix_sum_carry_table_256_tiles: the same tiles, the carry a running sum.
#define CARRY_TABLE 0
/* kopt:plan
{
  "launches": [{"kernel": "scan_tiles", "grid": ["rows"], "block": [1024], "args": ["x", "out", "cols"]}]
}
*/
// One block per row, tiles of 1024 elements scanned in shared memory (Hillis-Steele), each tile
// offset by the sum of the tiles before it, in double.
extern "C" __global__ void scan_tiles(const float* x, float* out, int cols) {
  __shared__ float tile[1024];
#if CARRY_TABLE
  __shared__ double totals[256];  // planted: one slot per tile, 256 slots: 2^18 elements
#endif
  __shared__ double carry;
  const long long base = (long long)blockIdx.x * cols;
  const int tiles = (cols + 1023) / 1024;
  if (threadIdx.x == 0) carry = 0.0;
  for (int t = 0; t < tiles; ++t) {
    int c = t * 1024 + threadIdx.x;
    tile[threadIdx.x] = c < cols ? x[base + c] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < 1024; offset <<= 1) {
      float add = threadIdx.x >= offset ? tile[threadIdx.x - offset] : 0.0f;
      __syncthreads();
      tile[threadIdx.x] += add;
      __syncthreads();
    }
#if CARRY_TABLE
    if (threadIdx.x == 0) {
      double sum = 0.0;
      for (int i = 0; i < t; ++i) sum += totals[i & 255];
      carry = sum;
    }
    __syncthreads();
#endif
    if (c < cols) out[base + c] = (float)(carry + (double)tile[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) {
#if CARRY_TABLE
      totals[t & 255] = tile[1023];
#else
      carry += tile[1023];
#endif
    }
    __syncthreads();
  }
}
