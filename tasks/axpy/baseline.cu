// Baseline axpy: one thread per element, scalar loads. BLOCK is tunable.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, BLOCK)"], "block": ["BLOCK"],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}
