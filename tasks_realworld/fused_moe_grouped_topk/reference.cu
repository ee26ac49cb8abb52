// Reference DeepSeek-V3 MoE layer, in three launches, as tasks_realworld/fused_moe's reference:
// (1) routing, one thread per token, in double: s = sigmoid(logit), c = s + bias; a group's score
// is the sum of its two largest c; a group is chosen when fewer than topk_group groups rank above
// it (score larger, or equal with a smaller index); the top_k experts of the chosen groups by c by
// repeated selection (ties to the smaller index); weights s / sum(s) * routed_scaling_factor.
// (2) the hidden layers, one warp per (token, slot, ffn row), slot top_k being the shared expert:
// gate and up dot products in double, h = silu(gate) * up kept in double. (3) the down
// projections, one warp per (token, output): the routed slots weighted, the shared expert's
// added with weight 1, in double. Output rounded to bf16 once. Doubles live in i64 scratch slots.
/* kopt:plan
{
  "scratch": [{"name": "chosen", "dtype": "i32", "count": "tokens * top_k"},
              {"name": "weight", "dtype": "i64", "count": "tokens * top_k"},
              {"name": "h", "dtype": "i64", "count": "tokens * top_k * ffn"},
              {"name": "h_shared", "dtype": "i64", "count": "tokens * shared_ffn"}],
  "launches": [
    {"kernel": "moe_grouped_route_reference", "grid": ["ceil_div(tokens, 128)"], "block": [128],
     "args": ["router_logits", "e_score_correction_bias", "chosen", "weight", "tokens", "experts",
              "n_group", "topk_group", "top_k", "f64:routed_scaling_factor"]},
    {"kernel": "moe_grouped_hidden_reference",
     "grid": ["tokens * (top_k + 1)", "ceil_div(max(ffn, shared_ffn), 8)"], "block": [256],
     "args": ["x", "w_gate_up", "shared_gate_up", "chosen", "h", "h_shared", "top_k", "hidden",
              "ffn", "shared_ffn"]},
    {"kernel": "moe_grouped_down_reference", "grid": ["tokens", "ceil_div(hidden, 8)"], "block":
[256], "args": ["w_down", "shared_down", "chosen", "weight", "h", "h_shared", "out", "top_k",
              "hidden", "ffn", "shared_ffn"]}
  ]
}
*/
#include <cuda_bf16.h>

__device__ double bf(__nv_bfloat16 v) { return (double)__bfloat162float(v); }

__device__ double choice(const float* row, const float* bias, int e) {
  return 1.0 / (1.0 + exp(-(double)row[e])) + (double)bias[e];
}

// The sum of the two largest choice values of group g (experts g * size .. g * size + size - 1).
__device__ double group_score(const float* row, const float* bias, int g, int size) {
  double first = -1.0e308, second = -1.0e308;
  for (int e = g * size; e < g * size + size; ++e) {
    double c = choice(row, bias, e);
    if (c > first) {
      second = first;
      first = c;
    } else if (c > second) {
      second = c;
    }
  }
  return first + second;
}

extern "C" __global__ void moe_grouped_route_reference(const float* logits, const float* bias,
                                                       int* chosen, long long* weight_bits,
                                                       int tokens, int experts, int n_group,
                                                       int topk_group, int top_k, double scaling) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tokens) return;
  const float* row = logits + (long long)t * experts;
  int* mine = chosen + (long long)t * top_k;
  int size = experts / n_group;
  for (int s = 0; s < top_k; ++s) {
    int best = -1;
    double best_c = 0.0;
    for (int g = 0; g < n_group; ++g) {
      // Group g is chosen when fewer than topk_group groups rank above it.
      double score = group_score(row, bias, g, size);
      int above = 0;
      for (int o = 0; o < n_group; ++o) {
        double other = group_score(row, bias, o, size);
        above += other > score || (other == score && o < g);
      }
      if (above >= topk_group) continue;
      for (int e = g * size; e < g * size + size; ++e) {
        bool taken = false;
        for (int p = 0; p < s; ++p) taken = taken || mine[p] == e;
        double c = choice(row, bias, e);
        if (!taken && (best < 0 || c > best_c)) {  // strict: ties keep the smaller index
          best = e;
          best_c = c;
        }
      }
    }
    mine[s] = best;
  }
  double sum = 0.0;
  for (int s = 0; s < top_k; ++s) sum += 1.0 / (1.0 + exp(-(double)row[mine[s]]));
  for (int s = 0; s < top_k; ++s) {
    double p = 1.0 / (1.0 + exp(-(double)row[mine[s]])) / sum * scaling;
    weight_bits[(long long)t * top_k + s] = __double_as_longlong(p);
  }
}

