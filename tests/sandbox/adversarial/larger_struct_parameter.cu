// expect: invalid_plan
// Defence: parameters match the plan (cuFuncGetParamInfo). The plan passes alpha as a 4-byte
// float, but the kernel declares a 64-byte struct in its place: the driver would copy 60 bytes
// of the worker's memory beyond alpha's slot into the kernel's parameters.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
struct Peek {
  float alpha;
  float rest[15];
};

extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, Peek p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = p.alpha * x[i] + y[i] + (p.rest[14] == 12345.0f ? 1.0f : 0.0f);
}
