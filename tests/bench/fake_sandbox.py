#!/usr/bin/env python3
"""A stand-in for kopt-sandbox that speaks protocol v2 without a GPU, for testing the bench
scripts' plumbing: every evaluate request is answered "ok" with made-up but consistent times
(a task's "sgemm" candidate is answered with a compile error, so failures are exercised; a
candidate whose origin names a failure-mix class gets that class's verdict, and a hang also the
"fatal" answer and exit of the real worker)."""
import json
import os
import sys
import time


def device(ordinal):
    return {"name": "Fake GPU", "ordinal": ordinal, "cc": "9.0", "arch": "sm_90a", "sms": 132,
            "l2_bytes": 52428800, "driver": "13.0", "cuda": "13.0"}


def evaluate(request):
    task = json.loads(request["task_json"])
    size = 1
    for v in task["sizes"].values():
        size *= v
    median = 1.0 + size / 1e6
    base = median * 1.25 if request.get("baseline") else None
    time.sleep(0.01)
    origin = request["candidate"].get("origin", "")
    for kind, verdict in (("-hang_", "timeout"), ("-crash", "crash"),
                          ("-compile_error", "compile_error"), ("-incorrect", "incorrect"),
                          ("-out_of_bounds", "out_of_bounds")):
        if kind in origin:
            return {"verdict": verdict, "detail": "fake " + verdict, "compile_log": "",
                    "compile_ms": 30.0, "compile_cache_hit": False, "speedup": 0, "sol_us": 0,
                    "sol_percent": 0, "verify_ms": 0, "time_ms": 0, "total_ms": 31.0}
    if task["name"] == "sgemm":
        return {"verdict": "compile_error", "detail": "error: fake", "compile_log": "error: fake",
                "compile_ms": 30.0, "compile_cache_hit": False, "speedup": 0, "sol_us": 0,
                "sol_percent": 0, "verify_ms": 0, "time_ms": 0, "total_ms": 31.0}
    result = {"verdict": "ok", "detail": "verified", "compile_log": "", "compile_ms": 25.0,
              "compile_cache_hit": False, "sol_us": median * 0.5,
              "sol_percent": 50.0, "verify_ms": 120.0, "time_ms": 300.0, "total_ms": 450.0,
              "speedup": (base / median) if base else 0,
              "candidate_time": {"median_us": median, "noise": 0.002, "min_us": median * 0.99,
                                 "samples": 20, "discarded": 0}}
    if base:
        result["baseline_time"] = {"median_us": base, "noise": 0.002, "min_us": base,
                                   "samples": 20, "discarded": 0}
    return result


def main():
    ordinal = int(sys.argv[sys.argv.index("--device") + 1]) if "--device" in sys.argv else 0
    print(json.dumps({"v": 2, "id": 0, "ok": True, "hello": {"pid": os.getpid()}}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        answer = {"v": 2, "id": request["id"], "ok": True}
        op = request.get("op")
        if op == "ping":
            answer["device"] = device(ordinal)
        elif op == "evaluate":
            answer["result"] = evaluate(request)
            if answer["result"]["verdict"] in ("timeout", "crash"):
                answer["fatal"] = True
                print(json.dumps(answer), flush=True)
                return
        elif op == "shutdown":
            print(json.dumps(answer), flush=True)
            return
        else:
            answer = {"v": 2, "id": request["id"], "ok": False, "error": "unknown op"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
