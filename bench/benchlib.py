"""Shared pieces of the kopt GPU benchmarks: the worker client, the task suite, statistics and
the result writers. Each benchmark writes NAME.json and NAME.md into its output folder and
prints the markdown table last (the GPU machine's reply carries only the end of the output)."""
import datetime
import hashlib
import json
import os
import pathlib
import platform
import select
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
TASKS = ROOT / "tasks"
DEFAULT_WORKER = ROOT / "build" / "bin" / "kopt-sandbox"
PROTOCOL_VERSION = 2  # sandbox/protocol.h kProtocolVersion


# ---------------------------------------------------------------------------- tasks

class Task:
    """One task directory: task.json, reference.cu, baseline.cu."""

    def __init__(self, directory):
        self.dir = pathlib.Path(directory)
        self.json_text = (self.dir / "task.json").read_text()
        self.spec = json.loads(self.json_text)
        self.name = self.spec["name"]
        self.reference = (self.dir / "reference.cu").read_text()
        self.baseline = (self.dir / "baseline.cu").read_text()

    def with_sizes(self, **sizes):
        """task.json text with some default sizes replaced (the timed shape changes)."""
        spec = json.loads(self.json_text)
        spec["sizes"].update(sizes)
        return json.dumps(spec)


def load_tasks(names=None):
    tasks = [Task(d) for d in sorted(TASKS.iterdir()) if (d / "task.json").exists()]
    if names:
        wanted = set(names)
        unknown = wanted - {t.name for t in tasks}
        if unknown:
            sys.exit("unknown task(s): " + ", ".join(sorted(unknown)))
        tasks = [t for t in tasks if t.name in wanted]
    return tasks


def tunables(source):
    """The kopt:plan's tunables: {name: [default, other values...]}."""
    import re
    match = re.search(r"/\*\s*kopt:plan(.*?)\*/", source, re.S)
    if not match:
        return {}
    return json.loads(match.group(1)).get("tunables", {})


def variants(source, count):
    """Up to `count` tunable settings other than the default, one tunable changed at a time
    (what a first sweep of the built-in tuner tries)."""
    out = []
    for name, values in tunables(source).items():
        for value in values[1:]:
            out.append({name: value})
    return out[:count]


# ---------------------------------------------------------------------------- the worker

class WorkerError(RuntimeError):
    pass


class Worker:
    """One long-lived kopt-sandbox process speaking the sandbox protocol on stdin/stdout, as kopt's
    SandboxEvaluator runs it: one per GPU, many requests, restarted after a fatal answer."""

    def __init__(self, binary=DEFAULT_WORKER, device=None, cache_dir=None, log_path=None,
                 own_gpu_pids=()):
        self.binary = str(binary)
        # Processes of this bench that hold a CUDA context (its own PyTorch): the worker's busy-GPU
        # check lists them as kopt's own, not as another user (sandbox/own_gpu_processes.h).
        self.own_gpu_pids = [int(p) for p in own_gpu_pids]
        self.device = device
        self.cache_dir = cache_dir
        self.log_path = log_path
        self.next_id = 1
        self.restarts = -1
        self.proc = None
        self.info = None
        self.start_seconds = None
        self.start()

    def start(self):
        env = dict(os.environ)
        if self.cache_dir:
            env["KOPT_CACHE_DIR"] = str(self.cache_dir)
        if self.own_gpu_pids:
            env["KOPT_OWN_GPU_PIDS"] = ",".join(str(p) for p in self.own_gpu_pids)
        argv = [self.binary] + (["--device", str(self.device)] if self.device is not None else [])
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        began = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log, env=env, bufsize=0)
        self.restarts += 1
        answer = self.request({"op": "ping"}, timeout=180)
        if not answer.get("ok"):
            raise WorkerError("worker did not start: %s" % answer.get("error"))
        self.info = answer.get("device", {})
        self.start_seconds = time.perf_counter() - began

    def request(self, message, timeout):
        message = dict(message, v=PROTOCOL_VERSION, id=self.next_id)
        self.next_id += 1
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise WorkerError("worker exited (%s)" % self.proc.poll())
        deadline = time.monotonic() + timeout
        answer = {"hello": True}
        while "hello" in answer:  # the worker's first line (protocol v2) answers no request
            line = b""
            while not line.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0:
                    self.kill()
                    raise WorkerError("timeout after %.0f s" % timeout)
                ready, _, _ = select.select([self.proc.stdout], [], [], left)
                if ready:
                    chunk = self.proc.stdout.readline()
                    if not chunk:
                        raise WorkerError("worker exited (%s)" % self.proc.wait())
                    line += chunk
            answer = json.loads(line)
        if answer.get("fatal"):
            self.proc.wait(timeout=10)
        return answer

    def evaluate(self, task, candidate, origin="candidate.cu", tunables=None, baseline=True,
                 options=None, task_json=None, timeout=None):
        """Judges one candidate. Returns (result dict or None, error or None, wall ms)."""
        cand = {"source": candidate, "origin": origin}
        if tunables:
            cand["tunables"] = tunables
        request = {"op": "evaluate", "task_json": task_json or task.json_text,
                   "reference": {"source": task.reference, "origin": "reference.cu"},
                   "candidate": cand, "options": options or {}}
        if baseline:
            request["baseline"] = {"source": task.baseline, "origin": "baseline.cu"}
        wall_budget = (options or {}).get("max_wall_seconds", 20)
        began = time.perf_counter()
        try:
            if self.proc.poll() is not None:
                self.start()
            answer = self.request(request, timeout or wall_budget + 60)
        except WorkerError as e:
            self.kill()
            self.start()
            return None, str(e), (time.perf_counter() - began) * 1e3
        wall_ms = (time.perf_counter() - began) * 1e3
        if answer.get("fatal") or self.proc.poll() is not None:
            self.start()
        if not answer.get("ok"):
            return None, answer.get("error", "worker refused the request"), wall_ms
        return answer["result"], None, wall_ms

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self):
        if self.proc and self.proc.poll() is None:
            try:
                self.request({"op": "shutdown"}, timeout=10)
                self.proc.wait(timeout=10)
            except (WorkerError, subprocess.TimeoutExpired, OSError, ValueError):
                self.kill()


