// expect: incorrect
// Defence: every timed sample is poisoned and checked. This axpy remembers, in a __device__
// table, the launches it has seen (keyed on its input pointer, the first input value and n) and
// does no work from the third launch on the same key: verification runs each input set twice,
// so it passes there, and a timing loop that rotates a few buffer sets without poisoning them
// per sample would time empty launches over the first samples' results. Each block keeps its own
// counts, so all blocks agree without a grid-wide barrier.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": [1024], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
#define SLOTS 16
__device__ unsigned long long g_keys[1024][SLOTS];
__device__ unsigned g_counts[1024][SLOTS];

extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  __shared__ bool skip;
  if (threadIdx.x == 0) {
    unsigned long long key = (unsigned long long)x * 0x9E3779B97F4A7C15ULL ^
                             (unsigned long long)__float_as_uint(x[0]) << 1 ^ (unsigned)n;
    unsigned slot = unsigned(key >> 40) % SLOTS;
    unsigned count = 1;
    if (g_keys[blockIdx.x][slot] == key) {
      count = ++g_counts[blockIdx.x][slot];
    } else {
      g_keys[blockIdx.x][slot] = key;
      g_counts[blockIdx.x][slot] = 1;
    }
    skip = count > 2;
  }
  __syncthreads();
  if (skip) return;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = alpha * x[i] + y[i];
}
