"""Loading and running a KernelBench-style module with PyTorch (the GPU machine's part).

A problem file defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`
(KernelBench), or a function with `get_inputs()` (its name given with --function). What cannot
become a task is said, not guessed: inputs that are not tensors, init inputs that are not plain
numbers, randomness in forward, dtypes the task format lacks."""
import importlib.util
import inspect
import pathlib
import re

TORCH_DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32",
                "int64": "i64", "float8_e4m3fn": "e4m3"}
_VIEWS = {"view", "_unsafe_view", "expand", "permute", "transpose", "t", "select", "slice",
          "unsqueeze", "squeeze", "reshape", "as_strided", "detach", "alias", "clone", "copy_",
          "_to_copy", "empty", "empty_like", "zeros", "ones", "fill_", "new_empty", "lift_fresh",
          "empty_strided", "split", "unbind", "chunk", "contiguous", "zeros_like", "ones_like",
          "full", "scalar_tensor", "_reshape_alias"}


class NotImportable(Exception):
    pass


def load_file(path):
    spec = importlib.util.spec_from_file_location("kopt_import_" + re.sub(r"\W", "_",
                                                  pathlib.Path(path).stem), path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the file's own error, said as such
        raise NotImportable("loading it raised %s: %s" % (type(e).__name__, e))
    return module


def dtype_name(torch, t, what="a tensor"):
    """The task format's dtype of `t`; a refusal names the tensor (`what`: "input 'mask'")."""
    name = str(t.dtype).replace("torch.", "")
    if name not in TORCH_DTYPES:
        raise NotImportable("%s is of dtype %s (the task format has %s)"
                            % (what, name, ", ".join(TORCH_DTYPES)))
    return TORCH_DTYPES[name]


def identifier(text, taken):
    name = re.sub(r"\W", "_", text).strip("_").lower() or "t"
    if name[0].isdigit():
        name = "t_" + name
    base, i = name, 2
    while name in taken:
        name, i = "%s_%d" % (base, i), i + 1
    taken.add(name)
    return name


class Problem:
    """The module, its example inputs and the names the task gives them."""

    def __init__(self, torch, path, function=None):
        self.torch = torch
        self.path = pathlib.Path(path)
        mod = load_file(path)
        if not hasattr(mod, "get_inputs"):
            raise NotImportable("no get_inputs()")
        self.function = function
        self.doc = mod.__doc__ or getattr(getattr(mod, "Model", None), "__doc__", None) or ""
        init = list(mod.get_init_inputs()) if hasattr(mod, "get_init_inputs") else []
        for i, value in enumerate(init):
            if not _plain(value):
                raise NotImportable("init input %d is %s, not a number (a task's module is built "
                                    "from numbers only)" % (i, type(value).__name__))
        self.init_inputs = init
        if function:
            if not callable(getattr(mod, function, None)):
                raise NotImportable("no function %s()" % function)
            target = getattr(mod, function)
            model = _FunctionModule(torch, target)
            params = inspect.signature(target).parameters
        elif hasattr(mod, "Model"):
            model = mod.Model(*init)
            params = inspect.signature(model.forward).parameters
        else:
            raise NotImportable("no class Model (or name the function with --function)")
        torch.manual_seed(0)
        example = list(mod.get_inputs())
        for i, value in enumerate(example):
            if not isinstance(value, torch.Tensor):
                raise NotImportable("input %d is %s, not a tensor" % (i, type(value).__name__))
        self.model = model.cuda().eval()
        taken = set()
        arg_names = [p for p in params if p not in ("self",)]
        self.data_names = [identifier(arg_names[i] if i < len(arg_names) else "x%d" % i, taken)
                           for i in range(len(example))]
        self.example = [t.cuda() for t in example]
        named = list(self.model.named_parameters()) + list(self.model.named_buffers())
        self.param_keys = [k for k, _ in named]
        self.param_names = [identifier(k, taken) for k in self.param_keys]
        self.param_values = [v.detach() for _, v in named]
        for name, t in zip(self.data_names, self.example):
            dtype_name(torch, t, "input '%s'" % name)
        for name, t in zip(self.param_keys, self.param_values):
            dtype_name(torch, t, "parameter '%s'" % name)

    def call(self, data, params):
        torch = self.torch
        with torch.no_grad():
            if self.function:
                out = self.model(*data)
            else:
                out = torch.func.functional_call(self.model, dict(zip(self.param_keys, params)),
                                                 tuple(data))
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        for i, o in enumerate(outs):
            if not isinstance(o, torch.Tensor):
                raise NotImportable("output %d is %s, not a tensor" % (i, type(o).__name__))
            dtype_name(torch, o, "output %d" % i)
        return outs

    def check_deterministic(self):
        torch = self.torch
        a = self.call(self.example, self.param_values)
        b = self.call(self.example, self.param_values)
        for i, (x, y) in enumerate(zip(a, b)):
            if not torch.equal(x, y):
                raise NotImportable("forward is random: two runs on the same inputs differ at "
                                    "output %d (dropout, torch.rand or a nondeterministic op)" % i)
        return a

    def record(self, data, params):
        """-> (outputs, aten op names, pointwise element estimate, counted flops)."""
        torch = self.torch
        from torch.utils._python_dispatch import TorchDispatchMode

        class Recorder(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.ops, self.elements = set(), 0

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                full = str(func)  # "aten._softmax.default"
                self.ops.add(full)
                parts = full.split(".")
                name = parts[1] if len(parts) > 1 else full
                if name not in _VIEWS:  # an op reads or writes each element once: a flop each
                    tensors = [a for a in list(args) + list((kwargs or {}).values())
                               if isinstance(a, torch.Tensor)]
                    tensors += [o for o in (out if isinstance(out, (tuple, list)) else [out])
                                if isinstance(o, torch.Tensor)]
                    self.elements += max([t.numel() for t in tensors] or [0])
                return out

        counted = 0
        try:
            from torch.utils.flop_counter import FlopCounterMode
            counter = FlopCounterMode(display=False)
            with counter:
                self.call(data, params)
            counted = counter.get_total_flops()
        except Exception:
            counted = 0
        recorder = Recorder()
        with recorder:
            outs = self.call(data, params)
        return outs, recorder.ops, recorder.elements, counted


class _FunctionModule:
    """A plain function seen as a module without parameters."""

    def __init__(self, torch, fn):  # noqa: ARG002 (same signature as the module path)
        self.fn = fn

    def cuda(self):
        return self

    def eval(self):
        return self

    def named_parameters(self):
        return []

    def named_buffers(self):
        return []

    def __call__(self, *args):
        return self.fn(*args)


def _plain(value):
    if isinstance(value, (int, float, bool, str)) or value is None:
        return True
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return False
