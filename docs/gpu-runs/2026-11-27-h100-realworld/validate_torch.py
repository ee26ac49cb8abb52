"""A real-world task's reference against its torch_op.py on the GPU, as `kopt tasks import`
validates an imported reference (scripts/task_import.py's validate_reference): fresh inputs drawn
as task.json says (structured inputs through bench/structured_inputs.py) at every sweep, holdout
and stress shape, PyTorch in float64, the reference launched through its plan with kopt's NVRTC
options, its outputs NaN-filled first.

  validate_torch.py TASK_DIR [ROOT]   (ROOT holds scripts/ and bench/)"""
import json
import pathlib
import sys
import time

root = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else ".").resolve()
sys.path[:0] = [str(root / "scripts"), str(root / "bench")]
import torch  # noqa: E402
import task_import  # noqa: E402

folder = pathlib.Path(sys.argv[1])
task = json.loads((folder / "task.json").read_text())
began = time.time()


def log(text):
    print("[%6.1f s] %s" % (time.time() - began, text), flush=True)


# The mirrored twins as kopt makes them (sandbox/init_spec.cc): float inputs only, literal
# bounds only (taskimport.numerics.mirrored reflects integer inputs too, and fails on a bound that
# is an expression: the real-world suite's lengths are both).
floats = {t["name"] for t in task["inputs"] if t["dtype"] in ("f32", "f16", "bf16", "e4m3")}


def twin(rnd):
    if rnd.get("unmirrored"):
        return None
    changed, inputs = False, {}
    for name, init in rnd["inputs"].items():
        init = dict(init)
        dist = init.get("dist", "normal")
        if name in floats:
            if dist == "normal" and init.get("mean", 0):
                init["mean"], changed = -init["mean"], True
            elif dist == "uniform" and init["low"] != -init["high"]:
                init["low"], init["high"], changed = -init["high"], -init["low"], True
            elif dist == "constant" and init.get("value", 0):
                init["value"], changed = -init["value"], True
            elif (dist == "randint" and isinstance(init["low"], int) and
                  isinstance(init["high"], int) and init["low"] != -(init["high"] - 1)):
                init["low"], init["high"], changed = -(init["high"] - 1), -init["low"] + 1, True
        inputs[name] = init
    return {"name": "%s (mirror)" % rnd["name"], "inputs": inputs} if changed else None


task_import.numerics.mirrored = twin
import taskimport.validate as validate_module  # noqa: E402
plain_run_torch = validate_module.run_torch


def run_torch_said(*args):  # each shape's oracle precision in the log
    outputs, label = plain_run_torch(*args)
    log("PyTorch in %s" % label)
    return outputs, label


validate_module.run_torch = run_torch_said
# Sweep shapes and stress rounds first, the holdouts (the largest shapes) last, so that a time
# limit cuts the big shapes, not the stress rounds; each shape's "ok" line is printed as it passes.
reference = (folder / "reference.cu").read_text()
first = dict(task, holdout=[])
problems = task_import.validate_reference(torch, first, folder, reference, log)
if not problems and task.get("holdout"):
    log("the holdouts")
    last = dict(task, shapes=task["holdout"], holdout=[], stress=[])
    problems = task_import.validate_reference(torch, last, folder, reference, log)
print("\n".join(problems) if problems else
      "validated: %s's reference.cu agrees with torch_op.py (float64) at %d sweep, %d holdout "
      "shapes and every stress round" % (task["name"], len(task["shapes"]), len(task.get("holdout", []))))
sys.exit(1 if problems else 0)
