#!/bin/bash
# The whole gpu label of a packed build (scripts/pack_gpu_build.sh) on a lent machine with two
# GPUs: the tests split in two halves, one ctest per GPU (CUDA_VISIBLE_DEVICES), plus the
# real-world suite's `tasks check` on GPU 0 first. From the repository root:
#   bash docs/gpu-runs/2026-11-27-h100-session3/run_split.sh
set -u
here=$PWD; out=${OUT:-/tmp/out}; pack=.dev/${PACK:-final}; mkdir -p "$out" /work
[ -e /work/main ] || ln -s "$here" /work/main   # the tests have the source path compiled in
rm -rf build && mkdir build && xz -dc "$pack/build.tar.xz" | tar -C build -xf -
export KOPT_COMMIT=$(cat "$pack/COMMIT") PATH=$here/build/bin:$PATH PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
CUDA_VISIBLE_DEVICES=0 timeout 150 kopt tasks check --tasks tasks_realworld > "$out/realworld_check.txt" 2>&1
tail -3 "$out/realworld_check.txt"
n=$(cd build && ctest -N -L gpu | grep -c "Test *#"); half=$(( (n + 1) / 2 ))
s=$(date +%s)
(cd build && CUDA_VISIBLE_DEVICES=0 timeout ${CTEST_LIMIT:-430} ctest -L gpu -j1 --timeout 200 --output-on-failure -I 1,$half > "$out/ctest_gpu_a.txt" 2>&1) &
(cd build && CUDA_VISIBLE_DEVICES=1 timeout ${CTEST_LIMIT:-430} ctest -L gpu -j1 --timeout 200 --output-on-failure -I $((half + 1)),$n > "$out/ctest_gpu_b.txt" 2>&1) &
wait
echo "ctest -L gpu: $n tests in two halves, wall=$(( $(date +%s) - s ))s"
for f in a b; do grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" "$out/ctest_gpu_$f.txt" | tail -12; done
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
