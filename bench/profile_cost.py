#!/usr/bin/env python3
"""What kopt's profile pass costs a long-lived worker, as the daemon runs it: per case, one
kopt-sandbox process profiles the same verified kernel REPEATS times (options.profile "cupti",
untimed); the first includes the profiler's one-time set-up, the rest are the steady state.

    bench/profile_cost.py OUT_DIR [--worker build/bin/kopt-sandbox] [--repeats 3] [--cases a,b]

With KOPT_PROFILE_TRACE=1 in the environment the worker's log (OUT_DIR/worker-*.log) says
where each pass's time went. Writes profile_cost.json and profile_cost.md; prints the table last.
"""
import argparse
import pathlib
import statistics
import sys

import benchlib
from benchlib import fmt, log
from profile_fidelity import CASES, profile_options


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--worker", default=str(benchlib.DEFAULT_WORKER))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default="", help="tasks to keep, comma-separated")
    args = parser.parse_args()
    out_dir = pathlib.Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = {t.name: t for t in benchlib.load_tasks()}
    keep = set(filter(None, args.cases.split(",")))
    results = {"environment": benchlib.gpu_environment(), "cases": []}
    rows = []
    for task, kernel in CASES:
        if keep and task not in keep:
            continue
        tag = pathlib.Path(kernel).stem + "-" + task
        worker = benchlib.Worker(args.worker, log_path=out_dir / ("worker-%s.log" % tag))
        runs = []
        try:
            source = (benchlib.ROOT / kernel).read_text()
            options = profile_options("cupti")  # what the fidelity table's kopt side asks
            for _ in range(args.repeats):
                result, error, wall_ms = worker.evaluate(tasks[task], source,
                                                         pathlib.Path(kernel).name,
                                                         baseline=False, options=options,
                                                         timeout=600)
                if error or "profile" not in result:
                    raise RuntimeError(error or result.get("profile_note") or result["verdict"])
                p = result["profile"]
                runs.append({"profile_ms": p["profile_ms"], "passes": p["passes"],
                             "duration_us": p["duration_us"], "eval_wall_ms": wall_ms,
                             "dram_bytes": p["dram_read_bytes"] + p["dram_write_bytes"],
                             "dram_percent": p["dram_percent"],
                             "l2_hit_percent": p["l2_hit_percent"]})
        except (RuntimeError, benchlib.WorkerError) as e:
            log("%s %s: %s" % (task, kernel, e))
            results["cases"].append({"task": task, "kernel": kernel, "error": str(e)})
            continue
        finally:
            worker.close()
        steady = [r["profile_ms"] for r in runs[1:]] or [runs[0]["profile_ms"]]
        case = {"task": task, "kernel": kernel, "runs": runs,
                "first_ms": runs[0]["profile_ms"], "steady_median_ms": statistics.median(steady)}
        results["cases"].append(case)
        rows.append([task, kernel, fmt(runs[0]["duration_us"] / 1e3, 3), str(runs[0]["passes"]),
                     fmt(case["first_ms"], 0), fmt(case["steady_median_ms"], 0)])
        log("%s %s: first %.0f ms, steady %.0f ms" % (task, kernel, case["first_ms"],
                                                       case["steady_median_ms"]))
    env = results["environment"]
    gpu = env["gpus"][0] if isinstance(env.get("gpus"), list) and env["gpus"] else {}
    head = ("# kopt profile pass cost\n\ndevice %s, driver %s, %s, commit %s\n\n"
            "One worker per case, %d profile passes of the same kernel; `first` includes the "
            "profiler's one-time set-up, `steady` is the median of the rest.\n\n"
            % (gpu.get("name", "?"), gpu.get("driver_version", "?"), env["date"], env["commit"],
               args.repeats))
    table = benchlib.markdown_table(
        ["task", "kernel", "kernel ms (profiled)", "passes", "first ms", "steady ms"], rows,
        align=["---", "---", "---:", "---:", "---:", "---:"])
    benchlib.write_results(out_dir, "profile_cost", results, head + table)


if __name__ == "__main__":
    sys.exit(main())
