#!/bin/bash
# Issue 12 (session 4) on a GPU: the gpu label's adversarial suite and fault tests (same verdicts
# with kept input sets), the throughput bench (all-correct), the failure mix and the daemon's idle
# share with an instant LLM. Binaries carried in .devcarry/.
#   bash docs/gpu-runs/2026-11-22-h100-session4-pool/run.sh      (TESTS=0 MIX=0 IDLE=0 skip parts)
set -u
here=$PWD
out=/tmp/kopt-run
rm -rf "$out"; mkdir -p "$out" /work
pack() { [ -n "${OUT:-}" ] && tar czf "$OUT/results.tgz" -C /tmp kopt-run; }
[ -e /work/main ] || ln -s "$here" /work/main
mkdir -p build/bin build/tests/sandbox
cp .devcarry/bin/* build/bin/ && cp .devcarry/kopt_*_tests build/tests/sandbox/
export KOPT_COMMIT=$(cat .devcarry/COMMIT)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; }
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
if [ "${TESTS:-1}" = 1 ]; then
  s=$(date +%s); timeout 200 build/tests/sandbox/kopt_fault_tests > "$out/fault_tests.txt" 2>&1
  echo "fault tests rc=$? wall=$(( $(date +%s) - s ))s"; grep -E "^fault |^\[  (PASSED|FAILED)|FAILED" "$out/fault_tests.txt"
  s=$(date +%s); timeout 200 build/tests/sandbox/kopt_adversarial_tests > "$out/adversarial.txt" 2>&1
  echo "adversarial rc=$? wall=$(( $(date +%s) - s ))s"; grep -E "^\[  (PASSED|FAILED)|FAILED" "$out/adversarial.txt"
  grep -E "^adversarial" "$out/adversarial.txt" | awk '{print $2, $4}' | sort -u | tr '\n' ';'; echo
  pack
fi
bench/run.sh throughput "$out/throughput" --no-inline --budget-s "${TP_BUDGET:-140}" --variants "${TP_VARIANTS:-6}" ${TP_GATE:+--gate} | tail -16; pack
if [ "${MIX:-1}" = 1 ]; then bench/run.sh mix "$out/mix" --budget-s "${MIX_BUDGET:-100}" | tail -12; pack; fi
if [ "${IDLE:-1}" = 1 ]; then bench/run.sh daemon_idle "$out/daemon_idle" --seconds "${IDLE_S:-90}" | tail -8; pack; fi
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
