#!/usr/bin/env python3
"""kopt tasks import's helper: a KernelBench-style PyTorch module -> a validated task folder.

  task_import.py FILE.py --out STAGING --name N --reference reference.cu [--function F]
  task_import.py --kernelbench FILE... [--references DIR --out-root DIR]

`kopt tasks import` runs this (it needs PyTorch and a CUDA GPU), then validates the staged
task.json with kopt's own parser and moves the folder into the suite. The steps:
  1. run the module on its example inputs: tensors' names, dtypes, shapes; the aten ops it ran;
  2. sizes (taskimport/sizes.py), sweep and holdouts (sweep.py), stress rounds and tolerance
     (numerics.py), flops fitted from torch's flop counter, bytes (spec.py);
  3. write task.json, module.py (the problem file) and torch_op.py (torch_op_file.py);
  4. the reference against the module at every sweep, holdout and stress shape (validate.py):
     a mismatch names the shape, the element and both values, and nothing is kept.
Exit codes: 0 imported, 1 refused (not importable, or the reference disagrees), 2 usage,
3 PyTorch or a GPU missing."""
import argparse
import json
import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "bench"))

from taskimport import numerics, sizes as sizes_mod, spec as spec_mod, sweep  # noqa: E402
from taskimport.module_run import NotImportable, Problem, dtype_name  # noqa: E402
from taskimport.torch_op_file import render  # noqa: E402

SMALL_SHAPE_BYTES = 64 << 20  # stress rounds run on the sweep shapes under this (as kopt does)


def need_torch():
    try:
        import torch
    except ImportError as e:
        sys.stderr.write("kopt tasks import: PyTorch is missing for %s (%s); import runs the "
                         "module, so run it where torch and a CUDA GPU are (pip install torch)\n"
                         % (sys.executable, e))
        sys.exit(3)
    if not torch.cuda.is_available():
        sys.stderr.write("kopt tasks import: PyTorch %s sees no CUDA GPU; the reference is "
                         "validated on the GPU, so run it on a machine with one\n"
                         % torch.__version__)
        sys.exit(3)
    return torch


def _stats(torch, t):
    x = t.double()
    return {"min": float(x.min()), "max": float(x.max()), "mean": float(x.mean()),
            "std": float(x.std()) if x.numel() > 1 else 0.0}


