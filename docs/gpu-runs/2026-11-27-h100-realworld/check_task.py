"""The GPU half of `kopt tasks check` for one task, straight through the worker (kopt-sandbox's
"check_task" request: hygiene at every sweep and holdout shape, the reference finite on every
stress round, the baseline verified on every shape and round), for a run where the kopt CLI is
not at hand. Prints the request line; pipe it into kopt-sandbox.

  check_task.py TASK_DIR | kopt-sandbox --device 0"""
import json
import pathlib
import sys

task = pathlib.Path(sys.argv[1])


def source(name):
    return {"source": (task / name).read_text(), "origin": name}


print(json.dumps({"v": 2, "id": 1, "op": "check_task", "task_json": (task / "task.json").read_text(),
                  "reference": source("reference.cu"), "baseline": source("baseline.cu")}))
