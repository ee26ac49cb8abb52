#!/bin/bash
# Issue 11 on a GPU: the gpu label (fault tests + adversarial suite), kopt doctor and kopt eval on
# a shared GPU. Binaries built on the development machine, stripped, carried in .devcarry/.
#   bash docs/gpu-runs/2026-11-22-h100-faults/run.sh   (OUT: where the logs go)
set -u
here=$PWD
# Everything goes to /tmp/kopt-run, packed into $OUT/results.tgz after each stage (the device
# tool brings back few files).
out=/tmp/kopt-run
mkdir -p "$out" /work
pack() { [ -n "${OUT:-}" ] && tar czf "$OUT/results.tgz" -C /tmp kopt-run; }
# The test binaries have the development machine's paths compiled in.
[ -e /work/main ] || ln -s "$here" /work/main
mkdir -p build/bin build/tests/sandbox
cp .devcarry/bin/* build/bin/ && cp .devcarry/kopt_*_tests build/tests/sandbox/
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $(cat .devcarry/COMMIT)"; }
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu,memory.used --format=csv -lms 500 > "$out/smi.csv" &
smi=$!
s=$(date +%s); timeout 300 build/tests/sandbox/kopt_fault_tests > "$out/fault_tests.txt" 2>&1
echo "fault tests rc=$? wall=$(( $(date +%s) - s ))s"; pack; grep -E "^fault |^\[  (PASSED|FAILED|SKIPPED)|FAILED" "$out/fault_tests.txt"
s=$(date +%s); timeout 240 build/tests/sandbox/kopt_adversarial_tests > "$out/adversarial.txt" 2>&1
echo "adversarial rc=$? wall=$(( $(date +%s) - s ))s"; pack; grep -E "^adversarial (hangs|infinite)|^\[  (PASSED|FAILED|SKIPPED)|FAILED" "$out/adversarial.txt"
# The busy-GPU probe on a quiet GPU: before and after timing, over tasks of every kind.
echo "--- probe before/after timing on a quiet GPU (us; best cached)"
for t in axpy softmax sgemm layernorm bf16_gemm transpose; do
  build/bin/kopt eval $t --json 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); g=j.get("gpu_check",{}); print(j["task"], j["verdict"], *["%s %.1f" % (k, g[k]["probe_us"]) for k in ("before","after") if k in g], "best %.1f" % g.get("before",{}).get("best_probe_us",0))'
done
# kopt doctor and kopt eval while another kopt holds the GPU (a long sgemm evaluation).
build/bin/kopt eval sgemm --rounds 40 --json > "$out/eval_sgemm_background.json" 2>&1 &
bg=$!
sleep 3
echo "--- kopt doctor while kopt eval sgemm runs"; build/bin/kopt doctor 2>&1 | grep -E "GPU|BUSY"
echo "--- kopt eval axpy on the shared GPU"; build/bin/kopt eval axpy; echo "exit $?"
wait $bg; echo "background sgemm eval exit $? (its own verdict: $(grep -m1 '"verdict"' "$out/eval_sgemm_background.json"))"
echo "--- kopt eval axpy on the quiet GPU"; build/bin/kopt eval axpy | head -4; echo "exit $?"
kill $smi
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
# Benchmarks: the realistic failure mix, then the all-correct stream, both on this GPU.
if [ "${BENCH:-1}" = 1 ]; then
  KOPT_COMMIT=$(cat .devcarry/COMMIT) bench/run.sh mix "$out/mix" --budget-s 200 | tail -14; pack
  KOPT_COMMIT=$(cat .devcarry/COMMIT) bench/run.sh throughput "$out/throughput" --no-inline --budget-s 120 | tail -12
fi
pack
