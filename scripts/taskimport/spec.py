"""task.json (format 3) of an imported module, from what the run observed (pure Python)."""
import itertools
import math

from taskimport.sweep import DTYPE_BYTES, evaluate


def init_from_stats(dtype, stats):
    """The init that draws inputs like the module's example ones: stats has min, max, mean, std.

    Integers: randint over the observed range (an index stays an index). Floats: uniform where
    the example was uniform-looking (torch.rand: within [min, max] with std near range/sqrt(12)),
    else normal with the example's mean and std (a zero std becomes 1: a constant input checks
    nothing)."""
    lo, hi, mean, std = stats["min"], stats["max"], stats["mean"], stats["std"]
    if dtype in ("i32", "i64"):
        return {"dist": "randint", "low": int(lo), "high": int(hi) + 1}
    span = hi - lo
    if span > 0 and abs(std - span / math.sqrt(12)) < 0.05 * span and lo >= -1e-3 * span:
        return {"dist": "uniform", "low": _nice(lo), "high": _nice(hi)}
    return {"dist": "normal", "mean": _nice(mean) if abs(mean) > 0.05 * max(std, 1e-12) else 0,
            "std": _nice(std) if std > 0 else 1}


def symbolic_bound(init, sizes):
    """An index input's exclusive bound that equals a size becomes that size (targets in
    0..num_classes stay valid when the sweep changes num_classes)."""
    if init.get("dist") != "randint":
        return init
    for name, value in sizes.items():
        if init["high"] == value:
            return dict(init, high=name)
    return init


def signed(init):
    """A uniform init on [0, high] (torch.rand) made symmetric: all-positive inputs let a copy
    pass ReLU (tasks/README.md). The importer keeps it only where the module's outputs stay
    finite on it (log, sqrt need positive inputs)."""
    if init.get("dist") == "uniform" and init["low"] >= 0 and init["high"] > 0:
        return dict(init, low=-init["high"])
    return init


def _nice(x):
    return float("%.3g" % x)


def bytes_expr(tensors, dims_of):
    """Inputs read once plus outputs written once: the sum of each tensor's bytes."""
    terms = []
    for t in tensors:
        factors = [str(DTYPE_BYTES[t["dtype"]])] if DTYPE_BYTES[t["dtype"]] > 1 else []
        for e in dims_of(t):
            e = str(e)
            factors.append(e if e.isidentifier() or e.isdigit() else "(%s)" % e)
        terms.append("*".join(factors) or "1")
    return " + ".join(terms) if terms else "0"


def fit_flops(observations, sizes, fixed):
    """A flops expression `c*size*...` from [(bindings, counted flops)], or None.

    The free sizes' exponents (0 to 2) are fitted from the observations: the ratio of flops to
    the monomial must agree within 5% over the larger shapes (those with at least a millionth
    of the most flops: a cross entropy's per-row terms beside its rows * cols do not count
    there); what is left, a constant over them, is written as a small integer times the fixed
    sizes that divide it."""
    observations = [(b, f) for b, f in observations if f > 0]
    if not observations:
        return None
    top = max(f for _, f in observations)
    large = [(b, f) for b, f in observations if f >= top / 1e6] or observations
    biggest = max(range(len(large)), key=lambda i: large[i][1])  # its ratio is the coefficient
    free = [s for s in sizes if s not in fixed]
    best = None
    for exps in itertools.product(range(3), repeat=len(free)):
        ratios = []
        for b, f in large:
            mono = 1
            for s, e in zip(free, exps):
                mono *= b[s] ** e
            ratios.append(f / mono)
        if max(ratios) - min(ratios) <= 0.05 * max(ratios):
            degree = sum(exps)
            if best is None or degree < best[0]:
                best = (degree, exps, ratios[biggest])
    if best is None:
        return None
    _, exps, coef = best
    factors = []
    for s, e in zip(free, exps):
        factors += [s] * e
    # Fixed sizes that divide the coefficient, largest first (a Linear's in and out features).
    for s in sorted(fixed, key=lambda s: -sizes[s]):
        if sizes[s] > 1 and coef / sizes[s] >= 1 and abs(coef / sizes[s] - round(coef / sizes[s])) < 1e-6:
            coef /= sizes[s]
            factors.append(s)
    lead = "%d" % round(coef) if abs(coef - round(coef)) <= 0.05 * coef else "%.3g" % coef
    return "*".join([lead] + sorted(factors, key=lambda s: list(sizes).index(s)))


def bound_tag(flops, nbytes):
    return "compute-bound" if nbytes and flops / nbytes > 40 else "memory-bound"


def dtype_tag(dtypes):
    for d, tag in (("e4m3", "fp8"), ("bf16", "bf16"), ("f16", "fp16"), ("f32", "fp32")):
        if d in dtypes:
            return tag
    return "int"


def assemble(name, description, family, sizes, inputs, outputs, dims_of, shapes, holdout,
             stress, tol, flops, peak):
    """The task.json dict; inputs carry their "init"."""
    nbytes_text = bytes_expr(list(inputs) + list(outputs), dims_of)
    dtypes = {t["dtype"] for t in list(inputs) + list(outputs)}
    flops_at = evaluate(flops, sizes) if flops else 0
    task = {
        "format": 3,
        "name": name,
        "description": description,
        "tags": sorted(set(family)) + [bound_tag(flops_at, evaluate(nbytes_text, sizes)),
                                       dtype_tag(dtypes)],
        "sizes": dict(sizes),
        "inputs": [{"name": t["name"], "dtype": t["dtype"], "shape": [str(e) for e in dims_of(t)],
                    "init": t["init"]} for t in inputs],
        "outputs": [{"name": t["name"], "dtype": t["dtype"],
                     "shape": [str(e) for e in dims_of(t)]} for t in outputs],
        "shapes": shapes,
        "holdout": holdout,
        "tolerance": tol,
        "flops": flops or "0",
        "bytes": nbytes_text,
        "peak": peak,
        # The module itself is what a PyTorch user runs today: its eager and torch.compile times
        # (torch_op.py, measured by `kopt baselines`) are the task's production baselines.
        "production_baselines": ["torch_eager", "torch_compile"],
    }
    if stress:
        task["stress"] = stress
    if not holdout:
        del task["holdout"]
    return task
