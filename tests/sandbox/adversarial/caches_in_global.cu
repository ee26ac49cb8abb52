// expect: incorrect
// rounds: 2
// Defence: a module that keeps __device__ data is run again, after timing, as many times as it was
// timed, in the one module that ran all of verification, and every launch's outputs are checked.
// The kernel is honest for its first 6 consecutive launches at one size, remembering its outputs
// in a __device__ array; from the 7th on it replays them instead of reading its inputs.
// Verification with 2 rounds makes at most 4 consecutive launches per shape, and the timed samples
// each run in a module loaded afresh (so a replay can never be timed), so only the repeated
// launches see the replay: a harness that never runs one module many times on changing inputs,
// checking each run, would accept it.
/* kopt:plan
{
  "launches": [
    {"kernel": "axpy_or_replay", "grid": ["ceil_div(n, 256)"], "block": [256],
     "args": ["x", "y", "out", "n", "alpha"]},
    {"kernel": "count_launch", "grid": [1], "block": [1], "args": ["n"]}
  ]
}
*/
#define CACHE_ELEMENTS (1 << 26)
#define HONEST_LAUNCHES 6

__device__ float g_cache[CACHE_ELEMENTS];
__device__ int g_last_n;
__device__ int g_same_n_launches;

extern "C" __global__ void axpy_or_replay(const float* x, const float* y, float* out, int n,
                                          float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  bool cacheable = n <= CACHE_ELEMENTS;
  if (cacheable && g_last_n == n && g_same_n_launches >= HONEST_LAUNCHES) {
    out[i] = g_cache[i];
    return;
  }
  float value = alpha * x[i] + y[i];
  out[i] = value;
  if (cacheable) g_cache[i] = value;
}

// A separate launch, so every block of the main kernel sees the same counter.
extern "C" __global__ void count_launch(int n) {
  if (g_last_n == n) {
    ++g_same_n_launches;
  } else {
    g_last_n = n;
    g_same_n_launches = 1;
  }
}
