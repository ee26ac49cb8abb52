#!/usr/bin/env python3
"""A memory (kopt JSONL) holding the cross_entropy and softmax tasks with their baseline.cu
recorded as a verified 1.5x win on an H100: a fixture for timing the export's checks (the
self-test and the PyTorch binding), not a claim about these kernels' speed.

    python3 make_memory.py TASKS_DIR > memory.jsonl
    kopt memory import --db memory.db --jsonl memory.jsonl
"""
import hashlib
import json
import sys

tasks = sys.argv[1]
lines = [{"type": "header", "format": 2, "kind": "kopt-memory"}]
kernels, evaluations = [], []
for task in ("cross_entropy", "softmax"):
    spec = open("%s/%s/task.json" % (tasks, task), "rb").read().decode()
    source = open("%s/%s/baseline.cu" % (tasks, task), "rb").read().decode()
    sha = hashlib.sha256(source.encode()).hexdigest()
    lines.append({"type": "task", "name": task,
                  "spec_hash": hashlib.sha256(spec.encode()).hexdigest(), "tags": [],
                  "spec_json": spec, "updated_at": "2026-11-25T05:00:00Z"})
    kernels.append({"type": "kernel", "sha256": sha, "task": task, "parent_sha256": "",
                    "origin": {"agent": "fixture", "model": "", "prompt_template": "", "tuner": False},
                    "tunables": {}, "created_at": "2026-11-25T05:00:00Z", "source": source})
    evaluations.append({"type": "evaluation", "kernel_sha256": sha, "task": task,
                        "gpu": {"model": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                                "driver_version": "580.159.04", "cuda_version": "13.0"},
                        "verdict": "ok", "detail": "timing fixture", "tunables": {},
                        "median_us": 100.0, "noise": 0.01, "baseline_us": 150.0, "speedup": 1.5,
                        "sol_percent": 50.0, "resources": {}, "profile": {},
                        "created_at": "2026-11-25T05:00:00Z"})
for line in lines + kernels + evaluations:
    print(json.dumps(line))
