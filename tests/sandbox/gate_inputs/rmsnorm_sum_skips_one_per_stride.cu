// expect: incorrect
// task: rmsnorm
// mechanism: families
// Planted bug: the sum of squares strides BLOCK + 1, so position BLOCK (and one in BLOCK + 1
// after it) never counts. On random rows that moves the mean square by about 1/(BLOCK + 1),
// inside bf16's tolerance at every shape; the spike_rows family puts a row's whole scale at
// column 2^k (k = 7..10 cover every BLOCK), and that row's output is off by its spike. The
// correct twin is rmsnorm_keeps_eps (and the task's baseline).
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
  const __nv_bfloat16* row = x + (long long)blockIdx.x * hidden;
  __nv_bfloat16* out_row = out + (long long)blockIdx.x * hidden;

  float squares = 0.0f;
  // planted: a stride one too long skips one position in BLOCK + 1 of the sum of squares
  for (int c = threadIdx.x; c < hidden; c += BLOCK + 1) {
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
