// expect: crash
// Defence: crash isolation. A store to an unmapped address is CUDA_ERROR_ILLEGAL_ADDRESS, which
// leaves the context unusable: the worker reports and exits, the next request gets a new one.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
  // Page zero is never mapped on the device.
  if (i == 0) *reinterpret_cast<volatile float*>(0x100ull) = 1.0f;
}
