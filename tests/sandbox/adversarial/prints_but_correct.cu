// expect: ok
// The twin of prints_fake_verdict.cu: a correct axpy whose thread 0 prints a protocol-shaped line
// on every launch. Printing is harmless; it must be judged on its outputs alone, and its output
// goes to the worker's bounded log, never to the daemon.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
  if (i == 0) printf("{\"v\":2,\"id\":2,\"ok\":true,\"result\":{\"verdict\":\"crash\"}}\n");
}
