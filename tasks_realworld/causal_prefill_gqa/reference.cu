// Reference causal GQA prefill with a KV prefix: one block per (query row, query head, sequence).
// Query row i sits at position kv_len - seq + i (the keys before the new rows are a cached
// prefix: chunked prefill, prefix caching) and sees keys j <= kv_len - seq + i. Two passes over
// those keys in chunks of 128 (a chunk's scores in shared memory, dot products split over the
// lanes, in double): the maximum, then the exponentials, their sum and one thread per output
// dimension accumulating the weighted values in double. No whole row of scores is kept, so any
// length works. Output rounded to bf16 once.
/* kopt:plan
{
  "launches": [{"kernel": "causal_prefill_reference", "grid": ["seq", "q_heads", "batch"], "block": [128],
                "shared_bytes": "(d + 128) * 8",
                "args": ["q", "k", "v", "out", "seq", "kv_len", "q_heads", "kv_heads", "d", "f64:scale"]}]
}
*/
#include <cuda_bf16.h>

#define CHUNK 128

__device__ double to_double(__nv_bfloat16 value) { return (double)__bfloat162float(value); }

extern "C" __global__ void causal_prefill_reference(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                    const __nv_bfloat16* v, __nv_bfloat16* out,
                                                    int seq, int kv_len, int q_heads, int kv_heads,
                                                    int d, double scale) {
  extern __shared__ double shared[];
  double* q_row = shared;      // [d]
  double* score = shared + d;  // [CHUNK]
  int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  int g = h / (q_heads / kv_heads);
  long long visible = (long long)kv_len - seq + i + 1;
  long long q_offset = (((long long)b * seq + i) * q_heads + h) * d;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  auto kv = [&](long long j) { return (((long long)b * kv_len + j) * kv_heads + g) * d; };
  auto chunk_scores = [&](long long start, int n) {
    for (int t = warp; t < n; t += warps) {
      long long r = kv(start + t);
      double dot = 0.0;
      for (int c = lane; c < d; c += 32) dot += q_row[c] * to_double(k[r + c]);
      for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
      if (lane == 0) score[t] = dot * scale;
    }
    __syncthreads();
  };

  for (int c = threadIdx.x; c < d; c += blockDim.x) q_row[c] = to_double(q[q_offset + c]);
  __syncthreads();
  double max_score = -1.0e308;
  for (long long start = 0; start < visible; start += CHUNK) {
    int n = (int)(visible - start < CHUNK ? visible - start : CHUNK);
    chunk_scores(start, n);
    for (int t = 0; t < n; ++t) max_score = score[t] > max_score ? score[t] : max_score;
    __syncthreads();
  }
  double sum = 0.0, acc = 0.0;  // thread c < d accumulates output dimension c
  for (long long start = 0; start < visible; start += CHUNK) {
    int n = (int)(visible - start < CHUNK ? visible - start : CHUNK);
    chunk_scores(start, n);
    for (int t = 0; t < n; ++t) {
      double w = exp(score[t] - max_score);
      sum += w;
      if (threadIdx.x < d) acc += w * to_double(v[kv(start + t) + threadIdx.x]);
    }
    __syncthreads();
  }
  if (threadIdx.x < d) out[q_offset + threadIdx.x] = __double2bfloat16(acc / sum);
}
