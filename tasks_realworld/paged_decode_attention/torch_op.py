"""PyTorch's composition for paged_decode_attention (what a PyTorch serving stack without a paged
kernel does): gather each sequence's pages into a dense cache, mask past seq_lens, and call
scaled_dot_product_attention with grouped-query heads. The production kernels (vLLM's
paged_attention, FlashInfer's decode) are not PyTorch ops, so they are not timed here.

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) -> out."""


def build(torch, inputs, sizes, constants):
    F = torch.nn.functional
    page, max_pages = sizes["page"], sizes["max_pages"]
    group = sizes["q_heads"] // sizes["kv_heads"]
    table = inputs["block_table"].long()
    positions = torch.arange(max_pages * page, device=table.device)
    mask = positions[None, :] < inputs["seq_lens"].long()[:, None]  # [batch, ctx]

    def fn(q, k_pages, v_pages):
        def dense(pages):  # [batch, max_pages * page, kv_heads, d] -> [batch, kv_heads, ctx, d]
            x = pages[table].flatten(1, 2)
            return x.transpose(1, 2).repeat_interleave(group, dim=1)
        scores_mask = mask[:, None, None, :]
        out = F.scaled_dot_product_attention(q[:, :, None, :], dense(k_pages), dense(v_pages),
                                             attn_mask=scores_mask, scale=constants["scale"])
        return out[:, :, 0, :]

    return fn, (inputs["q"], inputs["k_pages"], inputs["v_pages"])
