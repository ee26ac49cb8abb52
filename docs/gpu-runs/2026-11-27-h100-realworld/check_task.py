"""The GPU half of `kopt tasks check` for one task, straight through the worker (kopt-sandbox's
"check_task" request: hygiene at every sweep and holdout shape, the reference finite on every
stress round, the baseline verified on every shape and round), for a run where the kopt CLI is
not at hand. Starts the worker, sends the request, prints its answer, closes its stdin.

  check_task.py TASK_DIR WORKER"""
import json
import pathlib
import subprocess
import sys

task = pathlib.Path(sys.argv[1])


def source(name):
    return {"source": (task / name).read_text(), "origin": name}


worker = subprocess.Popen([sys.argv[2], "--device", "0"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
worker.stdin.write(json.dumps({"v": 2, "id": 1, "op": "check_task",
                               "task_json": (task / "task.json").read_text(),
                               "reference": source("reference.cu"),
                               "baseline": source("baseline.cu")}) + "\n")
worker.stdin.flush()
for line in worker.stdout:
    answer = json.loads(line)
    if answer.get("id") != 1:
        continue
    result = answer.get("result", answer)
    print(json.dumps(answer))
    findings = result.get("findings") or []
    print("%s: %d hygiene findings%s; baseline %s %s" % (
        task.name, len(findings), "".join("\n  %s: %s" % (f["shape"], f["problem"]) for f in findings),
        result.get("baseline_verdict"), (result.get("baseline_detail") or answer.get("error") or "")[:400]))
    break
worker.stdin.close()
worker.wait(timeout=30)
