#!/usr/bin/env python3
"""Mutation testing of kopt's gate: how many plausible wrong kernels it rejects.

    bench/run.sh mutation OUT_DIR [--worker build/bin/kopt-sandbox] [--max-seconds 420]
                                  [--tasks a,b] [--operators a,b] [--per-operator 5]
                                  [--limit N] [--ids a,b] [--jobs N] [--workers N]
                                  [--compile-only] [--list]

1. Every known-good kernel (each task's baseline.cu in tasks/ and tasks_realworld/, and the
   `// expect: ok` twins in tests/sandbox/** of a suite task) is mutated by the operators of
   operators.py, one change per mutant; identical mutants are judged once.
2. The compile gate: `kopt eval TASK FILE --compile-only` on the host, `--jobs` at a time, into
   the worker's compile cache, as the daemon compiles before a candidate queues for a GPU. A
   mutant that does not compile is `stillborn`: counted, never scored.
3. One long-lived kopt-sandbox worker judges the unmutated originals (any verdict but ok is a
   false reject), then every mutant, with exactly the request `kopt eval TASK FILE` sends: the
   task's reference and baseline and the default options (5 rounds, stress rounds, drawn shapes,
   holdouts, timing with poisoned outputs checked every sample). A mutant is killed when the
   verdict is not ok. `--workers N` runs N workers on the GPU at once and judges what sharing
   may have decided (a timeout, a busy GPU, a wide round skipped for memory) again alone (see
   run_worker). Each verdict is appended to OUT_DIR/mutation-results.jsonl as it comes, so a
   run cut short (`--max-seconds`, or the machine's limit) resumes where it stopped.
4. mutation.json: mutation_score = killed / (judged - equivalent), per operator and per task,
   the survivors with their diffs (equivalent.json says which are equivalent and why), the
   per-mutant cost, the device, the date and the commit. mutation.md: the tables.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import benchlib  # noqa: E402
import sources  # noqa: E402
from benchlib import log  # noqa: E402

EQUIVALENT = HERE / "equivalent.json"
RESULTS = "mutation-results.jsonl"


def originals_of(mutants, originals):
    """The originals the mutants come from (judged beside them: no false reject there)."""
    used = {m["source"] for m in mutants}
    return [o for o in originals if o["source"] in used]


def plan_items(args):
    """The originals and the mutants, in the order they are judged: originals first, then the
    mutants shuffled with a fixed seed, so a run cut short still covers every task and operator."""
    tasks = sources.load_tasks()
    wanted = [n for n in args.tasks.split(",") if n]
    unknown = set(wanted) - set(tasks)
    if unknown:
        sys.exit("unknown task(s): " + ", ".join(sorted(unknown)))
    ops = [o for o in args.operators.split(",") if o]
    unknown = set(ops) - set(sources.OPERATORS)
    if unknown:
        sys.exit("unknown operator(s): %s (known: %s)" % (", ".join(sorted(unknown)),
                                                         ", ".join(sources.OPERATORS)))
    good = [g for g in sources.good_kernels(tasks) if not wanted or g[1] in wanted]
    originals = [{"id": sources.mutant_id(text), "task": task, "suite": tasks[task].suite,
                  "source": path, "operator": "original", "site": "", "text": text, "diff": ""}
                 for path, task, text in good]
    mutants = sources.mutants(tasks, good, args.per_operator, ops or None)
    if args.survivors_of:
        # Judge again only what survived an earlier run (not equivalent by today's list), with
        # the originals they come from: does a new defence kill them, and reject no original?
        earlier = json.loads(pathlib.Path(args.survivors_of).read_text())
        equivalent = sources.load_equivalent(EQUIVALENT)
        wanted_ids = {s["id"] for s in earlier.get("survivors", [])
                      if not s.get("equivalent") and s["id"] not in equivalent}
        mutants = [m for m in mutants if m["id"] in wanted_ids]
        originals = originals_of(mutants, originals)
    if args.ids:
        # Judge only the named mutants: one defence against one survivor, e.g. the co-run rounds
        # against 3d036cf4dcfb. Beside them every original of --tasks (no false reject there);
        # without --tasks only the originals they come from, as --survivors-of does (judging all
        # 62 originals first spent a whole 335 s call on 4 GPUs before one mutant, session 10).
        wanted_ids = {i for i in args.ids.split(",") if i}
        mutants = [m for m in mutants if m["id"] in wanted_ids]
        missing = wanted_ids - {m["id"] for m in mutants}
        if missing:
            sys.exit("no such mutant(s) among --tasks/--operators: " + ", ".join(sorted(missing)))
        if not wanted:
            originals = originals_of(mutants, originals)
    random.Random(args.seed).shuffle(mutants)
    if args.limit:
        mutants = mutants[:args.limit]
    return tasks, originals, mutants


def write_files(out_dir, items):
    folder = pathlib.Path(out_dir) / "mutants"
    folder.mkdir(parents=True, exist_ok=True)
    for item in items:
        path = folder / (item["id"] + ".cu")
        if not path.exists():
            path.write_text(item["text"])
        item["path"] = str(path)


def compile_gate(kopt, tasks, items, cache, arch, jobs):
    """{id: compile verdict}: `kopt eval --compile-only` of every item, `jobs` at a time, into
    the worker's cache. Each task's reference and baseline are compiled too (the worker needs
    them), once. Each item compiles into a cache of its own first, so its cubin's digest is
    known (`cubin`: what machine_code_signature compares), then joins the worker's cache."""

    def one(task_dir, path, own=None):
        env = dict(os.environ, KOPT_CACHE_DIR=str(own or cache))
        proc = subprocess.run([kopt, "eval", str(task_dir), str(path), "--compile-only", "--arch",
                               arch, "--json"], capture_output=True, text=True, env=env,
                              timeout=600)
        try:
            verdict = json.loads(proc.stdout)
        except json.JSONDecodeError:
            verdict = {"verdict": "gate_error", "log": (proc.stderr or proc.stdout)[-500:]}
        if own:
            digests = sorted(json.loads(f.read_text()).get("cubin_sha256", "")
                             for f in own.glob("compile/*/*.json"))
            verdict["cubin"] = ",".join(digests)
            if own.exists():
                shutil.copytree(own, cache, dirs_exist_ok=True)
                shutil.rmtree(own, ignore_errors=True)
        return verdict

    began = time.perf_counter()
    verdicts = {}
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        extra = []
        for name in sorted({i["task"] for i in items}):
            extra += [pool.submit(one, tasks[name].dir, tasks[name].dir / f)
                      for f in ("reference.cu", "baseline.cu")]
        futures = {pool.submit(one, tasks[i["task"]].dir, i["path"],
                               pathlib.Path(cache) / "own" / i["id"]): i["id"] for i in items}
        for future in concurrent.futures.as_completed(futures):
            verdicts[futures[future]] = future.result()
        for future in extra:
            future.result()
    return verdicts, time.perf_counter() - began


