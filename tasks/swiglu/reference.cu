// Reference SwiGLU: one thread per output element, computed in double and rounded to bf16 once.
/* kopt:plan
{
  "launches": [{"kernel": "swiglu_reference", "grid": ["ceil_div(tokens*ffn, 256)"], "block": [256],
                "args": ["x", "out", "i64:tokens", "i64:ffn"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void swiglu_reference(const __nv_bfloat16* x, __nv_bfloat16* out,
                                            long long tokens, long long ffn) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= tokens * ffn) return;
  long long t = i / ffn, j = i % ffn;
  double gate = (double)__bfloat162float(x[t * 2 * ffn + j]);
  double up = (double)__bfloat162float(x[t * 2 * ffn + ffn + j]);
  double silu = gate / (1.0 + exp(-gate));
  out[i] = __double2bfloat16(silu * up);
}
