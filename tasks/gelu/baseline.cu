// Baseline GELU (tanh form): one thread per element, scalar loads, tanhf. BLOCK is tunable.
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
  out[i] = 0.5f * v * (1.0f + tanhf(inner));
}