def plan_block(text):
    """The kernel's `/* kopt:plan ... */` block: launches, grids, shared memory, tunables."""
    begin = text.find("/* kopt:plan")
    return "" if begin < 0 else text[begin:text.find("*/", begin) + 2]


def machine_code_signature(item, compiled):
    """What the GPU runs of an item: its cubin's digest and its launch plan; None when unknown.
    Two sources with one signature compute the same function on every input (trivial compiler
    equivalence): a mutant with its original's signature is equivalent without a GPU."""
    verdict = compiled.get(item["id"], {})
    if verdict.get("verdict") != "compiled" or not verdict.get("cubin"):
        return None
    return verdict["cubin"] + "\0" + plan_block(item["text"])


def same_machine_code(originals, mutants, compiled):
    """{mutant id: why} for every mutant whose signature is its original's."""
    by_source = {o["source"]: machine_code_signature(o, compiled) for o in originals}
    out = {}
    for m in mutants:
        sig = machine_code_signature(m, compiled)
        if sig is not None and sig == by_source.get(m["source"]):
            out[m["id"]] = ("same machine code as its original (identical cubin and launch plan "
                            "after NVRTC): the compiler removed the change")
    return out


def read_done(path):
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                done[record["id"]] = record
    return done


def judge(worker, task, item, retries=1, options=None):
    """The worker's verdict on one item, as `kopt eval --json` would give it."""
    is_baseline = item["text"] == task.baseline
    for attempt in range(retries + 1):
        result, error, wall_ms = worker.evaluate(task, item["text"], item["id"] + ".cu",
                                                 baseline=not is_baseline, options=options)
        verdict = result.get("verdict") if result else None
        if verdict != "gpu_busy" or attempt == retries:
            break
        time.sleep(2)
    record = {"id": item["id"], "verdict": verdict, "error": error, "wall_ms": round(wall_ms, 1)}
    if result:
        detail = result.get("detail") or ""
        record["detail"] = detail[:400]
        # A round the GPU's memory could not hold at that moment: the verdict is not the gate's.
        if "past 2^31 elements" in detail and "skipped" in detail:
            record["wide_skipped"] = True
        for key in ("compile_ms", "verify_ms", "time_ms", "speedup"):
            record[key] = result.get(key)
    return record


