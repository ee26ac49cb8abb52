// expect: incorrect
// task: axpy
// mechanism: vary_constants
// needs: draws
// Planted bug: alpha folded in as the literal 1.75, the task's value, and the argument ignored.
// Every listed shape runs with alpha = 1.75; the drawn shapes draw alpha from -4..4.
#define READ_ALPHA 0
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
