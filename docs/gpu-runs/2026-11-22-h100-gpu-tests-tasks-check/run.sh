#!/bin/bash
# Device call A: the gpu-labelled tests, `kopt tasks check` (the CLI's GPU path) on the whole
# suite, and `kopt eval` of the baselines changed since the last measured run.
set -u
here=$PWD
[ -e /tmp/ci ] || ln -s "$here" /tmp/ci   # the test binary has the build machine's paths compiled in
mkdir -p build/bin build/tests/sandbox
cp .devcarry/bin/* build/bin/
cp .devcarry/kopt_adversarial_tests build/tests/sandbox/
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; git log -1 --format='commit %h %s' 2>/dev/null || echo "commit $(cat .devcarry/COMMIT)"; } > $OUT/device.txt
cat $OUT/device.txt
echo "== gpu-labelled tests (kopt_adversarial_tests)"
s=$(date +%s); timeout 200 build/tests/sandbox/kopt_adversarial_tests > $OUT/adversarial.txt 2>&1
echo "rc=$? wall=$(( $(date +%s) - s ))s"; grep -E "^\[  (PASSED|FAILED|SKIPPED)" $OUT/adversarial.txt
echo "== kopt tasks check (GPU)"
s=$(date +%s); timeout 200 build/bin/kopt tasks check > $OUT/tasks-check.txt 2>$OUT/tasks-check.log
echo "rc=$? wall=$(( $(date +%s) - s ))s"; tail -n 30 $OUT/tasks-check.txt; tail -n 5 $OUT/tasks-check.log
echo "== kopt eval of changed baselines"
for t in sgemm bf16_gemm gemm_bias_relu; do
  timeout 60 build/bin/kopt eval $t --json > $OUT/eval-$t.json 2>$OUT/eval-$t.log; echo "$t rc=$?"
  python3 -c "
import json,sys
r=json.load(open('$OUT/eval-$t.json')); r=r.get('result',r)
c=r.get('candidate_time') or {}
print(f\"  verdict={r.get('verdict')} median={c.get('median_us',0):.2f}us noise={c.get('noise',0):.4f} sol={r.get('sol_us',0):.2f}us %sol={r.get('sol_percent',0):.1f} total={r.get('total_ms',0):.0f}ms\")" 2>&1 | tail -2
done