# Verdicts of a worker sharing the GPU that the exact request, alone on the GPU, might not give:
# a launch deadline scaled from times that co-running workers stretched, a busy GPU, a failed
# request, a wide round skipped for memory another worker held. Those are judged again alone.
SHARED_GPU_DOUBTS = {"timeout", "gpu_busy", None}


def needs_rejudge(record):
    return record.get("verdict") in SHARED_GPU_DOUBTS or bool(record.get("wide_skipped"))


class Sink:
    """mutation-results.jsonl, appended by several threads, and the progress log. Records of the
    second pass (one worker alone on the GPU) replace the first's: read_done keeps the last."""

    def __init__(self, path, done):
        self.file = open(path, "a")
        self.done = done
        self.lock = threading.Lock()

    def put(self, item, record):
        with self.lock:
            self.file.write(json.dumps(record) + "\n")
            self.file.flush()
            self.done[item["id"]] = record
            log("%-24s %-22s %-12s %7.0f ms  %s" % (item["task"], item["operator"],
                                                   record["verdict"] or "error",
                                                   record["wall_ms"], item["site"][:60]))


def drain(items, threads, deadline, work):
    """Feeds `items`, in order, to `threads` threads at once: each runs work(index, next_item),
    where next_item() gives the next item, or None once the queue is empty or the deadline has
    passed. Returns how many items were taken and how many were left."""
    queue = list(reversed(items))
    lock = threading.Lock()

    def next_item():
        with lock:
            if not queue or time.monotonic() > deadline:
                return None
            return queue.pop()

    pool = [threading.Thread(target=work, args=(i, next_item)) for i in range(max(1, threads))]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return len(items) - len(queue), len(queue)


def judge_all(args, tasks, pending, sink, cache, deadline, workers, options):
    """Judges `pending` with `workers` worker processes at once (a thread feeds each from one
    queue); returns how many were judged before the deadline."""

    def feed(index, next_item):
        worker = benchlib.Worker(args.worker, cache_dir=cache, log_path=benchlib.output_file(
            args.out_dir, "mutation-worker%s.log" % ("" if workers == 1 else index)))
        if index == 0:
            log("worker up in %.2f s on %s; %d to judge with %d worker(s)" % (
                worker.start_seconds, worker.info.get("name"), len(pending), workers))
        while (item := next_item()) is not None:
            record = judge(worker, tasks[item["task"]], item, options=options)
            if workers > 1:
                record["shared"] = True  # judged beside other workers (see run_worker)
            sink.put(item, record)
        worker.close()

    judged, left = drain(pending, workers, deadline, feed)
    if left:
        log("--max-seconds spent: %d left unjudged (rerun to resume)" % left)
    return judged


