"""How far to trust the production baselines (issue: judged against what users run).

    bench/run.sh baseline_agreement OUT_DIR [--tasks sgemm,bf16_gemm,...] [--kopt build/bin/kopt]

1. cuBLASLt as kopt stores it: `kopt baselines --no-torch` (the kopt-sandbox worker, CUPTI, cold
   L2) for the GEMM tasks, against the same cuBLASLt calls through ctypes and CUDA events
   (scripts/torch_baselines.py --cublaslt) and against the op in PyTorch (torch.matmul and
   F.linear call cuBLAS(Lt) themselves): within 5% is the goal.
2. PyTorch's eager and torch.compile times as scripts/torch_baselines.py takes them, against
   triton's do_bench on the same callables: within 2% is the goal.
Writes baseline_agreement.json and .md (device, date, commit) and prints the table last."""
import argparse
import json
import os
import pathlib
import subprocess
import sys

import benchlib

GEMM_TASKS = ["sgemm", "bf16_gemm", "gemm_bias_relu", "matvec"]
# The tensor-core ops whose PyTorch times read 4-10% below do_bench before the helper warmed up.
DO_BENCH_TASKS = ["bf16_gemm", "gemm_bias_relu", "causal_attention", "softmax"]


def worker_rows(kopt, tasks, db):
    out = subprocess.run([kopt, "baselines", "--no-torch", "--db", db, "--tasks",
                          str(benchlib.TASKS)] + tasks, capture_output=True, text=True,
                         timeout=1200)
    benchlib.log(out.stdout[-3000:], out.stderr[-2000:])
    listed = subprocess.run([kopt, "baselines", "--list", "--json", "--db", db],
                            capture_output=True, text=True, timeout=120)
    rows = json.loads(listed.stdout) if listed.returncode == 0 else []
    return {(r["task"], r["name"]): r for r in rows}, out.stdout


def helper_rows(tasks, cublaslt, do_bench):
    argv = [sys.executable, str(benchlib.ROOT / "scripts" / "torch_baselines.py")]
    # The cuBLASLt comparison needs eager alone; torch.compile costs up to a minute per task.
    argv += ["--cublaslt", "--no-compile"] if cublaslt else []
    argv += ["--check-do-bench"] if do_bench else []
    argv += [str(benchlib.TASKS / t) for t in tasks]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    benchlib.log(out.stderr[-2000:])
    rows = {}
    for line in out.stdout.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        rows[(row.get("task"), row.get("name"))] = row
    return rows


def ratio(a, b):
    return a / b if a and b else None


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--tasks", default=",".join(GEMM_TASKS))
    parser.add_argument("--do-bench-tasks", default=",".join(DO_BENCH_TASKS))
    parser.add_argument("--kopt", default=str(benchlib.ROOT / "build" / "bin" / "kopt"))
    args = parser.parse_args()
    gemms = [t for t in args.tasks.split(",") if t]
    db = benchlib.output_file(args.out_dir, "baselines.db")
    if os.path.exists(db):
        os.remove(db)
    stored, kopt_output = worker_rows(args.kopt, gemms, db)
    events = helper_rows(gemms, cublaslt=True, do_bench=False)
    timed = helper_rows([t for t in args.do_bench_tasks.split(",") if t], cublaslt=False,
                        do_bench=True)

    lt_rows, lt_table = [], []
    for task in gemms:
        eager = events.get((task, "torch_eager"), {}).get("median_us")
        entry = {"task": task, "torch_eager_us": eager}
        cells = [task]
        for name in ("cublaslt_heuristic", "cublaslt_autotuned"):
            worker = stored.get((task, name), {})
            ev = events.get((task, name + "_events"), {})
            entry[name] = {"worker_us": worker.get("median_us"), "worker_noise": worker.get("noise"),
                           "worker_detail": worker.get("detail"),
                           "library_versions": worker.get("library_versions"),
                           "events_us": ev.get("median_us"), "events_error": ev.get("error")}
            r = ratio(worker.get("median_us"), ev.get("median_us"))
            cells += [benchlib.fmt(worker.get("median_us")), benchlib.fmt(ev.get("median_us")),
                      benchlib.fmt(r, 3)]
        r = ratio(entry["cublaslt_autotuned"]["worker_us"], eager)
        entry["autotuned_over_eager"] = r
        cells += [benchlib.fmt(eager), benchlib.fmt(r, 3)]
        lt_rows.append(entry)
        lt_table.append(cells)

    db_rows, db_table = [], []
    for (task, name), row in sorted(timed.items()):
        if name not in ("torch_eager", "torch_compile"):
            continue
        db_rows.append({k: row.get(k) for k in (
            "task", "name", "median_us", "noise", "samples", "sm_clock_mhz", "sustained_us",
            "sustained_sm_clock_mhz", "do_bench_us", "do_bench_sm_clock_mhz", "vs_do_bench",
            "burst_vs_do_bench", "error")})
        db_table.append([task, name, benchlib.fmt(row.get("median_us")),
                         benchlib.fmt(row.get("sm_clock_mhz"), 0),
                         benchlib.fmt(row.get("sustained_us")),
                         benchlib.fmt(row.get("sustained_sm_clock_mhz"), 0),
                         benchlib.fmt(row.get("do_bench_us")),
                         benchlib.fmt(row.get("vs_do_bench"), 3),
                         benchlib.fmt(row.get("burst_vs_do_bench"), 3),
                         (row.get("error") or "")[:60]])

    env = benchlib.gpu_environment()
    md = ["# Production baselines: agreement (%s, %s, commit %s)" % (
        (env.get("gpus") or [{}])[0].get("name", "?") if isinstance(env.get("gpus"), list) else "?",
        env["date"], env["commit"]), "",
        "cuBLASLt: kopt's worker (CUPTI, cold L2) vs the same calls through ctypes and CUDA "
        "events (burst), and the autotuned time vs the op in PyTorch eager (burst; us):", "",
        benchlib.markdown_table(["task", "heuristic kopt", "events", "ratio", "autotuned kopt",
                                 "events", "ratio", "torch eager", "autotuned/eager"], lt_table),
        "", "PyTorch as scripts/torch_baselines.py times it, one sample at a time (burst, "
        "stored) and back to back (sustained), vs triton's do_bench (us; NVML's SM clock while "
        "sampling):", "",
        benchlib.markdown_table(["task", "kind", "burst (stored)", "MHz", "sustained", "MHz",
                                 "do_bench", "sustained/do_bench", "burst/do_bench", "error"],
                                db_table)]
    results = {"environment": env, "cublaslt": lt_rows, "do_bench": db_rows,
               "kopt_baselines_output": kopt_output[-4000:]}
    benchlib.write_results(args.out_dir, "baseline_agreement", results, "\n".join(md))


if __name__ == "__main__":
    main()
