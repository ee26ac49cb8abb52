#!/bin/bash
# The session's last call on two H100s, from the repository root, with the packed build in
# .dev/final (scripts/pack_gpu_build.sh):
#   GPU 0: the mutation harness on the subset named by MUTATION_ARGS (bench/run.sh mutation).
#   GPU 1: the gpu-labelled tests matching .dev/final/rerun_regex.txt, then
#          bench/run.sh daemon_throughput (tuner and llm, DAEMON_SECONDS each, one GPU), whose
#          debug logs say where each evaluation's time went.
set -u
here=$PWD; out=${OUT:-/tmp/out}; pack=.dev/final; mkdir -p "$out" /work
[ -e /work/main ] || ln -s "$here" /work/main
rm -rf build && mkdir build && xz -dc "$pack/build.tar.xz" | tar -C build -xf -
export KOPT_COMMIT=$(cat "$pack/COMMIT") PATH=$here/build/bin:$PATH PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
s=$(date +%s)
( export CUDA_VISIBLE_DEVICES=0
  timeout ${MUTATION_LIMIT:-450} bash bench/run.sh mutation "$out/mutation" --worker build/bin/kopt-sandbox ${MUTATION_ARGS:-} > "$out/mutation.txt" 2>&1 ) &
( export CUDA_VISIBLE_DEVICES=1
  if [ -s "$pack/rerun_regex.txt" ]; then
    (cd build && timeout ${CTEST_LIMIT:-200} ctest -L gpu -R "$(cat "../$pack/rerun_regex.txt")" -j1 --timeout 150 --output-on-failure > "$out/ctest_gpu.txt" 2>&1)
  fi
  timeout $((2 * ${DAEMON_SECONDS:-150} + 240)) bash bench/run.sh daemon_throughput "$out/daemon" --seconds ${DAEMON_SECONDS:-150} --gpus 1 --modes tuner,llm > "$out/daemon.txt" 2>&1 ) &
wait
echo "wall=$(( $(date +%s) - s ))s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)" "$out/ctest_gpu.txt" 2>/dev/null | tail -8
tail -4 "$out/mutation.txt"; grep -E "mutation_score|killed|survived" "$out/mutation/mutation.md" 2>/dev/null | head -5
cat "$out/daemon/daemon_throughput.md" 2>/dev/null | tail -4
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