def derive(torch, problem, name, log):
    """The task dict (without validation) and the torch_op.py text."""
    outs = problem.check_deterministic()
    _, ops, _, _ = problem.record(problem.example, problem.param_values)
    inputs = [{"name": n, "dtype": dtype_name(torch, t), "shape": list(t.shape),
               "init": spec_mod.init_from_stats(dtype_name(torch, t), _stats(torch, t))}
              for n, t in zip(problem.data_names, problem.example)]
    params = [{"name": n, "dtype": dtype_name(torch, t), "shape": list(t.shape),
               "init": spec_mod.init_from_stats(dtype_name(torch, t), _stats(torch, t))}
              for n, t in zip(problem.param_names, problem.param_values)]
    out_names = ["out"] if len(outs) == 1 else ["out%d" % i for i in range(len(outs))]
    # A 0-d output (a loss) is a task output of shape [1], as the suite's mse_loss.
    outputs = [{"name": n, "dtype": dtype_name(torch, t), "shape": list(t.shape) or [1]}
               for n, t in zip(out_names, outs)]
    sizes, fixed, dims = sizes_mod.derive_sizes(inputs, outputs, params,
                                                matmul=numerics.is_matmul_like(ops))
    if fixed:
        log("sizes the parameters fix (never swept): %s" % ", ".join(sorted(fixed)))
    for t in inputs:
        t["init"] = spec_mod.symbolic_bound(t["init"], sizes)
        wider = spec_mod.signed(t["init"])
        if wider is not t["init"] and _finite_on(torch, problem, inputs, t, wider):
            t["init"] = wider
    tensors = inputs + params
    first = inputs[0] if inputs else None
    innermost = dims.get((first["name"], len(first["shape"]) - 1)) if first and first["shape"] \
        else None

    observations, flop_obs = [], []

    def data_at(bindings):
        data = []
        for t in inputs:
            shape = [sweep.evaluate(e, bindings) for e in sizes_mod.shape_exprs(t, dims)]
            data.append(_like(torch, t, shape, bindings))
        return data

    def valid(bindings):
        try:
            data = data_at(bindings)
            o, _, elements, counted = problem.record(data, problem.param_values)
            why = _degenerate(torch, problem, data, o, [t["name"] for t in inputs + params],
                              lambda i: _like(torch, inputs[i], list(data[i].shape), bindings))
        except Exception as e:  # the module refuses the shape: drop it, and say so
            log("shape %s dropped: the module raised %s" % (bindings, type(e).__name__))
            return False
        if why:
            log("shape %s dropped: %s (kopt's hygiene check refuses such a shape)" % (bindings, why))
            return False
        observations.append((dict(bindings),
                             {n: list(t.shape) or [1] for n, t in zip(out_names, o)}))
        flop_obs.append((dict(bindings), counted or elements))
        return True

    in_bytes = lambda b: sweep.tensor_bytes(tensors, lambda t: sizes_mod.shape_exprs(t, dims), b)
    valid(sizes)
    shapes, holdout = sweep.propose_shapes(sizes, fixed, innermost, in_bytes, valid)
    problems = sizes_mod.fit_output_shapes(outputs, dims, observations, sizes)
    if problems:
        raise NotImportable("; ".join(problems))
    flops = spec_mod.fit_flops(flop_obs, sizes, fixed)
    out_t = outs[0].double()
    reduce_len = max(1, sum(t.numel() for t in problem.example) // max(1, outs[0].numel()))
    if numerics.is_matmul_like(ops):
        reduce_len = max(reduce_len, max(sizes[s] for s in fixed) if fixed else 1)
    tol = numerics.tolerance(outputs[0]["dtype"], float(out_t.pow(2).mean().sqrt()),
                             float(out_t.abs().max()), reduce_len)
    stress = numerics.propose_stress(ops, inputs)
    dtypes = {t["dtype"] for t in tensors + outputs}
    family = sorted({s.lstrip("_") for s in numerics.op_stems(ops)} -
                    {"view", "t", "_to_copy", "to_copy", "detach", "clone", "expand",
                     "unsqueeze", "squeeze", "permute", "transpose", "reshape", "unsafe_view"})[:6]
    doc = problem.doc
    description = ("Imported from %s by kopt tasks import: the PyTorch module's forward (module.py "
                   "beside this file), parameters as inputs %s. %s Outputs: %s." % (
                       problem.path.name, [p["name"] for p in params],
                       " ".join(doc.split())[:400],
                       ", ".join("%s %s%s" % (o["name"], o["dtype"], sizes_mod.shape_exprs(o, dims))
                                 for o in outputs)))
    task = spec_mod.assemble(name, description, family, sizes, tensors, outputs,
                             lambda t: sizes_mod.shape_exprs(t, dims), shapes, holdout, stress,
                             tol, flops, numerics.peak(ops, dtypes))
    # One max_error for the sweep and every stress round: sized to the largest outputs.
    covered = numerics.cover_magnitudes(task["tolerance"], stress_maxima(torch, problem, task))
    if covered != task["tolerance"]:
        log("max_error %g -> %g: the stress rounds' outputs are larger than the example's"
            % (task["tolerance"]["max_error"], covered["max_error"]))
        task["tolerance"] = covered
    torch_op = render(name, problem.path.name, problem.init_inputs, problem.function,
                      problem.data_names, problem.param_keys, problem.param_names)
    return task, torch_op


def _degenerate(torch, problem, data, outs, names, redraw):
    """Why kopt's hygiene check would refuse this shape (sandbox/worker/hygiene.cc), or None:
    an output near zero everywhere or constant, or an input the outputs do not depend on (a
    softmax over rows of one element is 1 whatever x is)."""
    for i, o in enumerate(outs):
        if not o.is_floating_point():
            continue
        if bool((o.abs() <= 1e-6).all()):
            return "output %d is near zero everywhere" % i
        if o.numel() > 1 and bool((o.flatten() == o.flatten()[0]).all()):
            return "output %d is constant" % i
    params = list(problem.param_values)
    for i, name in enumerate(names):
        d, p = list(data), list(params)
        if i < len(d):
            d[i] = redraw(i)
        else:
            j = i - len(d)
            if not p[j].is_floating_point():
                continue  # a counter buffer (BatchNorm's num_batches_tracked)
            # A zero-initialised bias redrawn at its own spread would be zeros again.
            v = p[j].double()
            scale = numerics.redraw_scale(float(v.std()) if v.numel() > 1 else 0.0,
                                          float(v.abs().mean()))
            p[j] = torch.randn_like(p[j]) * scale
        again = problem.call(d, p)
        if all(torch.equal(a, b) for a, b in zip(again, outs)):
            return "the outputs do not depend on input '%s' there" % name
    return None


def _finite_on(torch, problem, inputs, tensor, init):
    """Whether the module's outputs stay finite with `tensor` drawn from `init` (the example's
    shapes): a signed range is kept only where the op's domain allows it."""
    data = []
    for t, example in zip(inputs, problem.example):
        if t is tensor:
            x = torch.rand(example.shape, device="cuda") * (init["high"] - init["low"]) + init["low"]
            data.append(x.to(example.dtype))
        else:
            data.append(example)
    outs = problem.call(data, problem.param_values)
    return all(bool(torch.isfinite(o).all()) for o in outs if o.is_floating_point())


def _like(torch, t, shape, bindings):
    dtype = getattr(torch, {"f32": "float32", "f16": "float16", "bf16": "bfloat16",
                            "i32": "int32", "i64": "int64", "e4m3": "float8_e4m3fn"}[t["dtype"]])
    init = t["init"]
    if init["dist"] == "randint":
        high = init["high"] if isinstance(init["high"], int) else bindings[init["high"]]
        return torch.randint(init["low"], high, shape, device="cuda", dtype=dtype)
    return torch.randn(shape, device="cuda").to(dtype)


def load_torch_op(folder):
    import importlib.util
    spec = importlib.util.spec_from_file_location("kopt_import_torch_op", folder / "torch_op.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build


def validate_reference(torch, task, folder, reference, log):
    """-> problems; drops stress rounds PyTorch leaves NaN/Inf on, marks twins unmirrored."""
    from plan_launcher import PlanKernel
    from taskimport.validate import validate

    build = load_torch_op(folder)
    staged = dict(task)
    twins = [numerics.mirrored(r) for r in task.get("stress", [])]
    staged["stress"] = task.get("stress", []) + [t for t in twins if t]

    def small_shapes(_):
        keep = []
        for o in task["shapes"]:
            b = dict(task["sizes"])
            b.update(o)
            tensors = task["inputs"] + task["outputs"]
            if sweep.tensor_bytes(tensors, lambda t: t["shape"], b) <= SMALL_SHAPE_BYTES:
                keep.append(o)
        return keep

    problems, dropped = validate(torch, staged, reference, build, PlanKernel, small_shapes, log)
    kept = []
    for r in task.get("stress", []):
        if r["name"] in dropped:
            continue
        if "%s (mirror)" % r["name"] in dropped:
            r["unmirrored"] = "PyTorch's outputs hold NaN or Inf on the mirrored inputs"
        kept.append(r)
    task["stress"] = kept
    if not kept:
        task.pop("stress", None)
    return problems


def stress_maxima(torch, problem, task):
    """The largest finite |output| the module gives on each stress round (and its mirror) at the
    sweep shapes under SMALL_SHAPE_BYTES (where kopt runs the rounds), inputs drawn as task.json
    says: what one max_error must cover."""
    from taskimport.validate import make_inputs

    rounds = list(task.get("stress", []))
    rounds += [t for t in (numerics.mirrored(r) for r in rounds) if t]
    tensors = task["inputs"] + task["outputs"]
    maxima = []
    for seed, rnd in enumerate(rounds, start=901):
        for overrides in task["shapes"]:
            bindings = dict(task["sizes"])
            bindings.update(overrides)
            if sweep.tensor_bytes(tensors, lambda t: t["shape"], bindings) > SMALL_SHAPE_BYTES:
                continue
            try:
                drawn = make_inputs(torch, task, bindings, rnd["inputs"], seed)
                outs = problem.call([drawn[n] for n in problem.data_names],
                                    [drawn[n] for n in problem.param_names])
            except Exception:  # the validation names the shape where the module fails
                continue
            for o in outs:
                if o.is_floating_point():
                    finite = o[torch.isfinite(o)]
                    if finite.numel():
                        maxima.append(float(finite.abs().max()))
    return maxima


def stage(torch, path, out, name, function, log):
    """Derives the task and writes module.py, torch_op.py and the unvalidated task.json."""
    problem = Problem(torch, path, function)
    task, torch_op = derive(torch, problem, name, log)
    out.mkdir(parents=True, exist_ok=False)
    shutil.copyfile(path, out / "module.py")
    (out / "torch_op.py").write_text(torch_op)
    (out / "task.json").write_text(json.dumps(task, indent=2) + "\n")
    return task


def accept(torch, out, reference, log):
    """The staged task's reference validated against its module; on success the final
    task.json (rounds outside the op's domain dropped), reference.cu and baseline.cu."""
    task = json.loads((out / "task.json").read_text())
    problems = validate_reference(torch, task, out, reference, log)
    if problems:
        raise NotImportable("\n".join(problems))
    (out / "task.json").write_text(json.dumps(task, indent=2) + "\n")
    (out / "reference.cu").write_text(reference)
    (out / "baseline.cu").write_text(reference)
    return task


def import_one(torch, path, out, name, reference_path, function, log):
    try:
        stage(torch, path, out, name, function, log)
        return accept(torch, out, pathlib.Path(reference_path).read_text(), log)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise


def kernelbench(torch, files, references, out_root, log):
    """Each public problem file: imported (with a reference DIR/<stem>.cu), or said why not."""
    failures = 0
    for f in files:
        p = pathlib.Path(f)
        name = _task_name(p.stem)
        try:
            if references and (pathlib.Path(references) / (p.stem + ".cu")).exists():
                task = import_one(torch, p, pathlib.Path(out_root) / (".import-" + name), name,
                                  pathlib.Path(references) / (p.stem + ".cu"), None, log)
                # Not final: kopt's own checks come next and say "imported" or "cannot import".
                log("%s validated against its module as %s (%d sweep shapes, %d holdouts, %d "
                    "stress rounds); kopt's checks next" % (
                        p.name, name, len(task["shapes"]), len(task.get("holdout", [])),
                        len(task.get("stress", []))))
            else:
                problem = Problem(torch, p)
                task, _ = derive(torch, problem, name, log)
                print("importable %s -> %s (sizes %s; sweep %s; "
                      "stress %s; tolerance %s; no reference given: nothing written)" % (
                          p.name, name, task["sizes"], task["shapes"], [r["name"] for r in task.get("stress", [])],
                          task["tolerance"]))
        except NotImportable as e:
            failures += 1
            print("cannot import %s: %s" % (p.name, e))
        except Exception as e:  # the module's own failure (a CUDA error, a bug): said, not fatal
            failures += 1
            print("cannot import %s: %s: %s" % (p.name, type(e).__name__, e))
    return 1 if failures else 0


def _task_name(stem):
    import re
    name = re.sub(r"[^a-z0-9_-]", "_", stem.lower()).strip("_")[:64]
    return name or "imported"


def main(argv):
    ap = argparse.ArgumentParser(prog="kopt tasks import")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", help="staging folder for the task (must not exist)")
    ap.add_argument("--name")
    ap.add_argument("--reference")
    ap.add_argument("--function")
    ap.add_argument("--kernelbench", action="store_true")
    ap.add_argument("--references", help="--kernelbench: DIR holding <problem stem>.cu")
    ap.add_argument("--out-root", help="--kernelbench: where imported tasks go")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--derive-only", action="store_true",
                    help="stage module.py, torch_op.py and task.json in --out; no reference yet")
    ap.add_argument("--validate-only", action="store_true",
                    help="FILE is a staged folder: validate --reference against its module")
    args = ap.parse_args(argv)
    log = (lambda _: None) if args.quiet else (lambda m: print("  " + m))
    torch = need_torch()
    if args.kernelbench:
        return kernelbench(torch, args.files, args.references, args.out_root or ".", log)
    if len(args.files) != 1 or (not args.out and not args.validate_only) or \
            (not args.reference and not args.derive_only):
        sys.stderr.write("task_import.py: one FILE with --out and --reference\n")
        return 2
    name = args.name or _task_name(pathlib.Path(args.files[0]).stem)
    try:
        if args.derive_only:
            out = pathlib.Path(args.out)
            try:
                task = stage(torch, pathlib.Path(args.files[0]), out, name, args.function, log)
            except BaseException:
                shutil.rmtree(out, ignore_errors=True)
                raise
            print("staged %s in %s: %d sweep shapes, %d holdouts, %d stress rounds" % (
                name, out, len(task["shapes"]), len(task.get("holdout", [])),
                len(task.get("stress", []))))
            return 0
        if args.validate_only:
            task = accept(torch, pathlib.Path(args.files[0]),
                          pathlib.Path(args.reference).read_text(), log)
        else:
            task = import_one(torch, pathlib.Path(args.files[0]), pathlib.Path(args.out), name,
                              args.reference, args.function, log)
    except NotImportable as e:
        sys.stderr.write("kopt tasks import: %s: %s\n" % (args.files[0], e))
        return 1
    except Exception as e:  # a compile error of the reference, a CUDA error: said, exit 1
        sys.stderr.write("kopt tasks import: %s: %s: %s\n" % (args.files[0], type(e).__name__, e))
        return 1
    print("validated %s: %d sweep shapes, %d holdouts, %d stress rounds; sizes %s; flops %s" % (
        task["name"], len(task["shapes"]), len(task.get("holdout", [])), len(task.get("stress", [])),
        task["sizes"], task["flops"]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
