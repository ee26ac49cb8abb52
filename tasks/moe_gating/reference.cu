// Reference MoE gating: one thread per token. Max and sum of exponentials in double; the two
// experts are found by scanning in increasing index and replacing only on a strictly larger
// logit, so equal logits keep the smaller index first.
/* kopt:plan
{
  "launches": [{"kernel": "moe_gating_reference", "grid": ["ceil_div(tokens, 128)"], "block": [128],
                "args": ["logits", "weights", "expert_ids", "tokens", "experts"]}]
}
*/
extern "C" __global__ void moe_gating_reference(const float* logits, float* weights, int* expert_ids,
                                                int tokens, int num_experts) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tokens) return;
  const float* row = logits + (long long)t * num_experts;
  int first = 0;
  for (int e = 1; e < num_experts; ++e)
    if (row[e] > row[first]) first = e;
  int second = -1;
  for (int e = 0; e < num_experts; ++e)
    if (e != first && (second < 0 || row[e] > row[second])) second = e;
  double max_logit = row[first];
  double sum = 0.0;
  for (int e = 0; e < num_experts; ++e) sum += exp((double)row[e] - max_logit);
  weights[2 * t] = (float)(1.0 / sum);
  weights[2 * t + 1] = (float)(exp((double)row[second] - max_logit) / sum);
  expert_ids[2 * t] = first;
  expert_ids[2 * t + 1] = second;
}
