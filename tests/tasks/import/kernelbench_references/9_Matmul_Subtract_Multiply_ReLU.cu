// Reference for KernelBench level2/9_Matmul_Subtract_Multiply_ReLU (subtract 2.0 and multiply
// 1.5 from its init inputs): out = relu((x W^T + b - 2) * 1.5). One warp per output, the lanes
// over k (coalesced rows of x and W), the dot product in double. At KernelBench's own inputs
// (x uniform in [0, 1), nn.Linear's initialisation) x W^T + b stays far below 2, so every output
// is 0: the import validates, and `kopt tasks check` refuses the task (its outputs do not depend
// on its inputs), as it should. Kept as the example of a problem the hygiene check catches.
/* kopt:plan
{"launches": [{"kernel": "matmul_sub_mul_relu_reference", "grid": ["ceil_div(cols, 8)", "rows"], "block": [256],
               "args": ["x", "linear_weight", "linear_bias", "out", "cols"]}]}
*/
extern "C" __global__ void matmul_sub_mul_relu_reference(const float* x, const float* w,
                                                         const float* b, float* out,
                                                         int features) {
  int n = blockIdx.x * 8 + threadIdx.x / 32, r = blockIdx.y, lane = threadIdx.x % 32;
  if (n >= features) return;
  const float* xr = x + (long long)r * features;
  const float* wn = w + (long long)n * features;
  double acc = 0.0;
  for (int k = lane; k < features; k += 32) acc += (double)xr[k] * (double)wn[k];
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) {
    double v = (acc + (double)b[n] - 2.0) * 1.5;
    out[(long long)r * features + n] = (float)(v > 0.0 ? v : 0.0);
  }
}
