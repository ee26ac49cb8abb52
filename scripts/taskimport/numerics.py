"""Stress rounds, tolerance and peak from the operation's numerics (pure Python).

The operations come from the aten ops the module ran (recorded with a dispatch mode on the GPU
machine), the inputs from their observed dtypes. Each rule springs a trap of tasks/README.md
"Stress rounds"; kopt adds the mirrored twin of a one-signed round itself (format 3). The
importer runs the module on every proposed round and drops one whose PyTorch outputs hold NaN or
Inf (the round is outside the operation's domain there), saying so."""

# aten op name stems (without "aten." and overload) by the trap they meet.
SHIFT_INVARIANT = {"_softmax", "softmax", "_log_softmax", "log_softmax", "logsumexp",
                   "nll_loss", "cross_entropy_loss", "nll_loss_forward"}
SATURATING = {"exp", "sigmoid", "tanh", "gelu", "silu", "softplus", "elu", "selu", "mish",
              "hardtanh", "hardsigmoid", "hardswish", "log_sigmoid_forward", "exp2", "expm1"}
VARIANCE = {"var", "std", "var_mean", "std_mean", "native_layer_norm", "native_group_norm",
            "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
            "instance_norm", "layer_norm", "group_norm", "batch_norm"}
ACCUMULATING = {"sum", "mean", "cumsum", "cumprod", "mse_loss", "linalg_vector_norm", "norm",
                "_euclidean_dist", "cdist", "l1_loss", "smooth_l1_loss", "huber_loss"}
SQUARING = {"pow", "linalg_vector_norm", "norm", "rsqrt", "mse_loss", "_fused_rms_norm",
            "rms_norm"}
SELECTING = {"max", "min", "argmax", "argmin", "amax", "amin", "topk", "sort", "argsort",
             "max_pool2d_with_indices", "max_pool1d", "max_pool2d", "max_pool3d_with_indices",
             "cummax", "cummin", "median", "kthvalue"}
MATMUL = {"mm", "bmm", "addmm", "matmul", "linear", "baddbmm", "convolution", "_convolution",
          "cudnn_convolution", "conv2d", "conv1d", "conv3d", "conv_transpose2d",
          "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
          "_scaled_dot_product_cudnn_attention", "scaled_dot_product_attention", "einsum"}


def op_stems(ops):
    """'aten._softmax.default' -> '_softmax'."""
    stems = set()
    for op in ops:
        parts = str(op).split(".")
        stems.add(parts[1] if parts[0] == "aten" and len(parts) > 1 else parts[0])
    return stems


def propose_stress(ops, inputs):
    """-> [stress round] for the float data inputs (dicts with name, dtype)."""
    stems = op_stems(ops)
    data = [t["name"] for t in inputs if t["dtype"] in ("f32", "f16", "bf16")]
    if not data:
        return []

    def each(init):
        return {name: dict(init) for name in data}

    rounds = []
    if stems & SHIFT_INVARIANT:
        rounds.append({"name": "std 40", "inputs": each({"dist": "normal", "mean": 0, "std": 40})})
        rounds.append({"name": "mean 1000",
                       "inputs": each({"dist": "normal", "mean": 1000, "std": 1})})
    elif stems & SATURATING:
        rounds.append({"name": "std 40", "inputs": each({"dist": "normal", "mean": 0, "std": 40})})
    if stems & VARIANCE:
        rounds.append({"name": "mean 1000, tiny spread",
                       "inputs": each({"dist": "normal", "mean": 1000, "std": 0.1})})
        rounds.append({"name": "constant rows",
                       "inputs": each({"dist": "constant", "value": 3})})
    if stems & ACCUMULATING and not stems & VARIANCE:
        rounds.append({"name": "offset 1000",
                       "inputs": each({"dist": "uniform", "low": 1000, "high": 1000.5})})
    if stems & SQUARING and not any(r["name"] == "std 40" for r in rounds):
        rounds.append({"name": "outliers std 1000",
                       "inputs": each({"dist": "normal", "mean": 0, "std": 1000})})
    if stems & SELECTING:
        rounds.append({"name": "ties", "inputs": each({"dist": "randint", "low": 0, "high": 8})})
        rounds.append({"name": "equal rows", "inputs": each({"dist": "constant", "value": 1})})
    return rounds


