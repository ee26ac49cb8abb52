// Reference paged decode attention: one block per (query head, sequence). Token j's key and value
// are found through the block table (page block_table[b, j / page], slot j % page); the warps
// compute the scores in double into shared memory, then the max, the exponentials and their sum,
// then one thread per output dimension accumulates the weighted values in double. Output rounded
// to bf16 once. Only the sequence's own tokens are read: block_table past them is never touched.
/* kopt:plan
{
  "launches": [{"kernel": "paged_decode_reference", "grid": ["q_heads", "batch"], "block": [128],
                "shared_bytes": "(max_pages * page + d) * 8",
                "args": ["q", "k_pages", "v_pages", "block_table", "seq_lens", "out", "q_heads",
                         "kv_heads", "d", "page", "max_pages", "f64:scale"]}]
}
*/
#include <cuda_bf16.h>

__device__ double to_double(__nv_bfloat16 value) { return (double)__bfloat162float(value); }

extern "C" __global__ void paged_decode_reference(const __nv_bfloat16* q, const __nv_bfloat16* k_pages,
                                                  const __nv_bfloat16* v_pages, const int* block_table,
                                                  const int* seq_lens, __nv_bfloat16* out, int q_heads,
                                                  int kv_heads, int d, int page, int max_pages,
                                                  double scale) {
  extern __shared__ double shared[];
  double* q_row = shared;       // [d]
  double* weight = shared + d;  // [seq_len]: scores, then exp(score - max)
  int h = blockIdx.x, b = blockIdx.y;
  int g = h / (q_heads / kv_heads);
  int len = seq_lens[b];
  long long q_offset = ((long long)b * q_heads + h) * d;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  // Element offset of token j's row (kv head g) in the page pool.
  auto row = [&](int j) {
    long long p = block_table[(long long)b * max_pages + j / page];
    return ((p * page + j % page) * kv_heads + g) * (long long)d;
  };

  for (int c = threadIdx.x; c < d; c += blockDim.x) q_row[c] = to_double(q[q_offset + c]);
  __syncthreads();
  for (int j = warp; j < len; j += warps) {
    long long r = row(j);
    double dot = 0.0;
    for (int c = lane; c < d; c += 32) dot += q_row[c] * to_double(k_pages[r + c]);
    for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
    if (lane == 0) weight[j] = dot * scale;
  }
  __syncthreads();
  double max_score = weight[0];
  for (int j = 1; j < len; ++j) max_score = weight[j] > max_score ? weight[j] : max_score;
  __syncthreads();
  for (int j = threadIdx.x; j < len; j += blockDim.x) weight[j] = exp(weight[j] - max_score);
  __syncthreads();
  double sum = 0.0;
  for (int j = 0; j < len; ++j) sum += weight[j];
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    double acc = 0.0;
    for (int j = 0; j < len; ++j) acc += weight[j] * to_double(v_pages[row(j) + c]);
    out[q_offset + c] = __double2bfloat16(acc / sum);
  }
}
