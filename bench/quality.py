#!/usr/bin/env python3
"""Kernel quality: per task, the best kernel kopt holds against the task's baseline, PyTorch
eager and torch.compile for the same operation and shape (bench/torch_ops.py), the share of
the speed-of-light bound each reaches, and SOL-ExecBench's score S = 1 / (1 + (T_k - T_SOL) /
(T_b - T_SOL)) with T_b the best production baseline measured here (else baseline.cu).

    bench/quality.py OUT_DIR [--db memory.db] [--worker build/bin/kopt-sandbox] [--tasks a,b]
                             [--budget-s 200] [--no-compile] [--sweep]

The best kernels come from a memory database written by a kopt run (--db): per task the best
verified kernel found by the tuner alone and the best found by an LLM, each re-timed here against
the baseline (interleaved, one request). Without --db the best is the baseline itself (and with
--sweep, the best of a one-tunable-at-a-time sweep, which is what the tuner starts with).
PyTorch is timed as `kopt baselines` times it (scripts/torch_baselines.py: L2 flushed by a memset
of twice its size before every sample, CUDA events, one sample at a time, median), cuBLASLt by
the worker (its "cublaslt" request), bf16 where the task is bf16, TF32 off
for sgemm (the task needs fp32 accuracy); with --check-do-bench also by triton's do_bench. The
bench's own PyTorch process holds a CUDA context beside the worker: it is declared to the worker
(KOPT_OWN_GPU_PIDS) and stays idle while the worker times (the two take turns), so the busy-GPU
check neither refuses the run nor lets a foreign process pass.
Writes quality.json and quality.md into OUT_DIR and prints the table last.
"""
import argparse
import json
import os
import pathlib
import sqlite3
import sys
import time

import benchlib
import plan_launcher
import torch_ops
from benchlib import fmt, log

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "scripts"))
import torch_baselines  # noqa: E402  (the helper kopt baselines starts)

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


def time_torch(torch, timer, task, with_compile, check_do_bench):
    """Eager and torch.compile times of the task's op, as `kopt baselines` measures them."""
    out = {}
    for row in torch_baselines.measure_task(torch, timer, str(task.dir), with_compile,
                                            check_do_bench):
        key = {"torch_eager": "eager", "torch_compile": "compiled",
               "cublaslt_heuristic": "cublaslt_heuristic",
               "cublaslt_autotuned": "cublaslt_autotuned"}[row["name"]]
        if "error" in row:
            out[key + "_error"] = row["error"]
            continue
        out[key + "_us"] = row["median_us"]
        if "do_bench_us" in row:
            out[key + "_do_bench_us"] = row["do_bench_us"]
        if "vs_torch_eager" in row:
            out[key + "_vs_torch_eager"] = row["vs_torch_eager"]
        if "compile_s" in row:
            out["compile_s"] = row["compile_s"]
    return out


def time_cublaslt(worker, task):
    """cuBLASLt's two rows as `kopt baselines` stores them: timed by the worker itself."""
    try:
        answer = worker.request({"op": "cublaslt", "task_json": task.json_text,
                                 "reference": {"source": task.reference,
                                               "origin": "reference.cu"}}, 600)
    except benchlib.WorkerError as e:
        return {"cublaslt_heuristic_error": str(e)}
    if not answer.get("ok"):
        return {"cublaslt_heuristic_error": answer.get("error", "no answer")}
    return {row["name"] + "_us": row["median_us"] for row in answer["result"]["rows"]}


