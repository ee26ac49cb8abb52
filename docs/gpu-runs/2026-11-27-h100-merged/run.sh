#!/bin/bash
# The merged tree of 2026-11-27 on a lent H100, in one call: the task suites checked by the
# merged gate (every new round on every baseline: no false rejects), the gpu-labelled tests of
# this session's defences, and the mutation harness on the merged gate for a fixed time.
# The build tree (stripped, no objects) is carried in .dev/final/build, its commit in
# .dev/final/COMMIT. From the repository root:  bash docs/gpu-runs/2026-11-27-h100-merged/run.sh
set -u
here=$PWD; out=${OUT:-/tmp/out}; mkdir -p "$out" /work
[ -e /work/main ] || ln -s "$here" /work/main   # the tests have the source path compiled in
rm -rf build && cp -a .dev/final/build build
export KOPT_COMMIT=$(cat .dev/final/COMMIT) PATH=$here/build/bin:$PATH PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
step() { local t=$1; shift; local s=$(date +%s); timeout "$t" "$@"; echo "[$* -> rc=$? in $(( $(date +%s) - s )) s]"; }
step 120 kopt tasks check --tasks tasks > "$out/tasks_check.txt" 2>&1; tail -4 "$out/tasks_check.txt" | cut -c1-220
step 120 kopt tasks check --tasks tasks_realworld > "$out/realworld_check.txt" 2>&1; tail -4 "$out/realworld_check.txt" | cut -c1-220
s=$(date +%s)
(cd build && timeout ${CTEST_LIMIT:-130} ctest -L gpu -j1 --timeout 120 --output-on-failure ${CTEST_ARGS:-}) > "$out/ctest_gpu.txt" 2>&1
echo "ctest -L gpu ${CTEST_ARGS:-} rc=$? wall=$(( $(date +%s) - s ))s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|\*\*\*" "$out/ctest_gpu.txt" | tail -15
step $(( ${MUTATION_S:-120} + 30 )) bench/run.sh mutation /tmp/mut --worker build/bin/kopt-sandbox --max-seconds ${MUTATION_S:-120} > "$out/mutation.txt" 2>&1
tail -25 "$out/mutation.txt"; cp /tmp/mut/mutation.json "$out/" 2>/dev/null; cp /tmp/mut/*.jsonl "$out/" 2>/dev/null
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
