"""Runs a kopt kernel file from Python on torch tensors, so that other timers (triton's do_bench,
CUDA events) time the very kernel kopt times: the same source compiled by the same NVRTC with
kopt's options (sandbox/compiler.cc: compile_options), loaded with the driver API and launched
as its kopt:plan says, on torch's current stream. No load_inline build (36 s) is needed.

Only ctypes: libnvrtc from the CUDA toolkit and libcuda.so.1 from the driver."""
import ctypes
import hashlib
import json
import os
import pathlib
import re

import structured_inputs  # beside this file: block tables, permutations, planted values

CUDA_HOME = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "i64": "int64",
          "e4m3": "float8_e4m3fn"}
E4M3_MAX = 448.0


def cast(torch, t, dtype):
    """t as the task dtype `dtype`, e4m3 saturated to +-448 as kopt's fill does (torch's cast to
    float8_e4m3fn makes NaN past 448; both round to nearest even)."""
    if dtype == "e4m3":
        t = t.clamp(-E4M3_MAX, E4M3_MAX)
    return t.to(getattr(torch, DTYPES[dtype]))
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


def parse_plan(source):
    match = re.search(r"/\*\s*kopt:plan(.*?)\*/", source, re.S)
    if not match:
        raise ValueError("no kopt:plan comment")
    return json.loads(match.group(1))


def evaluate(expr, env):
    """An integer plan expression: + - * / % ( ) ceil_div min max over sizes and tunables.
    Values are non-negative here, so C's truncating division is Python's floor division."""
    if isinstance(expr, (int, float)):
        return int(expr)
    text = str(expr).replace("/", "//")
    scope = dict(env, ceil_div=lambda a, b: -(-a // b), min=min, max=max)
    return int(eval(text, {"__builtins__": {}}, scope))  # our own task files only


# ---------------------------------------------------------------------------- NVRTC

def _nvrtc():
    for name in ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"):
        path = CUDA_HOME / "lib64" / name
        if path.exists():
            return ctypes.CDLL(str(path))
    return ctypes.CDLL("libnvrtc.so")


def nvrtc_version():
    lib = _nvrtc()
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return "%d.%d" % (major.value, minor.value)


def compile_options(arch, defines, extra):
    """kopt's option list, in kopt's order (the cache key and the binary depend on it)."""
    include = CUDA_HOME / "include"
    options = ["-arch=" + arch, "--std=c++17", "-lineinfo", "--ptxas-options=-v",
               "--include-path=%s" % include, "--include-path=%s" % (include / "cccl")]
    options += ["-D%s=%d" % (name, value) for name, value in sorted(defines.items())]
    return options + list(extra)


def compile_cubin(source, origin, arch, defines, extra, kernels):
    """Returns (cubin bytes, {kernel: lowered name}, log). Raises on a compile error."""
    lib = _nvrtc()
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    prog = ctypes.c_void_p()

    def check(rc, what):
        if rc != 0:
            raise RuntimeError("%s: %s" % (what, lib.nvrtcGetErrorString(rc).decode()))

    check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), origin.encode(), 0, None,
                                 None), "nvrtcCreateProgram")
    try:
        for k in kernels:
            check(lib.nvrtcAddNameExpression(prog, ("&" + k).encode()), "nvrtcAddNameExpression")
        options = [o.encode() for o in compile_options(arch, defines, extra)]
        rc = lib.nvrtcCompileProgram(prog, len(options), (ctypes.c_char_p * len(options))(*options))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        check(rc, "nvrtcCompileProgram: " + log.value.decode(errors="replace"))
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        cubin = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
        lowered = {}
        for k in kernels:
            name = ctypes.c_char_p()
            check(lib.nvrtcGetLoweredName(prog, ("&" + k).encode(), ctypes.byref(name)),
                  "nvrtcGetLoweredName")
            lowered[k] = name.value.decode()
        return cubin.raw, lowered, log.value.decode(errors="replace")
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


# ---------------------------------------------------------------------------- driver

class Driver:
    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.lib.cuLaunchKernel.argtypes = [
            ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
            ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        self.check(self.lib.cuInit(0), "cuInit")

    def check(self, rc, what):
        if rc != 0:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorString(rc, ctypes.byref(text))
            raise RuntimeError("%s failed: %s (%d)" % (what, text.value and text.value.decode(), rc))

    def ensure_context(self):
        """torch's primary context must be current on this thread (torch made it so)."""
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            raise RuntimeError("no current CUDA context: touch a torch CUDA tensor first")

    def load(self, cubin, lowered_names):
        module = ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), cubin), "cuModuleLoadData")
        functions = {}
        for kernel, symbol in lowered_names.items():
            f = ctypes.c_void_p()
            self.check(self.lib.cuModuleGetFunction(ctypes.byref(f), module, symbol.encode()),
                       "cuModuleGetFunction(%s)" % kernel)
            functions[kernel] = f
        return module, functions


# ---------------------------------------------------------------------------- tensors

