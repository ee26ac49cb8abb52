// expect: incorrect
// task: softmax
// mechanism: families
// Planted bug: the first warp looks at the row's first 32 values; when they are all small the
// row is taken as well scaled and exponentiated without the max subtraction (one pass fewer).
// The stress rounds make every value large (std 40, 500..600, their mirror) or mask some to -inf,
// so the probe sees it; the input family of a few outlier rows (normal values first, 1e5 past
// position 32) overflows exp: inf / inf.
#define PROBE_WHOLE_ROW 0
/* kopt:plan
{
  "tunables": {"BLOCK": [256]},
  "launches": [{"kernel": "softmax_probed", "grid": ["rows"], "block": ["BLOCK"],
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

extern "C" __global__ void softmax_probed(const float* x, float* out, int rows, int cols) {
  extern __shared__ float partial[];
  const float* row = x + (long long)blockIdx.x * cols;
  float* out_row = out + (long long)blockIdx.x * cols;
#if PROBE_WHOLE_ROW
  // The decision is made on the whole row: a max pass, but no subtraction where it is small.
  float probe = 0.0f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) probe = fmaxf(probe, fabsf(row[c]));
#else
  float probe = threadIdx.x < 32 && threadIdx.x < cols ? fabsf(row[threadIdx.x]) : 0.0f;
#endif
  bool small = !(block_reduce(probe, partial, true) >= 16.0f);  // NaN and inf are not small
  float row_max = 0.0f;
  if (!small) {
    float m = -3.402823466e+38f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
    row_max = block_reduce(m, partial, true);
  }
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) s += expf(row[c] - row_max);
  float inv = 1.0f / block_reduce(s, partial, false);
  for (int c = threadIdx.x; c < cols; c += BLOCK) out_row[c] = expf(row[c] - row_max) * inv;
}
