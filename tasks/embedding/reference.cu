// Reference embedding gather: one thread per output element.
/* kopt:plan
{
  "launches": [{"kernel": "embedding_reference", "grid": ["ceil_div(tokens*hidden, 256)"], "block": [256],
                "args": ["ids", "weight", "out", "i64:tokens", "i64:hidden"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void embedding_reference(const int* ids, const __nv_bfloat16* weight,
                                               __nv_bfloat16* out, long long tokens, long long hidden) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= tokens * hidden) return;
  long long t = i / hidden, c = i % hidden;
  out[i] = weight[(long long)ids[t] * hidden + c];
}
