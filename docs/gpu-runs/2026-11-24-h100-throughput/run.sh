#!/bin/bash
# Issue 12 (session 5) on a GPU: the fault tests and the adversarial suite (same verdicts with the
# baseline history, 1 verification round at shapes over 64 MiB, a 0.5 s hang floor), then the
# throughput bench with the daemon's compile gate (and without, for the worker alone), the failure
# mix with the gate, and the daemon's idle share. Binaries carried in .devcarry-12/.
#   bash docs/gpu-runs/2026-11-24-h100-throughput/run.sh   (TESTS=0 NOGATE=0 MIX=0 IDLE=0 skip parts)
set -u
here=$PWD
out=/tmp/kopt-run
rm -rf "$out"; mkdir -p "$out" /work
pack() { [ -n "${OUT:-}" ] && tar czf "$OUT/results.tgz" -C /tmp kopt-run; }
[ -e /work/main ] || ln -s "$here" /work/main
mkdir -p build/bin build/tests/sandbox
cp .devcarry-12/bin/* build/bin/ && cp .devcarry-12/kopt_*_tests build/tests/sandbox/
export KOPT_COMMIT=$(cat .devcarry-12/COMMIT)
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
bench/run.sh throughput "$out/throughput" --no-inline --gate --budget-s "${TP_BUDGET:-140}" --variants "${TP_VARIANTS:-6}" | tail -16; pack
if [ "${NOGATE:-1}" = 1 ]; then bench/run.sh throughput "$out/throughput_nogate" --no-inline --budget-s "${TP_BUDGET:-140}" --variants "${TP_VARIANTS:-6}" | tail -5; pack; fi
if [ "${MIX:-1}" = 1 ]; then bench/run.sh mix "$out/mix" --gate --budget-s "${MIX_BUDGET:-100}" | tail -12; pack; fi
if [ "${IDLE:-1}" = 1 ]; then bench/run.sh daemon_idle "$out/daemon_idle" --seconds "${IDLE_S:-90}" | tail -8; pack; fi
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
