// expect: out_of_bounds
// Defence: the guard zone before every output buffer. Every output is right, but thread 0 also
// writes out[-1], just before the start.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
  if (i == 0) out[-1] = 0.0f;
}