def run_worker(args, tasks, items, done, cache, results_path, deadline):
    """Judges what is not judged yet. With --workers N > 1, N workers share the GPU (the busy-GPU
    check off: it would call each neighbour a foreign process), then whatever a shared GPU may
    have decided (SHARED_GPU_DOUBTS, a skipped wide round) is judged again by one worker alone
    with the exact request. Verification, where nearly every mutant dies, does not depend on the
    time a neighbour takes; a timed verdict can only get milder (stretched samples never fall
    below the speed of light), so sharing never kills a mutant the exact request would pass."""
    pending = [i for i in items if i["id"] not in done and i.get("compiled", True)]
    sink = Sink(results_path, done)
    judged = 0
    if args.workers > 1:  # each worker keeps input sets in its share of the GPU's memory only
        os.environ["KOPT_WORKERS_PER_GPU"] = str(args.workers)
    if pending:
        shared = {"check_gpu_quiet": False} if args.workers > 1 else None
        judged = judge_all(args, tasks, pending, sink, cache, deadline, args.workers, shared)
    doubtful = [i for i in items if i["id"] in done and done[i["id"]].get("shared") and
                needs_rejudge(done[i["id"]])]
    if doubtful:
        log("%d verdicts of the shared GPU judged again alone" % len(doubtful))
        before = {i["id"]: done[i["id"]].get("verdict") for i in doubtful}
        os.environ.pop("KOPT_WORKERS_PER_GPU", None)
        judge_all(args, tasks, doubtful, sink, cache, deadline + args.rejudge_seconds, 1, None)
        changed = sum(before[i["id"]] != done[i["id"]].get("verdict") for i in doubtful)
        log("%d of them changed verdict alone" % changed)
    sink.file.close()
    return judged


def sanitize_order(item, equivalent):
    """Sort key of sanitize_survivors: scored survivors, then originals, then equivalents."""
    if item["operator"] == "original":
        return 1
    return 2 if item["id"] in equivalent else 0


def sanitize_survivors(args, kopt, tasks, items, done, cache, results_path, deadline,
                       equivalent):
    """The daemon sanitizes every new best before it counts (memcheck, racecheck, synccheck,
    initcheck: sandbox/sanitizer_runner.h); the worker's request does not. So every item that
    verification passed (the originals and the survivors, never a killed mutant: the cost stays
    with the few that pass) is sanitized as `kopt eval TASK FILE --sanitize --no-time` does, after
    the worker is gone. A finding kills the mutant (verdict `sanitizer`, `killed_by: sanitizer`);
    on an original it is a false reject. Survivors that equivalent.json does not list go first
    (they are what the score needs; a pass takes ~30-130 s, mostly racecheck), then the originals
    (a finding there is a false reject), then the listed equivalents (their verdict changes no
    score, so a deadline cuts them first); `--sanitize-jobs` passes run at once
    (the tools' verdicts do not depend on sharing the GPU, only their time does). Each outcome
    is appended to the results, so a rerun sanitizes only the rest; none starts once the
    deadline has passed."""
    todo = [i for i in items if done.get(i["id"], {}).get("verdict") == "ok" and
            "sanitizer" not in done[i["id"]]]
    if not todo:
        return 0
    todo.sort(key=lambda i: sanitize_order(i, equivalent))
    log("sanitizer: %d verified items (originals and survivors), %d at once..." % (
        len(todo), args.sanitize_jobs))
    sink = Sink(results_path, done)

    def feed(index, next_item):
        while (item := next_item()) is not None:
            sink.put(item, sanitize_one(kopt, tasks, item, done, cache))

    ran, left = drain(todo, args.sanitize_jobs, deadline, feed)
    if left:
        log("sanitizer: --max-seconds spent, %d left (rerun to resume)" % left)
    sink.file.close()
    return ran


