"""PyTorch's production op for causal_prefill_gqa: scaled_dot_product_attention (the `sdpa`
production baseline: FlashAttention-2 backend on Hopper for bf16, causal, d = 128) with
grouped-query heads (enable_gqa), on the [batch, heads, seq, d] views of the task's
[batch, seq, heads, d] tensors (transposes are views; the output is made contiguous in the task's
layout inside fn). With a KV prefix (kv_len > seq) the causal mask is aligned to the bottom right
(FlashAttention's convention): torch.nn.attention.bias.causal_lower_right where this PyTorch has
it, else an explicit boolean mask (SDPA's is_causal aligns to the top left).

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) -> out."""


def build(torch, inputs, sizes, constants):
    F = torch.nn.functional
    group = sizes["q_heads"] // sizes["kv_heads"]
    seq, kv_len = sizes["seq"], sizes.get("kv_len", sizes["seq"])
    device = inputs["q"].device
    mask = None
    if kv_len != seq:
        rows = torch.arange(seq, device=device)[:, None] + (kv_len - seq)
        mask = torch.arange(kv_len, device=device)[None, :] <= rows  # [seq, kv_len]

    def fn(q, k, v):
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if mask is None:
            causal = {"is_causal": True}
        else:
            causal = {"attn_mask": mask}
        try:
            out = F.scaled_dot_product_attention(qt, kt, vt, scale=constants["scale"],
                                                 enable_gqa=True, **causal)
        except TypeError:  # torch < 2.5
            kt, vt = kt.repeat_interleave(group, 1), vt.repeat_interleave(group, 1)
            out = F.scaled_dot_product_attention(qt, kt, vt, scale=constants["scale"], **causal)
        return out.transpose(1, 2).contiguous()

    return fn, (inputs["q"], inputs["k"], inputs["v"])


def build_library(torch, inputs, sizes, constants, name):
    """`sdpa`: the same call with SDPA pinned to its FlashAttention backend (refused where flash
    cannot run these inputs, such as an explicit mask: then None, and the row says so)."""
    if name != "sdpa" or sizes.get("kv_len", sizes["seq"]) != sizes["seq"]:
        return None
    from torch.nn.attention import SDPBackend, sdpa_kernel
    fn, args = build(torch, inputs, sizes, constants)

    def flash(*a):
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return fn(*a)
    flash.kopt_detail = "scaled_dot_product_attention, FlashAttention backend (sdpa_kernel)"
    return flash, args
