"""PyTorch's composition for fp8_block_gemm: dequantize x and w with their block scales and call
the GEMM (what a PyTorch model without a fused fp8 kernel runs: DeepSeek-V3's own inference code
falls back to weight_dequant + a bf16 linear). The production kernels (DeepGEMM, cuBLASLt's fp8
matmul with block scales, torch._scaled_mm's blockwise modes on newer PyTorch) are not PyTorch
ops on every version, so they are not timed from here.

In bf16 on fp8 inputs (a production baseline); in float64 when given float64 tensors (the
importer's oracle: then the result is the exact sum).

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) -> out."""


def build(torch, inputs, sizes, constants):
    def fn(x, x_scale, w, w_scale):
        wide = torch.float64 if x_scale.dtype == torch.float64 else torch.bfloat16
        n = w.shape[0]
        xs = x_scale.to(wide).repeat_interleave(128, dim=1)        # [m, k]
        ws = w_scale.to(wide).repeat_interleave(128, dim=0)[:n]     # [n, k / 128]
        a = x.to(wide) * xs
        b = w.to(wide) * ws.repeat_interleave(128, dim=1)           # [n, k]
        return a @ b.t()

    return fn, (inputs["x"], inputs["x_scale"], inputs["w"], inputs["w_scale"])
