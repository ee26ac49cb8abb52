// expect: timeout
// Defence: the hang limit of the timing loop. This axpy is right everywhere except at the timed
// shape (n = 2^26), where it is right for its first 6 launches, exactly verification's there (the
// sweep's round and two stress rounds at the default shape, 2 runs each: verify_plan.h), and
// spins from the 7th on, the timing loop's first launch. Only the
// limit derived from the reference's time at that shape ends it; fault_test.cc checks that the
// verdict names the timed shape, so a change of verification's rounds shows up there.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
__device__ unsigned int g_launches_at_timed_shape;
__device__ int g_never_set;

extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  // Only block 0 counts and spins: one block that never ends keeps the launch from completing,
  // and other blocks cannot misread the count while block 0 updates it.
  if (n == 67108864 && blockIdx.x == 0 && threadIdx.x == 0 &&
      atomicAdd(&g_launches_at_timed_shape, 1u) >= 6) {
    while (*(volatile int*)&g_never_set == 0) {
    }
  }
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}
