#!/usr/bin/env python3
"""Prints one kopt sandbox protocol v2 "evaluate" request line, for driving kopt-sandbox by hand:

    scripts/sandbox_request.py tasks/axpy [KERNEL.cu] [--no-time] | build/bin/kopt-sandbox
"""
import json
import pathlib
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
if not args:
    sys.exit(__doc__)
task = pathlib.Path(args[0])
kernel = pathlib.Path(args[1]) if len(args) > 1 else task / "baseline.cu"


def source(path):
    return {"source": path.read_text(), "origin": path.name}


request = {
    "v": 2, "id": 1, "op": "evaluate",
    "task_json": (task / "task.json").read_text(),
    "reference": source(task / "reference.cu"),
    "baseline": source(task / "baseline.cu"),
    "candidate": source(kernel),
    "options": {"time": "--no-time" not in sys.argv},
}
print(json.dumps(request))
if "--check" in sys.argv:
    print(json.dumps({"v": 2, "id": 2, "op": "check_task", "task_json": request["task_json"],
                      "reference": request["reference"], "baseline": request["baseline"]}))
