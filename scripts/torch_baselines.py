#!/usr/bin/env python3
"""Times what a PyTorch user runs for a kopt task, eager and torch.compile, the way kopt times its
own kernels: the task's inputs drawn as its task.json's init says (bench/plan_launcher.py), at
its default sizes, L2 flushed (a memset of twice the L2 size) before every sample, CUDA events
around each call, median and its noise, one sample at a time (Timer's "burst" mode, as kopt's
worker samples). `kopt baselines` starts it and stores what it prints; bench/quality.py imports
it. --check-do-bench also times each op back to back ("sustained", as do_bench does) and with
do_bench itself.

    scripts/torch_baselines.py TASK_DIR... [--no-compile] [--check-do-bench] [--cublaslt]
                               [--min-samples 30] [--timing burst|sustained]

The operation: TASK_DIR/torch_op.py if it exists (`def build(torch, inputs, sizes, constants)
-> (fn, args)`), else bench/torch_ops.py's entry for the task's name. TF32 is off (fp32 tasks
need fp32 accuracy). Prints one JSON object per line: a result per task and kind
({"task", "name": "torch_eager"|"torch_compile", "median_us", "noise", "samples", ...}) or
{"task", "name", "error"}; exit 3 without torch (and one line saying so), 0 otherwise."""
import argparse
import importlib.util
import json
import math
import os
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "bench"))

import cublaslt_baselines  # noqa: E402  (beside this file)
import library_baselines  # noqa: E402  (beside this file)
import plan_launcher  # noqa: E402  (bench/, for the task's inputs)
import torch_ops  # noqa: E402

MIN_SAMPLES = 30
MAX_SAMPLES = 2000
TARGET_NOISE = 0.005   # stop once the median's relative standard error is this small
MAX_SECONDS = 1.0      # of samples per kind
# Sustained mode (the do_bench cross-check): the op first runs for this long, as do_bench warms
# up for 25 ms and then samples for 200 ms, and samples are queued this much GPU work at a time.
WARMUP_SECONDS = 0.2
BATCH_SECONDS = 0.2
MAX_BATCH = 2000
# Burst mode: the GPU waits this many cycles (~0.5 ms) before each sample's start event while
# the host queues the events and the op.
HOST_HIDING_CYCLES = 1_000_000


def median_noise(samples):
    """The median and its relative standard error (1.2533 sigma / sqrt(n) for near-normal data),
    as sandbox/timing_stats.h reports it."""
    med = statistics.median(samples)
    if len(samples) < 2 or med <= 0:
        return med, 0.0
    return med, 1.2533 * statistics.stdev(samples) / math.sqrt(len(samples)) / med


class Timer:
    """Cold-L2 timing of one callable: flush, then events around the call, per sample.

    "burst" (the default) is kopt's own method (sandbox/worker/timing_loop.h, nvbench's cold
    measurement): one sample at a time, the GPU idle in between, so every op runs at the clocks a
    burst of work gets; a GPU-side wait before the start event lets the host queue the op first,
    so its launch overhead (Python, a torch.compile guard) is not timed. "sustained" is triton's
    do_bench's: ~BATCH_SECONDS of samples queued back to back, so a power-hungry op runs at the
    clocks a sustained load settles at (on an H100, tensor-core GEMMs ~1600 MHz instead of
    ~1980 MHz: 10-15% slower). Production baselines are stored in burst mode, so that they and
    kopt's kernels are timed alike; sustained mode is for the cross-check with do_bench."""

    def __init__(self, torch, min_samples=MIN_SAMPLES, mode="burst"):
        self.torch = torch
        props = torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", 0) or 50 * 2**20
        self.flush_buffer = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
        self.min_samples = min_samples
        self.mode = mode

    def time(self, fn, quick=False):
        """Median and noise of fn's cold-L2 time; quick: 10 samples at most, for a search."""
        torch = self.torch
        for _ in range(3):  # warm-up: allocator, cuBLAS handles, autotuned kernels
            fn()
        torch.cuda.synchronize()
        batch = 1
        if self.mode == "sustained" and not quick:
            warm_from, calls = time.perf_counter(), 0
            while time.perf_counter() - warm_from < WARMUP_SECONDS:
                for _ in range(10):
                    self.flush_buffer.zero_()
                    fn()
                calls += 10
                torch.cuda.synchronize()
            per_call = (time.perf_counter() - warm_from) / calls
            batch = int(min(MAX_BATCH, max(10, BATCH_SECONDS / per_call)))
        cap = 10 if quick else MAX_SAMPLES
        samples, clocks, began = [], [], time.perf_counter()
        while len(samples) < cap:
            events = []
            for _ in range(min(batch, cap - len(samples))):
                self.flush_buffer.zero_()
                if batch == 1:
                    torch.cuda._sleep(HOST_HIDING_CYCLES)
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                events.append((start, end))
            clocks.append(sm_clock_mhz(torch))  # read while the batch still runs
            torch.cuda.synchronize()
            samples += [start.elapsed_time(end) * 1e3 for start, end in events]
            if not quick and len(samples) >= self.min_samples:
                med, noise = median_noise(samples)
                if noise <= TARGET_NOISE or time.perf_counter() - began > MAX_SECONDS:
                    break
        med, noise = median_noise(samples)
        row = {"median_us": med, "noise": noise, "samples": len(samples), "timing": self.mode}
        clocks = [c for c in clocks if c]
        if clocks:
            row["sm_clock_mhz"] = statistics.median(clocks)
        return row