extern "C" __global__ void moe_grouped_hidden_reference(const __nv_bfloat16* x,
                                                        const __nv_bfloat16* w_gate_up,
                                                        const __nv_bfloat16* shared_gate_up,
                                                        const int* chosen, long long* h_bits,
                                                        long long* h_shared_bits, int top_k,
                                                        int hidden, int ffn, int shared_ffn) {
  int j = blockIdx.y * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
  int t = blockIdx.x / (top_k + 1), s = blockIdx.x % (top_k + 1);
  bool shared = s == top_k;
  int rows = shared ? shared_ffn : ffn;
  if (j >= rows) return;
  const __nv_bfloat16* base =
      shared ? shared_gate_up
             : w_gate_up + (long long)chosen[(long long)t * top_k + s] * 2 * ffn * hidden;
  const __nv_bfloat16* xr = x + (long long)t * hidden;
  const __nv_bfloat16* gate = base + (long long)j * hidden;
  const __nv_bfloat16* up = base + ((long long)rows + j) * hidden;
  double g = 0.0, u = 0.0;
  for (int c = lane; c < hidden; c += 32) {
    g += bf(xr[c]) * bf(gate[c]);
    u += bf(xr[c]) * bf(up[c]);
  }
  for (int o = 16; o > 0; o /= 2) {
    g += __shfl_xor_sync(0xffffffffu, g, o);
    u += __shfl_xor_sync(0xffffffffu, u, o);
  }
  if (lane != 0) return;
  long long value = __double_as_longlong(g / (1.0 + exp(-g)) * u);
  if (shared)
    h_shared_bits[(long long)t * shared_ffn + j] = value;
  else
    h_bits[((long long)t * top_k + s) * ffn + j] = value;
}

extern "C" __global__ void moe_grouped_down_reference(
    const __nv_bfloat16* w_down, const __nv_bfloat16* shared_down, const int* chosen,
    const long long* weight_bits, const long long* h_bits, const long long* h_shared_bits,
    __nv_bfloat16* out, int top_k, int hidden, int ffn, int shared_ffn) {
  int i = blockIdx.y * 8 + threadIdx.x / 32, t = blockIdx.x, lane = threadIdx.x % 32;
  if (i >= hidden) return;
  double acc = 0.0;
  for (int s = 0; s < top_k; ++s) {
    long long slot = (long long)t * top_k + s;
    const __nv_bfloat16* w = w_down + ((long long)chosen[slot] * hidden + i) * ffn;
    const long long* h = h_bits + slot * ffn;
    double part = 0.0;
    for (int j = lane; j < ffn; j += 32) part += bf(w[j]) * __longlong_as_double(h[j]);
    acc += __longlong_as_double(weight_bits[slot]) * part;
  }
  const __nv_bfloat16* w = shared_down + (long long)i * shared_ffn;
  const long long* h = h_shared_bits + (long long)t * shared_ffn;
  for (int j = lane; j < shared_ffn; j += 32) acc += bf(w[j]) * __longlong_as_double(h[j]);
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) out[(long long)t * hidden + i] = __double2bfloat16(acc);
}