def sanitize_one(kopt, tasks, item, done, cache):
    """One `kopt eval --sanitize --no-time` of `item`: its record with the outcome."""
    env = dict(os.environ, KOPT_CACHE_DIR=str(cache))
    began = time.perf_counter()
    try:
        proc = subprocess.run([kopt, "eval", str(tasks[item["task"]].dir), item["path"],
                               "--sanitize", "--no-time", "--json"], capture_output=True,
                              text=True, env=env, timeout=900)
        result = json.loads(proc.stdout)
    except (subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        result = {"sanitizer": {"ran": False, "note": "kopt eval --sanitize: %s" % e}}
    outcome = result.get("sanitizer") or {"ran": False, "note": "no sanitizer outcome"}
    record = dict(done[item["id"]])
    record["sanitizer"] = {"ran": outcome.get("ran"), "note": (outcome.get("note") or "")[:300],
                           "finding": (outcome.get("finding") or "")[:400],
                           "seconds": round(time.perf_counter() - began, 1)}
    if outcome.get("finding"):
        record["verdict"] = "sanitizer"
        record["killed_by"] = "sanitizer"
        record["detail"] = record["sanitizer"]["finding"]
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--worker", default=str(benchlib.DEFAULT_WORKER))
    parser.add_argument("--kopt", default="", help="kopt binary (default: beside the worker)")
    parser.add_argument("--max-seconds", type=float, default=420,
                        help="stop starting new evaluations after this many seconds")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--operators", default="", help="comma-separated operators (default: all)")
    parser.add_argument("--per-operator", type=int, default=5,
                        help="at most this many mutants per (source, operator)")
    parser.add_argument("--limit", type=int, default=0, help="judge at most N mutants")
    parser.add_argument("--seed", type=int, default=0, help="order of the mutants")
    parser.add_argument("--survivors-of", default="",
                        help="a mutation.json: judge only its survivors (those equivalent.json "
                             "does not list now) and the originals they come from")
    parser.add_argument("--ids", default="",
                        help="comma-separated mutant ids: judge only these (and the originals)")
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes judging at once on the GPU (1: the exact request "
                             "alone; more: see run_worker)")
    parser.add_argument("--rejudge-seconds", type=float, default=60,
                        help="with --workers: time past --max-seconds for judging doubtful "
                             "verdicts again alone")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4,
                        help="compile gate processes at once")
    parser.add_argument("--cache", default="",
                        help="compile cache folder (default: a fresh one; the compile gate's "
                             "verdicts are kept in OUT_DIR either way)")
    parser.add_argument("--arch", default="", help="compile target (default: the worker's GPU)")
    parser.add_argument("--compile-only", action="store_true",
                        help="stop after the compile gate (no GPU): counts stillborn mutants")
    parser.add_argument("--no-gate", action="store_true",
                        help="no host compile gate (no kopt binary): the worker compiles, and "
                             "its compile_error verdicts are the stillborn mutants")
    parser.add_argument("--resummarize", action="store_true",
                        help="rewrite OUT_DIR's mutation.json/.md from its verdicts with the "
                             "current equivalent.json (no GPU; keeps the run's device and date)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--no-sanitize", action="store_true",
                        help="do not sanitize what verification passed (the daemon does before a "
                             "new best counts; see sanitize_survivors)")
    parser.add_argument("--sanitize-seconds", type=float, default=600,
                        help="time past --max-seconds for the sanitizer pass")
    parser.add_argument("--sanitize-jobs", type=int, default=1,
                        help="sanitizer passes at once on the GPU (each is one kopt eval process)")
    args = parser.parse_args()
    started = time.monotonic()
    deadline = started + args.max_seconds
    out = pathlib.Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    tasks, originals, mutants = plan_items(args)
    items = originals + mutants
    if args.list:
        for m in mutants:
            print("%s %-22s %-22s %s" % (m["id"], m["task"], m["operator"], m["site"]))
        print("%d mutants of %d sources over %d tasks" % (
            len(mutants), len(originals), len({m["task"] for m in mutants})))
        return
    equivalent = sources.load_equivalent(EQUIVALENT)
    if args.resummarize:
        resummarize(args, out, tasks, originals, mutants, equivalent)
        return
    write_files(out, items)

    kopt = args.kopt or str(pathlib.Path(args.worker).resolve().parent / "kopt")
    if not args.no_gate and not os.access(kopt, os.X_OK):
        log("no kopt at %s: the worker compiles each file itself (--no-gate)" % kopt)
        args.no_gate = True
    cache = pathlib.Path(args.cache) if args.cache else benchlib.fresh_dir("kopt-mutation-cache-")
    arch = args.arch or "sm_90a"
    gate_s = 0.0
    compiled = {}
    gate_path = out / "mutation-compile.json"
    if gate_path.exists():
        compiled = json.loads(gate_path.read_text())
    missing = [i for i in items if i["id"] not in compiled]
    if missing and args.no_gate:
        # The worker compiles each file itself (same NVRTC, same options): a compile error is
        # its verdict, counted as stillborn below. Slower on the GPU's clock, same verdicts.
        compiled.update({i["id"]: {"verdict": "compiled", "log": "unchecked (--no-gate)"}
                         for i in missing})
    elif missing:
        log("compile gate: %d files, %d at a time..." % (len(missing), args.jobs))
        fresh, gate_s = compile_gate(kopt, tasks, missing, cache, arch, args.jobs)
        compiled.update({k: {"verdict": v.get("verdict"), "log": (v.get("log") or "")[-300:],
                             "cubin": v.get("cubin")} for k, v in fresh.items()})
        gate_path.write_text(json.dumps(compiled, indent=1, sort_keys=True) + "\n")
        log("compile gate: %.1f s" % gate_s)
    machine_equal = same_machine_code(originals, mutants, compiled)
    if machine_equal:
        log("%d mutants compile to their original's machine code: equivalent, not judged" %
            len(machine_equal))
    for item in items:
        item["compiled"] = compiled.get(item["id"], {}).get("verdict") == "compiled" and \
            item["id"] not in machine_equal

    results_path = out / RESULTS
    done = read_done(results_path)
    stream_began = time.perf_counter()
    judged_now = 0
    if not args.compile_only:
        judged_now = run_worker(args, tasks, items, done, cache, results_path, deadline)
    stream_s = time.perf_counter() - stream_began
    sanitize_began = time.perf_counter()
    if not args.compile_only and not args.no_sanitize and not args.no_gate:
        sanitize_survivors(args, kopt, tasks, items, done, cache, results_path,
                           deadline + args.sanitize_seconds, equivalent)
    sanitize_s = time.perf_counter() - sanitize_began
    summary = summarize(args, tasks, originals, mutants, compiled, done, equivalent,
                        {"compile_gate_s": round(gate_s, 1), "judge_s": round(stream_s, 1),
                         "sanitize_s": round(sanitize_s, 1), "judged_this_run": judged_now},
                        machine_equal=machine_equal)
    benchlib.write_results(out, "mutation", summary, markdown(summary))