def sm_clock_mhz(torch):
    """The SM clock NVML reports now (torch.cuda.clock_rate), or None without pynvml."""
    try:
        return float(torch.cuda.clock_rate())
    except Exception:  # no pynvml, or an NVML that cannot say
        return None


def do_bench_us(fn):
    """triton's do_bench on the same callable (median, L2 flushed by triton), for the cross-check."""
    from triton.testing import do_bench
    try:
        return do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3
    except TypeError:
        return do_bench(fn, warmup=25, rep=200, quantiles=[0.5])[0] * 1e3


def load_op(task_dir, name):
    """(build function) of the task: its torch_op.py, else bench/torch_ops.py's entry."""
    own = pathlib.Path(task_dir) / "torch_op.py"
    if own.exists():
        spec = importlib.util.spec_from_file_location("kopt_torch_op_" + name, own)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.build, str(own)
    return (lambda torch, inputs, sizes, constants:
            torch_ops.build(torch, name, inputs, sizes, constants)), "bench/torch_ops.py"


def library_versions(torch):
    versions = {"torch": torch.__version__, "cuda": torch.version.cuda or ""}
    try:
        import triton
        versions["triton"] = triton.__version__
    except ImportError:
        pass
    return versions


def device_facts(torch):
    props = torch.cuda.get_device_properties(0)
    return {"name": props.name, "cc": "%d.%d" % (props.major, props.minor),
            "sms": props.multi_processor_count}


