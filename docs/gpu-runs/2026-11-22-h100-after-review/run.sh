#!/bin/bash
# After the review mends: the gpu label and kopt run's GPU selection, binaries from CI's build.
set -u
here=$PWD
[ -e /tmp/ci2 ] || ln -s "$here" /tmp/ci2   # the test binary has the build machine's paths compiled in
mkdir -p build/bin build/tests/sandbox
cp .devcarry/bin/* build/bin/ && cp .devcarry/kopt_adversarial_tests build/tests/sandbox/
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $(cat .devcarry/COMMIT)"; }
s=$(date +%s); timeout 200 build/tests/sandbox/kopt_adversarial_tests > $OUT/adversarial.txt 2>&1
echo "adversarial rc=$? wall=$(( $(date +%s) - s ))s"; grep -E "^\[  (PASSED|FAILED|SKIPPED)" $OUT/adversarial.txt
bash .devcarry/check_run.sh
