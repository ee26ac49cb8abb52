// Reference for KernelBench level1/19_ReLU: out = max(x, 0), one thread per element.
/* kopt:plan
{"launches": [{"kernel": "relu_reference", "grid": ["ceil_div(rows * cols, 256)"], "block": [256],
               "args": ["x", "out", "i64:rows * cols"]}]}
*/
extern "C" __global__ void relu_reference(const float* x, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
