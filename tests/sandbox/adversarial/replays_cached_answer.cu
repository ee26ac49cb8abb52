// expect: ok
// task: matvec
// max-speedup: 1.25
// Defence: a module that holds __device__ data is loaded afresh before every timed sample. This
// matvec remembers each answer in a __device__ table keyed by its inputs' addresses, sizes and
// values, and when it sees the same inputs again it copies the remembered rows instead of reading
// A, then waits (on %globaltimer) until 60% of its honest time has passed: above the
// speed-of-light bound and under the 10x re-verification threshold, with every output correct.
// A timing loop that rotates a few input sets through one long-lived module would time the
// replays (by design about 1.7x); with a fresh module per sample every sample computes, so it is
// accepted at the speed of its honest path (the baseline's), never faster.
/* kopt:plan
{
  "launches": [
    {"kernel": "matvec_or_replay", "grid": ["ceil_div(m, 8)"], "block": [256], "args": ["A", "x", "y", "m", "k"]},
    {"kernel": "finish", "grid": [1], "block": [1], "args": ["A", "x", "m", "k"]}
  ]
}
*/
#include <cuda_bf16.h>

#define SLOTS 8
#define MAX_ROWS 32768
#define MIN_CACHED (1 << 16)

__device__ unsigned long long g_keys[SLOTS];
__device__ __nv_bfloat16 g_answers[SLOTS][MAX_ROWS];
__device__ unsigned long long g_start_ns, g_honest_ns;
__device__ int g_replayed;

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Addresses, sizes and a few sampled values: cheap next to reading A. On a tiny shape such a key
// can match inputs it has not seen (one element of x drawn twice alike while A changed at the same
// address), and the replay is then simply wrong: caught, as it should be (H100, the pool run).
// So the cache is used only where a collision is out of reach (MIN_CACHED elements and more):
// this kernel must be right every time, so that what the defence is seen to stop is the replay.
__device__ unsigned long long key_of(const __nv_bfloat16* A, const __nv_bfloat16* x, int m, int k) {
  unsigned long long h = (unsigned long long)A * 0x9E3779B97F4A7C15ULL;
  h ^= (unsigned long long)x * 0x632BE59BD9B4E019ULL + (unsigned long long)m * 131 + k;
  const long long last = (long long)m * k - 1;
  const unsigned short samples[6] = {__bfloat16_as_ushort(x[0]),     __bfloat16_as_ushort(x[k / 3]),
                                     __bfloat16_as_ushort(x[k / 2]), __bfloat16_as_ushort(x[k - 1]),
                                     __bfloat16_as_ushort(A[0]),     __bfloat16_as_ushort(A[last])};
  for (int i = 0; i < 6; ++i) h = (h ^ samples[i]) * 0x100000001B3ULL;
  return h | 1;  // 0 marks an empty slot
}

extern "C" __global__ void matvec_or_replay(const __nv_bfloat16* A, const __nv_bfloat16* x,
                                            __nv_bfloat16* y, int m, int k) {
  unsigned long long key = key_of(A, x, m, k);
  unsigned slot = unsigned(key >> 33) % SLOTS;
  bool cacheable = m <= MAX_ROWS && (long long)m * k >= MIN_CACHED;
  bool replay = cacheable && g_keys[slot] == key;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    g_start_ns = now_ns();
    g_replayed = replay;
  }
  int lane = threadIdx.x % 32;
  int r = blockIdx.x * 8 + threadIdx.x / 32;
  if (r >= m) return;
  if (replay) {
    if (lane == 0) y[r] = g_answers[slot][r];
    return;
  }
  const __nv_bfloat16* row = A + (long long)r * k;
  float sum = 0.0f;
  for (int c = lane; c < k; c += 32) sum += __bfloat162float(row[c]) * __bfloat162float(x[c]);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) {
    y[r] = __float2bfloat16(sum);
    if (cacheable) g_answers[slot][r] = y[r];
  }
}

// After the rows: an honest launch records its time and its key; a replay waits out 60% of it.
extern "C" __global__ void finish(const __nv_bfloat16* A, const __nv_bfloat16* x, int m, int k) {
  unsigned long long key = key_of(A, x, m, k);
  if (!g_replayed) {
    g_honest_ns = now_ns() - g_start_ns;
    if (m <= MAX_ROWS && (long long)m * k >= MIN_CACHED) g_keys[unsigned(key >> 33) % SLOTS] = key;
    return;
  }
  unsigned long long until = g_start_ns + g_honest_ns * 6 / 10;
  while (now_ns() < until) {
  }
}
