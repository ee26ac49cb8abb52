#!/bin/bash
# Everything merged on a lent GPU: every gpu-labelled ctest test (PART=tests); PART=bench:
# `kopt tasks check` with stress rounds and drawn shapes, then `bench/run.sh throughput --gate`
# (the daemon's compile gate, 91 candidates); PART=import: the real-world suite's tasks check,
# KernelBench problem files (read from the public repository, carried in .devcarry-final/kb,
# never committed) imported and validated, their production baselines measured, and a short
# daemon run (the built-in tuner) on one of them. The build tree (no objects, stripped) is carried in
# .devcarry-final/build with its commit in .devcarry-final/COMMIT; run from the repository root:
#   PART=tests bash docs/gpu-runs/2026-11-26-h100-final/run.sh
set -u
here=$PWD; out=${OUT:-/tmp/out}; mkdir -p "$out" /work
[ -e /work/main ] || ln -s "$here" /work/main   # the tests have the source path compiled in
rm -rf build && cp -a .devcarry-final/build build
export KOPT_COMMIT=$(cat .devcarry-final/COMMIT)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT";
  which compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
if [ "${PART:-tests}" = tests ]; then
  s=$(date +%s)
  (cd build && timeout ${CTEST_LIMIT:-500} ctest -L gpu -j1 --output-on-failure --timeout 300 ${CTEST_ARGS:-}) > "$out/ctest_gpu.txt" 2>&1
  echo "ctest -L gpu rc=$? wall=$(( $(date +%s) - s ))s"
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|Skipped|\*\*\*" "$out/ctest_gpu.txt" | tail -25
  grep -E "^adversarial (replays|allocates|counts|skips|reads|caches)" -A1 "$out/ctest_gpu.txt" | head -20
fi
if [ "${PART:-tests}" = bench ]; then
  export KOPT_HOME=/tmp/kh KOPT_CACHE_DIR=/tmp/kc
  s=$(date +%s); timeout 200 build/bin/kopt tasks check > "$out/tasks_check.txt" 2>&1
  echo "kopt tasks check rc=$? wall=$(( $(date +%s) - s ))s"; tail -3 "$out/tasks_check.txt"
  unset KOPT_HOME KOPT_CACHE_DIR
  bench/run.sh throughput "$out/throughput" --no-inline --gate --budget-s ${BUDGET:-140} --variants 6 2>&1 | tail -20
fi
if [ "${PART:-tests}" = import ]; then
  export PATH=$here/build/bin:$PATH PYTHONUNBUFFERED=1
  step() { local t=$1; shift; local s=$(date +%s); timeout "$t" "$@"; echo "[$* -> rc=$? in $(( $(date +%s) - s )) s]"; }
  step 200 kopt tasks check --tasks tasks_realworld > "$out/realworld_check.txt" 2>&1
  tail -8 "$out/realworld_check.txt" | cut -c1-200
  rm -rf /tmp/kb_tasks; mkdir -p /tmp/kb_tasks
  step 200 kopt tasks import --kernelbench .devcarry-final/kb/*.py \
    --references tests/tasks/import/kernelbench_references --tasks /tmp/kb_tasks > "$out/kernelbench.txt" 2>&1
  grep -E "^(imported|cannot|analysed|refused)" "$out/kernelbench.txt" | cut -c1-200; ls /tmp/kb_tasks
  step 120 kopt tasks check --tasks /tmp/kb_tasks > "$out/kb_check.txt" 2>&1; tail -4 "$out/kb_check.txt"
  step 240 kopt baselines --tasks /tmp/kb_tasks --db /tmp/kb.db 19_relu 23_softmax > "$out/kb_baselines.txt" 2>&1
  tail -12 "$out/kb_baselines.txt" | cut -c1-200
  step 120 kopt run /tmp/kb_tasks/19_relu /tmp/kb_tasks/23_softmax --tuner-only --hours 0.01 --db /tmp/kb.db --no-display > "$out/kb_run.txt" 2>&1
  tail -6 "$out/kb_run.txt" | cut -c1-200
  kopt status --db /tmp/kb.db 2>&1 | tee "$out/kb_status.txt" | tail -12
  kopt memory wins --db /tmp/kb.db --vs production 2>&1 | tee "$out/kb_wins.txt" | tail -8
fi
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
