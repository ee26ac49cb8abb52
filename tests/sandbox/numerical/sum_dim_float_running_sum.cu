// expect: incorrect
// task: sum_dim
// stress: offset 1000, reduce 16384
// without-stress: ok
// Planted bug: one fp32 running sum per output over the whole reduction (kopt's sum_dim baseline
// until issue 15). Past 2^23 every add of 1000.x rounds the fraction away the same way: the sum
// drifts by thousands over 16384 terms. A tree, Kahan or double accumulation does not.
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
  float sum = 0.0f;
  for (int r = 0; r < reduce; ++r) sum += column[(long long)r * inner];
  out[t] = sum;
}
