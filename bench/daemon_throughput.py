#!/usr/bin/env python3
"""Evaluations per GPU-hour through `kopt run` itself, end to end, on the whole suite (issue 35).

    bench/run.sh daemon_throughput OUT_DIR [--seconds 300] [--modes tuner,llm] [--gpus 1,all]
                                           [--workers-per-gpu 1,2,4] [--tasks DIR] [--bin build/bin]

For each mode and GPU count, one fresh `kopt run` on every task of --tasks (default tasks/) for
a fixed wall time (300 s by default: a night starts with every task's baseline verified, timed
and profiled in full, about 2.5 s each on one GPU, and with its early would-be bests, each given
the whole gate; a 90 s run was mostly that start, while a night is hours): `tuner` is
`--tuner-only`; `llm` points the agents at `fake-llm-server
--healthy` on loopback, a model that answers at once with a new, valid kernel every time (a
variant of the task's own baseline.cu: a replay folder of every task's baseline is written for
it), so the GPU, not the model, is the bottleneck. The sanitizer runs as it does overnight (its
own lane). Evaluation counts come from the run's database (every judged candidate once, when
it was judged: a provisional best by its "sanitizing" row, whatever its pass said later); the GPU's idle
share from the daemon's own line ("GPU workers idle X% ...": a GPU is idle while none of its
workers evaluates; with k workers per GPU each worker's own idle share follows as "each idle
Y%"); the sanitizer passes from its "sanitizer lane: N passes" line. --workers-per-gpu K (a
list: one run per value) goes to the daemon's config as daemon.workers_per_gpu: K timing workers
share each GPU in turns. Writes daemon_throughput.json (one row per mode, GPU count and workers
per GPU: mode, gpus, workers_per_gpu, evaluations, screened (verdict `screened`: timed, not
faster than the best, the rest of the gate not run; --screen off gives every candidate the
whole gate), whole_gate_per_gpu_hour, seconds, evaluations_per_gpu_hour,
gpu_idle_fraction, worker_idle_fraction, scaling against the 1-GPU row of the same mode and
workers per GPU, sanitizer_runs; plus device, date, commit) and a markdown table. `seconds` is
the night's search: the run's wall time (run_seconds) but the sanitizer lane's check of the
provisional bests a search that ended early left (sanitize_tail_seconds: a tuner-only night
judges every configuration within a minute, then sanitizes its wins). Before each run the bench
waits for the GPUs to be free of compute processes (quiet_wait_seconds).
Goals: >= 8,000 evaluations per GPU-hour on one H100, idle <= 10%, scaling >= 0.9 x GPUs.
"""
import argparse
import datetime
import json
import os
import pathlib
import re
import socket
import sqlite3
import subprocess
import time

import benchlib
from benchlib import log

IDLE_LINE = re.compile(r"GPU workers idle ([0-9.]+)% of the ([0-9.]+) s between the first and "
                       r"the last evaluation \(([0-9]+) evaluations on ([0-9]+) GPU")
WORKER_IDLE = re.compile(r"[0-9]+ workers per GPU, each idle ([0-9.]+)%")
LANE_LINE = re.compile(r"sanitizer lane: ([0-9]+) passes, ([0-9]+) not finished")
# A gpu_busy verdict the evaluator waits out (sandbox/evaluator.cc): each pause is GPU time lost.
BUSY_PAUSE = re.compile(r"timing on this GPU pauses for ([0-9.]+) s")
# After a search that ended with every task done, the lane checks the provisional bests it left
# (orchestrator's sanitize_what_is_left): seconds outside the search, said apart.
LANE_TAIL = re.compile(r"the sanitizer lane's check of what the search left took ([0-9.]+) s")
# The longest the bench waits for the GPUs to be free of compute processes before a run: the
# previous run's lane worker may still be leaving (its 20 s grace), and its units would hold up
# this run's timing turns (a baseline waited 7.8 s on an H200 pair, 2026-11-29).
QUIET_WAIT_S = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def visible_gpus():
    """The GPUs kopt may use: CUDA_VISIBLE_DEVICES where set (nvidia-smi lists every GPU of the
    machine, and a run given two of four asked for --gpus 0,1,2,3), else every GPU."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip():
        return max(1, len([d for d in visible.split(",") if d.strip()]))
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                             timeout=30).stdout
        return max(1, sum(1 for line in out.splitlines() if line.startswith("GPU ")))
    except (OSError, subprocess.TimeoutExpired):
        return 1


def write_replay(tasks, folder):
    """One replay file per task, its baseline.cu as the kernel: the healthy fake model varies it."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, task in enumerate(tasks):
        source = (task / "baseline.cu").read_text()
        (folder / ("%02d_%s.txt" % (i, task.name))).write_text("```cuda\n" + source + "```\n")


