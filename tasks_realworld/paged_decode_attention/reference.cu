// Reference paged decode attention: one block per (query head, sequence, query token). Token j's
// key and value are found through the block table (page block_table[b, j / page], slot j % page).
// Two passes over the visible tokens in chunks of 128 (scores of a chunk in shared memory, in
// double): the maximum, then the exponentials, their sum and one thread per output dimension
// accumulating the weighted values in double. No row of scores is kept whole, so any context
// length works. Output rounded to bf16 once. Only the visible tokens are read: table entries and
// slots past them (which hold NaN in the task's inputs) are never touched; a query token that sees
// no key (seq_lens 0: a padded batch entry) gets 0.
/* kopt:plan
{
  "launches": [{"kernel": "paged_decode_reference", "grid": ["q_heads", "batch", "q_len"],
                "block": [128], "shared_bytes": "(d + 128) * 8",
                "args": ["q", "k_pages", "v_pages", "block_table", "seq_lens", "out", "q_len",
                         "q_heads", "kv_heads", "d", "page", "max_pages", "f64:scale"]}]
}
*/
#include <cuda_bf16.h>

#define CHUNK 128

__device__ double to_double(__nv_bfloat16 value) { return (double)__bfloat162float(value); }

extern "C" __global__ void paged_decode_reference(
    const __nv_bfloat16* q, const __nv_bfloat16* k_pages, const __nv_bfloat16* v_pages,
    const int* block_table, const int* seq_lens, __nv_bfloat16* out, int q_len, int q_heads,
    int kv_heads, int d, int page, int max_pages, double scale) {
  extern __shared__ double shared[];
  double* q_row = shared;      // [d]
  double* score = shared + d;  // [CHUNK]
  int h = blockIdx.x, b = blockIdx.y, i = blockIdx.z;
  int g = h / (q_heads / kv_heads);
  // Query token i sits at position seq_lens[b] - q_len + i and sees the keys up to it.
  long long visible = (long long)seq_lens[b] - q_len + 1 + i;
  long long q_offset = (((long long)b * q_len + i) * q_heads + h) * d;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (visible <= 0) {
    for (int c = threadIdx.x; c < d; c += blockDim.x) out[q_offset + c] = __double2bfloat16(0.0);
    return;
  }
  auto row = [&](long long j) {  // element offset of token j's row (kv head g) in the pool
    long long p = block_table[(long long)b * max_pages + j / page];
    return ((p * page + j % page) * kv_heads + g) * (long long)d;
  };
  auto chunk_scores = [&](long long start, int n) {
    for (int t = warp; t < n; t += warps) {
      long long r = row(start + t);
      double dot = 0.0;
      for (int c = lane; c < d; c += 32) dot += q_row[c] * to_double(k_pages[r + c]);
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
      if (threadIdx.x < d) acc += w * to_double(v_pages[row(start + t) + threadIdx.x]);
    }
    __syncthreads();
  }
  if (threadIdx.x < d) out[q_offset + threadIdx.x] = __double2bfloat16(acc / sum);
}
