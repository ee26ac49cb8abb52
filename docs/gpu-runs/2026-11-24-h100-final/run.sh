#!/bin/bash
# End of session 5 on a GPU, on the merged main (issues 12, 14, 15, 16): every gpu-labelled ctest
# test, `kopt tasks check` on the GPU (22 tasks, stress rounds included), then the throughput
# bench and the failure mix with the daemon's compile gate, and the daemon's idle share.
# The build tree (executables stripped, no objects) is carried in .devcarry-final/build.
#   bash docs/gpu-runs/2026-11-24-h100-final/run.sh     (TESTS=0 BENCH=0 IDLE=0 skip parts;
#   CTEST_EXCLUDE=REGEX leaves gpu tests out)
set -u
here=$PWD
out=/tmp/kopt-run
rm -rf "$out"; mkdir -p "$out" /work
pack() { [ -n "${OUT:-}" ] && tar czf "$OUT/results.tgz" -C /tmp kopt-run; }
[ -e /work/main ] || ln -s "$here" /work/main
# A build made in a clean clone (as CI makes it) has that clone's paths compiled in.
[ -e /work/ci-clone ] || ln -s "$here" /work/ci-clone
rm -rf build && cp -a .devcarry-final/build build
export KOPT_COMMIT=$(cat .devcarry-final/COMMIT)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; }
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
if [ "${TESTS:-1}" = 1 ]; then
  s=$(date +%s)
  (cd build && timeout 420 ctest -L gpu ${CTEST_EXCLUDE:+-E "$CTEST_EXCLUDE"} --output-on-failure --timeout 300) > "$out/ctest_gpu.txt" 2>&1
  echo "ctest -L gpu rc=$? wall=$(( $(date +%s) - s ))s"
  grep -E "tests passed|Passed|Failed|\*\*\*" "$out/ctest_gpu.txt" | tail -30
  grep -hE "^adversarial|^fault|^numerical" "$out/ctest_gpu.txt" | awk '{print $2, $4}' | sort -u | tr '\n' ';'; echo
  pack
  export KOPT_HOME=/tmp/kh KOPT_CACHE_DIR=/tmp/kc
  s=$(date +%s); timeout 200 build/bin/kopt tasks check > "$out/tasks_check.txt" 2>&1
  echo "kopt tasks check rc=$? wall=$(( $(date +%s) - s ))s"; tail -3 "$out/tasks_check.txt"
  unset KOPT_HOME KOPT_CACHE_DIR
  pack
fi
if [ "${BENCH:-1}" = 1 ]; then
  nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
  bench/run.sh throughput "$out/throughput" --no-inline --gate --budget-s 140 --variants 6 | tail -16; pack
  bench/run.sh mix "$out/mix" --gate --budget-s 100 | tail -12; pack
fi
if [ "${IDLE:-1}" = 1 ]; then bench/run.sh daemon_idle "$out/daemon_idle" --seconds 90 | tail -8; pack; fi
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
