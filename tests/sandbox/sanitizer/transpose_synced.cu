// expect: ok
// task: transpose
// The twin of transpose_missing_sync.cu: the same tiled loop with the second __syncthreads, so no
// warp loads the next tile before every warp has read the last one. Every tool must stay silent.
/* kopt:plan
{
  "launches": [{"kernel": "transpose_tiled", "grid": [16], "block": [32, 8],
                "args": ["x", "out", "rows", "cols"]}]
}
*/
extern "C" __global__ void transpose_tiled(const float* x, float* out, int rows, int cols) {
  __shared__ float tile[32][33];
  int tiles_c = (cols + 31) / 32;
  int tiles = ((rows + 31) / 32) * tiles_c;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    int r0 = (t / tiles_c) * 32, c0 = (t % tiles_c) * 32;
    for (int j = threadIdx.y; j < 32; j += 8) {
      int r = r0 + j, c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[j][threadIdx.x] = x[(long long)r * cols + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += 8) {
      int c = c0 + j, r = r0 + threadIdx.x;
      if (r < rows && c < cols) out[(long long)c * rows + r] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}
