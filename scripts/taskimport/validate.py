"""The reference against the PyTorch module on the GPU, at every sweep, holdout and stress shape.

Inputs are drawn fresh (a seed per shape) as task.json says; PyTorch computes in float64 where
the module allows (the oracle: no TF32, no reduced-precision sums), else in its own dtypes; the
reference runs through its kopt:plan, compiled by NVRTC with kopt's options
(bench/plan_launcher.py's PlanKernel). Outputs start as NaN so an element never written fails."""
import math

from taskimport.compare import describe, unravel, where_text
from taskimport.sweep import evaluate

import structured_inputs  # bench/: sys.path holds it wherever validate_reference runs

FLOAT = ("f32", "f16", "bf16", "e4m3")
TORCH = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "i64": "int64",
         "e4m3": "float8_e4m3fn"}
E4M3_MAX = 448.0  # kopt's fill saturates e4m3 here; torch's cast would make NaN past it


def make_inputs(torch, task, bindings, overrides, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    out = {}
    for t in task["inputs"]:
        shape = [evaluate(e, bindings) for e in t["shape"]]
        init = dict(overrides.get(t["name"], t.get("init", {})))
        dtype = getattr(torch, TORCH[t["dtype"]])
        dist = init.get("dist", "normal")
        made = structured_inputs.make(torch, t, init, shape, bindings, out, gen, evaluate)
        if made is not None:  # a block table or a permutation (bench/structured_inputs.py)
            out[t["name"]] = made.to(dtype)
            continue
        if dist == "randint":
            lo, hi = evaluate(init["low"], bindings), evaluate(init["high"], bindings)
            x = torch.randint(lo, hi, shape, generator=gen, device="cuda", dtype=torch.int64)
        elif dist == "uniform":
            x = torch.rand(shape, generator=gen, device="cuda", dtype=torch.float32)
            x = x * (init["high"] - init["low"]) + init["low"]
        elif dist == "constant":
            x = torch.full(shape, float(init["value"]), device="cuda", dtype=torch.float32)
        else:  # float32 draws: a 6 GB input drawn in float64 first would not fit beside the run
            x = torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32)
            x = x * init.get("std", 1.0) + init.get("mean", 0.0)
        if t["dtype"] == "e4m3":
            x = x.clamp(-E4M3_MAX, E4M3_MAX)
        x = structured_inputs.finish(torch, t, init, x, bindings, out, gen, evaluate)
        out[t["name"]] = x.to(dtype)
    return out


def run_torch(torch, build, task, inputs, bindings):
    """Outputs in float64 when the module runs so, else in its dtypes (said in the second value)."""
    wide = {k: (v.double() if v.is_floating_point() else v) for k, v in inputs.items()}
    for given, label in ((wide, "float64"), (inputs, "its own dtypes")):
        try:
            fn, args = build(torch, given, bindings, task.get("constants", {}))
            with torch.no_grad():
                out = fn(*args)
            return (list(out) if isinstance(out, (tuple, list)) else [out]), label
        except Exception:  # an op without a float64 kernel: PyTorch in the module's dtypes
            if given is inputs:
                raise
    raise AssertionError("unreachable")


def check_outputs(torch, task, ref_outputs, torch_outputs, where):
    """None, or the first mismatch described (compare.py's rules, vectorised)."""
    tol = task["tolerance"]
    for spec, got, want in zip(task["outputs"], ref_outputs, torch_outputs):
        if want.dim() == 0 and got.numel() == 1:  # a loss: task shape [1]
            want = want.reshape(got.shape)
        if list(got.shape) != list(want.shape):
            return "%s: output '%s' has shape %s in task.json but PyTorch returns %s" % (
                where, spec["name"], list(got.shape), list(want.shape))
        index = _first_bad(torch, got.flatten(), want.flatten(), tol)
        if index is not None:
            return describe(spec["name"], unravel(index, list(got.shape)), float(got.flatten()[index]),
                            float(want.flatten()[index]), where, tol)
    return None


