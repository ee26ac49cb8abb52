#!/usr/bin/env python3
"""Kernel quality: per task, the best kernel kopt holds against the task's baseline, PyTorch
eager and torch.compile for the same operation and shape (bench/torch_ops.py), and the share of
the speed-of-light bound each reaches.

    bench/quality.py OUT_DIR [--db memory.db] [--worker build/bin/kopt-sandbox] [--tasks a,b]
                             [--budget-s 200] [--no-compile] [--sweep]

The best kernels come from a memory database written by a kopt run (--db): per task the best
verified kernel found by the tuner alone and the best found by an LLM, each re-timed here against
the baseline (interleaved, one request). Without --db the best is the baseline itself (and with
--sweep, the best of a one-tunable-at-a-time sweep, which is what the tuner starts with).
PyTorch is timed with triton's do_bench (median, L2 flushed before every repetition), bf16 where
the task is bf16, TF32 off for sgemm (the task needs fp32 accuracy).
Writes quality.json and quality.md into OUT_DIR and prints the table last.
"""
import argparse
import json
import sqlite3
import time

import benchlib
import plan_launcher
import torch_ops
from benchlib import fmt, log

# Correctness was established when the run judged these kernels; here they are re-timed, with a
# light re-check (one round, no holdout) so that a stale database cannot slip a wrong kernel in.
KOPT_OPTIONS = {"rounds": 1, "check_holdout": False}