def resummarize(args, out, tasks, originals, mutants, equivalent):
    """The summary of an earlier run (its verdicts, compile gate and environment) with the
    current equivalent.json: reviewing survivors needs no GPU."""
    before = json.loads((out / "mutation.json").read_text())
    compiled_path = out / "mutation-compile.json"
    done = read_done(out / RESULTS)
    if compiled_path.exists():
        compiled = json.loads(compiled_path.read_text())
    else:  # a --no-gate run: the worker's compile_error verdicts are the stillborn ones
        compiled = {i["id"]: {"verdict": "compiled"} for i in originals + mutants}
    args.per_operator, args.seed = before["options"]["per_operator"], before["options"]["seed"]
    summary = summarize(args, tasks, originals, mutants, compiled, done, equivalent,
                        before["cost"], env=before["environment"],
                        machine_equal=same_machine_code(originals, mutants, compiled))
    summary["options"] = before["options"]
    benchlib.write_results(out, "mutation", summary, markdown(summary))


# ---------------------------------------------------------------------------- the summary

def _tally(rows):
    killed = sum(r["status"] == "killed" for r in rows)
    survived = sum(r["status"] == "survived" for r in rows)
    equivalent = sum(r["status"] == "equivalent" for r in rows)
    scored = killed + survived
    return {"mutants": len(rows), "stillborn": sum(r["status"] == "stillborn" for r in rows),
            "unjudged": sum(r["status"] == "unjudged" for r in rows), "killed": killed,
            "survived": survived, "equivalent": equivalent,
            "mutation_score": round(killed / scored, 4) if scored else None}


