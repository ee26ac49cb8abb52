// Reference for KernelBench level2/14_Gemm_Divide_Sum_Scaling (scaling 1.5 from its init
// inputs): out[r, 0] = 1.5 * sum_n (x[r] . W[n]) / 2. One block per row: each warp takes outputs
// n = warp, warp + 8, ..., the lanes over k, in double; then a reduction over the warps.
/* kopt:plan
{"launches": [{"kernel": "gemm_div_sum_reference", "grid": ["rows"], "block": [256],
               "shared_bytes": "8 * 8", "args": ["x", "weight", "out", "cols"]}]}
*/
extern "C" __global__ void gemm_div_sum_reference(const float* x, const float* w, float* out,
                                                  int features) {
  extern __shared__ double shared[];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r = blockIdx.x;
  const float* xr = x + (long long)r * features;
  double total = 0.0;
  for (int n = warp; n < features; n += 8) {
    const float* wn = w + (long long)n * features;
    double acc = 0.0;
    for (int k = lane; k < features; k += 32) acc += (double)xr[k] * (double)wn[k];
    total += acc;
  }
  for (int o = 16; o > 0; o /= 2) total += __shfl_xor_sync(0xffffffffu, total, o);
  if (lane == 0) shared[warp] = total;
  __syncthreads();
  if (threadIdx.x == 0) {
    double s = 0.0;
    for (int i = 0; i < 8; ++i) s += shared[i];
    out[r] = (float)(1.5 * (s / 2.0));
  }
}