class CompileGate:
    """The daemon's compile gate: `kopt eval --compile-only` on the host CPU, into the worker's
    compile cache, ahead of the worker, as the daemon's job threads compile each candidate before
    it queues for a GPU (src/orchestrator/candidate_evaluation.cc). With an LLM the daemon keeps
    2 x GPUs + 2 jobs in flight, each on its own thread (src/orchestrator/orchestrator.cc), so for
    one worker `depth` (4) candidates compile at once. A task's first compile
    also builds its reference and baseline.cu, as the daemon's first candidate of a task is its
    baseline and its gate compiles the reference beside every candidate.

    `plan` is the list of (task, source) the worker will be sent, in order."""

    def __init__(self, kopt, cache_dir, arch, plan, depth=4):
        self.kopt, self.cache_dir, self.arch = kopt, cache_dir, arch
        self.plan, self.depth = plan, depth
        self.folder = fresh_dir("kopt-bench-gate-")
        self.running = {}  # plan index -> Popen
        self.started = 0
        self.tasks_seen = set()

    def _start(self, index):
        task, source = self.plan[index]
        path = self.folder / ("candidate_%d.cu" % index)
        path.write_text(source)
        files = [path]
        if task.name not in self.tasks_seen:
            self.tasks_seen.add(task.name)
            files += [task.dir / "reference.cu", task.dir / "baseline.cu"]
        # One after another whatever each gives: a compile error is a verdict, and is cached too.
        script = "; ".join(" ".join(shlex.quote(str(a)) for a in [
            self.kopt, "eval", task.dir, f, "--compile-only", "--arch", self.arch]) for f in files)
        env = dict(os.environ, KOPT_CACHE_DIR=str(self.cache_dir))
        self.running[index] = subprocess.Popen(["sh", "-c", script], env=env,
                                               stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL)

    def wait(self, index):
        """Returns once candidate `index` is in the cache, with the next ones compiling."""
        while self.started < min(len(self.plan), index + self.depth):
            self._start(self.started)
            self.started += 1
        process = self.running.pop(index, None)
        if process:
            process.wait()

    def close(self):
        for process in self.running.values():
            process.wait()
        self.running.clear()
        remove_dir(self.folder)


def unique_source(source, tag):
    """The same kernel with a comment that changes its hash, so no compile cache can answer."""
    return source + "\n// kopt-bench %s\n" % tag


# ---------------------------------------------------------------------------- statistics

def percentile(values, p):
    """Linear interpolation between closest ranks (numpy's default); None for no values."""
    if not values:
        return None
    xs = sorted(values)
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": percentile(values, 50), "p90": percentile(values, 90),
            "mean": statistics.fmean(values), "min": min(values), "max": max(values)}


def fmt(value, digits=1, unit=""):
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return ("%.*f" % (digits, value)) + unit


# ---------------------------------------------------------------------------- environment

def gpu_environment():
    """What nvidia-smi says about the GPUs, plus host facts, for the result file."""
    env = {"host": platform.node(), "python": platform.python_version(),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    query = "name,driver_version,memory.total,clocks.max.sm,clocks.sm,power.limit,temperature.gpu"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=" + query, "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout
        env["gpus"] = [dict(zip(query.split(","), [c.strip() for c in line.split(",")]))
                       for line in out.strip().splitlines()]
    except (OSError, subprocess.TimeoutExpired) as e:
        env["gpus"] = "nvidia-smi failed: %s" % e
    try:
        env["commit"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                       capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        env["commit"] = ""
    # A copy of the tree without .git (the GPU machine's) still names what ran: $KOPT_COMMIT,
    # else "unknown", and the worker binary's digest.
    # $KOPT_COMMIT wins: it names the commit the carried binaries were built from, which a
    # copied tree's git may not know.
    env["commit"] = os.environ.get("KOPT_COMMIT") or env["commit"] or "unknown"
    try:
        env["worker_sha256"] = hashlib.sha256(DEFAULT_WORKER.read_bytes()).hexdigest()[:16]
    except OSError:
        env["worker_sha256"] = ""
    env["command"] = " ".join([pathlib.Path(sys.argv[0]).name] + sys.argv[1:])
    return env


def fresh_dir(prefix):
    return pathlib.Path(tempfile.mkdtemp(prefix=prefix))


def remove_dir(path):
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------------- output

def markdown_table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def output_file(out_dir, name):
    """A path in out_dir (created), for logs beside the results."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return str(out / name)


def write_results(out_dir, name, results, markdown):
    """NAME.json and NAME.md in out_dir; the markdown is printed last."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / (name + ".json")).write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    (out / (name + ".md")).write_text(markdown + "\n")
    print("\nwrote %s and %s\n" % (out / (name + ".json"), out / (name + ".md")))
    print(markdown)
    sys.stdout.flush()


def log(*parts):
    """Progress lines go to stderr so that the table stays the last thing on stdout."""
    print(*parts, file=sys.stderr, flush=True)
