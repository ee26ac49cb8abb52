#!/usr/bin/env python3
"""Profile fidelity: kopt's own profile pass (CUPTI range profiler, `kopt eval --profile`) against
Nsight Compute (`ncu --metrics ...`) for the same kernel file at the same shape.

    bench/profile_fidelity.py OUT_DIR [--worker build/bin/kopt-sandbox] [--ncu ncu]
                              [--cases axpy,softmax,...]

kopt's side: the kopt-sandbox worker's profile pass (options.profile "cupti", what `kopt eval
--profile` asks for), verified, untimed, on the timed shape, L2 flushed by a read sweep before
each replay pass (outside the profiled range), clocks not locked. ncu's side: this script's
--bracket-child mode (options.profile "bracket": one run of the plan between cuProfilerStart/Stop,
the flush before it, the worker's activity tracing off) under `ncu --profile-from-start off
--cache-control all --clock-control none`, so ncu measures exactly that run. Both sides' per-kernel
values are combined alike (counts summed, rates weighted by duration). Writes profile_fidelity.json and
profile_fidelity.md into OUT_DIR and prints the table last.
"""
import argparse
import csv
import io
import json
import os
import pathlib
import subprocess
import sys
import time

import benchlib
from benchlib import fmt, log

# The metrics of sandbox/profile_metrics.cc, in its order (kept in step by a CPU test).
TENSOR_PERCENT = "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg.pct_of_peak_sustained_active"  # noqa: E501
TENSOR_INSTRUCTIONS = ["sm__inst_executed_pipe_tensor_op_hmma.sum",
                       "sm__inst_executed_pipe_tensor_op_gmma.sum",
                       "sm__inst_executed_pipe_tensor_op_imma.sum"]
STALLS = ["long_scoreboard", "short_scoreboard", "mio_throttle", "lg_throttle", "barrier",
          "membar", "math_pipe_throttle", "wait", "not_selected", "selected", "no_instruction",
          "dispatch_stall", "drain", "sleeping", "tex_throttle", "imc_miss", "branch_resolving",
          "misc", "gmma"]
METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_sector_hit_rate.pct",
           "l1tex__t_sector_hit_rate.pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "sm__warps_active.avg.pct_of_peak_sustained_active", "smsp__inst_executed.sum",
           TENSOR_PERCENT] + TENSOR_INSTRUCTIONS + ["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"] + [
               "smsp__warps_issue_stalled_%s.sum" % r for r in STALLS]

# (task, kernel file relative to the repository): memory-bound and compute-bound baselines.
CASES = [("axpy", "tasks/axpy/baseline.cu"), ("softmax", "tasks/softmax/baseline.cu"),
         ("transpose", "tasks/transpose/baseline.cu"), ("sgemm", "tasks/sgemm/baseline.cu"),
         ("bf16_gemm", "tasks/bf16_gemm/baseline.cu"), ("layernorm", "tasks/layernorm/baseline.cu"),
         ("matvec", "tasks/matvec/baseline.cu"), ("gemm_bias_relu", "tasks/gemm_bias_relu/baseline.cu"),
         ("axpy", "tests/sandbox/profile/bank_conflict_axpy.cu"),
         ("bf16_gemm", "tests/sandbox/profile/bf16_gemm_wmma.cu")]


