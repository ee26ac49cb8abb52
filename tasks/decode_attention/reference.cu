// Reference decode attention: one block per (query head, sequence). The block's warps compute the
// scores key by key (each dot product split over the lanes and combined with shuffles, in double)
// into shared memory; then the max, the exponentials and their sum; then one thread per output
// dimension accumulates the weighted values in double. Output rounded to bf16 once.
/* kopt:plan
{
  "launches": [{"kernel": "decode_attention_reference", "grid": ["q_heads", "batch"], "block": [128],
                "shared_bytes": "(ctx + d) * 8",
                "args": ["q", "k_cache", "v_cache", "out", "q_heads", "kv_heads", "ctx", "d", "f64:scale"]}]
}
*/
#include <cuda_bf16.h>

__device__ double to_double(__nv_bfloat16 value) { return (double)__bfloat162float(value); }

extern "C" __global__ void decode_attention_reference(const __nv_bfloat16* q, const __nv_bfloat16* k_cache,
                                                      const __nv_bfloat16* v_cache, __nv_bfloat16* out,
                                                      int q_heads, int kv_heads, int ctx, int d,
                                                      double scale) {
  extern __shared__ double shared[];
  double* q_row = shared;       // [d]
  double* weight = shared + d;  // [ctx]: scores, then exp(score - max)
  int h = blockIdx.x, b = blockIdx.y;
  int g = h / (q_heads / kv_heads);
  long long q_offset = ((long long)b * q_heads + h) * d;
  long long kv_offset = ((long long)b * kv_heads + g) * ctx * d;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;

  for (int c = threadIdx.x; c < d; c += blockDim.x) q_row[c] = to_double(q[q_offset + c]);
  __syncthreads();
  for (int j = warp; j < ctx; j += warps) {
    double dot = 0.0;
    for (int c = lane; c < d; c += 32) dot += q_row[c] * to_double(k_cache[kv_offset + (long long)j * d + c]);
    for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
    if (lane == 0) weight[j] = dot * scale;
  }
  __syncthreads();
  double max_score = weight[0];
  for (int j = 1; j < ctx; ++j) max_score = weight[j] > max_score ? weight[j] : max_score;
  __syncthreads();  // everyone has the max before the scores are overwritten
  for (int j = threadIdx.x; j < ctx; j += blockDim.x) weight[j] = exp(weight[j] - max_score);
  __syncthreads();
  double sum = 0.0;
  for (int j = 0; j < ctx; ++j) sum += weight[j];
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    double acc = 0.0;
    for (int j = 0; j < ctx; ++j) acc += weight[j] * to_double(v_cache[kv_offset + (long long)j * d + c]);
    out[q_offset + c] = __double2bfloat16(acc / sum);
  }
}
