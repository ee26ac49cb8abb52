"""cuBLASLt for a kopt task that declares a "cublaslt" mapping (tasks/README.md, "Production
baselines"): the heuristic's first algorithm and the best of an autotuned search over its top
algorithms (as CUDA-L2 compares), timed with scripts/torch_baselines.py's method (L2 flushed before
every sample, CUDA events, median and noise). libcublasLt is loaded at run time with ctypes, never
linked; PyTorch only provides the memory and the stream. fp32 runs with CUBLAS_COMPUTE_32F (no
TF32); bf16 and f16 with fp32 accumulation.

Row-major out[m, n] = a[m, k] @ b is column-major out^T[n, m] = b^T @ a^T, so the call passes b
first: b "kn" ([k, n] row-major) is column-major [n, k] untransposed; b "nk" ([n, k] row-major, a
weight) is column-major [k, n], transposed. The bias [n] is then per row of out^T, as the
epilogue wants it. Each algorithm's output is checked against the task's PyTorch op before it is
timed, so a wrong mapping is an error, never a time."""
import ctypes
import glob
import os

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_COMPUTE_32F = 68
DESC_TRANSA, DESC_TRANSB, DESC_EPILOGUE, DESC_BIAS_POINTER = 3, 4, 7, 8
EPILOGUE_DEFAULT, EPILOGUE_RELU_BIAS = 1, 6
PREF_MAX_WORKSPACE_BYTES = 1
OP_N, OP_T = 0, 1
WORKSPACE_BYTES = 32 * 2**20
AUTOTUNE_CANDIDATES = 16


class Algo(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64 * 8)]


class HeuristicResult(ctypes.Structure):
    _fields_ = [("algo", Algo), ("workspaceSize", ctypes.c_size_t), ("state", ctypes.c_int),
                ("wavesCount", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


def load_library():
    """The libcublasLt that PyTorch already loaded (so both use one copy), else the toolkit's."""
    candidates = []
    try:
        with open("/proc/self/maps") as maps:
            candidates += sorted({line.split()[-1] for line in maps if "libcublasLt.so" in line})
    except OSError:
        pass
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    candidates += sorted(glob.glob(os.path.join(cuda_home, "lib64", "libcublasLt.so*")))
    candidates += ["libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"]
    errors = []
    for path in candidates:
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(str(e))
    raise RuntimeError("libcublasLt not found: " + "; ".join(errors[-2:]))


def check(status, what):
    if status != 0:
        raise RuntimeError("%s failed: cublasStatus %d" % (what, status))


def size_of(expr, sizes):
    return int(expr) if str(expr).isdigit() else int(sizes[expr])


class CublasLtGemm:
    def __init__(self, torch, spec, mapping, inputs, sizes):
        self.torch = torch
        self.lib, self.path = load_library()
        lib = self.lib
        self.m, self.n, self.k = (size_of(mapping[d], sizes) for d in ("m", "n", "k"))
        self.a, self.b = inputs[mapping["a"]], inputs[mapping["b"]]
        dtype = self.a.dtype
        self.data_type = {torch.float32: CUDA_R_32F, torch.float16: CUDA_R_16F,
                          torch.bfloat16: CUDA_R_16BF}[dtype]
        out_spec = next(o for o in spec["outputs"] if o["name"] == mapping["out"])
        out_dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[
            out_spec["dtype"]]
        self.out_type = {torch.float32: CUDA_R_32F, torch.float16: CUDA_R_16F,
                         torch.bfloat16: CUDA_R_16BF}[out_dtype]
        self.out = torch.empty((self.m, self.n), dtype=out_dtype, device="cuda")
        self.workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
        self.handle = ctypes.c_void_p()
        check(lib.cublasLtCreate(ctypes.byref(self.handle)), "cublasLtCreate")
        self.desc = ctypes.c_void_p()
        check(lib.cublasLtMatmulDescCreate(ctypes.byref(self.desc), CUBLAS_COMPUTE_32F,
                                           CUDA_R_32F), "cublasLtMatmulDescCreate")
        nk = mapping.get("b_layout", "kn") == "nk"
        self.set_attr(DESC_TRANSA, ctypes.c_int(OP_T if nk else OP_N))
        self.set_attr(DESC_TRANSB, ctypes.c_int(OP_N))
        epilogue = mapping.get("epilogue", "none")
        if epilogue == "bias_relu":
            self.bias = inputs[mapping["bias"]]
            self.set_attr(DESC_EPILOGUE, ctypes.c_int(EPILOGUE_RELU_BIAS))
            self.set_attr(DESC_BIAS_POINTER, ctypes.c_void_p(self.bias.data_ptr()))
        # cuBLAS's "A" is b (column-major [n, k] when kn, [k, n] to transpose when nk), its "B"
        # is a (column-major [k, m]), its C and D are out (column-major [n, m]).
        self.layout_a = self.layout(self.data_type, *((self.k, self.n) if nk else (self.n, self.k)))
        self.layout_b = self.layout(self.data_type, self.k, self.m)
        self.layout_c = self.layout(self.out_type, self.n, self.m)
        self.pref = ctypes.c_void_p()
        check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(self.pref)), "PreferenceCreate")
        ws = ctypes.c_uint64(WORKSPACE_BYTES)
        check(lib.cublasLtMatmulPreferenceSetAttribute(self.pref, PREF_MAX_WORKSPACE_BYTES,
                                                       ctypes.byref(ws),
                                                       ctypes.c_size_t(ctypes.sizeof(ws))),
              "PreferenceSetAttribute")
        self.alpha, self.beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
        lib.cublasLtGetVersion.restype = ctypes.c_size_t
        self.version = str(lib.cublasLtGetVersion())

    def set_attr(self, attr, value):
        check(self.lib.cublasLtMatmulDescSetAttribute(self.desc, attr, ctypes.byref(value),
                                                      ctypes.c_size_t(ctypes.sizeof(value))),
              "MatmulDescSetAttribute(%d)" % attr)

    def layout(self, data_type, rows, cols):
        handle = ctypes.c_void_p()
        check(self.lib.cublasLtMatrixLayoutCreate(ctypes.byref(handle), data_type,
                                                  ctypes.c_uint64(rows), ctypes.c_uint64(cols),
                                                  ctypes.c_int64(rows)), "MatrixLayoutCreate")
        return handle

    def heuristics(self, count):
        results = (HeuristicResult * count)()
        returned = ctypes.c_int(0)
        check(self.lib.cublasLtMatmulAlgoGetHeuristic(
            self.handle, self.desc, self.layout_a, self.layout_b, self.layout_c, self.layout_c,
            self.pref, count, results, ctypes.byref(returned)), "AlgoGetHeuristic")
        return [results[i] for i in range(returned.value) if results[i].state == 0]

    def runner(self, result):
        stream = ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)
        algo = result.algo
        args = (self.handle, self.desc, ctypes.byref(self.alpha),
                ctypes.c_void_p(self.b.data_ptr()), self.layout_a,
                ctypes.c_void_p(self.a.data_ptr()), self.layout_b, ctypes.byref(self.beta),
                ctypes.c_void_p(self.out.data_ptr()), self.layout_c,
                ctypes.c_void_p(self.out.data_ptr()), self.layout_c, ctypes.byref(algo),
                ctypes.c_void_p(self.workspace.data_ptr()), ctypes.c_size_t(WORKSPACE_BYTES),
                stream)
        matmul = self.lib.cublasLtMatmul

        def run():
            status = matmul(*args)
            if status != 0:
                raise RuntimeError("cublasLtMatmul failed: cublasStatus %d" % status)
        return run


