#!/usr/bin/env python3
"""Timing fidelity: kopt's median (CUPTI kernel records, L2 flushed before every sample) against
triton.testing.do_bench (median; it zeroes a 256 MB buffer before every repetition, which flushes
L2 the same way) and against CUDA events around single launches of the very same kernel, plus
the spread of kopt's median over repeated evaluations.

    bench/fidelity.py OUT_DIR [--worker build/bin/kopt-sandbox] [--repeats 5] [--cases a,b]

The Python side runs the same kernel file: compiled by the same NVRTC with kopt's options (the
cubin's SHA-256 is compared with the one kopt cached) and launched as its plan says, with ctypes
(bench/plan_launcher.py). Its output is checked against the PyTorch operation first.
Writes fidelity.json and fidelity.md into OUT_DIR and prints the table last.
"""
import argparse
import hashlib
import statistics
import time

import benchlib
import plan_launcher
import torch_ops
from benchlib import fmt, log

# (case, task, size overrides): a copy-like stream, the same at a launch-bound size, a row
# reduction and a GEMM, at the task shapes.
CASES = [
    ("copy: axpy n=2^26", "axpy", {}),
    ("copy, small: axpy n=2^20", "axpy", {"n": 1 << 20}),
    ("reduction: softmax 4096x32768", "softmax", {}),
    ("GEMM: bf16_gemm 8192x4096x4096", "bf16_gemm", {}),
]
# Verification is not what is measured here: one round, no holdout shapes.
KOPT_OPTIONS = {"rounds": 1, "check_holdout": False}
FLUSH_BYTES = 256 << 20  # triton's do_bench flush buffer


def kopt_medians(worker, task, task_json, repeats):
    runs = []
    for i in range(repeats):
        result, error, wall_ms = worker.evaluate(task, task.baseline, "baseline.cu", baseline=False,
                                                 options=KOPT_OPTIONS, task_json=task_json)
        if error or result.get("verdict") != "ok":
            runs.append({"error": error or "%s: %s" % (result["verdict"], result.get("detail"))})
            continue
        t = result["candidate_time"]
        runs.append({"median_us": t["median_us"], "noise": t["noise"], "samples": t["samples"],
                     "min_us": t["min_us"], "wall_ms": wall_ms})
        log("  kopt run %d: %.2f us (noise %.4f, %d samples)" % (i + 1, t["median_us"],
                                                                t["noise"], t["samples"]))
    return runs


def event_median_us(torch, fn, samples):
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    for _ in range(3):
        fn()
    for s, e in zip(starts, ends):
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)) * 1e3


def do_bench_median_us(fn, estimate_us):
    from triton.testing import do_bench
    rep_ms = max(100.0, 30 * estimate_us / 1e3)  # at least ~30 repetitions of slow kernels
    try:
        return do_bench(fn, warmup=25, rep=rep_ms, return_mode="median") * 1e3
    except TypeError:  # older triton: quantiles instead of return_mode
        return do_bench(fn, warmup=25, rep=rep_ms, quantiles=[0.5])[0] * 1e3


