// Reference varlen causal GQA prefill (FlashAttention's flash_attn_varlen_func, causal): one block
// per (query row, query head). The row's sequence is found by a binary search over cu_seqlens_q
// for the last b with cu_seqlens_q[b] <= row (empty sequences repeat an offset: the last of equal
// offsets is the one that owns the row); a row before cu_seqlens_q[0] or from cu_seqlens_q[batch]
// on belongs to none and gets 0. Query i of sequence b sees its own keys j < kv_len - q_len + 1 + i
// (bottom-right alignment), none of them when that count is <= 0 (out = 0). Two passes over the
// visible keys in chunks of 128 (a chunk's scores in shared memory, dot products split over the
// lanes, in double): the maximum, then the exponentials, their sum and one thread per output
// dimension accumulating the weighted values in double. Any length works. Output rounded to bf16.
/* kopt:plan
{
  "launches": [{"kernel": "causal_prefill_varlen_reference", "grid": ["total_q", "q_heads"],
                "block": [128], "shared_bytes": "(d + 128) * 8",
                "args": ["q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "out", "batch", "q_heads",
                         "kv_heads", "d", "f64:scale"]}]
}
*/
#include <cuda_bf16.h>

#define CHUNK 128

__device__ double to_double(__nv_bfloat16 value) { return (double)__bfloat162float(value); }

extern "C" __global__ void causal_prefill_varlen_reference(
    const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const int* cu_seqlens_q,
    const int* cu_seqlens_k, __nv_bfloat16* out, int batch, int q_heads, int kv_heads, int d,
    double scale) {
  extern __shared__ double shared[];
  double* q_row = shared;      // [d]
  double* score = shared + d;  // [CHUNK]
  long long row = blockIdx.x;
  int h = blockIdx.y;
  int g = h / (q_heads / kv_heads);
  long long q_offset = (row * q_heads + h) * d;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  // The last b in 0..batch with cu_seqlens_q[b] <= row (b = batch, or none: padding).
  int lo = 0, hi = batch + 1;  // invariant: cu[lo - 1] <= row < cu[hi] (outside: the bounds)
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (cu_seqlens_q[mid] <= row)
      lo = mid + 1;
    else
      hi = mid;
  }
  int b = lo - 1;
  long long visible = 0, k_start = 0;
  if (b >= 0 && b < batch) {
    long long q_len = cu_seqlens_q[b + 1] - cu_seqlens_q[b];
    long long kv_len = cu_seqlens_k[b + 1] - cu_seqlens_k[b];
    visible = kv_len - q_len + 1 + (row - cu_seqlens_q[b]);
    k_start = cu_seqlens_k[b];
  }
  if (visible <= 0) {
    for (int c = threadIdx.x; c < d; c += blockDim.x) out[q_offset + c] = __double2bfloat16(0.0);
    return;
  }
  auto kv = [&](long long j) { return ((k_start + j) * kv_heads + g) * d; };
  auto chunk_scores = [&](long long start, int n) {
    for (int t = warp; t < n; t += warps) {
      long long r = kv(start + t);
      double dot = 0.0;
      for (int c = lane; c < d; c += 32) dot += q_row[c] * to_double(k[r + c]);
      for (int offset = 16; offset > 0; offset /= 2)
        dot += __shfl_xor_sync(0xffffffffu, dot, offset);
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