def best_from_db(path, gpu_name):
    """{task: {"tuner": (source, tunables, origin), "llm": (...)}} from a kopt memory, taking
    this GPU's evaluations when it has any."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    rows = db.execute(
        "SELECT t.name, k.source, e.tunables_json, k.origin_tuner, k.origin_agent, k.origin_model,"
        " e.speedup, e.median_us, e.gpu_model FROM evaluations e JOIN kernels k ON k.id ="
        " e.kernel_id JOIN tasks t ON t.id = e.task_id WHERE e.verdict = 'ok' AND e.median_us > 0"
        " ORDER BY e.speedup DESC, e.median_us ASC, e.id ASC").fetchall()
    db.close()
    on_this_gpu = [r for r in rows if r[8] == gpu_name] or rows
    best = {}
    for task, source, tunables, tuner, agent, model, speedup, median, gpu in on_this_gpu:
        if agent == "baseline":
            continue
        kind = "tuner" if tuner else "llm"
        best.setdefault(task, {}).setdefault(
            kind, (source, json.loads(tunables or "{}"), model or agent or kind))
    return best


def time_torch(torch, task, sizes, with_compile, estimate_us):
    from triton.testing import do_bench
    spec = task.spec
    inputs = plan_launcher.make_inputs(torch, spec, sizes)
    fn, args = torch_ops.build(torch, task.name, inputs, sizes, spec.get("constants", {}))
    rep = max(100.0, 30 * (estimate_us or 0) / 1e3)

    def bench(f):
        try:
            return do_bench(lambda: f(*args), warmup=25, rep=rep, return_mode="median") * 1e3
        except TypeError:
            return do_bench(lambda: f(*args), warmup=25, rep=rep, quantiles=[0.5])[0] * 1e3

    out = {"eager_us": bench(fn)}
    if with_compile:
        compiled = torch.compile(fn)
        began = time.perf_counter()
        compiled(*args)
        torch.cuda.synchronize()
        out["compile_s"] = time.perf_counter() - began
        out["compiled_us"] = bench(compiled)
    del inputs, args
    torch.cuda.empty_cache()
    return out


def sweep_best(worker, task):
    best = None
    for values in benchlib.variants(task.baseline, 16):
        result, error, _ = worker.evaluate(task, task.baseline, "baseline.cu", values,
                                           options=KOPT_OPTIONS)
        if result and result["verdict"] == "ok" and (
                best is None or result["speedup"] > best[1]["speedup"]):
            best = (values, result)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--db", help="memory database written by a kopt run")
    parser.add_argument("--worker", default=str(benchlib.DEFAULT_WORKER))
    parser.add_argument("--tasks", default="")
    parser.add_argument("--budget-s", type=float, default=200,
                        help="after this many seconds, torch.compile is skipped for the rest")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--no-torch", action="store_true", help="kopt only")
    parser.add_argument("--sweep", action="store_true",
                        help="without --db: also sweep each tunable (slower)")
    args = parser.parse_args()
    tasks = benchlib.load_tasks([n for n in args.tasks.split(",") if n])
    env = benchlib.gpu_environment()
    cache = benchlib.fresh_dir("kopt-bench-cache-")
    worker = benchlib.Worker(args.worker, cache_dir=cache,
                             log_path=benchlib.output_file(args.out_dir, "quality-worker.log"))
    gpu = worker.info.get("name", "")
    held = best_from_db(args.db, gpu) if args.db else {}
    torch = None
    if not args.no_torch:
        import torch as torch_module
        torch = torch_module
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    began = time.perf_counter()
    entries = []
    for task in tasks:
        entry = {"task": task.name, "bound": "compute" if "compute-bound" in task.spec["tags"]
                 else "memory"}
        # The baseline alone: its time and the speed-of-light time of the default shape.
        result, error, _ = worker.evaluate(task, task.baseline, "baseline.cu", baseline=False,
                                           options=KOPT_OPTIONS)
        if not result or result["verdict"] != "ok":
            entry["error"] = error or "%s: %s" % (result["verdict"], result.get("detail"))
            entries.append(entry)
            log("%-18s baseline failed: %s" % (task.name, entry["error"]))
            continue
        entry["baseline_us"] = result["candidate_time"]["median_us"]
        entry["sol_us"] = result["sol_us"]
        candidates = dict(held.get(task.name, {}))
        if not args.db and args.sweep:
            swept = sweep_best(worker, task)
            if swept:
                candidates["tuner"] = (task.baseline, swept[0], "sweep")
        for kind, (source, tunables, origin) in candidates.items():
            r, err, _ = worker.evaluate(task, source, "%s.cu" % kind, tunables,
                                        options=KOPT_OPTIONS)
            if r and r["verdict"] == "ok":
                entry[kind] = {"us": r["candidate_time"]["median_us"],
                               "speedup": r["speedup"], "origin": origin, "tunables": tunables}
            else:
                entry[kind] = {"error": err or "%s: %s" % (r["verdict"], r.get("detail"))}
        timed = [entry["baseline_us"]] + [entry[k]["us"] for k in ("tuner", "llm")
                                           if k in entry and "us" in entry[k]]
        entry["best_us"] = min(timed)
        entry["best_from"], entry["best_speedup"] = "baseline", 1.0
        for k in ("tuner", "llm"):
            if k in entry and entry[k].get("us") == entry["best_us"]:
                # Against the baseline timed interleaved in the same request, not the one above.
                entry["best_from"], entry["best_speedup"] = k, entry[k]["speedup"]
        if torch is not None:
            with_compile = not args.no_compile and time.perf_counter() - began < args.budget_s
            try:
                entry.update(time_torch(torch, task, dict(task.spec["sizes"]), with_compile,
                                        entry["baseline_us"]))
            except Exception as e:  # one task's failure is reported, never the end of the run
                entry["torch_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
            if not with_compile and not args.no_compile:
                entry["compile_skipped"] = "budget"
        for key in ("baseline_us", "best_us", "eager_us", "compiled_us"):
            if entry.get(key) and entry.get("sol_us"):
                entry[key.replace("_us", "_sol_percent")] = 100.0 * entry["sol_us"] / entry[key]
        entries.append(entry)
        log("%-18s baseline %10.1f us  best %10.1f us (%s)  eager %s  compile %s" % (
            task.name, entry["baseline_us"], entry["best_us"], entry["best_from"],
            fmt(entry.get("eager_us")), fmt(entry.get("compiled_us"))))
    worker.close()
    benchlib.remove_dir(cache)

    def ratio(a, b):
        return fmt(a / b, 2, "x") if a and b else "-"

    rows = []
    for e in entries:
        if "error" in e:
            rows.append([e["task"], "failed: " + e["error"][:60]] + ["-"] * 11)
            continue
        found = []
        for k in ("tuner", "llm"):
            k_entry = e.get(k, {})
            found.append(fmt(k_entry["us"]) + " (%s)" % fmt(k_entry["speedup"], 2, "x")
                         if "us" in k_entry else k_entry.get("error", "-")[:30])
        rows.append([e["task"], fmt(e["baseline_us"])] + found +
                    [fmt(e["best_us"]) + " (%s)" % e["best_from"],
                     fmt(e.get("eager_us")), fmt(e.get("compiled_us")) if "compiled_us" in e
                     else e.get("compile_skipped", e.get("torch_error", "-"))[:40],
                     fmt(e["best_speedup"], 2, "x"), ratio(e.get("eager_us"), e["best_us"]),
                     ratio(e.get("compiled_us"), e["best_us"]),
                     fmt(e.get("baseline_sol_percent"), 0, "%"), fmt(e.get("best_sol_percent"), 0, "%"),
                     fmt(e.get("eager_sol_percent"), 0, "%") + " / " +
                     fmt(e.get("compiled_sol_percent"), 0, "%")])
    source = "best kernels from %s" % args.db if args.db else (
        "no database: best = the best of a tunable sweep" if args.sweep
        else "no database: best = the baseline")
    md = ["# Kernel quality", "",
          "%s, %s; commit %s; %s" % (gpu, env["date"], env["commit"], env["command"]), "",
          "Medians in us at each task's default shape; %s. Speedups are the best kernel's over "
          "the baseline, PyTorch eager and torch.compile (> 1 means kopt's kernel is faster). "
          "%%SOL: speed-of-light time over the measured time." % source, "",
          benchlib.markdown_table(
              ["task", "baseline", "tuner", "LLM", "best", "eager", "torch.compile",
               "best vs baseline", "vs eager",
               "vs compile", "%SOL base", "%SOL best", "%SOL eager / compile"], rows)]
    benchlib.write_results(args.out_dir, "quality",
                           {"benchmark": "quality", "environment": env, "worker": worker.info,
                            "database": args.db, "kopt_options": KOPT_OPTIONS, "tasks": entries},
                           "\n".join(md))


if __name__ == "__main__":
    main()
