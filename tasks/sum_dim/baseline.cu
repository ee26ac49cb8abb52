// Baseline sum over the middle dimension: one thread per output, double accumulation; neighbouring
// threads read neighbouring inner elements, so loads coalesce when inner is large. BLOCK is tunable.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "sum_dim", "grid": ["ceil_div(outer*inner, BLOCK)"], "block": ["BLOCK"],
                "args": ["x", "out", "outer", "reduce", "inner"]}]
}
*/
extern "C" __global__ void sum_dim(const float* x, float* out, int outer, int reduce, int inner) {
  int t = blockIdx.x * BLOCK + threadIdx.x;
  if (t >= outer * inner) return;
  int o = t / inner, i = t % inner;
  const float* column = x + (long long)o * reduce * inner + i;
  // Double: one fp32 running sum over thousands of terms drifts (tasks/README.md, stress rounds).
  double sum = 0.0;
  for (int r = 0; r < reduce; ++r) sum += column[(long long)r * inner];
  out[t] = (float)sum;
}
