// Reference paged decode attention over an fp8 KV cache: the bf16 task's reference
// (tasks_realworld/paged_decode_attention/reference.cu) with keys and values read as e4m3 codes
// and dequantized exactly in double by their KV head's scale (k_scale[g], v_scale[g]). One block
// per (query head, sequence, query token); two passes over the visible tokens in chunks of 128
// (the chunk's scores in shared memory, in double): the maximum, then the exponentials, their sum
// and one thread per output dimension accumulating the weighted values. Any context length works.
// Only visible tokens are read (every other slot holds the e4m3 NaN code); a query token that sees
// no key (seq_lens 0) gets 0. Output rounded to bf16 once.
/* kopt:plan
{
  "launches": [{"kernel": "paged_decode_fp8kv_reference", "grid": ["q_heads", "batch", "q_len"],
                "block": [128], "shared_bytes": "(d + 128) * 8",
                "args": ["q", "k_pages", "v_pages", "k_scale", "v_scale", "block_table", "seq_lens",
                         "out", "q_len", "q_heads", "kv_heads", "d", "page", "max_pages",
                         "f64:scale"]}]
}
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#define CHUNK 128

__device__ double to_double(__nv_bfloat16 value) { return (double)__bfloat162float(value); }
__device__ double to_double(__nv_fp8_e4m3 value) { return (double)(float)value; }

extern "C" __global__ void paged_decode_fp8kv_reference(
    const __nv_bfloat16* q, const __nv_fp8_e4m3* k_pages, const __nv_fp8_e4m3* v_pages,
    const float* k_scale, const float* v_scale, const int* block_table, const int* seq_lens,
    __nv_bfloat16* out, int q_len, int q_heads, int kv_heads, int d, int page, int max_pages,
    double scale) {
  extern __shared__ double shared[];
  double* q_row = shared;      // [d]
  double* score = shared + d;  // [CHUNK]
  int h = blockIdx.x, b = blockIdx.y, i = blockIdx.z;
  int g = h / (q_heads / kv_heads);
  double k_dequant = (double)k_scale[g], v_dequant = (double)v_scale[g];
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
      for (int offset = 16; offset > 0; offset /= 2)
        dot += __shfl_xor_sync(0xffffffffu, dot, offset);
      if (lane == 0) score[t] = dot * k_dequant * scale;
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
  if (threadIdx.x < d) out[q_offset + threadIdx.x] = __double2bfloat16(acc * v_dequant / sum);
}
