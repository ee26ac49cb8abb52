// expect: compile_error
// log: INFINITY
// Defence: the compile gate. NVRTC has no INFINITY (there are no host headers), the mistake
// LLM-written kernels make most often; the compile log must come back as the verdict's detail.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fminf(alpha * x[i] + y[i], INFINITY);
}