def measure(torch, timer, spec, mapping, inputs, sizes, expected, tolerance):
    """[cublaslt_heuristic row, cublaslt_autotuned row] as dicts (median_us, noise, samples,
    detail, library_versions) or raises."""
    gemm = CublasLtGemm(torch, spec, mapping, inputs, sizes)
    results = gemm.heuristics(AUTOTUNE_CANDIDATES)
    if not results:
        raise RuntimeError("cuBLASLt's heuristic offers no algorithm for this mapping")

    def verified(result, index):
        run = gemm.runner(result)
        gemm.out.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        got = gemm.out.reshape(expected.shape).float()
        want = expected.float()
        bad = ~((got - want).abs() <= tolerance["atol"] + tolerance["rtol"] * want.abs())
        if bool(bad.any()):
            raise RuntimeError("cuBLASLt algorithm %d disagrees with the task's op (%d of %d "
                               "elements off): the mapping is wrong" % (index, int(bad.sum()),
                                                                         bad.numel()))
        return run

    versions = {"cublasLt": gemm.version, "path": os.path.basename(gemm.path)}
    first = timer.time(verified(results[0], 0))
    heuristic = dict(first, name="cublaslt_heuristic", library_versions=versions,
                     detail="heuristic's first of %d algorithms" % len(results))
    quick, best = [], None
    for index, result in enumerate(results):
        try:
            run = verified(result, index)
        except RuntimeError:
            continue
        t = timer.time(run, quick=True)["median_us"]
        quick.append((t, index))
        if best is None or t < best[0]:
            best = (t, index, run)
    tuned = dict(timer.time(best[2]), name="cublaslt_autotuned", library_versions=versions,
                 detail="best of %d heuristic algorithms (index %d)" % (len(quick), best[1]))
    return [heuristic, tuned]
