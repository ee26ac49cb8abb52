// expect: incorrect|crash
// task: embedding
// Planted bug: the row's byte offset in 32 bits (ids[t] * hidden * 2 wrapped to an int). Right while the
// table is under 2 GiB (every sweep shape and the 128256-row holdout); the holdout table of
// 300000 x 4096 bf16 (2.3 GiB) sends the ids past 262143 before the table.
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
  // planted: the byte offset wraps in 32 bits (unsigned arithmetic, so the compiler cannot
  // widen it the way it may widen a signed product that overflows)
  int byte_offset = (int)((unsigned)ids[blockIdx.x] * (unsigned)hidden * 2u);
  const __nv_bfloat16* row = (const __nv_bfloat16*)((const char*)weight + byte_offset);
  __nv_bfloat16* out_row = out + (long long)blockIdx.x * hidden;
  for (int c = threadIdx.x; c < hidden; c += BLOCK) out_row[c] = row[c];
}
