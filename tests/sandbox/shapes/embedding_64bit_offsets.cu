// expect: ok
// task: embedding
// The twin of embedding_32bit_byte_offsets: the row offset in 64 bits (the task's baseline).
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "embedding_rows", "grid": ["tokens"], "block": ["BLOCK"],
                "args": ["ids", "weight", "out", "hidden"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void embedding_rows(const int* ids, const __nv_bfloat16* weight,
                                          __nv_bfloat16* out, int hidden) {
  const __nv_bfloat16* row = weight + (long long)ids[blockIdx.x] * hidden;
  __nv_bfloat16* out_row = out + (long long)blockIdx.x * hidden;
  for (int c = threadIdx.x; c < hidden; c += BLOCK) out_row[c] = row[c];
}
