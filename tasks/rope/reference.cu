// Reference RoPE: one thread per output element, computed in double and rounded to bf16 once.
// Launched once for the queries and once for the keys.
/* kopt:plan
{
  "launches": [
    {"kernel": "rope_reference", "grid": ["ceil_div(tokens*q_heads*head_dim, 256)"], "block": [256],
     "args": ["q", "positions", "cos", "sin", "q_out", "i64:tokens", "i64:q_heads", "i64:head_dim"]},
    {"kernel": "rope_reference", "grid": ["ceil_div(tokens*kv_heads*head_dim, 256)"], "block": [256],
     "args": ["k", "positions", "cos", "sin", "k_out", "i64:tokens", "i64:kv_heads", "i64:head_dim"]}
  ]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void rope_reference(const __nv_bfloat16* x, const int* positions, const float* cos,
                                          const float* sin, __nv_bfloat16* out, long long tokens,
                                          long long heads, long long head_dim) {
  long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (e >= tokens * heads * head_dim) return;
  long long half = head_dim / 2;
  long long t = e / (heads * head_dim);
  long long i = e % head_dim;
  long long vector_start = e - i;  // element 0 of this (token, head) vector
  long long pair = i < half ? i : i - half;
  double c = cos[positions[t] * half + pair];
  double s = sin[positions[t] * half + pair];
  double x_low = (double)__bfloat162float(x[vector_start + pair]);
  double x_high = (double)__bfloat162float(x[vector_start + pair + half]);
  double value = i < half ? x_low * c - x_high * s : x_high * c + x_low * s;
  out[e] = __double2bfloat16(value);
}
