// expect: invalid_plan
// Defence: the plan is checked against the device before launching. The plan asks for 1 MiB of
// dynamic shared memory per block; no GPU has that (an H100 allows 227 KiB).
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "shared_bytes": "1024 * 1024",
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  extern __shared__ float staging[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  staging[threadIdx.x] = i < n ? alpha * x[i] + y[i] : 0.0f;
  __syncthreads();
  if (i < n) out[i] = staging[threadIdx.x];
}
