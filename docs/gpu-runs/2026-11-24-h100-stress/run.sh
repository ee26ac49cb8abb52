#!/bin/bash
# Issue 15 on a GPU: the gpu-labelled numerical suite (every planted numerical bug caught by its
# stress round, accepted without stress rounds; each baseline passes them, with its verification
# time with and without stress rounds), then `kopt tasks check` on the whole suite (hygiene, the
# reference finite on every stress round, the baseline passing every sweep shape and stress round).
# Binaries and the worktree's tasks/ and tests/sandbox/numerical/ carried in .devcarry-15/ (built
# with KOPT_SOURCE_DIR=/work/wt15, hence the link).   bash .devcarry-15/run.sh
set -u
c=$PWD/.devcarry-15
mkdir -p /work && ln -sfn "$c/wt15" /work/wt15
export KOPT_CACHE_DIR=/tmp/kopt-cache
mkdir -p "$KOPT_CACHE_DIR" && cp -r "$c/cache/." "$KOPT_CACHE_DIR/" 2>/dev/null
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat "$c/COMMIT")"; } | tee $OUT/device.txt
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
s=$(date +%s); timeout 260 /work/wt15/build/tests/sandbox/kopt_numerical_tests > $OUT/numerical.txt 2>&1
echo "numerical rc=$? wall=$(( $(date +%s) - s ))s"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED|^cost" $OUT/numerical.txt
s=$(date +%s); timeout 130 /work/wt15/build/bin/kopt tasks check --tasks /work/wt15/tasks > $OUT/tasks-check.txt 2>$OUT/tasks-check.log
echo "tasks check rc=$? wall=$(( $(date +%s) - s ))s"
grep -vE "^ok " $OUT/tasks-check.txt | tail -30; tail -5 $OUT/tasks-check.log
