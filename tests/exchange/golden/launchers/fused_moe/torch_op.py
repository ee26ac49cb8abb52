"""PyTorch's composition for fused_moe, as Mixtral's reference implementation (HF transformers'
MixtralSparseMoeBlock) runs it: top-k of the router logits, softmax over the selected ones, then
a loop over the experts, each applied to the tokens routed to it (index_select, two GEMMs,
index_add). vLLM's fused_moe Triton kernel is the production baseline elsewhere; it is not a
PyTorch op.

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) -> out."""


def build(torch, inputs, sizes, constants):
    F = torch.nn.functional
    top_k, ffn = sizes["top_k"], sizes["ffn"]

    def fn(x, router_logits, w_gate_up, w_down):
        # torch.topk's order among equal logits is not specified; the task breaks ties by the
        # smaller index, which a stable descending sort gives.
        order = torch.sort(router_logits, dim=-1, descending=True, stable=True).indices
        chosen = order[:, :top_k]
        weights = torch.softmax(router_logits.gather(1, chosen), dim=-1)
        wide = torch.float64 if x.dtype == torch.float64 else torch.float32  # the oracle's run
        out = torch.zeros_like(x, dtype=wide)
        for e in range(w_gate_up.shape[0]):
            token, slot = (chosen == e).nonzero(as_tuple=True)
            if token.numel() == 0:
                continue
            gu = x[token] @ w_gate_up[e].t()
            h = F.silu(gu[:, :ffn]) * gu[:, ffn:]
            y = (h @ w_down[e].t()).to(wide) * weights[token, slot, None]
            out.index_add_(0, token, y)
        return out.to(x.dtype)

    return fn, (inputs["x"], inputs["router_logits"], inputs["w_gate_up"], inputs["w_down"])
