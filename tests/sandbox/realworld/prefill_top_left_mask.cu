// expect: incorrect
// task: causal_prefill_gqa
// Planted bug: the square causal mask (query i sees keys j <= i: SDPA's is_causal, aligned to the
// top left) where the queries are the last seq of kv_len positions. The sweep shapes with
// kv_len > seq (chunked prefill, prefix caching) expose it.
/* kopt:plan
{
  "launches": [{"kernel": "causal_prefill_top_left", "grid": ["seq", "q_heads", "batch"], "block": [128],
                "shared_bytes": "(d + 128) * 4",
                "args": ["q", "k", "v", "out", "seq", "kv_len", "q_heads", "kv_heads", "d", "f32:scale"]}]
}
*/
#include <cuda_bf16.h>

#define CHUNK 128

__device__ float to_f(__nv_bfloat16 value) { return __bfloat162float(value); }

extern "C" __global__ void causal_prefill_top_left(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                   const __nv_bfloat16* v, __nv_bfloat16* out,
                                                   int seq, int kv_len, int q_heads, int kv_heads,
                                                   int d, float scale) {
  extern __shared__ float shared[];
  float* q_row = shared;      // [d]
  float* score = shared + d;  // [CHUNK]
  int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  int g = h / (q_heads / kv_heads);
  long long visible = (long long)i + 1;
  long long q_offset = (((long long)b * seq + i) * q_heads + h) * d;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  auto kv = [&](long long j) { return (((long long)b * kv_len + j) * kv_heads + g) * d; };
  for (int c = threadIdx.x; c < d; c += blockDim.x) q_row[c] = to_f(q[q_offset + c]);
  __syncthreads();
  float max_score = -3.0e38f, sum = 0.0f, acc = 0.0f;
  for (long long start = 0; start < visible; start += CHUNK) {
    int n = (int)(visible - start < CHUNK ? visible - start : CHUNK);
    for (int t = warp; t < n; t += warps) {
      long long r = kv(start + t);
      float dot = 0.0f;
      for (int c = lane; c < d; c += 32) dot += q_row[c] * to_f(k[r + c]);
      for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
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
