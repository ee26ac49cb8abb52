// Reference for KernelBench level1/88_MinGPTNewGelu: the tanh GELU in double, one thread per element.
/* kopt:plan
{"launches": [{"kernel": "gelu_reference", "grid": ["ceil_div(rows * cols, 256)"], "block": [256],
               "args": ["x", "out", "i64:rows * cols"]}]}
*/
extern "C" __global__ void gelu_reference(const float* x, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = x[i];
  double c = sqrt(2.0 / 3.14159265358979323846);
  out[i] = (float)(0.5 * v * (1.0 + tanh(c * (v + 0.044715 * v * v * v))));
}
