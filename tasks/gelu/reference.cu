// Reference GELU (tanh form): one thread per element, computed in double and rounded once.
/* kopt:plan
{
  "launches": [{"kernel": "gelu_reference", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "out", "i64:n"]}]
}
*/
extern "C" __global__ void gelu_reference(const float* x, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double k_sqrt_2_over_pi = 0.7978845608028654;
  double v = x[i];
  double inner = k_sqrt_2_over_pi * (v + 0.044715 * v * v * v);
  out[i] = (float)(0.5 * v * (1.0 + tanh(inner)));
}
