"""PyTorch's way to compute fp8_block_gemm. Where this PyTorch has it (2.10 and later on Hopper),
torch.nn.functional.scaled_mm with BlockWise1x128 scales for x and BlockWise128x128 for w: cuBLASLt's
fp8 matmul with DeepSeek-V3's block scales, the production kernel a PyTorch user can reach.
Elsewhere, or if that call refuses these shapes or disagrees with the composition below on the
task's inputs, the composition itself: dequantize x and w with their block scales and call a bf16
GEMM (what DeepSeek-V3's own inference code falls back to: weight_dequant + a bf16 linear). The
function says which one it is in its `kopt_detail` (scripts/torch_baselines.py puts it in the
row's detail).

In float64 when given float64 tensors (the importer's oracle: then the result is the exact sum).

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) -> out."""


def composition(torch):
    def fn(x, x_scale, w, w_scale):
        wide = torch.float64 if x_scale.dtype == torch.float64 else torch.bfloat16
        n = w.shape[0]
        k = x.shape[1]
        xs = x_scale.to(wide).repeat_interleave(128, dim=1)[:, :k]  # [m, k]
        ws = w_scale.to(wide).repeat_interleave(128, dim=0)[:n]     # [n, ceil(k / 128)]
        a = x.to(wide) * xs
        b = w.to(wide) * ws.repeat_interleave(128, dim=1)[:, :k]    # [n, k]
        return a @ b.t()
    fn.kopt_detail = "dequantize to bf16 + bf16 GEMM"
    return fn


def blockwise_scaled_mm(torch):
    """F.scaled_mm's DeepSeek layout: x [m, k] row-major with its scales outer-dim-major, w as
    [k, n] column-major (w.t()) with its [n / 128, k / 128] scales transposed."""
    F = torch.nn.functional
    if not (hasattr(F, "scaled_mm") and hasattr(F, "ScalingType")):
        return None
    block_1x128 = F.ScalingType.BlockWise1x128
    block_128x128 = F.ScalingType.BlockWise128x128

    def fn(x, x_scale, w, w_scale):
        return F.scaled_mm(x, w.t(), x_scale.t().contiguous().t(), block_1x128, w_scale.t(),
                           block_128x128, output_dtype=torch.bfloat16)
    fn.kopt_detail = "F.scaled_mm, BlockWise1x128 x BlockWise128x128 (cuBLASLt fp8)"
    return fn


def build(torch, inputs, sizes, constants):
    args = (inputs["x"], inputs["x_scale"], inputs["w"], inputs["w_scale"])
    plain = composition(torch)
    if inputs["x"].dtype != torch.float8_e4m3fn:
        return plain, args
    fast = blockwise_scaled_mm(torch)
    if fast is None:
        return plain, args
    try:
        got, want = fast(*args).float(), plain(*args).float()
    except (RuntimeError, TypeError, ValueError) as e:
        plain.kopt_detail += " (F.scaled_mm refused: %s)" % (str(e).splitlines() or [""])[0][:80]
        return plain, args
    # Both round to bf16 from different accumulation orders; a wrong layout is off by far more.
    if not bool(((got - want).abs() <= 0.05 + 0.02 * want.abs()).all()):
        plain.kopt_detail += " (F.scaled_mm disagreed with it)"
        return plain, args
    return fast, args
