// expect: incorrect
// Defence: every launch is poisoned and checked, timed or not. This axpy remembers, in a
// __device__ table, the launches it has seen (keyed on its input pointer, the first input value
// and n) and does no work from the third launch on the same key: verification runs each input
// set twice, so it passes there; timed samples each run in a module loaded afresh (its table
// empty), so it computes there too; the repeated launches of its long-lived module over the
// timing sets after timing reach a third launch per set and find the outputs unwritten. A
// harness that rotates a few buffer sets without poisoning and checking every launch would time
// empty launches over the first samples' results. Each block keeps its own counts, so all blocks
// agree without a grid-wide barrier.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": [1024], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
#define SLOTS 64
__device__ unsigned long long g_keys[1024][SLOTS];
__device__ unsigned g_counts[1024][SLOTS];

// Launches seen with this key by this block, this one included. Open addressing over 64 slots
// (a full table recycles the home slot), so the few keys of one evaluation never evict each other.
__device__ unsigned count_launch(unsigned long long key) {
  unsigned home = unsigned(key >> 40) % SLOTS;
  for (unsigned probe = 0; probe < SLOTS; ++probe) {
    unsigned slot = (home + probe) % SLOTS;
    if (g_keys[blockIdx.x][slot] == key) return ++g_counts[blockIdx.x][slot];
    if (g_keys[blockIdx.x][slot] == 0) {
      g_keys[blockIdx.x][slot] = key;
      return g_counts[blockIdx.x][slot] = 1;
    }
  }
  g_keys[blockIdx.x][home] = key;
  return g_counts[blockIdx.x][home] = 1;
}

extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  __shared__ bool skip;
  if (threadIdx.x == 0) {
    unsigned long long key = ((unsigned long long)x * 0x9E3779B97F4A7C15ULL ^
                              (unsigned long long)__float_as_uint(x[0]) << 1 ^ (unsigned)n) |
                             1;
    skip = count_launch(key) > 2;
  }
  __syncthreads();
  if (skip) return;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = alpha * x[i] + y[i];
}