def measure_task(torch, timer, task_dir, with_compile, check_do_bench, cublaslt=False):
    spec = json.loads((pathlib.Path(task_dir) / "task.json").read_text())
    name = spec["name"]
    sizes = dict(spec["sizes"])
    wanted = spec.get("production_baselines", ["torch_eager", "torch_compile"])
    build, origin = load_op(task_dir, name)
    inputs = plan_launcher.make_inputs(torch, spec, sizes)
    fn, args = build(torch, inputs, sizes, spec.get("constants", {}))
    if getattr(fn, "kopt_detail", None):  # a torch_op.py that chose among ways says which
        origin += ": " + fn.kopt_detail
    common = {"task": name, "shape": " ".join("%s=%d" % kv for kv in sorted(sizes.items())),
              "device": device_facts(torch), "library_versions": library_versions(torch),
              "op": origin}
    results = []
    kinds = [("torch_eager", fn)]
    if with_compile and "torch_compile" in wanted:
        kinds.append(("torch_compile", None))
    for kind, f in kinds:
        if kind not in wanted:
            continue
        row = dict(common, name=kind)
        try:
            if f is None:
                compiled = torch.compile(fn)
                began = time.perf_counter()
                compiled(*args)
                torch.cuda.synchronize()
                row["compile_s"] = time.perf_counter() - began
                row["detail"] = "torch.compile default mode"
                f = compiled
            else:
                row["detail"] = "eager"
            call = (lambda g: lambda: g(*args))(f)
            row.update(timer.time(call))
            if check_do_bench:
                # do_bench keeps the GPU under sustained load: compared with this helper's
                # sustained mode; the stored (burst) time's ratio is kept beside it.
                sustained = Timer(torch, timer.min_samples, "sustained").time(call)
                row["do_bench_us"] = do_bench_us(call)
                row["do_bench_sm_clock_mhz"] = sm_clock_mhz(torch)
                row["sustained_us"] = sustained["median_us"]
                row["sustained_sm_clock_mhz"] = sustained.get("sm_clock_mhz")
                row["vs_do_bench"] = sustained["median_us"] / row["do_bench_us"]
                row["burst_vs_do_bench"] = row["median_us"] / row["do_bench_us"]
        except Exception as e:  # one kind's failure is reported, never the end of the run
            row = dict(common, name=kind, error="%s: %s" % (type(e).__name__,
                                                            (str(e).splitlines() or [""])[0]))
        results.append(row)
    results += library_baselines.measure(torch, timer, task_dir, wanted, inputs, sizes, spec,
                                         common)
    if cublaslt and "cublaslt" in wanted and "cublaslt" in spec:
        results += measure_cublaslt(torch, timer, spec, inputs, sizes, fn, args, common, results)
    del inputs, args, fn
    torch.cuda.empty_cache()
    return results


def measure_cublaslt(torch, timer, spec, inputs, sizes, fn, args, common, torch_rows):
    """cuBLASLt's two rows through ctypes and CUDA events, each checked against the task's op and
    compared with its eager time (torch.matmul and F.linear call cuBLAS(Lt) themselves: the two
    should agree within 5%). A cross-check only (--cublaslt): `kopt baselines` times cuBLASLt in
    its own worker with CUPTI (sandbox/worker/cublaslt_baseline.h), named *_events here."""
    try:
        expected = fn(*args)
        expected = expected[0] if isinstance(expected, tuple) else expected
        rows = cublaslt_baselines.measure(torch, timer, spec, spec["cublaslt"], inputs, sizes,
                                          expected, spec["tolerance"])
    except Exception as e:
        return [dict(common, name="cublaslt_heuristic_events",
                     error="%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0]))]
    eager = next((r for r in torch_rows if r["name"] == "torch_eager" and "median_us" in r), None)
    out = []
    for row in rows:
        merged = dict(common, **row)
        merged["name"] = row["name"] + "_events"
        merged["library_versions"] = dict(common["library_versions"], **row["library_versions"])
        if eager:
            merged["vs_torch_eager"] = row["median_us"] / eager["median_us"]
        out.append(merged)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task_dirs", nargs="+")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--check-do-bench", action="store_true",
                        help="also time each op with triton's do_bench and print the ratio")
    parser.add_argument("--min-samples", type=int, default=MIN_SAMPLES)
    parser.add_argument("--timing", choices=["burst", "sustained"], default="burst",
                        help="burst: kopt's method, one sample at a time (stored); sustained: "
                             "do_bench's, samples back to back (see Timer)")
    parser.add_argument("--cublaslt", action="store_true",
                        help="also time cuBLASLt through ctypes and CUDA events (rows named "
                             "cublaslt_*_events): a cross-check of the worker's CUPTI times")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print(json.dumps({"error": "PyTorch is not installed for %s: eager and torch.compile "
                                   "baselines are not measured" % sys.executable}), flush=True)
        return 3
    if not torch.cuda.is_available():
        print(json.dumps({"error": "PyTorch sees no CUDA GPU"}), flush=True)
        return 3
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    timer = Timer(torch, args.min_samples, args.timing)
    for task_dir in args.task_dirs:
        try:
            rows = measure_task(torch, timer, task_dir, not args.no_compile, args.check_do_bench,
                                args.cublaslt)
        except Exception as e:
            rows = [{"task": os.path.basename(os.path.normpath(task_dir)), "name": "torch_eager",
                     "error": "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0])}]
        for row in rows:
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
