// expect: incorrect
// task: causal_prefill_varlen
// plain: cu_seqlens_q {"dist": "permutation", "shuffle": false}
// plain: cu_seqlens_k {"dist": "permutation", "shuffle": false}
// Planted bug: the row's sequence found with lower_bound over cu_seqlens_q. An empty sequence
// (q_len 0: a padded batch entry, or a request with nothing new this step) repeats its
// successor's offset, and lower_bound lands on it: the first row of the next sequence is computed
// with the empty sequence's keys. Offsets that strictly increase (one token a sequence: plain)
// hide it; the drawn cu_seqlens with empty sequences (40 sequences over 30 rows) expose it.
/* kopt:plan
{
  "launches": [{"kernel": "prefill_varlen_lower_bound", "grid": ["total_q", "q_heads"],
                "block": [128], "shared_bytes": "(d + 128) * 4",
                "args": ["q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "out", "batch", "q_heads",
                         "kv_heads", "d", "f32:scale"]}]
}
*/
#include <cuda_bf16.h>

#define CHUNK 128

__device__ float to_f(__nv_bfloat16 value) { return __bfloat162float(value); }

// The bug: lower_bound (the first b with cu[b] >= row; else the one before). Where empty sequences
// repeat an offset, it returns the first of them, an empty sequence, not the one that owns the row.
__device__ int sequence_of(const int* cu, int batch, long long row) {
  int lo = 0, hi = batch + 1;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (cu[mid] < row)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo <= batch && cu[lo] == row ? lo : lo - 1;
}

extern "C" __global__ void prefill_varlen_lower_bound(
    const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const int* cu_seqlens_q,
    const int* cu_seqlens_k, __nv_bfloat16* out, int batch, int q_heads, int kv_heads, int d,
    float scale) {
  extern __shared__ float shared[];
  float* q_row = shared;      // [d]
  float* score = shared + d;  // [CHUNK]
  long long row = blockIdx.x;
  int h = blockIdx.y;
  int g = h / (q_heads / kv_heads);
  long long q_offset = (row * q_heads + h) * d;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  int b = sequence_of(cu_seqlens_q, batch, row);
  long long visible = 0, k_start = 0;
  if (b >= 0 && b < batch) {
    long long q_len = cu_seqlens_q[b + 1] - cu_seqlens_q[b];
    long long kv_len = cu_seqlens_k[b + 1] - cu_seqlens_k[b];
    visible = min(kv_len, kv_len - q_len + 1 + (row - cu_seqlens_q[b]));  // kept in bounds
    k_start = cu_seqlens_k[b];
  }
  if (visible <= 0) {  // padding, or a query that sees no key: FlashAttention writes 0
    for (int c = threadIdx.x; c < d; c += blockDim.x) out[q_offset + c] = __float2bfloat16(0.0f);
    return;
  }
  auto kv = [&](long long j) { return ((k_start + j) * kv_heads + g) * d; };
  for (int c = threadIdx.x; c < d; c += blockDim.x) q_row[c] = to_f(q[q_offset + c]);
  __syncthreads();
  float max_score = -3.0e38f, sum = 0.0f, acc = 0.0f;
  for (long long start = 0; start < visible; start += CHUNK) {
    int n = (int)(visible - start < CHUNK ? visible - start : CHUNK);
    for (int t = warp; t < n; t += warps) {
      long long r = kv(start + t);
      float dot = 0.0f;
      for (int c = lane; c < d; c += 32) dot += q_row[c] * to_f(k[r + c]);
      for (int offset = 16; offset > 0; offset /= 2)
        dot += __shfl_xor_sync(0xffffffffu, dot, offset);
      if (lane == 0) score[t] = dot * scale;
    }
    __syncthreads();
    float chunk_max = max_score;
    for (int t = 0; t < n; ++t) chunk_max = fmaxf(chunk_max, score[t]);
    float rescale = __expf(max_score - chunk_max);
    sum *= rescale;
    acc *= rescale;
    for (int t = 0; t < n; ++t) {
      float w = __expf(score[t] - chunk_max);
      sum += w;
      if (threadIdx.x < d) acc += w * to_f(v[kv(start + t) + threadIdx.x]);
    }
    max_score = chunk_max;
    __syncthreads();
  }
  if (threadIdx.x < d) out[q_offset + threadIdx.x] = __float2bfloat16(acc / sum);
}
