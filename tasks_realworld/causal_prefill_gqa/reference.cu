// Reference causal GQA prefill: one block per (query row, query head, sequence). The block's warps
// compute the row's scores key by key (dot products split over the lanes, in double) into shared
// memory; then the max, the exponentials and their sum; then one thread per output dimension
// accumulates the weighted values in double. Output rounded to bf16 once.
/* kopt:plan
{
  "launches": [{"kernel": "causal_prefill_reference", "grid": ["seq", "q_heads", "batch"], "block": [128],
                "shared_bytes": "(seq + d) * 8",
                "args": ["q", "k", "v", "out", "seq", "q_heads", "kv_heads", "d", "f64:scale"]}]
}
*/
#include <cuda_bf16.h>

__device__ double to_double(__nv_bfloat16 value) { return (double)__bfloat162float(value); }

extern "C" __global__ void causal_prefill_reference(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                    const __nv_bfloat16* v, __nv_bfloat16* out,
                                                    int seq, int q_heads, int kv_heads, int d,
                                                    double scale) {
  extern __shared__ double shared[];
  double* q_row = shared;       // [d]
  double* weight = shared + d;  // [i + 1]: scores, then exp(score - max)
  int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  int g = h / (q_heads / kv_heads);
  long long q_offset = (((long long)b * seq + i) * q_heads + h) * d;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  auto kv = [&](int j) { return (((long long)b * seq + j) * kv_heads + g) * d; };

  for (int c = threadIdx.x; c < d; c += blockDim.x) q_row[c] = to_double(q[q_offset + c]);
  __syncthreads();
  for (int j = warp; j <= i; j += warps) {
    long long r = kv(j);
    double dot = 0.0;
    for (int c = lane; c < d; c += 32) dot += q_row[c] * to_double(k[r + c]);
    for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
    if (lane == 0) weight[j] = dot * scale;
  }
  __syncthreads();
  double max_score = weight[0];
  for (int j = 1; j <= i; ++j) max_score = weight[j] > max_score ? weight[j] : max_score;
  __syncthreads();
  for (int j = threadIdx.x; j <= i; j += blockDim.x) weight[j] = exp(weight[j] - max_score);
  __syncthreads();
  double sum = 0.0;
  for (int j = 0; j <= i; ++j) sum += weight[j];
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    double acc = 0.0;
    for (int j = 0; j <= i; ++j) acc += weight[j] * to_double(v[kv(j) + c]);
    out[q_offset + c] = __double2bfloat16(acc / sum);
  }
}
