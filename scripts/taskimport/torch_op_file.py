"""The torch_op.py an imported task carries: PyTorch's own op, for `kopt baselines` (eager and
torch.compile) and for the importer's validation of the reference, which uses this very file.

Contract: build(torch, inputs, sizes, constants) -> (fn, args), fn(*args) returns the outputs
(a tensor or a tuple). The problem file is copied beside it as module.py."""
import json

_TEMPLATE = '''"""PyTorch's op for task %(name)s, imported from %(origin)s by `kopt tasks import`.

build(torch, inputs, sizes, constants) -> (fn, args): fn(*args) returns the task's outputs.
The module is module.py beside this file; its parameters are task inputs (functional_call)."""
import importlib.util
import pathlib
import sys

INIT_INPUTS = %(init)s
FUNCTION = %(function)s
DATA = %(data)s  # forward's inputs, as task inputs, in order
PARAMS = %(params)s  # module parameter/buffer -> task input


def _load():
    path = pathlib.Path(__file__).with_name("module.py")
    spec = importlib.util.spec_from_file_location("kopt_task_module_%(name)s", path)
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: torch.compile (Dynamo) looks the module of Model up by name.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build(torch, inputs, sizes, constants):
    module = _load()
    data = tuple(inputs[n] for n in DATA)
    if FUNCTION:
        return getattr(module, FUNCTION), data
    model = module.Model(*INIT_INPUTS).to(data[0].device if data else "cuda").eval()
    keys = list(PARAMS)
    params = tuple(inputs[PARAMS[k]] for k in keys)

    def fn(*args):
        given = dict(zip(keys, args[len(DATA):]))
        return torch.func.functional_call(model, given, tuple(args[:len(DATA)]))

    return fn, data + params
'''


def docstring_text(text):
    """A file name as plain words inside the generated docstring: no quote, backslash or control
    character can end the docstring or the line (the name is the user's, but it becomes code)."""
    return "".join(c if c.isprintable() and c not in "\"'\\" else "_" for c in text)


def render(name, origin, init_inputs, function, data_names, param_keys, param_names):
    return _TEMPLATE % {
        "name": name,
        "origin": docstring_text(origin),
        "init": repr(list(init_inputs)),
        "function": json.dumps(function) if function else "None",
        "data": json.dumps(data_names),
        "params": json.dumps(dict(zip(param_keys, param_names)), indent=4).replace("\n}", ",\n}")
        if param_keys else "{}",
    }
