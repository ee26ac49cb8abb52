"""PyTorch's composition for w4a16_gemm: unpack the nibbles, dequantize to bf16 and call the
bf16 GEMM (what a PyTorch model without a fused int4 kernel runs). The production kernels
(Marlin, AWQ's GEMM, torch._weight_int4pack_mm with its own tiled layout) need their own
packing, so they are not timed from this layout.

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) -> out."""


def build(torch, inputs, sizes, constants):
    group = sizes["group"]
    shifts = torch.arange(0, 32, 4, device=inputs["x"].device, dtype=torch.int32)

    def fn(x, w_packed, scales):
        nibbles = (w_packed[:, :, None] >> shifts) & 0xF            # [n, k/8, 8]
        w = (nibbles.flatten(1) - 8).to(torch.bfloat16)              # [n, k]
        w = w * scales.repeat_interleave(group, dim=1)
        return x @ w.t()

    return fn, (inputs["x"], inputs["w_packed"], inputs["scales"])
