"""What a PyTorch user writes for each task: the eager operation that kopt's kernels compete with,
keyed by task name. Each entry takes the task's inputs (named as in task.json, dtypes as in
task.json: bf16 where the task is bf16), its sizes and constants, and returns (fn, args) where
fn(*args) computes the task's outputs. Conversions a PyTorch caller would do once (int32 ids to
int64) happen here, outside fn, so they are not timed.

Every task of the suite must have an entry (quality.py checks)."""
import math


def _rms_norm(torch, x, weight, eps):
    F = torch.nn.functional
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    # Llama's RMSNorm as HF transformers writes it, for torch versions without F.rms_norm.
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return (h * weight.float()).to(x.dtype)


def _attention(torch, q, k, v, causal, gqa_groups=1):
    F = torch.nn.functional
    if hasattr(F, "scaled_dot_product_attention"):
        if gqa_groups > 1:
            try:
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            except TypeError:  # torch < 2.5: expand the KV heads
                k = k.repeat_interleave(gqa_groups, dim=-3)
                v = v.repeat_interleave(gqa_groups, dim=-3)
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    if gqa_groups > 1:
        k = k.repeat_interleave(gqa_groups, dim=-3)
        v = v.repeat_interleave(gqa_groups, dim=-3)
    scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        n = scores.shape[-1]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return (scores.softmax(-1) @ v.float()).to(q.dtype)


def _rope(torch, x, c, s):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).to(x.dtype)


def build(torch, task, inputs, sizes, constants):
    """(fn, args) for `task`; fn(*args) returns the outputs (a tensor or a tuple)."""
    F = torch.nn.functional
    i, z, c = inputs, sizes, constants
    if task == "axpy":
        return (lambda x, y: c["alpha"] * x + y), (i["x"], i["y"])
    if task == "gelu":
        return (lambda x: F.gelu(x, approximate="tanh")), (i["x"],)
    if task == "swiglu":
        ffn = z["ffn"]
        return (lambda x: F.silu(x[:, :ffn]) * x[:, ffn:]), (i["x"],)
    if task == "softmax":
        return (lambda x: torch.softmax(x, dim=-1)), (i["x"],)
    if task == "cross_entropy":
        return ((lambda logits, t: F.cross_entropy(logits, t, reduction="none")),
                (i["logits"], i["targets"].long()))
    if task == "layernorm":
        return ((lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, c["eps"])),
                (i["x"], i["weight"], i["bias"]))
    if task == "rmsnorm":
        return (lambda x, w: _rms_norm(torch, x, w, c["eps"])), (i["x"], i["weight"])
    if task == "residual_rmsnorm":
        def residual_rmsnorm(x, residual, w):
            r = x + residual
            return r, _rms_norm(torch, r, w, c["eps"])
        return residual_rmsnorm, (i["x"], i["residual"], i["weight"])
    if task == "sum_dim":
        return (lambda x: torch.sum(x, dim=1)), (i["x"],)
    if task == "mse_loss":
        return (lambda p, t: F.mse_loss(p, t)), (i["pred"], i["target"])
    if task == "transpose":
        return (lambda x: x.t().contiguous()), (i["x"],)
    if task == "embedding":
        return (lambda ids, w: F.embedding(ids, w)), (i["ids"].long(), i["weight"])
    if task == "rope":
        def rope(q, k, positions, cos, sin):
            cc, ss = cos[positions].unsqueeze(1), sin[positions].unsqueeze(1)
            return _rope(torch, q, cc, ss), _rope(torch, k, cc, ss)
        return rope, (i["q"], i["k"], i["positions"].long(), i["cos"], i["sin"])
    if task == "matvec":
        return (lambda a, x: torch.mv(a, x)), (i["A"], i["x"])
    if task == "sgemm":
        return (lambda a, b: a @ b), (i["A"], i["B"])  # TF32 off: the caller sets it
    if task == "bf16_gemm":
        return (lambda a, w: F.linear(a, w)), (i["A"], i["W"])
    if task == "gemm_bias_relu":
        return (lambda a, w, b: F.relu(F.linear(a, w, b))), (i["A"], i["W"], i["bias"])
    if task == "causal_attention":
        def causal(q, k, v):
            return _attention(torch, q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), True)[0]
        return causal, (i["q"], i["k"], i["v"])
    if task == "decode_attention":
        groups = z["q_heads"] // z["kv_heads"]
        def decode(q, k, v):
            return _attention(torch, q.unsqueeze(2), k, v, False, groups).squeeze(2)
        return decode, (i["q"], i["k_cache"], i["v_cache"])
    if task == "topk":
        return (lambda x: torch.topk(x, z["k"], dim=-1)), (i["x"],)
    if task == "moe_gating":
        def gating(logits):
            weights, ids = torch.topk(torch.softmax(logits, dim=-1), 2, dim=-1)
            return weights, ids
        return gating, (i["logits"],)
    if task == "prefix_sum":
        return (lambda x: torch.cumsum(x, dim=1)), (i["x"],)
    raise KeyError("no PyTorch equivalent for task %r: add one to bench/torch_ops.py" % task)


def outputs_as_tuple(result):
    return result if isinstance(result, tuple) else (result,)
