"""The fp8 task's reference against its torch_op.py on the GPU, as `kopt tasks import` validates
an imported reference (scripts/task_import.py's validate_reference): fresh inputs drawn as
task.json says at every sweep, holdout and stress shape, PyTorch in float64, the reference
launched through its plan with kopt's NVRTC options.

  validate_torch.py TASK_DIR   (run from a tree with scripts/ and bench/ beside this folder's root)"""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else ".").resolve()
sys.path[:0] = [str(root / "scripts"), str(root / "bench")]
import torch  # noqa: E402
import task_import  # noqa: E402

folder = pathlib.Path(sys.argv[1])
task = json.loads((folder / "task.json").read_text())
problems = task_import.validate_reference(torch, task, folder, (folder / "reference.cu").read_text(),
                                          print)
print("\n".join(problems) if problems else "validated: reference.cu agrees with torch_op.py")
sys.exit(1 if problems else 0)
