// expect: incorrect
// task: softmax
// mechanism: thresholds
// Planted bug: rows longer than CHUNK (3000) go through a chunked path whose chunk count is
// ceil_div written with CHUNK - 2: a row of k * 3000 + 1 columns loses its last element (never
// written: poison). No listed row length is 1 mod 3000 (2, 1023, 4097, 32000, 32768, 50257,
// 393216: 2, 1023, 1097, 2000, 2768, 2257, 216), and a drawn one seldom is; the shapes at the
// kernel's own threshold, 3001 and 6001 columns, are.
#define CHUNK 3000
/* kopt:plan
{
  "tunables": {"BLOCK": [256]},
  "launches": [{"kernel": "softmax_chunked", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*4", "args": ["x", "out", "rows", "cols"]}]
}
*/
__device__ float block_reduce(float v, float* partial, bool take_max) {
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      float other = partial[threadIdx.x + stride];
      partial[threadIdx.x] = take_max ? fmaxf(partial[threadIdx.x], other) : partial[threadIdx.x] + other;
    }
    __syncthreads();
  }
  float result = partial[0];
  __syncthreads();
  return result;
}

extern "C" __global__ void softmax_chunked(const float* x, float* out, int rows, int cols) {
  extern __shared__ float partial[];
  const float* row = x + (long long)blockIdx.x * cols;
  float* out_row = out + (long long)blockIdx.x * cols;
  // Short rows in one piece; long rows chunk by chunk (the chunk's partial max and sum could be
  // staged; here they are folded as they come).
  int limit = cols;
  if (cols > CHUNK) {
    int chunks = (cols + CHUNK - 2) / CHUNK;
    limit = min(cols, chunks * CHUNK);
  }
  float m = -3.402823466e+38f;
  for (int c = threadIdx.x; c < limit; c += BLOCK) m = fmaxf(m, row[c]);
  float row_max = block_reduce(m, partial, true);
  float s = 0.0f;
  for (int c = threadIdx.x; c < limit; c += BLOCK) s += expf(row[c] - row_max);
  float inv = 1.0f / block_reduce(s, partial, false);
  for (int c = threadIdx.x; c < limit; c += BLOCK) out_row[c] = expf(row[c] - row_max) * inv;
}
