#!/bin/bash
# Final device call: the gpu-labelled tests and `kopt tasks check` with the binaries CI built from
# the final commit (paths /tmp/ci compiled in).
set -u
here=$PWD
[ -e /tmp/ci ] || ln -s "$here" /tmp/ci
mkdir -p build/bin build/tests/sandbox
cp .devcarry/bin/* build/bin/
cp .devcarry/kopt_adversarial_tests build/tests/sandbox/
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; echo "commit $(cat .devcarry/COMMIT)"; } > $OUT/device.txt
cat $OUT/device.txt
s=$(date +%s); timeout 200 build/tests/sandbox/kopt_adversarial_tests > $OUT/adversarial.txt 2>&1
echo "adversarial rc=$? wall=$(( $(date +%s) - s ))s"; grep -E "^\[  (PASSED|FAILED|SKIPPED)" $OUT/adversarial.txt
s=$(date +%s); timeout 200 build/bin/kopt tasks check > $OUT/tasks-check.txt 2>&1
echo "tasks check rc=$? wall=$(( $(date +%s) - s ))s"; tail -n 3 $OUT/tasks-check.txt
timeout 60 build/bin/kopt eval axpy docs/gpu-runs/2026-11-22-h100-final/axpy_vec4.cu (carried as .devcarry/axpy_vec4.cu) > $OUT/eval-axpy-vec4.txt 2>&1; echo "eval rc=$?"
tail -n 12 $OUT/eval-axpy-vec4.txt
