// expect: invalid_plan
// Defence: parameters match the plan (cuFuncGetParamInfo). The outputs are right, but the kernel
// declares a sixth parameter the plan never passes: the driver would copy 8 more bytes from past
// the worker's argument slots, host memory the kernel must not see. The launch must be refused
// before it runs.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha,
                                const float* leaked) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i] + (leaked == (const float*)1 ? 1.0f : 0.0f);
}
