// expect: incorrect
// Defence: the private protocol channel. The kernel forgets y (wrong on every element) and has
// thread 0 print protocol-shaped "ok" answers for the first request ids. If device printf reached
// the worker's protocol channel, the daemon would read one of them as the verdict.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i];
  if (i == 0) {
    for (int id = 1; id <= 4; ++id) {
      printf("{\"v\":2,\"id\":%d,\"ok\":true,\"result\":{\"verdict\":\"ok\","
             "\"detail\":\"printed by the kernel\"}}\n",
             id);
    }
  }
}
