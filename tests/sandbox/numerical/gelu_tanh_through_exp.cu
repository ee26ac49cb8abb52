// expect: incorrect
// task: gelu
// stress: std 40
// without-stress: ok
// Planted bug: tanh computed as (exp(2y) - 1) / (exp(2y) + 1), a common fast form: inf / inf = NaN
// for y past 44, which std-1.5 inputs never reach.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "gelu", "grid": ["ceil_div(n, BLOCK)"], "block": ["BLOCK"],
                "args": ["x", "out", "n"]}]
}
*/
extern "C" __global__ void gelu(const float* x, float* out, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float inner = 0.7978845608f * (v + 0.044715f * v * v * v);
  float e = expf(2.0f * inner);  // planted: tanh(y) = (e^2y - 1) / (e^2y + 1)
  out[i] = 0.5f * v * (1.0f + (e - 1.0f) / (e + 1.0f));
}
