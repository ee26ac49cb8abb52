// expect: timeout
// Defence: the hang limit of the timing loop. This axpy is right for its first 70 launches, which
// are exactly the verification's (7 shapes x 5 rounds x 2 runs), and spins from the 71st on, the
// timing loop's warm-up at the timed shape. Only the limit derived from the reference's time at
// that shape ends it.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
__device__ unsigned int g_launches;
__device__ int g_never_set;

extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  __shared__ unsigned int launch;
  if (threadIdx.x == 0) {
    launch = blockIdx.x == 0 ? atomicAdd(&g_launches, 1u) : *(volatile unsigned int*)&g_launches;
  }
  __syncthreads();
  if (launch >= 70) {
    while (*(volatile int*)&g_never_set == 0) {
    }
  }
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}
