"""PyTorch's composition for fused_moe_grouped_topk, as DeepSeek-V3's reference implementation
(its MoEGate with topk_method noaux_tc, and DeepseekV3MoE) runs it: sigmoid scores, the correction
bias added for the choice, each group's two largest summed, the topk_group best groups, the top_k
experts among them, weights the chosen sigmoid scores normalized and scaled; then a loop over the
experts, each applied to the tokens routed to it (index_select, two GEMMs, index_add), and the
shared experts' MLP added. Stable descending sorts break ties by the smaller index, as the task
does (torch.topk's order among equal values is not specified). vLLM's and SGLang's fused kernels
(grouped_topk + fused_moe's Triton kernel, sgl_kernel's moe_fused_gate) are the production
baselines; they are not PyTorch ops and are not installed on kopt's GPU machine.

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) -> out."""


def build(torch, inputs, sizes, constants):
    F = torch.nn.functional
    top_k, ffn, shared_ffn = sizes["top_k"], sizes["ffn"], sizes["shared_ffn"]
    n_group, topk_group, experts = sizes["n_group"], sizes["topk_group"], sizes["experts"]
    scaling = constants["routed_scaling_factor"]

    def route(router_logits, bias):
        wide = torch.float64 if router_logits.dtype == torch.float64 else torch.float32
        scores = torch.sigmoid(router_logits.to(wide))
        choice = scores + bias.to(wide)[None, :]
        grouped = choice.view(-1, n_group, experts // n_group)
        group_scores = torch.sort(grouped, dim=-1, descending=True).values[..., :2].sum(-1)
        groups = torch.sort(group_scores, dim=-1, descending=True, stable=True).indices[:, :topk_group]
        allowed = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, groups, True)
        allowed = allowed[:, :, None].expand_as(grouped).reshape(-1, experts)
        masked = torch.where(allowed, choice, torch.full_like(choice, float("-inf")))
        chosen = torch.sort(masked, dim=-1, descending=True, stable=True).indices[:, :top_k]
        picked = scores.gather(1, chosen)
        return chosen, picked / picked.sum(-1, keepdim=True) * scaling

    def mlp(x, gate_up, down, width):
        gu = x @ gate_up.t()
        return (F.silu(gu[:, :width]) * gu[:, width:]) @ down.t()

    def fn(x, router_logits, bias, w_gate_up, w_down, shared_gate_up, shared_down):
        chosen, weights = route(router_logits, bias)
        wide = torch.float64 if x.dtype == torch.float64 else torch.float32  # the oracle's run
        out = mlp(x, shared_gate_up, shared_down, shared_ffn).to(wide)
        for e in range(experts):
            token, slot = (chosen == e).nonzero(as_tuple=True)
            if token.numel() == 0:
                continue
            y = mlp(x[token], w_gate_up[e], w_down[e], ffn).to(wide) * weights[token, slot, None].to(wide)
            out.index_add_(0, token, y)
        return out.to(x.dtype)

    return fn, (inputs["x"], inputs["router_logits"], inputs["e_score_correction_bias"],
                inputs["w_gate_up"], inputs["w_down"], inputs["shared_gate_up"], inputs["shared_down"])
