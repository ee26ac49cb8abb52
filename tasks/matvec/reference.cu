// Reference matrix-vector product: one thread per output row, accumulated in double, rounded to
// bf16 once.
/* kopt:plan
{
  "launches": [{"kernel": "matvec_reference", "grid": ["ceil_div(m, 128)"], "block": [128],
                "args": ["A", "x", "y", "m", "k"]}]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void matvec_reference(const __nv_bfloat16* A, const __nv_bfloat16* x,
                                            __nv_bfloat16* y, int m, int k) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= m) return;
  const __nv_bfloat16* row = A + (long long)r * k;
  double sum = 0.0;
  for (int c = 0; c < k; ++c) sum += (double)__bfloat162float(row[c]) * (double)__bfloat162float(x[c]);
  y[r] = __double2bfloat16(sum);
}