def _first_bad(torch, got, want, tol, chunk=1 << 26):
    """compare.first_mismatch's rule on GPU tensors, a chunk at a time (a 6 GB output compared
    in float64 at once would not fit beside the module's float64 run)."""
    failed, first_bad, first_over = 0, None, None
    for lo in range(0, got.numel(), chunk):
        r, e = got[lo:lo + chunk].double(), want[lo:lo + chunk].double()
        same = (r == e) | (torch.isnan(r) & torch.isnan(e))
        diff = (r - e).abs()
        bad = ~(diff <= tol["atol"] + tol["rtol"] * e.abs()) & ~same
        over = ~(diff <= tol["max_error"]) & ~same
        if first_over is None and bool(over.any()):
            first_over = lo + int(over.nonzero()[0])
        n = int(bad.sum())
        if n and first_bad is None:
            first_bad = lo + int(bad.nonzero()[0])
        failed += n
    if first_over is not None:
        return first_over
    if failed and (got.numel() - failed) < tol.get("min_pass_fraction", 1.0) * got.numel():
        return first_bad
    return None


def validate(torch, task, reference_source, build, plan_kernel, shapes, log):
    """Every (shape, stress round); -> (problems, dropped stress round names)."""
    problems, dropped = [], set()
    varied = False  # some output of some sweep or holdout shape holds two different values
    runs = [(o, None) for o in task["shapes"] + task.get("holdout", [])]
    for rnd in task.get("stress", []):
        for o in rnd.get("shapes", shapes(rnd)):
            runs.append((o, rnd))
    for seed, (overrides, rnd) in enumerate(runs, start=101):
        bindings = dict(task["sizes"])
        bindings.update(overrides)
        where = where_text(bindings, rnd["name"] if rnd else None)
        if rnd and rnd["name"] in dropped:
            continue
        inputs = make_inputs(torch, task, bindings, rnd["inputs"] if rnd else {}, seed)
        want, label = run_torch(torch, build, task, inputs, bindings)
        if rnd and any(w.is_floating_point() and not bool(torch.isfinite(w).all()) for w in want):
            dropped.add(rnd["name"])
            log("stress round '%s' dropped: PyTorch's outputs hold NaN or Inf at %s (outside the "
                "operation's domain)" % (rnd["name"], where))
            continue
        if not rnd:
            varied = varied or any(w.numel() > 1 and bool((w != w.flatten()[0]).any())
                                   for w in want)
        outs = {}
        for spec in task["outputs"]:
            shape = [evaluate(e, bindings) for e in spec["shape"]]
            t = torch.empty(shape, device="cuda", dtype=getattr(torch, TORCH[spec["dtype"]]))
            if spec["dtype"] in FLOAT:
                t.fill_(math.nan)
            else:
                t.fill_(-1)
            outs[spec["name"]] = t
        tensors = dict(inputs)
        tensors.update(outs)
        plan_kernel(torch, task, reference_source, "reference.cu", bindings, tensors).launch()
        torch.cuda.synchronize()
        problem = check_outputs(torch, task, [outs[s["name"]] for s in task["outputs"]], want,
                                where + " (PyTorch in %s)" % label)
        if problem:
            problems.append(problem)
            break  # the first mismatch refuses the task: no need to go on
        log("ok  %s" % where)
        del inputs, want, outs, tensors
        torch.cuda.empty_cache()
    if not problems and not varied:
        # A kernel that writes that one value would pass every check: the task cannot tell a right
        # kernel from a cheap wrong one (kopt tasks check refuses it on the GPU for that reason).
        problems.append("the module's outputs are constant at every sweep and holdout shape (for "
                        "example every element 0 after a ReLU of values that are all negative at "
                        "these inputs): the task could not tell a right kernel from one that "
                        "writes that constant; change the inputs' init in the problem or pick "
                        "another problem")
    return problems, sorted(dropped)
