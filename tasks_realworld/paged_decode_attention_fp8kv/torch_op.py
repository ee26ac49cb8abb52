"""PyTorch's composition for paged_decode_attention_fp8kv (what a PyTorch serving stack without an
fp8 paged kernel does): gather each sequence's pages into a dense cache, decode the e4m3 codes and
multiply by the KV head's scale (in float32, then bf16 as the attention runs), zero the slots past
each query token's visible keys (they hold the e4m3 NaN code: stale cache contents), and call
scaled_dot_product_attention with grouped-query heads and a causal mask among the q_len new
tokens. A query token that sees no key (seq_lens 0) gets 0. The production kernels (vLLM's
paged_attention with kv_cache_dtype fp8, FlashInfer's fp8 decode, FlashAttention-3's descaled
fp8) are not PyTorch ops and are not installed on kopt's GPU machine: the baseline is this
composition.

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) -> out."""


def build(torch, inputs, sizes, constants):
    F = torch.nn.functional
    page, max_pages, q_len = sizes["page"], sizes["max_pages"], sizes["q_len"]
    group = sizes["q_heads"] // sizes["kv_heads"]
    table = inputs["block_table"].long()
    lens = inputs["seq_lens"].long()
    positions = torch.arange(max_pages * page, device=table.device)
    query = torch.arange(q_len, device=table.device)
    visible = (lens[:, None] - q_len + 1 + query[None, :])  # [batch, q_len]
    mask = positions[None, None, :] < visible[:, :, None]  # [batch, q_len, ctx]
    readable = positions[None, :] < lens[:, None]  # [batch, ctx]: slots a sequence owns

    def fn(q, k_pages, v_pages, k_scale, v_scale):
        def dense(pages, scales):  # [batch, ctx, kv_heads, d] -> [batch, q_heads, ctx, d]
            # Gathered as bytes: advanced indexing of float8 tensors is missing in some PyTorch
            # (the float64 oracle run gets the codes already widened).
            if pages.dtype == torch.float8_e4m3fn:
                x = pages.view(torch.uint8)[table].view(pages.dtype)
            else:
                x = pages[table]
            wide = torch.float64 if q.dtype == torch.float64 else torch.float32
            x = x.flatten(1, 2).to(wide) * scales[None, None, :, None].to(wide)
            x = torch.where(readable[:, :, None, None], x, torch.zeros((), dtype=x.dtype, device=x.device))
            return x.to(q.dtype).transpose(1, 2).repeat_interleave(group, dim=1)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), dense(k_pages, k_scale),
                                             dense(v_pages, v_scale), attn_mask=mask[:, None, :, :],
                                             scale=constants["scale"])
        out = out.transpose(1, 2)  # [batch, q_len, q_heads, d]
        seen = (visible > 0)[:, :, None, None]
        return torch.where(seen, out, torch.zeros((), dtype=out.dtype, device=out.device))

    return fn, (inputs["q"], inputs["k_pages"], inputs["v_pages"], inputs["k_scale"], inputs["v_scale"])
