#!/usr/bin/env python3
"""Before/after table of two throughput.json files (bench/run.sh throughput), per task and for
the whole stream: median worker time per candidate, verification and timing, and candidates per
GPU-hour. Prints markdown.

    bench/throughput_compare.py BEFORE.json AFTER.json
"""
import json
import statistics
import sys


def per_task(results):
    tasks = {}
    for r in results["records"]:
        if r.get("verdict") != "ok":
            continue
        tasks.setdefault(r["task"], []).append(r)
    return {t: {k: statistics.median(x.get(k) or 0 for x in rs)
                for k in ("total_ms", "verify_ms", "time_ms")} for t, rs in tasks.items()}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = (json.load(open(p)) for p in sys.argv[1:])
    b, a = per_task(before), per_task(after)
    print("| task | total ms before | after | verify before | after | time before | after |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for t in sorted(set(b) | set(a), key=lambda t: -(b.get(t, {}).get("total_ms") or 0)):
        row = [t]
        for k in ("total_ms", "verify_ms", "time_ms"):
            row += ["%.0f" % b[t][k] if t in b else "-", "%.0f" % a[t][k] if t in a else "-"]
        print("| " + " | ".join(row) + " |")
    print()
    print("| stream | candidates per GPU-hour | total p50 ms | total p90 ms |")
    print("| --- | ---: | ---: | ---: |")
    for name, r in (("before", before), ("after", after)):
        s = r["per_candidate"]["total_ms"]
        print("| %s (%s, commit %s) | %.0f | %.0f | %.0f |" % (
            name, r["environment"]["date"], r["environment"]["commit"],
            r["candidates_per_gpu_hour"], s["p50"], s["p90"]))


if __name__ == "__main__":
    main()
