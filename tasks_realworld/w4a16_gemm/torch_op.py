"""PyTorch's composition for w4a16_gemm (GPTQ with act-order and zero points): unpack the weight
and zero-point nibbles, look each input channel's group up in g_idx, dequantize and call the GEMM
(what a PyTorch model without a fused int4 kernel runs; in the inputs' dtype, so float64 when the
reference is validated). The production kernels (Marlin with act-order, exllama v2, vLLM's
gptq_marlin_gemm) need their own repacked layouts and are not installed on kopt's GPU machine:
the baseline is this composition.

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) -> out."""


def build(torch, inputs, sizes, constants):
    k = sizes["k"]
    groups = (k + sizes["group"] - 1) // sizes["group"]
    shifts = torch.arange(0, 32, 4, device=inputs["x"].device, dtype=torch.int32)
    g_idx = inputs["g_idx"].long()

    def fn(x, w_packed, scales, zeros):
        nibbles = ((w_packed[:, :, None] >> shifts) & 0xF).flatten(1)        # [n, k]
        zero = ((zeros[:, :, None] >> shifts) & 0xF).flatten(1)[:, :groups]  # [n, groups]
        w = (nibbles - zero[:, g_idx]).to(x.dtype) * scales[:, g_idx].to(x.dtype)
        return x @ w.t()

    return fn, (inputs["x"], inputs["w_packed"], inputs["scales"], inputs["zeros"])
