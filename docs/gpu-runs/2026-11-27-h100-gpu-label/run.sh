#!/bin/bash
# The whole gpu label of a built tree on a lent H100, in one call, plus the task suites under the
# gate (no false rejects), repeated to catch flaky refusals. The stripped build (binaries, the
# gpu-labelled test executables, the ctest files) is carried as .dev/${PACK:-final}/build.tar.xz,
# its commit in COMMIT (packed by scripts/pack_gpu_build.sh). From the repository root:  bash docs/gpu-runs/2026-11-27-h100-gpu-label/run.sh
set -u
here=$PWD; out=${OUT:-/tmp/out}; pack=.dev/${PACK:-final}; mkdir -p "$out" /work
[ -e /work/main ] || ln -s "$here" /work/main   # the tests have the source path compiled in
rm -rf build && mkdir build && xz -dc "$pack/build.tar.xz" | tar -C build -xf -
export KOPT_COMMIT=$(cat "$pack/COMMIT") PATH=$here/build/bin:$PATH PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
step() { local t=$1; shift; local s=$(date +%s); timeout "$t" "$@"; echo "[$* -> rc=$? in $(( $(date +%s) - s )) s]"; }
for i in $(seq 1 ${CHECK_REPEATS:-1}); do
  step 150 kopt tasks check --tasks tasks_realworld > "$out/realworld_check_$i.txt" 2>&1
  grep -vE "^\s*$" "$out/realworld_check_$i.txt" | grep -iE "refus|fail|wrong|error|passed|ok " | cut -c1-240 | tail -8
done
[ -n "${SKIP_TASKS:-}" ] || step 150 kopt tasks check --tasks tasks > "$out/tasks_check.txt" 2>&1; tail -3 "$out/tasks_check.txt" | cut -c1-220
s=$(date +%s)
(cd build && timeout ${CTEST_LIMIT:-420} ctest -L gpu -j1 --timeout 200 --output-on-failure ${CTEST_ARGS:-} -E "SanitizerBaselinesOnGpu"; timeout ${SANITIZER_LIMIT:-120} ctest -R SanitizerBaselinesOnGpu --output-on-failure) > "$out/ctest_gpu.txt" 2>&1
echo "ctest -L gpu ${CTEST_ARGS:-} rc=$? wall=$(( $(date +%s) - s ))s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|\*\*\*|Skipped" "$out/ctest_gpu.txt" | tail -25
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
