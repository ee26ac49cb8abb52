#!/bin/bash
# One call on a machine of several H100s, from the repository root, with the packed build in
# .dev/final (scripts/pack_gpu_build.sh). Each GPU gets one job, named by the environment:
#   MUT_SHARDS="tasks,of,shard0;tasks,of,shard1;..."  the mutation harness, one shard a GPU
#       (bench/run.sh mutation), each shard judging into /tmp (the mutant files stay there: too
#       many for the device to send back); its results, summary and compile verdicts go to OUT.
#   CTEST_REGEX=...  on the next GPU: the gpu-labelled tests it matches (.dev/final/regex.txt
#       when set to @file).
#   DAEMON_SECONDS=N DAEMON_GPUS=g  on the next GPU(s): bench/run.sh daemon_throughput.
set -u
here=$PWD; out=${OUT:-/tmp/out}; pack=.dev/final; mkdir -p "$out" /work
[ -e /work/main ] || ln -s "$here" /work/main
rm -rf build && mkdir build && xz -dc "$pack/build.tar.xz" | tar -C build -xf -
export KOPT_COMMIT=$(cat "$pack/COMMIT") PATH=$here/build/bin:$PATH PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
s=$(date +%s); gpu=0
IFS=';' read -ra shards <<< "${MUT_SHARDS:-}"
for shard in "${shards[@]}"; do
  ( export CUDA_VISIBLE_DEVICES=$gpu; m=/tmp/mut$gpu; mkdir -p $m "$out/mut$gpu"
    [ -d "$pack/mut$gpu" ] && cp "$pack/mut$gpu"/* $m/
    timeout ${MUTATION_LIMIT:-480} bash bench/run.sh mutation $m --worker build/bin/kopt-sandbox --tasks "$shard" --max-seconds ${MUTATION_SECONDS:-420} ${MUTATION_ARGS:-} > "$out/mut$gpu/log.txt" 2>&1
    cp $m/mutation-results.jsonl $m/mutation.json $m/mutation.md $m/mutation-compile.json "$out/mut$gpu/" 2>/dev/null ) &
  gpu=$((gpu + 1))
done
regex=${CTEST_REGEX:-}; [ "$regex" = "@file" ] && regex=$(cat "$pack/regex.txt")
if [ -n "$regex" ]; then
  ( export CUDA_VISIBLE_DEVICES=$gpu
    cd build && timeout ${CTEST_LIMIT:-480} ctest -L gpu -R "$regex" -j1 --timeout 300 --output-on-failure > "$out/ctest_gpu.txt" 2>&1 ) &
  gpu=$((gpu + 1))
fi
if [ -n "${DAEMON_SECONDS:-}" ]; then
  ( export CUDA_VISIBLE_DEVICES=${DAEMON_DEVICES:-$gpu}
    timeout $((2 * DAEMON_SECONDS + 240)) bash bench/run.sh daemon_throughput "$out/daemon" --seconds $DAEMON_SECONDS --gpus ${DAEMON_GPUS:-1} --modes ${DAEMON_MODES:-tuner,llm} > "$out/daemon.txt" 2>&1 ) &
fi
wait
echo "wall=$(( $(date +%s) - s ))s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" "$out/ctest_gpu.txt" 2>/dev/null | tail -12
for d in "$out"/mut*; do tail -2 "$d/log.txt"; grep -m1 -E "Mutation score|\*\*" "$d/mutation.md" 2>/dev/null; done
cat "$out/daemon/daemon_throughput.md" 2>/dev/null | tail -6
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
