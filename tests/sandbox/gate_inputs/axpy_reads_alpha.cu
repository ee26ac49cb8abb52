// expect: ok
// task: axpy
// mechanism: vary_constants
// needs: draws
// The correct twin of axpy_folds_alpha: alpha is the argument.
#define READ_ALPHA 1
/* kopt:plan
{
  "tunables": {"BLOCK": [256]},
  "launches": [{"kernel": "axpy_folded", "grid": ["ceil_div(n, BLOCK)"], "block": ["BLOCK"],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy_folded(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
#if READ_ALPHA
  float a = alpha;
#else
  float a = 1.75f;  // the model's alpha
  (void)alpha;
#endif
  if (i < n) out[i] = a * x[i] + y[i];
}
