// expect: ok
// task: softmax
// The twin of softmax_drops_tail_at_2_mod_4: the same groups of four, every tail kept.
#define DROP_TAIL_OF_TWO 0
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512]},
  "launches": [{"kernel": "softmax_quads", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*4", "args": ["x", "out", "cols"]}]
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

// Each thread takes groups of four consecutive elements, then the last cols % 4 one by one.
extern "C" __global__ void softmax_quads(const float* x, float* out, int cols) {
  extern __shared__ float partial[];
  const float* row = x + (long long)blockIdx.x * cols;
  float* out_row = out + (long long)blockIdx.x * cols;
  int quads = cols / 4, rem = cols % 4;
  int tail = (DROP_TAIL_OF_TWO && quads > 0 && rem == 2) ? 0 : rem;
  int end = quads * 4 + tail;

  float m = -3.402823466e+38f;
  for (int q = threadIdx.x; q < quads; q += BLOCK)
    for (int j = 0; j < 4; ++j) m = fmaxf(m, row[4 * q + j]);
  for (int c = quads * 4 + threadIdx.x; c < end; c += BLOCK) m = fmaxf(m, row[c]);
  m = block_reduce(m, partial, true);

  float s = 0.0f;
  for (int q = threadIdx.x; q < quads; q += BLOCK)
    for (int j = 0; j < 4; ++j) s += expf(row[4 * q + j] - m);
  for (int c = quads * 4 + threadIdx.x; c < end; c += BLOCK) s += expf(row[c] - m);
  s = block_reduce(s, partial, false);

  float inv = 1.0f / s;
  for (int q = threadIdx.x; q < quads; q += BLOCK)
    for (int j = 0; j < 4; ++j) out_row[4 * q + j] = expf(row[4 * q + j] - m) * inv;
  for (int c = quads * 4 + threadIdx.x; c < end; c += BLOCK) out_row[c] = expf(row[c] - m) * inv;
}
