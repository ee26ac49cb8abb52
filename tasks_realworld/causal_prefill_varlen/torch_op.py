"""PyTorch's composition for causal_prefill_varlen: FlashAttention's varlen call has no PyTorch op,
so a PyTorch user loops over the sequences (cu_seqlens read on the host once, at build time) and
calls scaled_dot_product_attention per sequence with grouped-query heads and the bottom-right
causal mask (query i of a sequence sees keys j < kv_len - q_len + 1 + i); queries that see no key,
and rows of no sequence (padding), get 0. The production kernel (flash_attn_varlen_func,
FlashAttention 2/3, as vLLM and SGLang call it) is not installed on kopt's GPU machine: the
baseline is this composition, slower than one varlen launch by a launch per sequence.

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) -> out."""


def build(torch, inputs, sizes, constants):
    F = torch.nn.functional
    group = sizes["q_heads"] // sizes["kv_heads"]
    cu_q = inputs["cu_seqlens_q"].long().tolist()
    cu_k = inputs["cu_seqlens_k"].long().tolist()
    device = inputs["q"].device
    pieces = []  # (q start, q_len, k start, kv_len, mask [q_len, kv_len], seen [q_len])
    for b in range(sizes["batch"]):
        q_len, kv_len = cu_q[b + 1] - cu_q[b], cu_k[b + 1] - cu_k[b]
        if q_len <= 0:
            continue
        i = torch.arange(q_len, device=device)
        j = torch.arange(kv_len, device=device)
        mask = j[None, :] < (kv_len - q_len + 1 + i)[:, None]
        pieces.append((cu_q[b], q_len, cu_k[b], kv_len, mask, mask.any(dim=1)))

    def fn(q, k, v):
        out = torch.zeros_like(q)
        for q0, q_len, k0, kv_len, mask, seen in pieces:
            if kv_len == 0:
                continue
            qs = q[q0:q0 + q_len].transpose(0, 1)[None]  # [1, q_heads, q_len, d]
            ks = k[k0:k0 + kv_len].transpose(0, 1).repeat_interleave(group, dim=0)[None]
            vs = v[k0:k0 + kv_len].transpose(0, 1).repeat_interleave(group, dim=0)[None]
            o = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=mask[None, None],
                                               scale=constants["scale"])[0].transpose(0, 1)
            out[q0:q0 + q_len] = torch.where(seen[:, None, None], o, torch.zeros((), dtype=o.dtype, device=device))
        return out

    return fn, (inputs["q"], inputs["k"], inputs["v"])
