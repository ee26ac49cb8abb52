// Reference for KernelBench level2/76_Gemm_Add_ReLU: out = relu(x W^T + bias) (the Linear has no
// bias of its own; the added one is a separate parameter). One warp per output, the lanes over k
// (coalesced rows of x and W), the dot product in double.
/* kopt:plan
{"launches": [{"kernel": "gemm_add_relu_reference", "grid": ["ceil_div(cols, 8)", "rows"], "block": [256],
               "args": ["x", "gemm_weight", "bias", "out", "cols"]}]}
*/
extern "C" __global__ void gemm_add_relu_reference(const float* x, const float* w, const float* b,
                                                   float* out, int features) {
  int n = blockIdx.x * 8 + threadIdx.x / 32, r = blockIdx.y, lane = threadIdx.x % 32;
  if (n >= features) return;
  const float* xr = x + (long long)r * features;
  const float* wn = w + (long long)n * features;
  double acc = 0.0;
  for (int k = lane; k < features; k += 32) acc += (double)xr[k] * (double)wn[k];
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) {
    double v = acc + (double)b[n];
    out[(long long)r * features + n] = (float)(v > 0.0 ? v : 0.0);
  }
}