def summarize(args, tasks, originals, mutants, compiled, done, equivalent, cost, env=None,
              machine_equal=None):
    env = env or benchlib.gpu_environment()
    machine_equal = machine_equal or {}
    equivalent = dict(equivalent, **machine_equal)
    rows = []
    for m in mutants:
        record = done.get(m["id"])
        entry = compiled.get(m["id"])
        if (entry is not None and entry.get("verdict") != "compiled") or \
                (record or {}).get("verdict") == "compile_error":
            status = "stillborn"
        elif entry is None and not record:
            status = "unjudged"  # never reached the compile gate (its source changed since)
        elif m["id"] in machine_equal:
            status = "equivalent"  # by its machine code, never judged
        elif not record or not record.get("verdict") or record["verdict"] == "gpu_busy" or \
                (record.get("shared") and needs_rejudge(record)):
            status = "unjudged"  # a shared GPU's doubtful verdict not yet judged again alone
        elif record["verdict"] != "ok":
            status = "killed"
        elif m["id"] in equivalent:
            status = "equivalent"
        else:
            status = "survived"
        rows.append(dict(m, status=status, verdict=(record or {}).get("verdict")))
    live = [r for r in rows if r["status"] != "stillborn"]
    total = _tally(rows)
    by_op, by_task, verdicts = {}, {}, {}
    for r in rows:
        by_op.setdefault(r["operator"], []).append(r)
        by_task.setdefault(r["task"], []).append(r)
        if r["verdict"]:
            verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    original_rows = []
    for o in originals:
        record = done.get(o["id"], {})
        original_rows.append({"source": o["source"], "task": o["task"],
                              "compiled": compiled.get(o["id"], {}).get("verdict"),
                              "verdict": record.get("verdict"), "detail": record.get("detail")})
    walls = [done[r["id"]]["wall_ms"] for r in live if r["id"] in done]
    sanitized = [done[r["id"]] for r in live if "sanitizer" in done.get(r["id"], {})]
    return {
        "mutation_score": total["mutation_score"],
        "mutants": len(live),
        "generated": len(rows),
        "killed": total["killed"],
        "survived": total["survived"],
        "equivalent": total["equivalent"],
        "stillborn": total["stillborn"],
        "unjudged": total["unjudged"],
        "tasks": len({r["task"] for r in live}),
        "task_names": sorted({r["task"] for r in live}),
        "realworld_tasks": sorted({r["task"] for r in live if r["suite"] == "tasks_realworld"}),
        "sources": len(originals),
        "score_definition": "killed / (killed + survived); equivalent mutants (equivalent.json) "
                            "and stillborn ones (no compile) are not scored; unjudged ones "
                            "(budget spent, no verdict) neither",
        "gate": "kopt-sandbox with kopt eval's request: reference + baseline, default options "
                "(5 rounds, stress rounds, drawn shapes, holdouts, timing with poisoned outputs)",
        "verdicts": verdicts,
        # Kills that only the sanitizer pass made (sanitize_survivors), of the mutants it ran on.
        "sanitizer": {"sanitized": len(sanitized),
                      "killed": sum(1 for d in sanitized if d.get("killed_by") == "sanitizer"),
                      "seconds": round(sum(d["sanitizer"].get("seconds") or 0
                                           for d in sanitized), 1)},
        "per_operator": {k: _tally(v) for k, v in sorted(by_op.items())},
        "per_task": {k: _tally(v) for k, v in sorted(by_task.items())},
        "originals": original_rows,
        "false_rejects": [o for o in original_rows if o["verdict"] not in (None, "ok")],
        "survivors": [{"id": r["id"], "task": r["task"], "source": r["source"],
                       "operator": r["operator"], "site": r["site"], "diff": r["diff"],
                       "equivalent": equivalent.get(r["id"])}
                      for r in rows if r["status"] == "survived" or
                      (r["status"] == "equivalent" and r["id"] not in machine_equal)],
        "equivalent_by_machine_code": sorted(machine_equal),
        "stillborn_list": [{"id": r["id"], "task": r["task"], "operator": r["operator"],
                            "site": r["site"]} for r in rows if r["status"] == "stillborn"],
        "per_mutant_wall_ms": benchlib.summary(walls),
        "cost": cost,
        "options": {"per_operator": args.per_operator, "seed": args.seed, "limit": args.limit,
                    "max_seconds": args.max_seconds, "tasks": args.tasks,
                    "operators": args.operators, "workers": getattr(args, "workers", 1),
                    "survivors_of": getattr(args, "survivors_of", "")},
        "device": (env.get("gpus") or [{}])[0].get("name") if isinstance(env.get("gpus"), list)
        else None,
        "date": env["date"],
        "commit": env["commit"],
        "environment": env,
    }


