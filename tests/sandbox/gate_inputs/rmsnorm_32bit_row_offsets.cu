// expect: incorrect|crash|out_of_bounds
// task: rmsnorm
// mechanism: wide
// Planted bug: each row's element offset in 32 bits. Every listed shape holds under 2^31
// elements (the largest holdout, 29360128 x 64, 1.9e9, stops just short); the task's round past
// 2^31 elements, 532480 x 4096, sends the rows from 524288 on before the tensor. The same rule
// holds for residual_rmsnorm and layernorm (the same round). The correct twin is the task's
// baseline (64-bit offsets), which passes the same round
// (SuiteOnGpu.BaselinePassesEveryNewRound/tasks_rmsnorm).
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "rmsnorm_rows", "grid": ["rows"], "block": ["BLOCK"],
                "shared_bytes": "BLOCK*4", "args": ["x", "weight", "out", "hidden", "eps"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void rmsnorm_rows(const __nv_bfloat16* x, const __nv_bfloat16* weight,
                                        __nv_bfloat16* out, int hidden, float eps) {
  extern __shared__ float partial[];
  // The row's element offset in 32 bits: right while the tensor holds under 2^31 elements.
  int offset = (int)((unsigned)blockIdx.x * (unsigned)hidden);
  const __nv_bfloat16* row = x + offset;
  __nv_bfloat16* out_row = out + offset;

  float squares = 0.0f;
  for (int c = threadIdx.x; c < hidden; c += BLOCK) {
    float v = __bfloat162float(row[c]);
    squares += v * v;
  }
  partial[threadIdx.x] = squares;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  float rstd = rsqrtf(partial[0] / hidden + eps);

  for (int c = threadIdx.x; c < hidden; c += BLOCK)
    out_row[c] = __float2bfloat16(__bfloat162float(row[c]) * rstd * __bfloat162float(weight[c]));
}
