// axpy with ITEMS coalesced elements per thread.
// test-evaluator: time_us=92
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 512], "ITEMS": [4, 2, 8]},
  "launches": [{"kernel": "axpy_unrolled", "grid": ["ceil_div(n, BLOCK * ITEMS)"],
                "block": ["BLOCK"], "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy_unrolled(const float* __restrict__ x, const float* __restrict__ y,
                                         float* __restrict__ out, int n, float alpha) {
  long long base = (long long)blockIdx.x * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    long long i = base + (long long)k * BLOCK;
    if (i < n) out[i] = alpha * x[i] + y[i];
  }
}
