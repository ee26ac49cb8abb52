// expect: incorrect
// task: fused_moe
// Planted bug: the down projection keeps each token's experts and weights in registers sized for
// 16 slots and sums min(top_k, 16) of them: top_k = 17 drops the 17th expert. Every listed shape
// has top_k <= 16; with random logits the 17th expert's weight is the smallest (about 1% of the
// output, within rtol), and at the small hidden and ffn of a threshold shape the weights' std
// 0.02 leaves outputs of about 0.003 under atol 0.02. Caught at the threshold shape top_k = 17
// by "every token to the same experts, weights std 0.2" (equal weights: the 17th is 1/17 of an
// output of about 2). The twin is fused_moe_slots_in_registers_twin.cu.
/* kopt:plan
{
  "scratch": [{"name": "chosen", "dtype": "i32", "count": "tokens * top_k"},
              {"name": "weight", "dtype": "f32", "count": "tokens * top_k"},
              {"name": "h", "dtype": "f32", "count": "tokens * top_k * ffn"}],
  "launches": [
    {"kernel": "moe_route", "grid": ["ceil_div(tokens, 128)"], "block": [128],
     "args": ["router_logits", "chosen", "weight", "tokens", "experts", "top_k"]},
    {"kernel": "moe_hidden", "grid": ["tokens * top_k", "ceil_div(ffn, 8)"], "block": [256],
     "args": ["x", "w_gate_up", "chosen", "h", "top_k", "hidden", "ffn"]},
    {"kernel": "moe_down", "grid": ["tokens", "ceil_div(hidden, 8)"], "block": [256],
     "args": ["w_down", "chosen", "weight", "h", "out", "top_k", "hidden", "ffn"]}
  ]
}
*/
#include <cuda_bf16.h>

// Mixtral routes 2 experts, DeepSeek 8, Qwen3-Next 10: 16 slots in registers look like room.
constexpr int kMaxSlots = 16;

extern "C" __global__ void moe_route(const float* logits, int* chosen, float* weight, int tokens,
                                     int experts, int top_k) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tokens) return;
  const float* row = logits + (long long)t * experts;
  int* mine = chosen + (long long)t * top_k;
  for (int s = 0; s < top_k; ++s) {
    int best = -1;
    for (int e = 0; e < experts; ++e) {
      bool taken = false;
      for (int p = 0; p < s; ++p) taken = taken || mine[p] == e;
      if (!taken && (best < 0 || row[e] > row[best])) best = e;
    }
    mine[s] = best;
  }
  float top = row[mine[0]], sum = 0.0f;
  for (int s = 0; s < top_k; ++s) sum += expf(row[mine[s]] - top);
  for (int s = 0; s < top_k; ++s) weight[(long long)t * top_k + s] = expf(row[mine[s]] - top) / sum;
}

extern "C" __global__ void moe_hidden(const __nv_bfloat16* x, const __nv_bfloat16* w_gate_up,
                                      const int* chosen, float* h, int top_k, int hidden, int ffn) {
  int j = blockIdx.y * 8 + threadIdx.x / 32, slot = blockIdx.x, lane = threadIdx.x % 32;
  if (j >= ffn) return;
  int t = slot / top_k, e = chosen[slot];
  const __nv_bfloat16* xr = x + (long long)t * hidden;
  const __nv_bfloat16* gate = w_gate_up + ((long long)e * 2 * ffn + j) * hidden;
  const __nv_bfloat16* up = w_gate_up + ((long long)e * 2 * ffn + ffn + j) * hidden;
  float g = 0.0f, u = 0.0f;
  for (int c = lane; c < hidden; c += 32) {
    float xv = __bfloat162float(xr[c]);
    g += xv * __bfloat162float(gate[c]);
    u += xv * __bfloat162float(up[c]);
  }
  for (int o = 16; o > 0; o /= 2) {
    g += __shfl_xor_sync(0xffffffffu, g, o);
    u += __shfl_xor_sync(0xffffffffu, u, o);
  }
  if (lane == 0) h[(long long)slot * ffn + j] = g / (1.0f + expf(-g)) * u;
}

extern "C" __global__ void moe_down(const __nv_bfloat16* w_down, const int* chosen, const float* weight,
                                    const float* h, __nv_bfloat16* out, int top_k, int hidden, int ffn) {
  int i = blockIdx.y * 8 + threadIdx.x / 32, t = blockIdx.x, lane = threadIdx.x % 32;
  if (i >= hidden) return;
  // The slots' experts and weights in registers, once per warp: at most kMaxSlots of them.
  int expert[kMaxSlots];
  float p[kMaxSlots];
  const int slots = min(top_k, kMaxSlots);
  for (int s = 0; s < slots; ++s) {
    expert[s] = chosen[(long long)t * top_k + s];
    p[s] = weight[(long long)t * top_k + s];
  }
  float acc = 0.0f;
  for (int s = 0; s < slots; ++s) {
    long long slot = (long long)t * top_k + s;
    const __nv_bfloat16* w = w_down + ((long long)expert[s] * hidden + i) * ffn;
    const float* hs = h + slot * ffn;
    float part = 0.0f;
    for (int j = lane; j < ffn; j += 32) part += __bfloat162float(w[j]) * hs[j];
    acc += p[s] * part;
  }
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) out[(long long)t * hidden + i] = __float2bfloat16(acc);
}