def summarize(kernels):
    """Per-kernel {metric: value} -> the KernelProfile fields, as sandbox/profile_metrics.cc."""
    weight = sum(k["gpu__time_duration.sum"] for k in kernels) or 1.0

    def rate(m):
        return sum(k["gpu__time_duration.sum"] * k[m] for k in kernels) / weight

    def total(m):
        return sum(k[m] for k in kernels)
    stall_total = sum(total("smsp__warps_issue_stalled_%s.sum" % r) for r in STALLS) or 1.0
    wavefronts = total("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum")
    return {
        "kernels": len(kernels),
        "duration_us": total("gpu__time_duration.sum") * 1e-3,
        "dram_bytes": total("dram__bytes_read.sum") + total("dram__bytes_write.sum"),
        "dram_percent": rate("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        "l2_hit_percent": rate("lts__t_sector_hit_rate.pct"),
        "l1_hit_percent": rate("l1tex__t_sector_hit_rate.pct"),
        "sm_percent": rate("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        "occupancy_percent": rate("sm__warps_active.avg.pct_of_peak_sustained_active"),
        "tensor_percent": (rate(TENSOR_PERCENT)
                           if sum(total(m) for m in TENSOR_INSTRUCTIONS) > 0 else -1),
        "instructions": total("smsp__inst_executed.sum"),
        "bank_conflict_percent": (100.0 * total("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum")
                                  / wavefronts if wavefronts else 0.0),
        "stalls": {r: 100.0 * total("smsp__warps_issue_stalled_%s.sum" % r) / stall_total
                   for r in STALLS},
    }


def profile_options(profile):
    """A verified, untimed evaluation with options.profile = `profile` ("cupti" or "bracket")."""
    return {"profile": profile, "time": False, "rounds": 1, "check_holdout": False}


def evaluate(worker_binary, task, kernel, profile, log_path=None):
    """One verified, untimed evaluation of `kernel` with options.profile = `profile`."""
    worker = benchlib.Worker(worker_binary, log_path=log_path)
    try:
        source = (benchlib.ROOT / kernel).read_text()
        options = profile_options(profile)
        result, error, wall_ms = worker.evaluate(task, source, pathlib.Path(kernel).name,
                                                 baseline=False, options=options, timeout=600)
    finally:
        worker.close()
    if error:
        raise RuntimeError("the worker failed: %s" % error)
    if result["verdict"] != "ok":
        raise RuntimeError("verdict %s: %s" % (result["verdict"], result["detail"][:500]))
    return result, wall_ms


def kopt_side(args, task, kernel):
    result, wall_ms = evaluate(args.worker, task, kernel, "cupti",
                               pathlib.Path(args.out_dir) / "worker-stderr.log")
    if "profile" not in result:
        raise RuntimeError("no profile: %s" % result.get("profile_note", result.get("detail")))
    p = result["profile"]
    stalls = {r: 0.0 for r in STALLS}
    for s in p["stalls"]:
        stalls[s["reason"]] = s["percent"]
    wavefronts = p["shared_wavefronts"]
    summary = dict(p, dram_bytes=p["dram_read_bytes"] + p["dram_write_bytes"], stalls=stalls,
                   bank_conflict_percent=100.0 * p["bank_conflicts"] / wavefronts
                   if wavefronts else 0.0)
    return summary, wall_ms / 1e3, result.get("device", {})


def number(text):
    text = text.replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return None


def ncu_side(args, task, kernel, out_dir, tag):
    log_file = out_dir / ("ncu-%s.csv" % tag)
    cmd = [args.ncu, "--profile-from-start", "off", "--cache-control", "all", "--clock-control",
           "none", "--target-processes", "all", "--csv", "--page", "raw", "--print-units", "base",
           "--metrics", ",".join(METRICS), "--log-file", str(log_file),
           sys.executable, str(pathlib.Path(__file__).resolve()), str(out_dir), "--worker",
           args.worker, "--bracket-child", "%s:%s" % (task.name, kernel)]
    env = dict(os.environ, KOPT_SANDBOX_UNDER_PROFILER="1")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    text = log_file.read_text() if log_file.exists() else ""
    rows = [line for line in text.splitlines() if line.startswith('"')]
    if not rows:
        raise RuntimeError("ncu wrote no rows (rc %d): %s %s" % (out.returncode, out.stdout[-1500:],
                                                                 out.stderr[-1500:]))
    table = list(csv.reader(io.StringIO("\n".join(rows))))
    header = table[0]
    kernels = []
    for row in table[1:]:
        values = dict(zip(header, row))
        if not values.get("ID", "").strip().isdigit():
            continue  # the units row
        k = {m: number(values.get(m, "")) for m in METRICS}
        missing = [m for m, v in k.items() if v is None]
        if missing:
            raise RuntimeError("ncu lacks %s" % missing)
        k["name"] = values.get("Kernel Name", "")
        kernels.append(k)
    return summarize(kernels), [k["name"] for k in kernels]


def compare(kopt, ncu):
    """Rows of (metric, kopt, ncu, difference, within tolerance)."""
    def points(name, key, tolerance_rel=0.05, floor=1.0):
        a, b = kopt[key], ncu[key]
        ok = abs(a - b) <= max(tolerance_rel * abs(b), floor)
        return (name, a, b, a - b, ok)

    def relative(name, key, tolerance_rel):
        a, b = kopt[key], ncu[key]
        ok = abs(a - b) <= tolerance_rel * max(abs(b), 1e-9) or (a == b)
        return (name, a, b, a - b, ok)
    rows = [points("DRAM throughput %", "dram_percent"),
            points("achieved occupancy %", "occupancy_percent"),
            points("SM throughput %", "sm_percent"),
            points("L2 hit %", "l2_hit_percent", floor=3.0),
            points("L1 hit %", "l1_hit_percent", floor=3.0),
            relative("DRAM bytes", "dram_bytes", 0.05),
            relative("instructions", "instructions", 0.01),
            relative("duration us", "duration_us", 0.10),
            points("bank conflicts % of wavefronts", "bank_conflict_percent", floor=2.0)]
    if ncu["tensor_percent"] >= 0 or kopt["tensor_percent"] >= 0:
        rows.append(points("tensor pipes %", "tensor_percent", floor=2.0))
    top = sorted(STALLS, key=lambda r: -kopt["stalls"][r])[:4]
    for r in top:
        a, b = kopt["stalls"][r], ncu["stalls"][r]
        rows.append(("stall %s %%" % r, a, b, a - b, abs(a - b) <= 3.0))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--worker", default=str(benchlib.DEFAULT_WORKER))
    parser.add_argument("--ncu", default="ncu")
    parser.add_argument("--cases", default="", help="tasks to keep, comma-separated")
    parser.add_argument("--bracket-child", default="",
                        help="TASK:KERNEL: one bracketed run, as the process ncu profiles")
    args = parser.parse_args()
    tasks = {t.name: t for t in benchlib.load_tasks()}
    if args.bracket_child:
        name, kernel = args.bracket_child.split(":", 1)
        result, _ = evaluate(args.worker, tasks[name], kernel, "bracket",
                             pathlib.Path(args.out_dir) / "worker-bracket-stderr.log")
        if result.get("profile_note"):
            sys.exit("bracket: " + result["profile_note"])
        return 0
    out_dir = pathlib.Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    keep = set(filter(None, args.cases.split(",")))
    results = {"environment": benchlib.gpu_environment(), "cases": []}
    markdown = []
    for task, kernel in CASES:
        if keep and task not in keep:
            continue
        tag = pathlib.Path(kernel).stem + "-" + task
        case = {"task": task, "kernel": kernel}
        try:
            kopt, wall, device = kopt_side(args, tasks[task], kernel)
            ncu, names = ncu_side(args, tasks[task], kernel, out_dir, tag)
            rows = compare(kopt, ncu)
            case.update(kopt=kopt, ncu=ncu, ncu_kernels=names, kopt_eval_wall_s=wall,
                        device=device.get("name", ""),
                        rows=[dict(zip(["metric", "kopt", "ncu", "diff", "ok"], r)) for r in rows])
            log("%s %s: %d/%d within tolerance, profile pass %.0f ms, %d passes" % (
                task, kernel, sum(r[4] for r in rows), len(rows), kopt["profile_ms"],
                kopt["passes"]))
            markdown.append("### %s: `%s` (%s)\n" % (task, kernel, ", ".join(names)))
            markdown.append("profile pass %.0f ms for %d replay passes; duration under the "
                            "profiler %.1f us\n" % (kopt["profile_ms"], kopt["passes"],
                                                    kopt["duration_us"]))
            markdown.append(benchlib.markdown_table(
                ["metric", "kopt", "ncu", "kopt - ncu", "within"],
                [[r[0], fmt(r[1], 2), fmt(r[2], 2), fmt(r[3], 2), "yes" if r[4] else "NO"]
                 for r in rows], align=["---", "---:", "---:", "---:", "---"]))
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
            case["error"] = str(e)
            log("%s %s: %s" % (task, kernel, e))
            markdown.append("### %s: `%s`\n\nfailed: %s\n" % (task, kernel, e))
        results["cases"].append(case)
    env = results["environment"]
    gpu = env["gpus"][0] if isinstance(env.get("gpus"), list) and env["gpus"] else {}
    head = ("# kopt profile pass vs Nsight Compute\n\ndevice %s, driver %s, %s, commit %s\n\n"
            "Tolerances: rates within 5%% of ncu's value (at least 1 point; 3 for hit rates), "
            "bytes within 5%%, instructions 1%%, duration 10%%, stall shares within 3 points.\n\n"
            % (gpu.get("name", "?"), gpu.get("driver_version", "?"), env["date"], env["commit"]))
    benchlib.write_results(out_dir, "profile_fidelity", results, head + "\n".join(markdown))


if __name__ == "__main__":
    sys.exit(main())
