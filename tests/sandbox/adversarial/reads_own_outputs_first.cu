// expect: ok
// The correct twin of skips_finished_outputs.cu: this axpy reads its output first as that one
// does, and uses what it read only to choose how to write (never whether), so whatever the
// output held before the run, stale answer or poison, is overwritten.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float old = out[i];
  float v = alpha * x[i] + y[i];
  if (isfinite(old) && fabsf(old) < 1e30f && old == v) return;  // already this very value
  out[i] = v;
}