def python_side(task, sizes, cache_dir):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    spec = task.spec
    inputs = plan_launcher.make_inputs(torch, spec, sizes)
    outputs = plan_launcher.empty_outputs(torch, spec, sizes)
    kernel = plan_launcher.PlanKernel(torch, spec, task.baseline, "baseline.cu", sizes,
                                      {**inputs, **outputs})
    kernel.launch()
    torch.cuda.synchronize()
    fn, args = torch_ops.build(torch, task.name, inputs, sizes, spec.get("constants", {}))
    expected = torch_ops.outputs_as_tuple(fn(*args))
    errors = []
    for o, ref in zip(spec["outputs"], expected):
        got = outputs[o["name"]].double().reshape(ref.shape)
        ref = ref.double()
        errors.append(((got - ref).norm() / ref.norm().clamp_min(1e-30)).item())
    # The cubin kopt cached for this kernel file, when the option lists agree.
    cached = {hashlib.sha256(p.read_bytes()).hexdigest() for p in cache_dir.rglob("*.cubin")}
    start = time.perf_counter()
    kernel.launch()
    torch.cuda.synchronize()
    estimate_us = (time.perf_counter() - start) * 1e6
    samples = int(min(200, max(20, 1.5e6 / max(estimate_us, 1.0))))
    events = event_median_us(torch, kernel.launch, samples)
    bench = do_bench_median_us(kernel.launch, estimate_us)
    torch_op = do_bench_median_us(lambda: fn(*args), estimate_us)
    del inputs, outputs, expected
    torch.cuda.empty_cache()
    return {"relative_error_vs_torch": max(errors), "same_cubin": kernel.cubin_sha256 in cached,
            "cubin_sha256": kernel.cubin_sha256, "events_median_us": events,
            "events_samples": samples, "do_bench_median_us": bench,
            "torch_op_do_bench_median_us": torch_op}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--worker", default=str(benchlib.DEFAULT_WORKER))
    parser.add_argument("--repeats", type=int, default=5, help="kopt evaluations per kernel")
    parser.add_argument("--cases", default="", help="comma-separated task names to keep")
    parser.add_argument("--no-python", action="store_true",
                        help="kopt only (for a machine without torch/triton)")
    args = parser.parse_args()
    keep = {n for n in args.cases.split(",") if n}
    cases = [c for c in CASES if not keep or c[1] in keep]
    tasks = {t.name: t for t in benchlib.load_tasks(sorted({c[1] for c in cases}))}
    env = benchlib.gpu_environment()
    cache = benchlib.fresh_dir("kopt-bench-cache-")
    worker = benchlib.Worker(args.worker, cache_dir=cache,
                             log_path=benchlib.output_file(args.out_dir, "fidelity-worker.log"))
    rows, results = [], []
    for name, task_name, overrides in cases:
        task = tasks[task_name]
        sizes = dict(task.spec["sizes"], **overrides)
        log("%s:" % name)
        runs = kopt_medians(worker, task, task.with_sizes(**overrides), args.repeats)
        medians = [r["median_us"] for r in runs if "median_us" in r]
        entry = {"case": name, "task": task_name, "sizes": sizes, "kopt_runs": runs}
        if medians:
            mean = statistics.fmean(medians)
            entry.update(kopt_median_us=mean, kopt_spread=(max(medians) - min(medians)) / mean,
                         kopt_cv=statistics.pstdev(medians) / mean)
        if not args.no_python:
            try:
                entry.update(python_side(task, sizes, cache))
            except Exception as e:  # one case's failure is reported, never the end of the run
                entry["python_error"] = "%s: %s" % (type(e).__name__, e)
                log("  python side failed:", entry["python_error"])
        results.append(entry)
        k, b, ev = entry.get("kopt_median_us"), entry.get("do_bench_median_us"), entry.get(
            "events_median_us")
        rows.append([name, fmt(k, 2), fmt(100 * entry["kopt_spread"], 2, "%") if medians else "-",
                     fmt(b, 2), fmt(ev, 2), fmt(k / b, 3) if k and b else "-",
                     fmt(k / ev, 3) if k and ev else "-",
                     fmt(entry.get("torch_op_do_bench_median_us"), 2),
                     {True: "yes", False: "no"}.get(entry.get("same_cubin"), "-")])
    worker.close()
    benchlib.remove_dir(cache)
    md = ["# Timing fidelity", "",
          "%s, %s; commit %s; %s" % (worker.info.get("name"), env["date"], env["commit"],
                                    env["command"]), "",
          "Medians in us. kopt: mean of %d evaluations' medians (spread = (max - min) / mean). "
          "do_bench and CUDA events time the same kernel file launched from Python, L2 flushed "
          "before every sample; 'torch op' is PyTorch's own kernel for the operation, for "
          "context." % args.repeats, "",
          benchlib.markdown_table(["kernel", "kopt", "kopt spread", "do_bench", "CUDA events",
                                   "kopt / do_bench", "kopt / events", "torch op",
                                   "same cubin"], rows,
                                  ["---"] + ["---:"] * 7 + ["---"])]
    errors = [r for r in results if "python_error" in r]
    if errors:
        md += ["", "Python side failed: " + "; ".join("%s: %s" % (r["case"], r["python_error"])
                                                       for r in errors)]
    benchlib.write_results(args.out_dir, "fidelity",
                           {"benchmark": "fidelity", "environment": env, "worker": worker.info,
                            "repeats": args.repeats, "kopt_options": KOPT_OPTIONS,
                            "cases": results}, "\n".join(md))


if __name__ == "__main__":
    main()
