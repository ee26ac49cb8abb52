"""PyTorch's production op for causal_prefill_gqa: scaled_dot_product_attention (FlashAttention-2
backend on Hopper for bf16, causal, d = 128) with grouped-query heads (enable_gqa), on the
[batch, heads, seq, d] views of the task's [batch, seq, heads, d] tensors (transposes are views:
SDPA takes strided inputs; the output is made contiguous in the task's layout inside fn).

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) -> out."""


def build(torch, inputs, sizes, constants):
    F = torch.nn.functional
    group = sizes["q_heads"] // sizes["kv_heads"]

    def fn(q, k, v):
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        try:
            out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True,
                                                 scale=constants["scale"], enable_gqa=True)
        except TypeError:  # torch < 2.5
            kt, vt = kt.repeat_interleave(group, 1), vt.repeat_interleave(group, 1)
            out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True,
                                                 scale=constants["scale"])
        return out.transpose(1, 2).contiguous()

    return fn, (inputs["q"], inputs["k"], inputs["v"])
