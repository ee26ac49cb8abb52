#!/bin/bash
# One call on a machine of several GPUs, from the repository root, with the packed build in
# .dev/final (scripts/pack_gpu_build.sh). Each GPU gets one job, named by the environment:
# (session 6's script; session 7 added per-shard arguments after a '|' and LANE_AFTER_TESTS)
#   LABEL_SHARES=N  the whole gpu label in N interleaved shares, one a GPU (ctest -I), first.
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
shares=${LABEL_SHARES:-0}
n=$(cd build && ctest -N -L gpu | grep -c "Test *#")
for ((g = 0; g < shares; g++)); do
  (cd build && CUDA_VISIBLE_DEVICES=$g timeout ${LABEL_LIMIT:-520} ctest -L gpu -j1 --timeout 300 --output-on-failure -I $((g + 1)),$n,$shares > "$out/label_$g.txt" 2>&1) &
  gpu=$((gpu + 1))
done
IFS=';' read -ra shards <<< "${MUT_SHARDS:-}"
# A shard may carry its own arguments after a '|': "softmax,topk|--operators drop_sync".
for entry in "${shards[@]}"; do
  shard=${entry%%|*}; own=""; [ "$shard" != "$entry" ] && own=${entry#*|}
  ( export CUDA_VISIBLE_DEVICES=$gpu; m=/tmp/mut$gpu; mkdir -p $m "$out/mut$gpu"
    [ -d "$pack/mut$gpu" ] && cp "$pack/mut$gpu"/* $m/
    timeout ${MUTATION_LIMIT:-480} bash bench/run.sh mutation $m --worker build/bin/kopt-sandbox --tasks "$shard" --max-seconds ${MUTATION_SECONDS:-420} ${MUTATION_ARGS:-} $own > "$out/mut$gpu/log.txt" 2>&1
    cp $m/mutation-results.jsonl $m/mutation.json $m/mutation.md $m/mutation-compile.json "$out/mut$gpu/" 2>/dev/null ) &
  gpu=$((gpu + 1))
done
regex=${CTEST_REGEX:-}; [ "$regex" = "@file" ] && regex=$(cat "$pack/regex.txt")
if [ -n "$regex" ]; then
  ( export CUDA_VISIBLE_DEVICES=$gpu
    (cd build && timeout ${CTEST_LIMIT:-480} ctest -L gpu -R "$regex" -j1 --timeout 300 --output-on-failure > "$out/ctest_gpu.txt" 2>&1)
    # DAEMON_AFTER_TESTS=modes: daemon_throughput on this GPU once its tests are done.
    if [ -n "${DAEMON_AFTER_TESTS:-}" ]; then
      [ -n "${LANE_AFTER_TESTS:-}" ] && export KOPT_SANITIZER_LANE=$LANE_AFTER_TESTS
      timeout $((2 * DAEMON_SECONDS + 200)) bash bench/run.sh daemon_throughput "$out/daemon_after" --seconds $DAEMON_SECONDS --gpus 1 --modes $DAEMON_AFTER_TESTS > "$out/daemon_after.txt" 2>&1
    fi ) &
  gpu=$((gpu + 1))
fi
# DAEMON_RUNS="devices:gpus;devices:gpus" (e.g. "3:1;0,1,2:all"): daemon_throughput runs side by
# side, each on its own GPUs, DAEMON_SECONDS a mode.
IFS=';' read -ra runs <<< "${DAEMON_RUNS:-}"
for r in "${runs[@]}"; do
  ( export CUDA_VISIBLE_DEVICES=${r%%:*}; tag=$(echo "${r%%:*}" | tr -d ,)
    timeout $((2 * DAEMON_SECONDS + 200)) bash bench/run.sh daemon_throughput "$out/daemon_$tag" --seconds $DAEMON_SECONDS --gpus ${r##*:} --modes ${DAEMON_MODES:-tuner,llm} > "$out/daemon_$tag.txt" 2>&1 ) &
done
wait
echo "wall=$(( $(date +%s) - s ))s"
for ((g = 0; g < shares; g++)); do grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" "$out/label_$g.txt" | tail -12; done
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" "$out/ctest_gpu.txt" 2>/dev/null | tail -12
for d in "$out"/mut*; do tail -2 "$d/log.txt"; grep -m1 -E "Mutation score|\*\*" "$d/mutation.md" 2>/dev/null; done
cat "$out"/daemon*/daemon_throughput.md 2>/dev/null | grep "|"
# The device sends back at most a few files: everything in one archive besides the summary.
(cd "$out" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz all.tgz && find . -mindepth 1 ! -name all.tgz ! -name env.txt -delete)
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
