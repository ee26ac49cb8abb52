// Reference for linear_relu.py: one thread per output element, the dot product in double.
/* kopt:plan
{"launches": [{"kernel": "linear_relu_reference", "grid": ["ceil_div(out_features, 128)", "rows"],
               "block": [128],
               "args": ["x", "linear_weight", "linear_bias", "out", "rows", "cols", "out_features"]}]}
*/
extern "C" __global__ void linear_relu_reference(const float* x, const float* w, const float* b,
                                                 float* out, int rows, int in_features,
                                                 int out_features) {
  int n = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (n >= out_features) return;
  double acc = b[n];
  for (int k = 0; k < in_features; ++k)
    acc += (double)x[(long long)r * in_features + k] * (double)w[(long long)n * in_features + k];
  out[(long long)r * out_features + n] = (float)(acc > 0.0 ? acc : 0.0);
}
