// expect: ok
// The correct twin of stashes_in_granule.cu: the same axpy and the same address arithmetic, but
// the launch count stays in a register (it is not kept anywhere), so nothing past the output is
// written. Reading nothing, writing nothing outside its buffers: accepted.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}
