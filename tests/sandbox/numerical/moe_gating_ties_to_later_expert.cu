// expect: incorrect
// task: moe_gating
// stress: ties
// without-stress: ok
// Planted bug: among equal router logits the later expert wins: the routing of tied tokens
// differs from the reference (and from PyTorch's topk).
/* kopt:plan
{
  "tunables": {"BLOCK": [128, 64, 256, 512]},
  "launches": [{"kernel": "moe_gating_per_token", "grid": ["ceil_div(tokens, BLOCK)"], "block": ["BLOCK"],
                "args": ["logits", "weights", "expert_ids", "tokens", "experts"]}]
}
*/
extern "C" __global__ void moe_gating_per_token(const float* logits, float* weights, int* expert_ids,
                                                int tokens, int num_experts) {
  int t = blockIdx.x * BLOCK + threadIdx.x;
  if (t >= tokens) return;
  const float* row = logits + (long long)t * num_experts;
  float best = __int_as_float(0xff800000), runner_up = __int_as_float(0xff800000);  // -inf
  int best_index = -1, runner_up_index = -1;
  for (int e = 0; e < num_experts; ++e) {
    float v = row[e];
    if (v >= best) {  // planted: the later expert wins ties
      runner_up = best;
      runner_up_index = best_index;
      best = v;
      best_index = e;
    } else if (v >= runner_up) {
      runner_up = v;
      runner_up_index = e;
    }
  }
  float sum = 0.0f;
  for (int e = 0; e < num_experts; ++e) sum += expf(row[e] - best);
  weights[2 * t] = 1.0f / sum;
  weights[2 * t + 1] = expf(runner_up - best) / sum;
  expert_ids[2 * t] = best_index;
  expert_ids[2 * t + 1] = runner_up_index;
}