def sol_score(kernel_us, reference_us, sol_us):
    """common/sol_score.h's S; None where it is undefined (see there)."""
    if not (kernel_us and reference_us and sol_us) or kernel_us < sol_us or reference_us <= sol_us:
        return None
    return 1.0 / (1.0 + (kernel_us - sol_us) / (reference_us - sol_us))


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
    parser.add_argument("--check-do-bench", action="store_true",
                        help="also time PyTorch with triton's do_bench (the 2%% cross-check)")
    args = parser.parse_args()
    tasks = benchlib.load_tasks([n for n in args.tasks.split(",") if n])
    env = benchlib.gpu_environment()
    cache = benchlib.fresh_dir("kopt-bench-cache-")
    worker = benchlib.Worker(args.worker, cache_dir=cache,
                             log_path=benchlib.output_file(args.out_dir, "quality-worker.log"),
                             own_gpu_pids=[] if args.no_torch else [os.getpid()])
    gpu = worker.info.get("name", "")
    held = best_from_db(args.db, gpu) if args.db else {}
    torch = None
    if not args.no_torch:
        import torch as torch_module
        torch = torch_module
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        timer = torch_baselines.Timer(torch)
    began = time.perf_counter()
    entries = []
    for task in tasks:
        entry = {"task": task.name,
                 "bound": "compute" if "compute-bound" in task.spec["tags"] else "memory",
                 "production_baselines": task.spec.get("production_baselines", [])}
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
        if "cublaslt" in entry["production_baselines"]:
            entry.update(time_cublaslt(worker, task))
        if torch is not None:
            with_compile = not args.no_compile and time.perf_counter() - began < args.budget_s
            try:
                entry.update(time_torch(torch, timer, task, with_compile, args.check_do_bench))
                torch.cuda.synchronize()  # idle again before the worker times the next task
            except Exception as e:  # one task's failure is reported, never the end of the run
                entry["torch_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
            if not with_compile and not args.no_compile:
                entry["compile_skipped"] = "budget"
        for key in ("baseline_us", "best_us", "eager_us", "compiled_us"):
            if entry.get(key) and entry.get("sol_us"):
                entry[key.replace("_us", "_sol_percent")] = 100.0 * entry["sol_us"] / entry[key]
        production = [(entry[k], name) for k, name in (
            ("eager_us", "torch_eager"), ("compiled_us", "torch_compile"),
            ("cublaslt_heuristic_us", "cublaslt_heuristic"),
            ("cublaslt_autotuned_us", "cublaslt_autotuned")) if entry.get(k)]
        if production:
            entry["production_us"], entry["production"] = min(production)
        reference = entry.get("production_us") or entry["baseline_us"]
        entry["sol_score_reference"] = entry.get("production", "baseline.cu")
        entry["sol_score"] = sol_score(entry["best_us"], reference, entry.get("sol_us"))
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
            rows.append([e["task"], "failed: " + e["error"][:60]] + ["-"] * 10)
            continue
        found = []
        for k in ("tuner", "llm"):
            k_entry = e.get(k, {})
            found.append(fmt(k_entry["us"]) + " (%s)" % fmt(k_entry["speedup"], 2, "x")
                         if "us" in k_entry else k_entry.get("error", "-")[:30])
        score = e.get("sol_score")
        rows.append([e["task"], fmt(e["baseline_us"])] + found +
                    [fmt(e["best_us"]) + " (%s)" % e["best_from"],
                     (fmt(e["cublaslt_heuristic_us"]) + " / " + fmt(e.get("cublaslt_autotuned_us"))
                      if "cublaslt_heuristic_us" in e else e.get("cublaslt_heuristic_error", (
                          "-" if "cublaslt" in e.get("production_baselines", []) else "n/a"))[:40]),
                     fmt(e.get("eager_us")) if "eager_us" in e else e.get("eager_error", e.get(
                         "torch_error", "-"))[:40],
                     fmt(e.get("compiled_us")) if "compiled_us" in e
                     else e.get("compile_skipped", e.get("compiled_error", "-"))[:40],
                     fmt(e.get("sol_us"), 2),
                     ratio(e.get("production_us"), e["best_us"]) + (
                         " " + e["production"] if e.get("production") else ""),
                     fmt(e.get("best_sol_percent"), 0, "%"),
                     (fmt(score, 2) + " vs " + e["sol_score_reference"]) if score else "-"])
    source = "best kernels from %s" % args.db if args.db else (
        "no database: best = the best of a tunable sweep" if args.sweep
        else "no database: best = the baseline")
    md = ["# Kernel quality", "",
          "%s, %s; commit %s; %s" % (gpu, env["date"], env["commit"], env["command"]), "",
          "Medians in us at each task's default shape; %s. `best vs production`: the best "
          "production baseline's time over kopt's best (> 1: kopt is faster; the honest gap). "
          "%%SOL: speed-of-light time over the best's time. S = 1 / (1 + (T_k - T_SOL) / "
          "(T_b - T_SOL)), T_b the best production baseline (else baseline.cu): 0.5 matches "
          "it, 1.0 is the speed of light. cuBLASLt: heuristic's first / best of its top 16 "
          "algorithms, timed by kopt's worker (sandbox/worker/cublaslt_baseline.h); PyTorch one "
          "sample at a time, as the worker times (scripts/torch_baselines.py)." % source,
          "",
          benchlib.markdown_table(
              ["task", "baseline.cu", "tuner", "memory (LLM)", "best", "cuBLASLt", "eager",
               "torch.compile", "T_SOL", "best vs production", "%SOL best", "S"], rows)]
    benchlib.write_results(args.out_dir, "quality",
                           {"benchmark": "quality", "environment": env, "worker": worker.info,
                            "database": args.db, "kopt_options": KOPT_OPTIONS, "tasks": entries},
                           "\n".join(md))


if __name__ == "__main__":
    main()
