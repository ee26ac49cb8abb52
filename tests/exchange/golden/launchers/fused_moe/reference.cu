// Reference fused MoE, in three launches: (1) routing, one thread per token: the top_k logits
// by repeated selection (ties to the smaller index), weights = softmax over the selected logits,
// in double; (2) the experts' hidden layer, one warp per (token, slot, ffn row) (tokens on the grid's x: past 65535 (token, slot) pairs): the gate and up
// dot products over hidden in double, h = silu(gate) * up kept in double; (3) the down
// projection, one warp per (token, output), summing p * w_down[e, i, :] . h over the slots in
// double. Output rounded to bf16 once. Doubles live in 8-byte i64 scratch slots.
/* kopt:plan
{
  "scratch": [{"name": "chosen", "dtype": "i32", "count": "tokens * top_k"},
              {"name": "weight", "dtype": "i64", "count": "tokens * top_k"},
              {"name": "h", "dtype": "i64", "count": "tokens * top_k * ffn"}],
  "launches": [
    {"kernel": "moe_route_reference", "grid": ["ceil_div(tokens, 128)"], "block": [128],
     "args": ["router_logits", "chosen", "weight", "tokens", "experts", "top_k"]},
    {"kernel": "moe_hidden_reference", "grid": ["tokens * top_k", "ceil_div(ffn, 8)"], "block": [256],
     "args": ["x", "w_gate_up", "chosen", "h", "top_k", "hidden", "ffn"]},
    {"kernel": "moe_down_reference", "grid": ["tokens", "ceil_div(hidden, 8)"], "block": [256],
     "args": ["w_down", "chosen", "weight", "h", "out", "top_k", "hidden", "ffn"]}
  ]
}
*/
#include <cuda_bf16.h>

__device__ double bf(__nv_bfloat16 v) { return (double)__bfloat162float(v); }

extern "C" __global__ void moe_route_reference(const float* logits, int* chosen, long long* weight_bits,
                                               int tokens, int experts, int top_k) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tokens) return;
  const float* row = logits + (long long)t * experts;
  int* mine = chosen + (long long)t * top_k;
  for (int s = 0; s < top_k; ++s) {
    int best = -1;
    for (int e = 0; e < experts; ++e) {
      bool taken = false;
      for (int p = 0; p < s; ++p) taken = taken || mine[p] == e;
      if (!taken && (best < 0 || row[e] > row[best])) best = e;  // strict: ties keep the smaller
    }
    mine[s] = best;
  }
  double top = row[mine[0]], sum = 0.0;
  for (int s = 0; s < top_k; ++s) sum += exp((double)row[mine[s]] - top);
  for (int s = 0; s < top_k; ++s) {
    double p = exp((double)row[mine[s]] - top) / sum;
    weight_bits[(long long)t * top_k + s] = __double_as_longlong(p);
  }
}

extern "C" __global__ void moe_hidden_reference(const __nv_bfloat16* x, const __nv_bfloat16* w_gate_up,
                                                const int* chosen, long long* h_bits, int top_k,
                                                int hidden, int ffn) {
  int j = blockIdx.y * 8 + threadIdx.x / 32, slot = blockIdx.x, lane = threadIdx.x % 32;
  if (j >= ffn) return;
  int t = slot / top_k, e = chosen[slot];
  const __nv_bfloat16* xr = x + (long long)t * hidden;
  const __nv_bfloat16* gate = w_gate_up + ((long long)e * 2 * ffn + j) * hidden;
  const __nv_bfloat16* up = w_gate_up + ((long long)e * 2 * ffn + ffn + j) * hidden;
  double g = 0.0, u = 0.0;
  for (int c = lane; c < hidden; c += 32) {
    g += bf(xr[c]) * bf(gate[c]);
    u += bf(xr[c]) * bf(up[c]);
  }
  for (int o = 16; o > 0; o /= 2) {
    g += __shfl_xor_sync(0xffffffffu, g, o);
    u += __shfl_xor_sync(0xffffffffu, u, o);
  }
  if (lane == 0) h_bits[(long long)slot * ffn + j] = __double_as_longlong(g / (1.0 + exp(-g)) * u);
}

extern "C" __global__ void moe_down_reference(const __nv_bfloat16* w_down, const int* chosen,
                                              const long long* weight_bits, const long long* h_bits,
                                              __nv_bfloat16* out, int top_k, int hidden, int ffn) {
  int i = blockIdx.y * 8 + threadIdx.x / 32, t = blockIdx.x, lane = threadIdx.x % 32;
  if (i >= hidden) return;
  double acc = 0.0;
  for (int s = 0; s < top_k; ++s) {
    long long slot = (long long)t * top_k + s;
    int e = chosen[slot];
    const __nv_bfloat16* w = w_down + ((long long)e * hidden + i) * ffn;
    const long long* h = h_bits + slot * ffn;
    double part = 0.0;
    for (int j = lane; j < ffn; j += 32) part += bf(w[j]) * __longlong_as_double(h[j]);
    acc += __longlong_as_double(weight_bits[slot]) * part;
  }
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) out[(long long)t * hidden + i] = __double2bfloat16(acc);
}
