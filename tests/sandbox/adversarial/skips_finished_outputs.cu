// expect: ok
// The correct twin of skips_unpoisoned_outputs.cu: this axpy reads its output first and skips an
// element that already holds a plausible result (a finite value under 1e30), which it never
// does, because every timed sample starts from poison (NaN, or -1.7e38). Reading one's own
// outputs is allowed; only skipping work on them is not.
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
  if (isfinite(old) && fabsf(old) < 1e30f) return;
  out[i] = alpha * x[i] + y[i];
}
