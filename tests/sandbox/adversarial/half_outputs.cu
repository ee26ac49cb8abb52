// expect: incorrect
// Defence: outputs are poisoned with NaN before every run. The kernel writes only the first half
// of the outputs; the rest keep the poison (or, without poisoning, whatever an earlier correct
// kernel left in the buffer).
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 2) out[i] = alpha * x[i] + y[i];
}