def markdown(s):
    def row(name, t):
        score = "-" if t["mutation_score"] is None else "%.3f" % t["mutation_score"]
        return [name, t["mutants"] - t["stillborn"], t["killed"], t["survived"], t["equivalent"],
                t["stillborn"], t["unjudged"], score]

    header = ["", "mutants", "killed", "survived", "equivalent", "stillborn", "unjudged", "score"]
    lines = ["# Mutation score of the gate", "",
             "%s, %s, commit %s: **%s** (%d killed of %d scored; %d mutants of %d tasks, %d "
             "stillborn, %d unjudged). False rejects of the originals: %d of %d." % (
                 s["device"], s["date"], s["commit"],
                 "-" if s["mutation_score"] is None else "%.3f" % s["mutation_score"],
                 s["killed"], s["killed"] + s["survived"], s["mutants"], s["tasks"],
                 s["stillborn"], s["unjudged"], len(s["false_rejects"]), len(s["originals"])),
             "", "## By operator", "",
             benchlib.markdown_table(header, [row(k, v) for k, v in s["per_operator"].items()]),
             "", "## By task", "",
             benchlib.markdown_table(header, [row(k, v) for k, v in s["per_task"].items()]),
             "", "%d mutants compile to their original's machine code (equivalent, not judged)."
             % len(s.get("equivalent_by_machine_code", [])),
             "", "Sanitizer pass (what verification passed, as the daemon sanitizes a new best): "
             "%d mutants sanitized in %.0f s, %d killed by the sanitizer." % (
                 s.get("sanitizer", {}).get("sanitized", 0),
                 s.get("sanitizer", {}).get("seconds", 0),
                 s.get("sanitizer", {}).get("killed", 0)),
             "", "## Survivors", ""]
    for sv in s["survivors"]:
        lines.append("- `%s` %s, %s, %s%s" % (sv["id"], sv["task"], sv["operator"], sv["site"],
                                             " (equivalent: %s)" % sv["equivalent"]
                                             if sv["equivalent"] else ""))
    if not s["survivors"]:
        lines.append("- none")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
