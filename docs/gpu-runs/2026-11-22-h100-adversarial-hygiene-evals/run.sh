#!/bin/bash
# Device run 2: adversarial suite, every task's baseline through the worker, task hygiene.
set -u
here=$PWD
mkdir -p /work
[ -e /work/main ] || ln -s "$here" /work/main
mkdir -p build/bin build/tests/sandbox
cp .devcarry/kopt-sandbox build/bin/
cp .devcarry/kopt_adversarial_tests build/tests/sandbox/
W=build/bin/kopt-sandbox
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; echo "repo at $here"; } > $OUT/device.txt
cat $OUT/device.txt
echo "== adversarial"
timeout 280 build/tests/sandbox/kopt_adversarial_tests > $OUT/adversarial.txt 2>&1
echo "adversarial rc=$?"; grep -E "^\[  (PASSED|FAILED|  OK|SKIPPED)|FAILED|expected" $OUT/adversarial.txt | tail -30
echo "== evals (one worker, all tasks)"
: > /tmp/reqs
for t in tasks/*/; do python3 scripts/sandbox_request.py $t >> /tmp/reqs; done
start=$(date +%s)
timeout 240 $W < /tmp/reqs > /tmp/resps 2> $OUT/worker_stderr.txt
echo "worker rc=$? wall=$(( $(date +%s) - start ))s"
i=0; for t in tasks/*/; do i=$((i+1)); sed -n "${i}p" /tmp/resps > $OUT/eval_$(basename $t).json; done
echo "== hygiene"
: > /tmp/chk
for t in tasks/*/; do python3 scripts/sandbox_request.py $t --check --no-time | tail -n 1 >> /tmp/chk; done
timeout 200 $W < /tmp/chk > $OUT/hygiene.jsonl 2>> $OUT/worker_stderr.txt
echo "hygiene rc=$?"
python3 - $OUT/hygiene.jsonl <<'PY'
import json, pathlib, sys
names = sorted(p.name for p in pathlib.Path("tasks").iterdir() if (p / "task.json").exists())
lines = open(sys.argv[1]).read().splitlines()
for name, line in zip(names, lines + [""] * (len(names) - len(lines))):
    if not line:
        print(f"{name:18s} NO ANSWER"); continue
    r = json.loads(line)
    if not r.get("ok"):
        print(f"{name:18s} ERROR {r.get('error','')[:300]}"); continue
    res = r["result"]
    probs = [f"{f['problem']} ({f['shape']})" for f in res["findings"]]
    if res["baseline_verdict"] != "ok":
        probs.append(f"baseline {res['baseline_verdict']}: {res['baseline_detail'][:300]}")
    print(f"{name:18s} {'ok' if not probs else 'FAIL'}")
    for p in probs: print("    ", p)
PY
tail -n 5 $OUT/worker_stderr.txt
python3 scripts/gpu_eval_table.py $OUT > $OUT/table.md
tar czf $OUT/evals.tgz -C $OUT $(cd $OUT && ls eval_*) && rm -f $OUT/eval_*
cat $OUT/table.md
