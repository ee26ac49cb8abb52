#!/bin/bash
# Second GPU call: the baseline timed (kopt eval), then each planted bug verified (--no-time).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=$PWD/bin:$PATH KOPT_HOME=/tmp/kh KOPT_CACHE_DIR=/tmp/kc
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader; echo "commit $(cat COMMIT)"; } | tee "$OUT/env2.txt"
timeout 100 kopt eval fp8_block_gemm --tasks tasks_realworld > "$OUT/eval_baseline.txt" 2>&1; echo "baseline rc=$?"
tail -12 "$OUT/eval_baseline.txt" | cut -c1-300
for f in planted/*.cu; do
  n=$(basename $f .cu)
  timeout 60 kopt eval fp8_block_gemm $f --tasks tasks_realworld --no-time > "$OUT/planted_$n.txt" 2>&1; echo "$n rc=$?"
  grep -iE "verdict|incorrect|stress|^ok" "$OUT/planted_$n.txt" | head -4 | cut -c1-400
done