# Each judged candidate once, at the time it was judged: a provisional best by its 'sanitizing'
# row (written when the search judged it; its pass's verdict row may come after the search, or
# never where the night ended first), every other kernel by its verdict row.
JUDGED = ("SELECT e.created_at FROM evaluations e WHERE e.verdict = 'sanitizing' OR NOT EXISTS "
          "(SELECT 1 FROM evaluations s WHERE s.kernel_id = e.kernel_id AND "
          "s.verdict = 'sanitizing' AND s.id < e.id) ORDER BY e.id")


def count_evaluations(db):
    with sqlite3.connect(str(db)) as c:
        rows = c.execute("SELECT verdict, count(*) FROM evaluations GROUP BY verdict").fetchall()
        judged = len(c.execute(JUDGED).fetchall())
    return judged, {v: n for v, n in rows}


def rate_after_baselines(db, baselines, gpus):
    """Evaluations per GPU-hour after the first `baselines` judged rows (each task's baseline comes
    first): the rate a long night settles at, which a short run's start-up hides. Rows carry
    created_at to the second; None where too few rows follow."""
    with sqlite3.connect(str(db)) as c:
        times = [row[0] for row in c.execute(JUDGED)]
    if len(times) < baselines + 2:
        return None
    parse = lambda t: datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ")
    seconds = (parse(times[-1]) - parse(times[baselines - 1])).total_seconds()
    return round((len(times) - baselines) / seconds * 3600 / gpus, 1) if seconds > 0 else None


PHASE_LINE = re.compile(r"judged \S+ in ([0-9.]+) ms: compile gate ([0-9.]+) ms, worker ([0-9.]+) ms "
                        r"\(compile ([0-9.]+)(?: cached)?, verify ([0-9.]+), time ([0-9.]+)\)")
PHASES = ("job", "compile_gate", "worker", "worker_compile", "verify", "time")
# After the line's head, "; steps: kernels 80.1, kernels.compile 66.0, ..." (candidate_evaluation.cc
# phase_steps): each step of the worker's evaluation, verification's phases, daemon.gpu_wait (the
# queue for a GPU), daemon.transport (the exchange beyond the worker) and worker.unnamed.
STEPS = re.compile(r"; steps: ([^\n]*)")
STEP = re.compile(r"([A-Za-z_.]+) (-?[0-9.]+)")
# Before the steps, "; timing: 12 samples (baseline 30), stopped: above the bar" (log_phases): how
# many samples the candidate's timing took and why it stopped.
TIMING = re.compile(r"; timing: ([0-9]+) samples(?: \(baseline ([0-9]+)\))?(?:, stopped: ([a-z ]+))?")
# The sanitizer's share: its passes and their seconds of tools (orchestrator's end line), and the
# lane's mode (daemon.cc's start line).
LANE_SECONDS = re.compile(r"sanitizer lane: ([0-9]+) passes \(([0-9.]+) s of tools\)")
LANE_MODE = re.compile(r"sanitizer lane: [0-9]+ lane\(s\), ([^\n]*)")


