// expect: incorrect
// task: fused_moe_grouped_topk
// Planted bug: routed_scaling_factor folded in as DeepSeek-V3's 2.5 (the mutation harness's
// survivor 0a7c3cabae03), while the export still takes it as an argument. Other checkpoints use
// other factors (DeepSeek-V2 16, V2-Lite 1, Kimi K2 2.827), and the task's constant never varied,
// so this passed. The task now draws it from 1 to 16 (log-uniform, constant_ranges) on every drawn
// and threshold shape; the task's baseline (the `baseline_fused_moe_grouped_topk` case) is the twin.
/* kopt:plan
{
  "scratch": [{"name": "chosen", "dtype": "i32", "count": "tokens * top_k"},
              {"name": "weight", "dtype": "f32", "count": "tokens * top_k"},
              {"name": "h", "dtype": "f32", "count": "tokens * top_k * ffn"},
              {"name": "h_shared", "dtype": "f32", "count": "tokens * shared_ffn"}],
  "launches": [
    {"kernel": "moe_grouped_route", "grid": ["ceil_div(tokens, 128)"], "block": [128],
     "args": ["router_logits", "e_score_correction_bias", "chosen", "weight", "tokens", "experts",
              "n_group", "topk_group", "top_k", "f32:routed_scaling_factor"]},
    {"kernel": "moe_grouped_hidden",
     "grid": ["tokens * (top_k + 1)", "ceil_div(max(ffn, shared_ffn), 8)"], "block": [256],
     "args": ["x", "w_gate_up", "shared_gate_up", "chosen", "h", "h_shared", "top_k", "hidden",
              "ffn", "shared_ffn"]},
    {"kernel": "moe_grouped_down", "grid": ["tokens", "ceil_div(hidden, 8)"], "block": [256],
     "args": ["w_down", "shared_down", "chosen", "weight", "h", "h_shared", "out", "top_k",
              "hidden", "ffn", "shared_ffn"]}
  ]
}
*/
#include <cuda_bf16.h>

__device__ float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

__device__ float group_score(const float* row, const float* bias, int g, int size) {
  float first = -3.0e38f, second = -3.0e38f;
  for (int e = g * size; e < g * size + size; ++e) {
    float c = sigmoid(row[e]) + bias[e];
    if (c > first) {
      second = first;
      first = c;
    } else if (c > second) {
      second = c;
    }
  }
  return first + second;
}

extern "C" __global__ void moe_grouped_route(const float* logits, const float* bias, int* chosen,
                                             float* weight, int tokens, int experts, int n_group,
                                             int topk_group, int top_k, float scaling) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tokens) return;
  const float* row = logits + (long long)t * experts;
  int* mine = chosen + (long long)t * top_k;
  int size = experts / n_group;
  for (int s = 0; s < top_k; ++s) {
    int best = -1;
    float best_c = 0.0f;
    for (int g = 0; g < n_group; ++g) {
      float score = group_score(row, bias, g, size);
      int above = 0;
      for (int o = 0; o < n_group; ++o) {
        float other = group_score(row, bias, o, size);
        above += other > score || (other == score && o < g);
      }
      if (above >= topk_group) continue;
      for (int e = g * size; e < g * size + size; ++e) {
        bool taken = false;
        for (int p = 0; p < s; ++p) taken = taken || mine[p] == e;
        float c = sigmoid(row[e]) + bias[e];
        if (!taken && (best < 0 || c > best_c)) {
          best = e;
          best_c = c;
        }
      }
    }
    mine[s] = best;
  }
  float sum = 0.0f;
  for (int s = 0; s < top_k; ++s) sum += sigmoid(row[mine[s]]);
  for (int s = 0; s < top_k; ++s)
    weight[(long long)t * top_k + s] = sigmoid(row[mine[s]]) / sum * 2.5f;  // folded
}

extern "C" __global__ void moe_grouped_hidden(const __nv_bfloat16* x,
                                              const __nv_bfloat16* w_gate_up,
                                              const __nv_bfloat16* shared_gate_up,
                                              const int* chosen, float* h, float* h_shared,
                                              int top_k, int hidden, int ffn, int shared_ffn) {
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
  if (lane != 0) return;
  float value = g / (1.0f + expf(-g)) * u;
  if (shared)
    h_shared[(long long)t * shared_ffn + j] = value;
  else
    h[((long long)t * top_k + s) * ffn + j] = value;
}

extern "C" __global__ void moe_grouped_down(const __nv_bfloat16* w_down,
                                            const __nv_bfloat16* shared_down, const int* chosen,
                                            const float* weight, const float* h,
                                            const float* h_shared, __nv_bfloat16* out, int top_k,
                                            int hidden, int ffn, int shared_ffn) {
  int i = blockIdx.y * 8 + threadIdx.x / 32, t = blockIdx.x, lane = threadIdx.x % 32;
  if (i >= hidden) return;
  float acc = 0.0f;
  for (int s = 0; s < top_k; ++s) {
    long long slot = (long long)t * top_k + s;
    const __nv_bfloat16* w = w_down + ((long long)chosen[slot] * hidden + i) * ffn;
    const float* hs = h + slot * ffn;
    float part = 0.0f;
    for (int j = lane; j < ffn; j += 32) part += __bfloat162float(w[j]) * hs[j];
    acc += weight[slot] * part;
  }
  const __nv_bfloat16* w = shared_down + (long long)i * shared_ffn;
  const float* hs = h_shared + (long long)t * shared_ffn;
  for (int j = lane; j < shared_ffn; j += 32) acc += __bfloat162float(w[j]) * hs[j];
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) out[(long long)t * hidden + i] = __float2bfloat16(acc);
}
