// expect: incorrect
// task: paged_decode_attention_fp8kv
// plain: k_scale {"dist": "constant", "value": 0.0125}
// plain: v_scale {"dist": "constant", "value": 0.0125}
// Planted bug: a per-tensor fp8 KV cache assumed (vLLM's default calibration: one k_scale and
// one v_scale for the whole cache), so every head is dequantized with head 0's scales. With one
// scale for every head (plain) it passes; with per-head scales (FlashAttention-3's k_descale /
// v_descale) every KV head but the first is off by its scale ratio.
/* kopt:plan
{
  "launches": [{"kernel": "paged_decode_fp8kv_head0_scale", "grid": ["q_heads", "batch", "q_len"],
                "block": [128], "shared_bytes": "(d + 128) * 4",
                "args": ["q", "k_pages", "v_pages", "k_scale", "v_scale", "block_table", "seq_lens",
                         "out", "q_len", "q_heads", "kv_heads", "d", "page", "max_pages",
                         "f32:scale"]}]
}
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#define CHUNK 128

__device__ float to_f(__nv_bfloat16 value) { return __bfloat162float(value); }
__device__ float to_f(__nv_fp8_e4m3 value) { return (float)value; }

extern "C" __global__ void paged_decode_fp8kv_head0_scale(
    const __nv_bfloat16* q, const __nv_fp8_e4m3* k_pages, const __nv_fp8_e4m3* v_pages,
    const float* k_scale, const float* v_scale, const int* block_table, const int* seq_lens,
    __nv_bfloat16* out, int q_len, int q_heads, int kv_heads, int d, int page, int max_pages,
    float scale) {
  extern __shared__ float shared[];
  float* q_row = shared;      // [d]
  float* score = shared + d;  // [CHUNK]
  int h = blockIdx.x, b = blockIdx.y, i = blockIdx.z;
  int g = h / (q_heads / kv_heads);
  float score_scale = scale * k_scale[0];  // the bug: one scale for every head
  long long visible = (long long)seq_lens[b] - q_len + 1 + i;
  long long q_offset = (((long long)b * q_len + i) * q_heads + h) * d;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (visible <= 0) {
    for (int c = threadIdx.x; c < d; c += blockDim.x) out[q_offset + c] = __float2bfloat16(0.0f);
    return;
  }
  auto row = [&](long long j) {
    long long p = block_table[(long long)b * max_pages + j / page];
    return ((p * page + j % page) * kv_heads + g) * (long long)d;
  };
  for (int c = threadIdx.x; c < d; c += blockDim.x) q_row[c] = to_f(q[q_offset + c]);
  __syncthreads();
  float max_score = -3.0e38f, sum = 0.0f, acc = 0.0f;
  for (long long start = 0; start < visible; start += CHUNK) {
    int n = (int)(visible - start < CHUNK ? visible - start : CHUNK);
    for (int t = warp; t < n; t += warps) {
      long long r = row(start + t);
      float dot = 0.0f;
      for (int c = lane; c < d; c += 32) dot += q_row[c] * to_f(k_pages[r + c]);
      for (int offset = 16; offset > 0; offset /= 2)
        dot += __shfl_xor_sync(0xffffffffu, dot, offset);
      if (lane == 0) score[t] = dot * score_scale;
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
      if (threadIdx.x < d) acc += w * to_f(v_pages[row(start + t) + threadIdx.x]);
    }
    max_score = chunk_max;
    __syncthreads();
  }
  if (threadIdx.x < d) out[q_offset + threadIdx.x] = __float2bfloat16(acc * v_scale[0] / sum);
}
