#!/usr/bin/env python3
"""Multi-GPU scaling: candidates judged per hour with one kopt-sandbox worker (one GPU) and with
one worker per GPU (kopt's evaluator pool), fed from one shared queue.

    bench/multi_gpu.py OUT_DIR [--worker build/bin/kopt-sandbox] [--gpus 2] [--seconds 75]

Each phase starts its workers and warms each with one request (neither counted), then feeds them the suite's baselines and
tunable variants round-robin for --seconds; requests in flight at the end are waited for and
counted. Every candidate carries a unique comment, so each is a real compile in either phase,
and each phase starts with an empty compile cache.
Writes multi_gpu.json and multi_gpu.md into OUT_DIR and prints the table last.
"""
import argparse
import itertools
import threading
import time

import benchlib
from benchlib import fmt, log


def work_items(tasks):
    """An endless round-robin over the suite: baselines, then one-tunable variants."""
    plans = []
    for t in tasks:
        plans.append((t, {}))
    for t in tasks:
        plans.extend((t, v) for v in benchlib.variants(t.baseline, 4))
    for serial in itertools.count():
        for t, v in plans:
            yield serial, t, v


def run_phase(binary, gpus, seconds, tasks, out_dir):
    cache = benchlib.fresh_dir("kopt-bench-cache-")
    workers = [benchlib.Worker(binary, device=g, cache_dir=cache,
                               log_path=benchlib.output_file(out_dir, "multi-gpu-worker%d.log" % g))
               for g in range(gpus)]
    names = [w.info.get("name") for w in workers]
    log("phase with %d worker(s): %s" % (gpus, names))
    # One warm-up request per worker before the clock starts: the worker's first request pays
    # one-off costs (device peaks, support kernels, the NVRTC precompiled header) that would
    # otherwise favour whichever phase runs second.
    warm = tasks[0]
    for i, w in enumerate(workers):
        w.evaluate(warm, benchlib.unique_source(warm.baseline, "warm-%d" % i), "warm.cu")
    items = work_items(tasks)
    lock = threading.Lock()
    records = []
    began = time.perf_counter()
    stop_at = began + seconds

    def feed(worker, index):
        while time.perf_counter() < stop_at:
            with lock:
                serial, task, values = next(items)
            source = benchlib.unique_source(task.baseline, "gpu%d-%d" % (index, serial))
            result, error, wall_ms = worker.evaluate(task, source, "candidate.cu", values)
            with lock:
                records.append({"gpu": index, "task": task.name, "wall_ms": wall_ms,
                                "verdict": result["verdict"] if result else None,
                                "error": error, "done_s": time.perf_counter() - began,
                                "total_ms": result.get("total_ms") if result else None})

    threads = [threading.Thread(target=feed, args=(w, i)) for i, w in enumerate(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = max([r["done_s"] for r in records] + [seconds])
    for w in workers:
        w.close()
    benchlib.remove_dir(cache)
    per_gpu = {i: sum(1 for r in records if r["gpu"] == i) for i in range(gpus)}
    return {"gpus": gpus, "devices": names, "elapsed_s": elapsed, "candidates": len(records),
            "per_gpu": per_gpu, "candidates_per_hour": 3600.0 * len(records) / elapsed,
            "total_ms": benchlib.summary([r["total_ms"] for r in records]),
            "errors": sum(1 for r in records if r["error"]), "records": records}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--worker", default=str(benchlib.DEFAULT_WORKER))
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=75, help="feeding time of each phase")
    parser.add_argument("--tasks", default="")
    args = parser.parse_args()
    tasks = benchlib.load_tasks([n for n in args.tasks.split(",") if n])
    env = benchlib.gpu_environment()
    phases = [run_phase(args.worker, 1, args.seconds, tasks, args.out_dir)]
    if args.gpus > 1:
        phases.append(run_phase(args.worker, args.gpus, args.seconds, tasks, args.out_dir))
    one = phases[0]["candidates_per_hour"]
    rows = [[p["gpus"], ", ".join(sorted(set(p["devices"]))), p["candidates"],
             fmt(p["elapsed_s"], 1), fmt(p["candidates_per_hour"], 0),
             fmt(p["candidates_per_hour"] / one, 2, "x"),
             fmt(p["candidates_per_hour"] / one / p["gpus"] * 100, 0, "%"),
             fmt(p["total_ms"].get("p50"), 0)] for p in phases]
    md = ["# Multi-GPU scaling", "",
          "%s; commit %s; %s" % (env["date"], env["commit"], env["command"]), "",
          "Each phase feeds the suite's baselines and tunable variants (unique sources, empty "
          "compile cache) to one worker per GPU for %.0f s." % args.seconds, "",
          benchlib.markdown_table(["GPUs", "device", "candidates", "seconds", "per hour",
                                   "scaling", "efficiency", "total p50 (ms)"], rows,
                                  ["---:", "---", "---:", "---:", "---:", "---:", "---:", "---:"])]
    benchlib.write_results(args.out_dir, "multi_gpu",
                           {"benchmark": "multi_gpu", "environment": env, "phases": phases},
                           "\n".join(md))


if __name__ == "__main__":
    main()
