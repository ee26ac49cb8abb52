#!/bin/bash
# The GPU record of the protocol channel, the parameter check and the sanitizer gate (issue 23b).
# Run from the tree root with the stripped binaries under build/ (bin/kopt-sandbox,
# tests/sandbox/kopt_*_tests); OUT names the folder for logs. The tests read their source folder
# from a compiled-in absolute path, /work/wt23b, which is linked to the tree here.
set -u
OUT=${OUT:-${1:-/tmp/gate-infra}}
mkdir -p "$OUT/reports"
mkdir -p /work && ln -sfn "$PWD" /work/wt23b
T=build/tests/sandbox
START=$(date +%s)
left() { echo $((${BUDGET:-540} - ($(date +%s) - START))); }
step() {  # step NAME SECONDS COMMAND...: runs it with a limit, keeps its output
  local name=$1 limit=$2; shift 2
  local l=$(left); [ "$l" -lt 20 ] && { echo "$name: skipped (no time left)" | tee "$OUT/$name.txt"; return; }
  [ "$limit" -gt "$l" ] && limit=$l
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"
}
{
  date -u; cat COMMIT 2>/dev/null; nvidia-smi -L
  nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer); echo "$CS"
  "$CS" --version | tail -2
} > "$OUT/device.txt" 2>&1
export PATH=$PATH:/usr/local/cuda/bin
# 1. Sanitizer suite: adversarial pair per tool, twins, three baselines, the evaluator hook.
KOPT_SANITIZER_REPORT_DIR=$OUT/reports step sanitizer 330 $T/kopt_sanitizer_gpu_tests
# 2. The new adversarial kernels (printf, parameters) through the real worker.
step adversarial_new 90 $T/kopt_adversarial_tests \
  --gtest_filter='*prints_*:*extra_parameter*:*larger_struct_parameter*:*parameters_match*'
# 3. No false rejects from the parameter check: every task's reference and baseline.
step baselines 150 $T/kopt_adversarial_tests --gtest_filter='AdversarialBaselinesOnGpu.*'
# 4. The rest of the adversarial suite, as time allows.
step adversarial_all 200 $T/kopt_adversarial_tests --gtest_filter='Kernels/AdversarialOnGpu.*'
# 5. Where a kernel's printf went: the worker's bounded log.
ls -la /tmp/kopt-sandbox-uid*-gpu0.log > "$OUT/output_log.txt" 2>&1
head -c 2000 /tmp/kopt-sandbox-uid*-gpu0.log >> "$OUT/output_log.txt" 2>&1
echo "== summary"; cat "$OUT/steps.txt"
grep -h "^sanitizer\|^adversarial \|^baseline \|PASSED\|FAILED" "$OUT"/sanitizer.txt \
  "$OUT"/adversarial_new.txt "$OUT"/baselines.txt "$OUT"/adversarial_all.txt | cut -c1-230
