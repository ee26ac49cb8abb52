// expect: incorrect|nondeterministic
// Defence: scratch buffers without "zero": true are filled with NaN bytes before each run. The
// kernel accumulates into its scratch as if it started at zero; the garbage (or the previous
// run's sum) ends up in the output.
/* kopt:plan
{
  "scratch": [{"name": "acc", "dtype": "f32", "count": "n"}],
  "launches": [
    {"kernel": "scale_into", "grid": ["ceil_div(n, 256)"], "block": [256],
     "args": ["x", "acc", "n", "alpha"]},
    {"kernel": "add_into", "grid": ["ceil_div(n, 256)"], "block": [256],
     "args": ["acc", "y", "out", "n"]}
  ]
}
*/
extern "C" __global__ void scale_into(const float* x, float* acc, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += alpha * x[i];  // assumes acc starts zeroed: it does not
}

extern "C" __global__ void add_into(const float* acc, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = acc[i] + y[i];
}
