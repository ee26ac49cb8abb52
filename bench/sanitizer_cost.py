#!/usr/bin/env python3
"""What a sanitizer pass costs, and what checking only the candidate's kernels saves (issue 35):
per task, `kopt eval TASK --sanitize --no-time` on its baseline, once with every kernel under every
tool (KOPT_SANITIZER_KERNELS=all, as before) and once as the daemon runs it now (memcheck,
racecheck and synccheck check the candidate's kernels alone; initcheck every kernel). With
--initcheck-experiment, once more with initcheck filtered too (KOPT_SANITIZER_KERNELS=
candidate-initcheck: on an H200, 2026-11-29, its run timed out after 125 s on decode_attention,
which is why the daemon does not filter initcheck). The results are written after every task, so
a run cut short keeps what it measured.

    bench/run.sh sanitizer_cost OUT_DIR [--tasks decode_attention,softmax,...] [--kopt build/bin/kopt]
        [--initcheck-experiment]

Each tool's seconds come from the sanitizer note (with its [start, longest step, end]); a verdict
other than ok, or a finding, in either mode is a failure of the row. Writes sanitizer_cost.json and
sanitizer_cost.md; prints the table last.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

import benchlib
from benchlib import fmt, log

DEFAULT_TASKS = "decode_attention,softmax,transpose,layernorm,cross_entropy,sgemm"
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
MODES = ("all", "candidate", "candidate-initcheck")


def tool_seconds(note):
    """{"memcheck": 27.4, ...} from "compute-sanitizer: memcheck 27.4 s [...], racecheck ..."."""
    found = {}
    for tool in TOOLS:
        m = re.search(r"\b%s (\d+(?:\.\d+)?) s" % tool, note)
        if m:
            found[tool] = float(m.group(1))
    return found


def sanitize(kopt, task, mode, log_path):
    env = dict(os.environ, KOPT_SANITIZER_KERNELS=mode)
    started = time.monotonic()
    proc = subprocess.run([kopt, "eval", "--tasks", str(benchlib.ROOT / "tasks"), task,
                           "--sanitize", "--no-time", "--json"],
                          capture_output=True, text=True, env=env, timeout=900)
    wall = time.monotonic() - started
    pathlib.Path(log_path).write_text(proc.stdout + "\n--- stderr\n" + proc.stderr)
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"wall_s": wall, "error": "no JSON (exit %d)" % proc.returncode}
    sanitizer = result.get("sanitizer", {})
    return {"wall_s": wall, "verdict": result.get("verdict", ""),
            "finding": sanitizer.get("finding", ""), "note": sanitizer.get("note", ""),
            "tools_s": tool_seconds(sanitizer.get("note", "")),
            "seconds": sanitizer.get("seconds", 0.0)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--kopt", default=str(benchlib.ROOT / "build" / "bin" / "kopt"))
    parser.add_argument("--worker", default="")  # bench/run.sh's; kopt finds its own worker
    parser.add_argument("--initcheck-experiment", action="store_true")
    args = parser.parse_args()
    modes = MODES if args.initcheck_experiment else MODES[:2]
    out_dir = pathlib.Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = {"environment": benchlib.gpu_environment(), "rows": []}
    rows, failed = [], 0
    for task in filter(None, args.tasks.split(",")):
        row = {"task": task}
        for mode in modes:
            log("%s: sanitizing its baseline, kernels %s" % (task, mode))
            row[mode] = sanitize(args.kopt, task, mode, out_dir / ("%s-%s.log" % (task, mode)))
        ok = all(row[m].get("verdict") == "ok" and not row[m].get("finding") and
                 len(row[m].get("tools_s", {})) == len(TOOLS) for m in MODES[:2])
        if args.initcheck_experiment:
            row["initcheck_filtered_finding"] = row[MODES[2]].get("finding", "")
        row["ok"] = ok
        failed += 0 if ok else 1
        results["rows"].append(row)
        a, c = row["all"].get("seconds", 0), row["candidate"].get("seconds", 0)
        cells = [task]
        for tool in TOOLS:
            cells.append("%s -> %s" % (fmt(row["all"].get("tools_s", {}).get(tool)),
                                       fmt(row["candidate"].get("tools_s", {}).get(tool))))
        cells += [fmt(a), fmt(c), fmt(a / c if c else None, 2) + "x", "yes" if ok else "NO"]
        if args.initcheck_experiment:
            filtered = row[MODES[2]]
            cells.append("%s s, %s" % (fmt(filtered.get("tools_s", {}).get("initcheck")),
                                       (filtered.get("note") or "")[-60:]))
        rows.append(cells)
        write(out_dir, results, rows, args.initcheck_experiment)
    return 1 if failed else 0


def write(out_dir, results, rows, experiment):
    env = results["environment"]
    gpu = env["gpus"][0]["name"] if isinstance(env.get("gpus"), list) and env["gpus"] else "?"
    markdown = "\n".join([
        "# A sanitizer pass: every kernel checked -> the candidate's alone, %s" % gpu, "",
        "%s, commit %s. Seconds per tool (every kernel -> the candidate's kernels; initcheck "
        "checks every kernel in both), the pass, and its speed-up. `ok`: both runs ok, no "
        "finding, all four tools ran." % (env["date"], env["commit"]), "",
        benchlib.markdown_table(["task"] + list(TOOLS) + ["pass s (all)", "pass s (candidate)",
                                                          "faster", "ok"] +
                                (["initcheck filtered (experiment)"] if experiment else []),
                                rows)])
    benchlib.write_results(out_dir, "sanitizer_cost", results, markdown)


if __name__ == "__main__":
    sys.exit(main())
