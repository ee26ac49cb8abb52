#!/usr/bin/env python3
"""Evaluation throughput: how many candidates kopt judges per GPU-hour, against the load_inline
path of the Python systems (KernelBench, AutoKernel, CudaForge build every candidate with
torch.utils.cpp_extension.load_inline).

    bench/throughput.py OUT_DIR [--worker build/bin/kopt-sandbox] [--budget-s 150] [--gate]
                                [--variants 2] [--tasks a,b] [--no-inline]

1. load_inline builds one tiny CUDA kernel in a fresh build folder (nothing cached), in a child
   process that has already imported torch: the build alone is timed.
2. One long-lived kopt-sandbox worker (as kopt runs it) judges every task's baseline, then
   tunable variants, until the budget is spent. The compile cache starts empty. Each request
   carries the baseline for interleaved timing and kopt's default options (5 verification
   rounds, holdout shapes, adaptive timing), exactly what the daemon sends.
Writes throughput.json and throughput.md into OUT_DIR and prints the table last.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import time

import benchlib
from benchlib import fmt, log

INLINE_BUILD = r'''
import json, os, sys, time
build_dir = sys.argv[1]
os.environ["TORCH_EXTENSIONS_DIR"] = build_dir
t0 = time.perf_counter()
import torch
from torch.utils.cpp_extension import load_inline
import_s = time.perf_counter() - t0
cuda_src = r"""
#include <torch/extension.h>
__global__ void axpy_kernel(const float* x, const float* y, float* out, float alpha, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}
torch::Tensor axpy(torch::Tensor x, torch::Tensor y, double alpha) {
  auto out = torch::empty_like(x);
  int64_t n = x.numel();
  axpy_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                        out.data_ptr<float>(), (float)alpha, n);
  return out;
}
"""
cpp_src = "torch::Tensor axpy(torch::Tensor x, torch::Tensor y, double alpha);"
t1 = time.perf_counter()
module = load_inline(name="kopt_bench_axpy_%d" % os.getpid(), cpp_sources=cpp_src,
                     cuda_sources=cuda_src, functions=["axpy"], build_directory=build_dir,
                     verbose=False)
build_s = time.perf_counter() - t1
x = torch.randn(1 << 20, device="cuda")
y = torch.randn(1 << 20, device="cuda")
t2 = time.perf_counter()
out = module.axpy(x, y, 1.75)
torch.cuda.synchronize()
first_call_s = time.perf_counter() - t2
err = (out - (1.75 * x + y)).abs().max().item()
print(json.dumps({"build_s": build_s, "import_torch_s": import_s, "first_call_s": first_call_s,
                  "max_error": err, "torch": torch.__version__, "torch_cuda": torch.version.cuda}))
'''


def time_load_inline():
    build_dir = benchlib.fresh_dir("kopt-bench-inline-")
    try:
        began = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", INLINE_BUILD, str(build_dir)],
                              capture_output=True, text=True, timeout=420)
        wall = time.perf_counter() - began
        lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
        if proc.returncode != 0 or not lines:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-6:]
            return {"ok": False, "error": " / ".join(tail), "wall_s": wall}
        result = json.loads(lines[-1])
        result.update(ok=True, wall_s=wall)
        return result
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "load_inline did not finish in 420 s"}
    finally:
        benchlib.remove_dir(build_dir)


# The worker's per-phase breakdown of verification (sandbox/worker/verifier.h, VerifyPhases).
VERIFY_PHASES = ("verify_setup_ms", "verify_inputs_ms", "verify_reference_ms",
                 "verify_candidate_ms", "verify_checks_ms")


def with_defaults(source, values):
    """The kernel file with `values` as its tunables' defaults: how the daemon's tuner sends a
    setting, so that its compile gate and the worker compile the same thing."""
    match = re.search(r"/\*\s*kopt:plan(.*?)\*/", source, re.S)
    plan = json.loads(match.group(1))
    for name, value in values.items():
        choices = plan["tunables"][name]
        choices.remove(value)
        choices.insert(0, value)
    return source[:match.start(1)] + "\n" + json.dumps(plan, indent=2) + "\n" + source[match.end(1):]


def candidates(tasks, variant_count):
    """Every baseline first, then the variants round-robin over tasks, so a short budget still
    covers the whole suite."""
    plan = [(t, {}, "baseline") for t in tasks]
    per_task = {t.name: benchlib.variants(t.baseline, variant_count) for t in tasks}
    for round_index in range(variant_count):
        for t in tasks:
            if round_index < len(per_task[t.name]):
                v = per_task[t.name][round_index]
                plan.append((t, v, "variant " + ",".join("%s=%s" % kv for kv in v.items())))
    return plan


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--worker", default=str(benchlib.DEFAULT_WORKER))
    parser.add_argument("--budget-s", type=float, default=150,
                        help="stop starting candidates after this many seconds of the stream")
    parser.add_argument("--variants", type=int, default=2, help="tunable variants per task")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--no-inline", action="store_true", help="skip the load_inline build")
    parser.add_argument("--gate", action="store_true",
                        help="compile each candidate on the host ahead of the worker, as the "
                             "daemon's compile gate does (needs build/bin/kopt beside the worker)")
    args = parser.parse_args()
    tasks = benchlib.load_tasks([n for n in args.tasks.split(",") if n])
    env = benchlib.gpu_environment()

    inline = {"ok": False, "error": "skipped (--no-inline)"}
    if not args.no_inline:
        log("load_inline: building one tiny CUDA kernel in a fresh folder...")
        inline = time_load_inline()
        log("load_inline:", inline)

    cache = benchlib.fresh_dir("kopt-bench-cache-")
    worker = benchlib.Worker(args.worker, cache_dir=cache,
                             log_path=benchlib.output_file(args.out_dir, "throughput-worker.log"))
    log("worker up in %.2f s on %s" % (worker.start_seconds, worker.info.get("name")))
    records = []
    plan = candidates(tasks, args.variants)
    gate = None
    if args.gate:
        kopt = str(pathlib.Path(args.worker).resolve().parent / "kopt")
        # A setting goes out as the kernel file with it as the default, as the daemon's tuner
        # sends it; the baseline itself goes out as it is.
        plan = [(t, {}, label, with_defaults(t.baseline, v) if v else t.baseline)
                for t, v, label in plan]
        gate = benchlib.CompileGate(kopt, cache, worker.info.get("arch", "sm_90a"),
                                    [(t, source) for t, _, _, source in plan])
    else:
        plan = [(t, v, label, t.baseline) for t, v, label in plan]
    began = time.perf_counter()
    seen_tasks = set()
    for index, (task, tunable_values, label, source) in enumerate(plan):
        if time.perf_counter() - began > args.budget_s:
            log("budget spent: %d candidates judged" % len(records))
            break
        if gate:
            gate.wait(index)
        result, error, wall_ms = worker.evaluate(task, source, "baseline.cu", tunable_values)
        record = {"task": task.name, "candidate": label, "wall_ms": wall_ms,
                  "first_of_task": task.name not in seen_tasks, "error": error}
        seen_tasks.add(task.name)
        if result:
            for key in ("verdict", "compile_ms", "verify_ms", "time_ms", "total_ms",
                        "compile_cache_hit", "speedup", "sol_percent", "detail"):
                record[key] = result.get(key)
            record["median_us"] = (result.get("candidate_time") or {}).get("median_us")
            for phase, ms in (result.get("verify_phases") or {}).items():
                record["verify_" + phase] = ms
        records.append(record)
        log("%-18s %-22s %-13s compile %7.1f ms verify %8.1f ms time %8.1f ms total %8.1f ms" % (
            task.name, label, record.get("verdict", "error"), record.get("compile_ms") or 0,
            record.get("verify_ms") or 0, record.get("time_ms") or 0, record.get("total_ms") or 0))
    stream_s = time.perf_counter() - began
    if gate:
        gate.close()
    worker.close()
    benchlib.remove_dir(cache)

    judged = [r for r in records if r.get("verdict")]
    steady = [r for r in judged if not r["first_of_task"]]
    # Verification and timing only happen to candidates that compile: their shares are taken
    # over verified candidates, so a compile error's zero does not pull the median down.
    verified = [r for r in judged if r["verdict"] == "ok"]
    stats = {key: benchlib.summary([r.get(key) for r in judged])
             for key in ("compile_ms", "total_ms", "wall_ms")}
    stats.update({key: benchlib.summary([r.get(key) for r in verified])
                  for key in ("verify_ms", "time_ms") + VERIFY_PHASES})
    steady_stats = {key: benchlib.summary([r.get(key) for r in steady])
                    for key in ("compile_ms", "total_ms", "wall_ms")}
    per_hour = 3600.0 * len(records) / stream_s if stream_s > 0 and records else None
    inline_s = inline.get("build_s") if inline.get("ok") else None
    compile_p50_s = (stats["compile_ms"].get("p50") or 0) / 1e3
    results = {
        "benchmark": "throughput", "environment": env, "worker": worker.info,
        "worker_start_s": worker.start_seconds, "worker_restarts": worker.restarts,
        "stream_s": stream_s, "candidates": len(records), "judged": len(judged),
        "verdicts": {v: sum(1 for r in judged if r["verdict"] == v)
                     for v in sorted({r["verdict"] for r in judged})},
        "cache_hits": sum(1 for r in judged if r.get("compile_cache_hit")),
        "per_candidate": stats, "per_candidate_after_first_of_task": steady_stats,
        "candidates_per_gpu_hour": per_hour, "load_inline": inline,
        "load_inline_candidates_per_hour_bound": 3600.0 / inline_s if inline_s else None,
        "compile_ratio_load_inline_over_kopt": inline_s / compile_p50_s
        if inline_s and compile_p50_s else None,
        "gate": bool(gate), "records": records,
    }

    rows = []
    for key, label in (("compile_ms", "compile"), ("verify_ms", "verify (verified only)"),
                       ("verify_setup_ms", "  verify: buffers"),
                       ("verify_inputs_ms", "  verify: random inputs + checksums"),
                       ("verify_reference_ms", "  verify: reference runs"),
                       ("verify_candidate_ms", "  verify: candidate runs"),
                       ("verify_checks_ms", "  verify: poison, guards, comparisons"),
                       ("time_ms", "time (verified only)"),
                       ("total_ms", "total (worker)"), ("wall_ms", "total (request, wall)")):
        s = stats[key]
        rows.append([label, fmt(s.get("p50")), fmt(s.get("p90")), fmt(s.get("mean"))])
    md = ["# Evaluation throughput", "",
          "%s, %s; commit %s; %s" % (worker.info.get("name"), env["date"], env["commit"],
                                    env["command"]), "",
          "%d candidates (%d tasks, baselines then tunable variants) through one long-lived "
          "kopt-sandbox worker in %.1f s; verdicts %s; compile cache hits %d%s." % (
              len(records), len(seen_tasks), stream_s, results["verdicts"], results["cache_hits"],
              "; each compiled on the host ahead of the worker, four at a time (--gate), as the daemon's jobs do" if gate
              else ""),
          "", benchlib.markdown_table(["per candidate (ms)", "p50", "p90", "mean"], rows), "",
          benchlib.markdown_table(
              ["path", "build / compile of one candidate", "candidates per GPU-hour"],
              [["kopt (NVRTC in a long-lived worker, verify + time included)",
                fmt(compile_p50_s * 1e3, 1, " ms (p50)"), fmt(per_hour, 0)],
               ["torch load_inline (build only, nothing else)",
                fmt(inline_s, 1, " s") if inline_s else inline.get("error", "-"),
                fmt(results["load_inline_candidates_per_hour_bound"], 0, " (upper bound)")],
               ["ratio", fmt(results["compile_ratio_load_inline_over_kopt"], 0, "x"),
                fmt(per_hour / results["load_inline_candidates_per_hour_bound"], 1, "x")
                if per_hour and results["load_inline_candidates_per_hour_bound"] else "-"]],
              ["---", "---:", "---:"])]
    benchlib.write_results(args.out_dir, "throughput", results, "\n".join(md))


if __name__ == "__main__":
    main()
