#!/bin/bash
# Jobs one after another on each GPU, the GPUs side by side: JOBS (GPU 0), JOBS1 (GPU 1), ...,
# each "mut:TASKS|ARGS" or "ctest:REGEX" or "daemon:SECONDS:LANE" or "tput:SECONDS" (throughput --gate) separated by ';'; results in one
# archive; "ctestx:REGEX" runs the gpu label but REGEX; a carried .dev/resume/mutN resumes
# mutation job N. Sessions 8 and 9 kept a copy each in docs/gpu-runs/; from session 10 on this one
# serves every call (run from the repository root; JOBS2, JOBS3 for GPUs 2 and 3). Session 10:
# "ctesth:K|REGEX" runs every second test of the gpu label but REGEX, starting at test number K
# (ctest -I K,,2), so one label splits over two GPUs. Session 11: daemon jobs take a fifth field,
# SCREEN (on|off|time-first|verify-first: daemon.search.screen, screen_time_first; on = time-first, the default since session 14). Session 12: "bench:NAME|ARGS" runs bench/run.sh NAME
# (BENCH_LIMIT seconds at most). Session 14: daemon jobs take a sixth field, GPUS (the bench's
# --gpus: 1 by default, "1,all" for the scaling rows on a machine of several GPUs; a GPUS with
# "all" runs with CUDA_VISIBLE_DEVICES unset, so give it a lane of its own, in JOBS).
set -u
here=$PWD; out=${OUT:-/tmp/out}; pack=.dev/final; mkdir -p "$out" /work
[ -e /work/main ] || ln -s "$here" /work/main
rm -rf build && mkdir build && xz -dc "$pack/build.tar.xz" | tar -C build -xf -
export KOPT_COMMIT=$(cat "$pack/COMMIT") PATH=$here/build/bin:$PATH PYTHONUNBUFFERED=1
# A warm machine may still hold the previous call's sanitizer-lane worker (it leaves within its
# 20 s grace after its daemon ends): wait up to 30 s for the GPUs to be quiet.
for i in $(seq 30); do [ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader)" ] && break; sleep 1; done
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
s=$(date +%s)
run_lane() {  # GPU, its jobs
  local gpu=$1 n=$((100 * $1)) job kind rest t0 tasks args m secs lane
  export CUDA_VISIBLE_DEVICES=$gpu
  IFS=';' read -ra jobs <<< "$2"
  for job in "${jobs[@]}"; do
    n=$((n + 1)); kind=${job%%:*}; rest=${job#*:}; t0=$(date +%s)
    case $kind in
      mut) tasks=${rest%%|*}; args=${rest#*|}; m=/tmp/mut$n; mkdir -p $m "$out/mut$n"
           # an earlier call's partial shard (carried as .dev/resume/mutN) resumes where it stopped
           [ -d .dev/resume/mut$n ] && cp .dev/resume/mut$n/* $m/
           timeout ${MUTATION_LIMIT:-400} bash bench/run.sh mutation $m --worker build/bin/kopt-sandbox --tasks "$tasks" $args > "$out/mut$n/log.txt" 2>&1
           cp $m/mutation-results.jsonl $m/mutation.json $m/mutation.md $m/mutation-compile.json "$out/mut$n/" 2>/dev/null
           grep -m3 -iE "score|false" $m/mutation.md ;;
      ctest|ctestx|ctesth) sel=(-R "$rest"); [ $kind = ctestx ] && sel=(-E "$rest")
           [ $kind = ctesth ] && sel=(-E "${rest#*|}" -I "${rest%%|*},,2")
           (cd build && timeout ${CTEST_LIMIT:-300} ctest -L gpu "${sel[@]}" -j${CTEST_J:-1} --timeout 300 --output-on-failure > "$out/ctest$n.txt" 2>&1)
           grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|beside a yielding|called busy" "$out/ctest$n.txt" | tail -12 ;;
      daemon) IFS=: read -r secs lane k modes screen gpus <<< "$rest"  # SECONDS:LANE[:WORKERS_PER_GPU[:MODES[:SCREEN[:GPUS]]]]
           runs=1; every=(env); case ${gpus:-1} in *all*) every=(env -u CUDA_VISIBLE_DEVICES); runs=2 ;; esac
           KOPT_SANITIZER_LANE=$lane "${every[@]}" timeout $((runs * (2 * secs + 120))) bash bench/run.sh daemon_throughput "$out/daemon$n" --seconds $secs --gpus ${gpus:-1} --modes ${modes:-tuner} --workers-per-gpu ${k:-1} --screen ${screen:-on} > "$out/daemon$n.txt" 2>&1
           grep "|" "$out/daemon$n/daemon_throughput.md" 2>/dev/null | head -4 ;;
      bench) name=${rest%%|*}; args=${rest#*|}; [ "$args" = "$rest" ] && args=""
           timeout ${BENCH_LIMIT:-500} bash bench/run.sh $name "$out/bench$n" $args > "$out/bench$n.txt" 2>&1
           tail -12 "$out/bench$n.txt" ;;
      tput) timeout $((rest + 150)) bash bench/run.sh throughput "$out/tput$n" --worker build/bin/kopt-sandbox --gate --budget-s $rest > "$out/tput$n.txt" 2>&1
           tail -4 "$out/tput$n.txt" ;;
    esac
    echo "GPU $gpu job $n ($kind) took $(( $(date +%s) - t0 )) s"
  done
}
run_lane 0 "${JOBS:-}" > "$out/lane0.txt" 2>&1 &
[ -n "${JOBS1:-}" ] && run_lane 1 "$JOBS1" > "$out/lane1.txt" 2>&1 &
[ -n "${JOBS2:-}" ] && run_lane 2 "$JOBS2" > "$out/lane2.txt" 2>&1 &
[ -n "${JOBS3:-}" ] && run_lane 3 "$JOBS3" > "$out/lane3.txt" 2>&1 &
wait
cat "$out"/lane*.txt
echo "wall=$(( $(date +%s) - s ))s"
(cd "$out" && tar -czf /tmp/all.tgz . && mv /tmp/all.tgz all.tgz && find . -mindepth 1 ! -name all.tgz ! -name env.txt -delete)
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
