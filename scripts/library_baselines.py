"""Production baselines from the libraries users run (issue 33): a task.json's
"production_baselines" may name "flashinfer", "vllm", "deepgemm", "marlin" or "sdpa". Each is timed
when its library imports here and the task's torch_op.py knows how to call it
(`build_library(torch, inputs, sizes, constants, name) -> (fn, args)`, or None when it cannot at
these sizes); otherwise its row is an error that says so plainly, and the task's baseline stays
the PyTorch composition that torch_op.py's `build` times as torch_eager / torch_compile.

Called from torch_baselines.py, in its process: the library's CUDA context lives and dies with
that helper, which kopt starts only while no worker is timing (kopt baselines runs them in turn).
"""
import importlib
import importlib.util
import pathlib

# The module each name needs; "sdpa" is PyTorch's own scaled_dot_product_attention.
MODULES = {"flashinfer": "flashinfer", "vllm": "vllm", "deepgemm": "deep_gemm",
           "marlin": "marlin", "sdpa": "torch"}
NOT_INSTALLED = "not installed: the baseline is the PyTorch composition"


def _torch_op(task_dir):
    path = pathlib.Path(task_dir) / "torch_op.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("kopt_torch_op_lib", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def library_importable(name):
    module = MODULES[name]
    return module == "torch" or importlib.util.find_spec(module) is not None


def measure(torch, timer, task_dir, wanted, inputs, sizes, spec, common):
    """One row per library the task declares: a time, or an error that says why not."""
    rows = []
    op = None
    for name in [n for n in wanted if n in MODULES]:
        row = dict(common, name=name)
        if not library_importable(name):
            rows.append(dict(row, error="%s (%s does not import)" % (NOT_INSTALLED, MODULES[name])))
            continue
        try:
            op = op or _torch_op(task_dir)
            build = getattr(op, "build_library", None)
            made = build(torch, inputs, sizes, spec.get("constants", {}), name) if build else None
            if made is None:
                rows.append(dict(row, error="%s (torch_op.py has no %s call at these sizes)"
                                 % (NOT_INSTALLED, name)))
                continue
            fn, args = made
            row["detail"] = getattr(fn, "kopt_detail", name)
            row.update(timer.time(lambda: fn(*args)))
        except Exception as e:  # one library's failure is its row's, never the run's
            row = dict(row, error="%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0]))
        rows.append(row)
    return rows
