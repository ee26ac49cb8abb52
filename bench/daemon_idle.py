#!/usr/bin/env python3
"""How much of the time the daemon keeps its GPU worker busy when the LLM is never the bottleneck.

    bench/run.sh daemon_idle OUT_DIR [--seconds 120] [--tasks axpy,softmax] [--bin build/bin]

`kopt run` with its agents pointed at `fake-llm-server --healthy` on loopback: a model that
answers at once, with a new kernel every time (variants of the replay kernels of
tests/orchestrator/replay, so only tasks with replay kernels take part). Candidates are then
always waiting, so every moment the worker is not evaluating is the daemon's own overhead
(prompts, the database, scheduling). The daemon prints the share itself at the end ("GPU workers
idle X% of the N s between the first and the last evaluation"); this script runs it, reads that
line and the run's counts, and writes daemon_idle.json and daemon_idle.md. Goal: under 5%.
"""
import argparse
import json
import os
import pathlib
import re
import socket
import subprocess
import time

import benchlib
from benchlib import log

IDLE_LINE = re.compile(r"GPU workers idle ([0-9.]+)% of the ([0-9.]+) s between the first and "
                       r"the last evaluation \(([0-9]+) evaluations on ([0-9]+) GPU")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--tasks", default="axpy,softmax")
    parser.add_argument("--bin", default=str(benchlib.ROOT / "build" / "bin"))
    parser.add_argument("--worker", default=None, help="(accepted for bench/run.sh)")
    args = parser.parse_args()
    out = pathlib.Path(args.out).resolve()
    binary = pathlib.Path(args.bin)
    home = benchlib.fresh_dir("kopt-idle-")
    port = free_port()
    # The config of the fake-server demo, pointed at this run's port; tasks never count as done
    # (speed of light, plateau), so the search goes on for the whole time.
    config = json.loads((benchlib.ROOT / "configs" / "fake-server.json").read_text().replace(
        "127.0.0.1:8090", "127.0.0.1:%d" % port))
    config["daemon"] = {"search": {"sol_threshold_percent": 1000, "plateau_candidates": 1000000}}
    config_path = pathlib.Path(home) / "fake-server.json"
    config_path.write_text(json.dumps(config, indent=2))
    env = dict(os.environ, KOPT_HOME=str(pathlib.Path(home) / "home"),
               KOPT_CACHE_DIR=str(pathlib.Path(home) / "cache"))
    for var in ("KOPT_CONFIG", "KOPT_DB", "KOPT_PROMPTS"):
        env.pop(var, None)
    server_log = open(out / "fake-llm-server.log", "w")
    server = subprocess.Popen(
        [str(binary / "fake-llm-server"), "--port", str(port), "--quiet", "--healthy",
         "--replay", str(benchlib.ROOT / "tests" / "orchestrator" / "replay")],
        stdout=server_log, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            if "listening" in (out / "fake-llm-server.log").read_text():
                break
            time.sleep(0.1)
        tasks = [str(benchlib.ROOT / "tasks" / t) for t in args.tasks.split(",")]
        command = [str(binary / "kopt"), "run", "--tasks", *tasks, "--config", str(config_path),
                   "--db", str(pathlib.Path(home) / "memory.db"),
                   "--hours", "%.6f" % (args.seconds / 3600.0),
                   "--candidates-per-task", "100000", "--no-display"]
        log("running: " + " ".join(command))
        started = time.time()
        run = subprocess.run(command, env=env, capture_output=True, text=True)
        wall = time.time() - started
    finally:
        server.terminate()
        server.wait(timeout=10)
    (out / "kopt-run.txt").write_text(run.stdout)
    (out / "kopt-run.log").write_text(run.stderr)
    match = IDLE_LINE.search(run.stdout)
    if not match:
        raise SystemExit("no utilization line in kopt run's output (exit %d):\n%s\n%s" %
                         (run.returncode, run.stdout[-2000:], run.stderr[-2000:]))
    idle, span, evaluations, gpus = (float(match.group(1)), float(match.group(2)),
                                     int(match.group(3)), int(match.group(4)))
    results = {"benchmark": "daemon_idle", "environment": benchlib.gpu_environment(),
               "tasks": args.tasks.split(","), "seconds": args.seconds, "wall_s": wall,
               "exit_code": run.returncode, "idle_percent": idle, "span_s": span,
               "evaluations": evaluations, "gpus": gpus,
               "evaluations_per_gpu_hour": evaluations / span * 3600 / gpus if span else None}
    rows = [["idle share of the workers (goal < 5%)", "%.1f%%" % idle],
            ["span, first to last evaluation", "%.0f s" % span],
            ["evaluations", str(evaluations)],
            ["evaluations per GPU-hour in the daemon",
             benchlib.fmt(results["evaluations_per_gpu_hour"], 0)]]
    markdown = "\n".join([
        "# Daemon idle share with an instant LLM",
        "",
        "`kopt run` on %s against `fake-llm-server --healthy` on loopback, %.0f s, %d GPU(s)."
        % (", ".join(results["tasks"]), args.seconds, gpus),
        "",
        benchlib.markdown_table(["measure", "value"], rows)])
    benchlib.write_results(out, "daemon_idle", results, markdown)


if __name__ == "__main__":
    main()