def is_matmul_like(ops):
    return bool(op_stems(ops) & MATMUL)


def peak(ops, dtypes):
    if not is_matmul_like(ops):
        return "fp32"
    if "e4m3" in dtypes:
        return "fp8_tensor"
    if "bf16" in dtypes:
        return "bf16_tensor"
    if "f16" in dtypes:
        return "fp16_tensor"
    return "fp32"


def _round_sig(x):
    return float("%.2g" % x) if x > 0 else 0.0


def tolerance(dtype, out_rms, out_max, reduce_len):
    """A tolerance a correct kernel in the output's precision passes.

    Integer outputs (indices) are exact: no slack, and a cap of 0.5 (kopt requires a positive
    max_error; any wrong integer is off by 1 or more). Floats: rtol of a few roundings of the output's type
    (bf16 1.6e-2 as torch.testing; f16 1e-3; f32 1e-5, growing with sqrt of the reduction length
    since fp32 sums drift), atol the same share of the output's rms (values near 0 after
    cancellation), max_error a cap at 8x that slack at the largest output."""
    if dtype in ("i32", "i64"):
        return {"atol": 0, "rtol": 0, "max_error": 0.5}
    if dtype == "bf16":
        rtol = 1.6e-2
    elif dtype == "f16":
        rtol = 1e-3
    else:
        rtol = 1e-5 * max(1.0, min(100.0, (max(reduce_len, 1) ** 0.5) / 8))
    scale = out_rms if out_rms > 0 else 1.0
    atol = _round_sig(max(rtol * scale, 1e-6))
    max_error = _round_sig(8 * (atol + rtol * max(out_max, scale)))
    return {"atol": atol, "rtol": rtol, "max_error": max_error}


def cover_magnitudes(tol, out_maxima):
    """The tolerance with max_error raised to cover the largest output any round produces.

    max_error is one absolute cap for the whole task, sized at first from the example's outputs;
    a stress round with outputs a thousand times larger (a loss over values of std 1000) would
    then refuse a correct fp32 result off by its rounding there. The cap is kept at 8x the
    per-element slack at the largest output seen (out_maxima: max |out| of each round); the
    per-element check (atol + rtol * |ref|) is unchanged."""
    largest = max([m for m in out_maxima if m == m and m != float("inf")] or [0.0])
    if tol["rtol"] == 0 and tol["atol"] == 0:
        return dict(tol)  # exact outputs: the cap stays
    wanted = _round_sig(8 * (tol["atol"] + tol["rtol"] * largest))
    return dict(tol, max_error=max(tol["max_error"], wanted))


def redraw_scale(std, mean_abs):
    """How large a redrawn parameter is in the degeneracy check (does the output depend on it?):
    its own spread, else its magnitude (LayerNorm's weight of ones), else 1 (a bias initialised
    to zero, whose redraw must not be zeros again)."""
    if std > 0:
        return std
    return mean_abs if mean_abs > 0 else 1.0


def mirrored(rnd):
    """The twin kopt adds for a one-signed round (format 3), or None: normal mean m -> -m,
    uniform low..high -> -high..-low, constant v -> -v, float whole numbers lo..hi -> -hi+1..-lo+1
    (tasks/README.md "Mirrored twins"); the importer validates the twin too."""
    if rnd.get("unmirrored"):
        return None
    twin, changed = {}, False
    for name, init in rnd["inputs"].items():
        init = dict(init)
        dist = init.get("dist", "normal")
        if dist == "normal" and init.get("mean", 0):
            init["mean"], changed = -init["mean"], True
        elif dist == "uniform" and init["low"] != -init["high"]:
            init["low"], init["high"], changed = -init["high"], -init["low"], True
        elif dist == "constant" and init.get("value", 0):
            init["value"], changed = -init["value"], True
        elif dist == "randint" and init["low"] != -(init["high"] - 1):
            init["low"], init["high"], changed = -(init["high"] - 1), -init["low"] + 1, True
        twin[name] = init
    if not changed:
        return None
    return {"name": "%s (mirror)" % rnd["name"], "inputs": twin, "mirror_of": rnd["name"]}
