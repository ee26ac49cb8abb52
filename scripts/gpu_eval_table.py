#!/usr/bin/env python3
"""Reads `kopt eval TASK --json` outputs, or raw kopt-sandbox response lines (one file per task,
eval_<task>.json) from a folder and
prints a markdown table: verdict, baseline median and noise, speed of light, %SOL, and the
evaluation latency split (compile / verify / time / total).

    scripts/gpu_eval_table.py DIR
"""
import json
import pathlib
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__)
rows = []
for path in sorted(pathlib.Path(sys.argv[1]).glob("eval_*.json")):
    task = path.stem[len("eval_"):]
    try:
        r = json.loads(path.read_text().strip().splitlines()[-1])
        if "result" in r or r.get("ok") is False:  # a raw worker response line
            r = r.get("result") or {"verdict": "error: " + r.get("error", "")[:80]}
    except (json.JSONDecodeError, OSError) as e:
        rows.append(f"| {task} | unreadable: {e} | | | | | | | | |")
        continue
    t = r.get("candidate_time") or {}
    rows.append("| {} | {} | {:.1f} | {:.4f} | {} | {:.1f} | {:.1f} | {:.0f} | {:.0f} | {:.0f} / {:.0f} |".format(
        task, r.get("verdict", "?"), t.get("median_us", 0), t.get("noise", 0), t.get("samples", 0),
        r.get("sol_us", 0), r.get("sol_percent", 0), r.get("compile_ms", 0), r.get("verify_ms", 0),
        r.get("time_ms", 0), r.get("total_ms", 0)))
print("| task | verdict | baseline median (us) | noise | samples | SOL (us) | %SOL | compile (ms) | verify (ms) | time / total (ms) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
print("\n".join(rows))
