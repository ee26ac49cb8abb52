// Baseline RoPE: one thread per rotation pair (i, i + head_dim/2) of one (token, head) vector,
// scalar loads, fp32 math; launched once for q and once for k. BLOCK is tunable.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [
    {"kernel": "rope_pairs", "grid": ["ceil_div(tokens*q_heads*(head_dim/2), BLOCK)"], "block": ["BLOCK"],
     "args": ["q", "positions", "cos", "sin", "q_out", "tokens", "q_heads", "head_dim"]},
    {"kernel": "rope_pairs", "grid": ["ceil_div(tokens*kv_heads*(head_dim/2), BLOCK)"], "block": ["BLOCK"],
     "args": ["k", "positions", "cos", "sin", "k_out", "tokens", "kv_heads", "head_dim"]}
  ]
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void rope_pairs(const __nv_bfloat16* x, const int* positions, const float* cos,
                                      const float* sin, __nv_bfloat16* out, int tokens, int heads,
                                      int head_dim) {
  int half = head_dim / 2;
  int p = blockIdx.x * BLOCK + threadIdx.x;  // pair index over tokens * heads * half
  if (p >= tokens * heads * half) return;
  int vector = p / half, i = p % half;
  int t = vector / heads;
  long long low = (long long)vector * head_dim + i;
  int table = positions[t] * half + i;
  float c = cos[table], s = sin[table];
  float x_low = __bfloat162float(x[low]), x_high = __bfloat162float(x[low + half]);
  out[low] = __float2bfloat16(x_low * c - x_high * s);
  out[low + half] = __float2bfloat16(x_high * c + x_low * s);
}
