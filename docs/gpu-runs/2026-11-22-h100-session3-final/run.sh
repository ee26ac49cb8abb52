#!/bin/bash
# End of session 3 on a GPU: every gpu-labelled test binary (fault tests, adversarial suite, the
# export's self-test), `kopt tasks check` on the GPU, and the daemon demo (tuner, then agents
# against fake-llm-server). Binaries built on the development machine, carried in .devcarry/.
#   bash docs/gpu-runs/2026-11-22-h100-session3-final/run.sh
set -u
here=$PWD
out=/tmp/kopt-run
rm -rf "$out"; mkdir -p "$out" /work
pack() { [ -n "${OUT:-}" ] && tar czf "$OUT/results.tgz" -C /tmp kopt-run; }
[ -e /work/main ] || ln -s "$here" /work/main
mkdir -p build/bin build/tests/sandbox build/tests/memory_store
cp .devcarry/bin/* build/bin/ && cp .devcarry/kopt_*_tests build/tests/sandbox/
cp .devcarry/export_selftest_gpu_test build/tests/memory_store/
export KOPT_COMMIT=$(cat .devcarry/COMMIT)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; }
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
for t in kopt_fault_tests kopt_adversarial_tests; do
  s=$(date +%s); timeout 300 build/tests/sandbox/$t > "$out/$t.txt" 2>&1
  echo "$t rc=$? wall=$(( $(date +%s) - s ))s"; grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$out/$t.txt"
done
pack
s=$(date +%s); timeout 400 build/tests/memory_store/export_selftest_gpu_test > "$out/export_selftest.txt" 2>&1
echo "export_selftest_gpu_test rc=$? wall=$(( $(date +%s) - s ))s"; grep -E "note:|PASSED|FAILED|passed|failed|SKIPPED" "$out/export_selftest.txt" | head -12
pack
export KOPT_HOME=/tmp/kh KOPT_CACHE_DIR=/tmp/kc
s=$(date +%s); timeout 200 build/bin/kopt tasks check > "$out/tasks_check.txt" 2>&1
echo "kopt tasks check rc=$? wall=$(( $(date +%s) - s ))s"; tail -3 "$out/tasks_check.txt"
pack
if [ "${DEMO:-1}" = 1 ]; then
  TUNER_HOURS=0.02 LLM_HOURS=0.02 timeout 300 scripts/gpu_demo_run.sh "$out/demo" > "$out/demo.txt" 2>&1
  echo "gpu_demo_run rc=$?"; tail -25 "$out/demo.txt"
  pack
fi
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
