"""Realistic LLM failure shapes, made from each task's own baseline so they exist for every task
of the suite: a correct kernel plus the bugs LLM-written kernels really have. Each mutation
touches only the body of every __global__ function (or, for out-of-bounds, one output parameter
found through the launch plan's argument list), so the kernel stays a valid kopt kernel file.

Classes and their default shares (issue 11): correct 55%, incorrect 15%, compile_error 10%,
crash 5%, out_of_bounds 5%, hang_edge_shape 5%, hang_every_shape 5%.
"""
import json
import random
import re

SHARES = [("correct", 55), ("incorrect", 15), ("compile_error", 10), ("crash", 5),
          ("out_of_bounds", 5), ("hang_edge_shape", 5), ("hang_every_shape", 5)]

SPIN = "{ while (*(volatile int*)&kopt_mix_never_set == 0) { } }"


def _kernel_bodies(source):
    """(name, params text, index just after the body's opening brace) of every __global__."""
    out = []
    for m in re.finditer(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)\s*(?:__launch_bounds__\([^)]*\)\s*)?\{",
                         source):
        out.append((m.group(1), m.group(2), m.end()))
    return out


def _insert_in_bodies(source, code):
    for _, _, at in reversed(_kernel_bodies(source)):
        source = source[:at] + "\n  " + code + "\n" + source[at:]
    return source


def _plan(source):
    m = re.search(r"/\*\s*kopt:plan(.*?)\*/", source, re.S)
    return json.loads(m.group(1)) if m else {}


def _output_parameter(source, task_spec):
    """The kernel and parameter name bound to the task's first output by the first launch."""
    outputs = {o["name"] for o in task_spec.get("outputs", [])}
    for launch in _plan(source).get("launches", []):
        for position, arg in enumerate(launch.get("args", [])):
            if arg in outputs:
                for name, params, at in _kernel_bodies(source):
                    if name != launch["kernel"]:
                        continue
                    names = [re.findall(r"\w+", p)[-1] for p in params.split(",") if p.strip()]
                    if position < len(names):
                        return at, names[position]
    return None


def mutate(source, task_spec, kind):
    """The baseline `source` turned into a candidate of class `kind`."""
    if kind == "correct":
        return source
    if kind == "incorrect":
        # The last block of a multi-block launch writes nothing: its outputs keep the poison.
        return _insert_in_bodies(source, "if (blockIdx.x > 0 && blockIdx.x == gridDim.x - 1) return;")
    if kind == "compile_error":
        return _insert_in_bodies(source, "kopt_mix_undeclared_identifier += 1;")
    if kind == "crash":
        return _insert_in_bodies(
            source, "if (threadIdx.x == 0 && blockIdx.x == 0) *(volatile int*)0x10 = 1;")
    if kind == "out_of_bounds":
        found = _output_parameter(source, task_spec)
        if not found:
            return None
        at, param = found
        code = "if (threadIdx.x == 0 && blockIdx.x == 0) %s[-1] = %s[0];" % (param, param)
        return source[:at] + "\n  " + code + "\n" + source[at:]
    if kind == "hang_edge_shape":
        # Spins only on a one-block launch: the small edge shapes of the sweep.
        spun = _insert_in_bodies(source, "if (gridDim.x * gridDim.y * gridDim.z == 1) " + SPIN)
        return "__device__ int kopt_mix_never_set;\n" + spun
    if kind == "hang_every_shape":
        return "__device__ int kopt_mix_never_set;\n" + _insert_in_bodies(source, SPIN)
    raise ValueError("unknown failure class " + kind)


def plan(tasks, count, seed=11):
    """`count` (task, class) pairs: classes in the shares above, shuffled with a fixed seed, tasks
    round-robin, so every task meets every class over a long enough run."""
    pool = []
    for kind, share in SHARES:
        pool += [kind] * share
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        batch = list(pool)
        rng.shuffle(batch)
        for kind in batch:
            if len(out) == count:
                break
            out.append((tasks[len(out) % len(tasks)], kind))
    return out
