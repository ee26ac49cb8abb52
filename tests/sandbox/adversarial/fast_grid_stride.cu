// expect: ok
// A correct grid-stride axpy: a fixed grid of BLOCKS blocks loops over the elements, so large n
// launches few blocks. Correct for every n, including n smaller than one block.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 512], "BLOCKS": [2112, 1056]},
  "launches": [{"kernel": "axpy_grid_stride", "grid": ["min(BLOCKS, ceil_div(n, BLOCK))"],
                "block": ["BLOCK"], "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy_grid_stride(const float* __restrict__ x,
                                            const float* __restrict__ y, float* __restrict__ out,
                                            int n, float alpha) {
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) {
    out[i] = alpha * x[i] + y[i];
  }
}
