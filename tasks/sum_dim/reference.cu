// Reference sum over the middle dimension: one thread per output, accumulated in double.
/* kopt:plan
{
  "launches": [{"kernel": "sum_dim_reference", "grid": ["ceil_div(outer*inner, 256)"], "block": [256],
                "args": ["x", "out", "i64:outer", "i64:reduce", "i64:inner"]}]
}
*/
extern "C" __global__ void sum_dim_reference(const float* x, float* out, long long outer,
                                             long long reduce, long long inner) {
  long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (t >= outer * inner) return;
  long long o = t / inner, i = t % inner;
  double sum = 0.0;
  for (long long r = 0; r < reduce; ++r) sum += (double)x[(o * reduce + r) * inner + i];
  out[t] = (float)sum;
}
