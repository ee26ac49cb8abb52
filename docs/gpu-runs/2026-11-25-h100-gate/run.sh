#!/bin/bash
# Issue 23 (honest timing, the answer out of reach, keyed checksums, blame) on a lent H100: the
# gpu-labelled adversarial, fault and numerical suites, every task's baseline evaluated and timed
# through one worker (with the timing loop's per-sample check counts), `kopt tasks check`, and
# (BENCH=1) the throughput bench with the daemon's compile gate.
# Binaries built on the development machine (stripped) are carried in .devcarry-23a/.
#   cd .devcarry-23a/tree && bash docs/gpu-runs/2026-11-25-h100-gate/run.sh
set -u
here=$PWD
out=${OUT:-/tmp/out}/run; mkdir -p "$out" /work
ln -sfn "$here" /work/wt23a   # the test binaries have the worktree's path compiled in
mkdir -p build/bin build/tests/sandbox
cp ../bin/* build/bin/ && cp ../tests/* build/tests/sandbox/
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $(cat ../COMMIT)"; }
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
if [ "${TESTS:-1}" = 1 ]; then
  for t in ${SUITES:-kopt_adversarial_tests kopt_fault_tests kopt_numerical_tests}; do
    s=$(date +%s); timeout ${SUITE_TIMEOUT:-240} build/tests/sandbox/$t > "$out/$t.txt" 2>&1
    echo "$t rc=$? wall=$(( $(date +%s) - s ))s"; grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$out/$t.txt"
  done
  grep -hE "^adversarial|^fault|^numerical" "$out"/kopt_*_tests.txt | awk '{print $2, $4, $6}' | sort -u > "$out/verdicts.txt"
  echo "== evals (one worker, every task's baseline, timed)"
  : > /tmp/reqs
  for t in tasks/*/; do python3 scripts/sandbox_request.py $t >> /tmp/reqs; done
  s=$(date +%s)
  timeout 150 build/bin/kopt-sandbox < /tmp/reqs > /tmp/resps 2> "$out/worker_stderr.txt"
  echo "worker rc=$? wall=$(( $(date +%s) - s ))s"
  i=1; for t in tasks/*/; do i=$((i+1)); sed -n "${i}p" /tmp/resps > "$out/eval_$(basename $t).json"; done
  python3 scripts/gpu_eval_table.py "$out" > "$out/table.md"
  python3 - "$out" > "$out/sample_checks.md" <<'PY'
import json, pathlib, sys
print("| task | verdict | samples | hashed | full checks | time (ms) |\n|---|---|---|---|---|---|")
for p in sorted(pathlib.Path(sys.argv[1]).glob("eval_*.json")):
    try: r = json.loads(p.read_text().splitlines()[-1]).get("result") or {}
    except Exception as e: print(f"| {p.stem[5:]} | unreadable {e} |"); continue
    f = r.get("timing_facts") or {}
    t = r.get("candidate_time") or {}
    print(f"| {p.stem[5:]} | {r.get('verdict')} | {t.get('samples',0)} | {f.get('hashed_samples','-')} | {f.get('full_checks','-')} | {r.get('time_ms',0):.0f} |")
PY
  cat "$out/sample_checks.md"
  if [ -x build/bin/kopt ]; then
    export KOPT_HOME=/tmp/kh KOPT_CACHE_DIR=/tmp/kc
    s=$(date +%s); timeout 150 build/bin/kopt tasks check > "$out/tasks_check.txt" 2>&1
    echo "kopt tasks check rc=$? wall=$(( $(date +%s) - s ))s"; tail -3 "$out/tasks_check.txt"
    unset KOPT_HOME KOPT_CACHE_DIR
  fi
fi
if [ "${BENCH:-0}" = 1 ]; then
  KOPT_COMMIT=$(cat ../COMMIT) bench/run.sh throughput "$out/throughput" --no-inline --gate --budget-s ${BUDGET:-140} --variants 6 | tail -16
fi
echo "== verdicts (kernel, got, expected)"; cat "$out/verdicts.txt" 2>/dev/null
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