def make_inputs(torch, spec, sizes, device="cuda", seed=1234):
    """The task's inputs at `sizes`, drawn as task.json's init says (signed, varied)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    inputs = {}
    for inp in spec["inputs"]:
        shape = [evaluate(s, sizes) for s in inp["shape"]]
        dtype = getattr(torch, DTYPES[inp["dtype"]])
        init = inp.get("init", {"dist": "normal"})
        dist = init.get("dist", "normal")
        made = structured_inputs.make(torch, inp, init, shape, sizes, inputs, gen, evaluate)
        if made is not None:  # a block table or a permutation (structured_inputs.py)
            inputs[inp["name"]] = made.to(dtype)
            continue
        if dist == "randint":
            low, high = evaluate(init["low"], sizes), evaluate(init["high"], sizes)
            t = torch.randint(low, high, shape, generator=gen, device=device,
                              dtype=torch.int64 if inp["dtype"] == "e4m3" else dtype)
            t = cast(torch, t, inp["dtype"])
        elif dist == "uniform":
            t = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
            t = cast(torch, t * (init["high"] - init["low"]) + init["low"], inp["dtype"])
        else:
            t = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
            t = cast(torch, t * init.get("std", 1.0) + init.get("mean", 0.0), inp["dtype"])
        inputs[inp["name"]] = structured_inputs.finish(torch, inp, init, t, sizes, inputs, gen,
                                                       evaluate)
    return inputs


def empty_outputs(torch, spec, sizes, device="cuda"):
    return {o["name"]: torch.empty([evaluate(s, sizes) for s in o["shape"]], device=device,
                                   dtype=getattr(torch, DTYPES[o["dtype"]]))
            for o in spec["outputs"]}


class PlanKernel:
    """A kernel file ready to launch on given tensors: `launch()` runs its whole plan once."""

    def __init__(self, torch, spec, source, origin, sizes, tensors, tunables=None, arch=None):
        self.torch = torch
        plan = parse_plan(source)
        defaults = {k: v[0] for k, v in plan.get("tunables", {}).items()}
        defaults.update(tunables or {})
        major, minor = torch.cuda.get_device_capability()
        self.arch = arch or ("sm_%d%d%s" % (major, minor, "a" if major >= 9 else ""))
        kernels = []
        for launch in plan["launches"]:
            if launch["kernel"] not in kernels:
                kernels.append(launch["kernel"])
        self.cubin, lowered, _ = compile_cubin(source, origin, self.arch, defaults,
                                               plan.get("compile_options", []), kernels)
        self.cubin_sha256 = hashlib.sha256(self.cubin).hexdigest()
        self.driver = Driver()
        self.driver.ensure_context()
        self.module, self.functions = self.driver.load(self.cubin, lowered)
        env = dict(sizes)
        env.update(defaults)
        constants = spec.get("constants", {})
        buffers = dict(tensors)
        self.zeroed = []
        for s in plan.get("scratch", []):
            t = torch.empty(evaluate(s["count"], env), device="cuda",
                            dtype=getattr(torch, DTYPES[s["dtype"]]))
            buffers[s["name"]] = t
            if s.get("zero"):
                self.zeroed.append(t)
        self.launches = []
        self.keep = []  # ctypes values the argument arrays point into
        for launch in plan["launches"]:
            dims = [evaluate(e, env) for e in launch["grid"]] + [1, 1]
            block = [evaluate(e, env) for e in launch["block"]] + [1, 1]
            shared = evaluate(launch.get("shared_bytes", 0), env)
            function = self.functions[launch["kernel"]]
            if shared > 48 * 1024:
                self.driver.check(self.driver.lib.cuFuncSetAttribute(
                    function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared),
                    "cuFuncSetAttribute")
            values = [self._argument(a, buffers, env, constants) for a in launch["args"]]
            self.keep.append(values)
            params = (ctypes.c_void_p * len(values))(
                *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
            self.launches.append((function, dims[:3], block[:3], shared, params))

    @staticmethod
    def _argument(arg, buffers, env, constants):
        if ":" in arg:
            kind, expr = arg.split(":", 1)
            if kind in ("f32", "f64"):
                value = constants[expr] if expr in constants else float(eval(expr, {}, constants))
                return ctypes.c_float(value) if kind == "f32" else ctypes.c_double(value)
            value = evaluate(expr, env)
            return ctypes.c_int32(value) if kind == "i32" else ctypes.c_int64(value)
        if arg in buffers:
            return ctypes.c_void_p(buffers[arg].data_ptr())
        if arg in env:
            return ctypes.c_int32(env[arg])
        if arg in constants:
            return ctypes.c_float(constants[arg])
        raise KeyError("plan argument %r names nothing" % arg)

    def launch(self):
        stream = ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)
        for t in self.zeroed:
            t.zero_()
        for function, grid, block, shared, params in self.launches:
            self.driver.check(self.driver.lib.cuLaunchKernel(
                function, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, stream,
                params, None), "cuLaunchKernel")
