#!/usr/bin/env python3
"""Evaluation throughput on a realistic failure mix: what a night of LLM output costs the GPU.

    bench/run.sh mix OUT_DIR [--worker build/bin/kopt-sandbox] [--count 154] [--tasks a,b]
                             [--budget-s 300] [--gate]

One long-lived kopt-sandbox worker (as kopt runs it, restarted after every fatal answer) judges
candidates made from each task's baseline by bench/failure_mix.py: 55% correct, 15% incorrect,
10% compile errors, 5% crashes (illegal address), 5% out-of-bounds writes, 5% hangs on an edge
shape, 5% hangs on every shape, tasks round-robin. Every candidate's source is unique (no compile
cache answers), each request carries the baseline and the daemon's default options. The GPU cost
of a candidate is its request's wall time including the worker restart it caused. With --gate,
each candidate is compiled on the host ahead of the worker (four at a time, as the daemon's
jobs compile), into its compile cache, as the daemon's compile gate does (a compile error then reaches the worker as a cached verdict). Reports, per
class, the verdicts and GPU seconds, and the candidates per GPU-hour of the whole mix. Writes
mix.json and mix.md into OUT_DIR and prints the table last.
"""
import argparse
import pathlib
import time

import benchlib
import failure_mix
from benchlib import fmt, log


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--worker", default=str(benchlib.DEFAULT_WORKER))
    parser.add_argument("--count", type=int, default=154, help="candidates (7 per task)")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--budget-s", type=float, default=300,
                        help="stop starting candidates after this many seconds")
    parser.add_argument("--gate", action="store_true",
                        help="compile each candidate on the host ahead of the worker, as the "
                             "daemon's compile gate does (needs build/bin/kopt beside the worker)")
    args = parser.parse_args()
    tasks = benchlib.load_tasks([n for n in args.tasks.split(",") if n])
    env = benchlib.gpu_environment()
    cache = benchlib.fresh_dir("kopt-bench-cache-")
    worker = benchlib.Worker(args.worker, cache_dir=cache,
                             log_path=benchlib.output_file(args.out_dir, "mix-worker.log"))
    log("worker up in %.2f s on %s" % (worker.start_seconds, worker.info.get("name")))
    # Each task's baseline once first: the compile cache, PCH and probe cache are warm, as they
    # are after the first minutes of a night. Not counted.
    for task in tasks:
        worker.evaluate(task, task.baseline, "baseline.cu")
    plan = []
    for index, (task, kind) in enumerate(failure_mix.plan(tasks, args.count)):
        source = failure_mix.mutate(task.baseline, task.spec, kind)
        if source is not None:
            plan.append((task, kind, benchlib.unique_source(source, "mix-%d" % index)))
    gate = None
    if args.gate and plan:
        kopt = str(pathlib.Path(args.worker).resolve().parent / "kopt")
        gate = benchlib.CompileGate(kopt, cache, worker.info.get("arch", "sm_90a"),
                                    [(task, source) for task, _, source in plan])
    records = []
    began = time.perf_counter()
    for index, (task, kind, source) in enumerate(plan):
        if time.perf_counter() - began > args.budget_s:
            log("budget spent: %d candidates judged" % len(records))
            break
        if gate:
            gate.wait(index)
        restarts = worker.restarts
        t0 = time.perf_counter()
        result, error, _ = worker.evaluate(task, source, "%s-%s.cu" % (task.name, kind))
        gpu_s = time.perf_counter() - t0
        record = {"task": task.name, "class": kind, "gpu_s": gpu_s, "error": error,
                  "worker_restarted": worker.restarts > restarts,
                  "verdict": (result or {}).get("verdict", "error"),
                  "detail": ((result or {}).get("detail") or error or "")[:300]}
        for key in ("compile_ms", "verify_ms", "time_ms", "total_ms"):
            record[key] = (result or {}).get(key)
        records.append(record)
        log("%-17s %-17s -> %-14s %6.2f s%s" % (task.name, kind, record["verdict"], gpu_s,
                                                " (worker restarted)" if record["worker_restarted"]
                                                else ""))
    stream_s = time.perf_counter() - began
    if gate:
        gate.close()
    worker.close()
    benchlib.remove_dir(cache)

    rows, by_class = [], {}
    for kind, share in failure_mix.SHARES:
        rs = [r for r in records if r["class"] == kind]
        if not rs:
            continue
        verdicts = {}
        for r in rs:
            verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
        costs = [r["gpu_s"] for r in rs]
        s = benchlib.summary(costs)
        by_class[kind] = {"n": len(rs), "verdicts": verdicts, "gpu_s_total": sum(costs),
                          "gpu_s": s}
        rows.append([kind, str(len(rs)), ", ".join("%s %d" % kv for kv in sorted(verdicts.items())),
                     fmt(s.get("p50"), 2), fmt(s.get("p90"), 2), fmt(s.get("max"), 2),
                     fmt(sum(costs), 1)])
    all_costs = benchlib.summary([r["gpu_s"] for r in records])
    per_hour = 3600.0 * len(records) / stream_s if stream_s > 0 and records else None
    results = {"benchmark": "mix", "environment": env, "worker": worker.info,
               "worker_restarts": worker.restarts, "stream_s": stream_s,
               "candidates": len(records), "candidates_per_gpu_hour": per_hour,
               "per_candidate_gpu_s": all_costs, "by_class": by_class, "records": records}
    md = ["# Evaluation throughput on a realistic failure mix", "",
          "%s, %s; commit %s; %s" % (worker.info.get("name"), env["date"], env["commit"],
                                    env["command"]), "",
          "%d candidates over %d tasks in %.1f s through one kopt-sandbox worker (%d restarts): "
          "**%s candidates per GPU-hour**; per candidate p50 %s s, p90 %s s." % (
              len(records), len(tasks), stream_s, worker.restarts, fmt(per_hour, 0),
              fmt(all_costs.get("p50"), 2), fmt(all_costs.get("p90"), 2)), "",
          benchlib.markdown_table(["class", "n", "verdicts", "GPU s p50", "p90", "max", "total"],
                                  rows)]
    benchlib.write_results(args.out_dir, "mix", results, "\n".join(md))


if __name__ == "__main__":
    main()
