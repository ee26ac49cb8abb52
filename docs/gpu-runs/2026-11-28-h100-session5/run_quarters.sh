#!/bin/bash
# The gpu label of a packed build (scripts/pack_gpu_build.sh) spread over the first N-1 GPUs of a
# lent machine (one ctest per GPU over its share of the label), while the last GPU runs the
# real-world suite's `tasks check` and, if DAEMON_SECONDS is set, a tuner-only `kopt run` of the
# whole suite with its debug log kept (bench/daemon_throughput.py). From the repository root:
#   DAEMON_SECONDS=100 bash docs/gpu-runs/2026-11-28-h100-session5/run_quarters.sh
set -u
here=$PWD; out=${OUT:-/tmp/out}; pack=.dev/${PACK:-final}; mkdir -p "$out" /work
[ -e /work/main ] || ln -s "$here" /work/main   # the tests have the source path compiled in
rm -rf build && mkdir build && xz -dc "$pack/build.tar.xz" | tar -C build -xf -
export KOPT_COMMIT=$(cat "$pack/COMMIT") PATH=$here/build/bin:$PATH PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l); last=$((gpus - 1))
shares=${SHARES:-$((gpus > 1 ? gpus - 1 : 1))}
n=$(cd build && ctest -N -L gpu ${CTEST_FILTER:+-R "$CTEST_FILTER"} | grep -c "Test *#")
s=$(date +%s)
for ((g = 0; g < shares; g++)); do
  (cd build && CUDA_VISIBLE_DEVICES=$g timeout ${CTEST_LIMIT:-400} ctest -L gpu ${CTEST_FILTER:+-R "$CTEST_FILTER"} -j1 --timeout 200 --output-on-failure -I $((g + 1)),$n,$shares > "$out/ctest_gpu_$g.txt" 2>&1) &
done
if [ "$shares" -lt "$gpus" ]; then
  ( export CUDA_VISIBLE_DEVICES=$last
    [ -n "${SKIP_REALWORLD:-}" ] || timeout 150 kopt tasks check --tasks tasks_realworld > "$out/realworld_check.txt" 2>&1
    if [ -n "${DAEMON_SECONDS:-}" ]; then
      timeout $((DAEMON_SECONDS + 200)) python3 bench/daemon_throughput.py "$out/daemon" --seconds "$DAEMON_SECONDS" --gpus 1 --modes ${DAEMON_MODES:-tuner} > "$out/daemon.txt" 2>&1
    fi ) &
fi
wait
echo "ctest -L gpu: $n tests over $shares GPU(s), wall=$(( $(date +%s) - s ))s"
tail -3 "$out/realworld_check.txt" 2>/dev/null
for ((g = 0; g < shares; g++)); do grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" "$out/ctest_gpu_$g.txt" | tail -12; done
tail -12 "$out/daemon.txt" 2>/dev/null
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
