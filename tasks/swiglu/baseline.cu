// Baseline SwiGLU: one thread per output element, scalar bf16 loads, fp32 math. BLOCK is tunable.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "swiglu", "grid": ["ceil_div(tokens*ffn, BLOCK)"], "block": ["BLOCK"],
                "args": ["x", "out", "tokens", "ffn"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void swiglu(const __nv_bfloat16* x, __nv_bfloat16* out, int tokens, int ffn) {
  long long i = blockIdx.x * (long long)BLOCK + threadIdx.x;
  if (i >= (long long)tokens * ffn) return;
  long long t = i / ffn, j = i % ffn;
  float gate = __bfloat162float(x[t * 2 * ffn + j]);
  float up = __bfloat162float(x[t * 2 * ffn + ffn + j]);
  out[i] = __float2bfloat16(gate / (1.0f + expf(-gate)) * up);
}