def keep_run_log(home, out, tag):
    """Copies the run's debug log beside the results and returns the median and total of each
    phase of an evaluation (the daemon's "judged ... in" lines): where a night's time went."""
    logs = sorted(home.glob("**/kopt.log"))
    if not logs:
        return None
    text = logs[-1].read_text(errors="replace")
    (out / ("kopt-run-%s.debug.log" % tag)).write_text(text)
    samples, steps, stops, timed_samples = [], {}, {}, []
    for line in text.splitlines():
        m = PHASE_LINE.search(line)
        if not m:
            continue
        samples.append(tuple(float(v) for v in m.groups()))
        timing = TIMING.search(line)
        if timing:
            timed_samples.append(int(timing.group(1)))
            stop = timing.group(3) or "unsaid"
            stops[stop] = stops.get(stop, 0) + 1
        listed = STEPS.search(line)
        for name, ms in STEP.findall(listed.group(1) if listed else ""):
            steps.setdefault(name, []).append(float(ms))
    if not samples:
        return None
    phases = {}
    summary = lambda values: {"median": round(sorted(values)[len(values) // 2], 1),
                              "total": round(sum(values), 1), "count": len(values)}
    for i, name in enumerate(PHASES):
        phases[name] = summary([s[i] for s in samples])
    # A step missing from a line (an evaluation that ended before it) counts there as absent, so
    # "count" says how many evaluations reached it.
    phases["steps"] = {name: summary(values) for name, values in sorted(steps.items())}
    phases["count"] = len(samples)
    phases["timing"] = {"stops": stops, "samples": summary(timed_samples) if timed_samples else None}
    seconds = LANE_SECONDS.search(text)
    mode = LANE_MODE.search(text)
    phases["sanitizer"] = {"passes": int(seconds.group(1)) if seconds else 0,
                           "tool_seconds": float(seconds.group(2)) if seconds else 0.0,
                           "mode": mode.group(1) if mode else None}
    return phases


def wait_for_quiet_gpus():
    """Seconds spent waiting until nvidia-smi lists no compute process (none without nvidia-smi)."""
    started = time.time()
    while time.time() - started < QUIET_WAIT_S:
        try:
            listed = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                                    capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
        if not listed:
            break
        time.sleep(1)
    return round(time.time() - started, 1)


def one_run(args, mode, gpus, workers, tasks, out):
    out.mkdir(parents=True, exist_ok=True)
    quiet_wait = wait_for_quiet_gpus()
    home = benchlib.fresh_dir("kopt-throughput-")
    tag = "%s-%dgpu" % (mode, gpus) + ("" if workers == 1 else "-%dworkers" % workers)
    env = dict(os.environ, KOPT_HOME=str(home / "home"), KOPT_CACHE_DIR=str(home / "cache"))
    for var in ("KOPT_CONFIG", "KOPT_DB", "KOPT_PROMPTS"):
        env.pop(var, None)
    # Tasks never count as done at a speed of light or a candidate plateau; the model's plateau
    # (search.plateau_plans, scaled by headroom) still ends a task, as in a real night, so a
    # long one-GPU llm night (360 s on an H200) runs out of work before its end.
    config = {"format": 1, "daemon": {"search": {"sol_threshold_percent": 1000,
                                                 "plateau_candidates": 1000000}}}
    server = None
    if mode == "llm":
        port = free_port()
        config = json.loads((benchlib.ROOT / "configs" / "fake-server.json").read_text().replace(
            "127.0.0.1:8090", "127.0.0.1:%d" % port))
        config["llm"]["providers"]["fake"]["max_concurrent"] = 32
        config["daemon"] = {"search": {"sol_threshold_percent": 1000,
                                       "plateau_candidates": 1000000}}
        replay = home / "replay"
        write_replay(tasks, replay)
        server_log = open(out / ("fake-llm-server-%s.log" % tag), "w")
        server = subprocess.Popen(
            [str(args.bin / "fake-llm-server"), "--port", str(port), "--quiet", "--healthy",
             "--replay", str(replay)], stdout=server_log, stderr=subprocess.STDOUT)
        for _ in range(100):
            if "listening" in (out / ("fake-llm-server-%s.log" % tag)).read_text():
                break
            time.sleep(0.1)
    config["daemon"]["workers_per_gpu"] = workers
    # --screen off: every candidate gets the whole gate before timing (daemon.search.screen).
    config["daemon"]["search"]["screen"] = args.screen != "off"
    # on (the default) and time-first: timed before any verification
    # (daemon.search.screen_time_first); verify-first: the declared shapes before timing.
    config["daemon"]["search"]["screen_time_first"] = args.screen in ("on", "time-first")
    config_path = home / "config.json"
    config_path.write_text(json.dumps(config, indent=2))
    db = home / "memory.db"
    command = [str(args.bin / "kopt"), "run", "--tasks", *[str(t) for t in tasks],
               "--config", str(config_path), "--db", str(db),
               "--hours", "%.6f" % (args.seconds / 3600.0), "--candidates-per-task", "100000",
               "--gpus", ",".join(str(g) for g in range(gpus)), "--no-display"]
    if mode == "tuner":
        command.append("--tuner-only")
    if mode == "llm":
        command.append("--allow-unconfined-compile")  # no Landlock in some containers
    log("%s: %s" % (tag, " ".join(command)))
    started = time.time()
    try:
        run = subprocess.run(command, env=env, capture_output=True, text=True,
                             timeout=args.seconds + 240)
    finally:
        if server:
            server.terminate()
            server.wait(timeout=10)
    # The night's search: the run's wall time but the lane's check after an early end (a
    # tuner-only night judges every configuration within a minute, then sanitizes its wins).
    tail_seconds = sum(float(t) for t in LANE_TAIL.findall(run.stderr + run.stdout))
    whole = time.time() - started
    wall = whole - tail_seconds
    (out / ("kopt-run-%s.txt" % tag)).write_text(run.stdout)
    (out / ("kopt-run-%s.log" % tag)).write_text(run.stderr)
    idle = IDLE_LINE.search(run.stdout)
    worker_idle = WORKER_IDLE.search(run.stdout)
    lane = LANE_LINE.search(run.stdout)
    evaluations, by_verdict = count_evaluations(db)
    pauses = [float(p) for p in BUSY_PAUSE.findall(run.stderr + run.stdout)]
    row = {"mode": mode, "gpus": gpus, "workers_per_gpu": workers, "evaluations": evaluations,
           "seconds": round(wall, 1),
           "run_seconds": round(whole, 1),
           "sanitize_tail_seconds": round(tail_seconds, 1),
           "quiet_wait_seconds": quiet_wait,
           "budget_seconds": args.seconds, "exit_code": run.returncode,
           "evaluations_per_gpu_hour": round(evaluations / wall * 3600 / gpus, 1),
           "gpu_idle_fraction": round(float(idle.group(1)) / 100, 4) if idle else None,
           # Each worker's idle share (only with several per GPU): how often one waited for work.
           "worker_idle_fraction": round(float(worker_idle.group(1)) / 100, 4) if worker_idle
           else (round(float(idle.group(1)) / 100, 4) if idle else None),
           "busy_span_seconds": float(idle.group(2)) if idle else None,
           "busy_pauses": len(pauses),
           "busy_pause_seconds": round(sum(pauses), 1),
           "sanitizer_runs": int(lane.group(1)) if lane else 0,
           "sanitizer_unfinished": int(lane.group(2)) if lane else 0,
           "verdicts": by_verdict,
           # Screened: verified at the declared shapes and timed, not faster than the best, so
           # the rest of the gate never ran; the others had the whole gate (or failed in it).
           "screen": args.screen,
           "screened": by_verdict.get("screened", 0),
           "whole_gate_per_gpu_hour": round((evaluations - by_verdict.get("screened", 0)) / wall *
                                            3600 / gpus, 1),
           "after_baselines_per_gpu_hour": rate_after_baselines(db, len(tasks), gpus)}
    row["phases_ms"] = keep_run_log(home, out, tag)
    if row["phases_ms"]:
        # The sanitizer's share of the run's GPU time: its tools' seconds over the wall time
        # (on the GPU beside evaluations, or holding it, as the lane's mode says).
        lane = row["phases_ms"].pop("sanitizer")
        row["sanitizer_seconds"] = lane["tool_seconds"]
        row["sanitizer_mode"] = lane["mode"]
        row["sanitizer_share"] = round(lane["tool_seconds"] / (wall * gpus), 3) if wall else None
    log("%s: %s" % (tag, json.dumps(row)))
    benchlib.remove_dir(home)
    return row


def step_table(rows):
    """Per row, the median and total of each step of an evaluation (where the worker's time went)."""
    out = []
    for r in rows:
        steps = (r.get("phases_ms") or {}).get("steps") or {}
        if not steps:
            continue
        out += ["", "Steps of an evaluation, %s on %d GPU(s), %d worker(s) per GPU (ms):" % (
                    r["mode"], r["gpus"], r.get("workers_per_gpu", 1)), "",
                benchlib.markdown_table(
                    ["step", "evaluations", "median", "total"],
                    [[name, v["count"], "%.1f" % v["median"], "%.0f" % v["total"]]
                     for name, v in sorted(steps.items(), key=lambda kv: -kv[1]["total"])])]
        timing = (r.get("phases_ms") or {}).get("timing") or {}
        if timing.get("samples"):
            out += ["", "Timing: median %s samples per candidate; stopped: %s." % (
                timing["samples"]["median"],
                ", ".join("%s %d" % kv for kv in sorted(timing["stops"].items())))]
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--modes", default="tuner,llm")
    parser.add_argument("--gpus", default="1,all", help="GPU counts; 'all': every visible GPU")
    parser.add_argument("--workers-per-gpu", default="1",
                        help="timing workers per GPU (daemon.workers_per_gpu); a list runs each")
    parser.add_argument("--screen", choices=("on", "off", "time-first", "verify-first"),
                        default="on",
                        help="screening (daemon.search.screen): on is the daemon's default, "
                             "time-first; verify-first verifies the declared shapes before "
                             "timing (daemon.search.screen_time_first false); off gives "
                             "every candidate the whole gate")
    parser.add_argument("--tasks", default=str(benchlib.TASKS))
    parser.add_argument("--bin", default=str(benchlib.ROOT / "build" / "bin"))
    parser.add_argument("--worker", default=None, help="(accepted for bench/run.sh)")
    args = parser.parse_args()
    args.bin = pathlib.Path(args.bin).resolve()
    out = pathlib.Path(args.out).resolve()
    tasks = sorted(p for p in pathlib.Path(args.tasks).resolve().iterdir()
                   if (p / "task.json").is_file() and (p / "baseline.cu").is_file())
    available = visible_gpus()
    counts = []
    for part in args.gpus.split(","):
        n = available if part == "all" else int(part)
        if n <= available and n not in counts:
            counts.append(n)
    environment = benchlib.gpu_environment()
    workers_per_gpu = [int(k) for k in args.workers_per_gpu.split(",")]
    if any(k < 1 or k > 8 for k in workers_per_gpu):
        parser.error("--workers-per-gpu: each value must be 1 to 8")
    rows = []
    for mode in args.modes.split(","):
        for workers in workers_per_gpu:
            for gpus in counts:
                rows.append(one_run(args, mode, gpus, workers, tasks, out))
    for row in rows:
        # Against the 1-GPU row of the same mode and K; none without one (--gpus 2 alone).
        one = next((r for r in rows if r["mode"] == row["mode"] and r["gpus"] == 1 and
                    r["workers_per_gpu"] == row["workers_per_gpu"]), None)
        rate = lambda r: r["evaluations"] / r["seconds"]
        row["scaling"] = round(rate(row) / rate(one), 3) if one and rate(one) > 0 else None
    gpus_env = environment.get("gpus")
    device = gpus_env[0]["name"] if isinstance(gpus_env, list) and gpus_env else "unknown"
    results = {"benchmark": "daemon_throughput", "device": device, "date": environment["date"],
               "commit": environment["commit"], "environment": environment,
               "tasks": [t.name for t in tasks], "rows": rows}
    table = [[r["mode"], r["gpus"], r["workers_per_gpu"], r["evaluations"], r["screened"],
              "%.0f" % r["seconds"],
              "%.0f" % r["evaluations_per_gpu_hour"],
              benchlib.fmt(r.get("after_baselines_per_gpu_hour"), 0),
              benchlib.fmt(100 * r["gpu_idle_fraction"], 1, "%") if r["gpu_idle_fraction"]
              is not None else "-",
              benchlib.fmt(r["scaling"], 2), r["sanitizer_runs"],
              benchlib.fmt(100 * r["sanitizer_share"], 0, "%") if r.get("sanitizer_share")
              is not None else "-"] for r in rows]
    markdown = "\n".join([
        "# `kopt run` throughput on the whole suite (%d tasks), %s" % (len(tasks), device), "",
        "%s, commit %s, %.0f s per run." % (environment["date"], environment["commit"],
                                            args.seconds), "",
        benchlib.markdown_table(["mode", "GPUs", "workers per GPU", "evaluations", "screened", "s",
                                 "per GPU-hour",
                                 "after the baselines", "GPU idle",
                                 "scaling", "sanitizer passes", "sanitizer share"], table)] +
        step_table(rows))
    benchlib.write_results(out, "daemon_throughput", results, markdown)


if __name__ == "__main__":
    main()
