#!/bin/bash
# Issue 26 on the H100: the quality bench (22 tasks: baseline.cu, tuner sweep, cuBLASLt, eager,
# torch.compile, T_SOL, S; PyTorch cross-checked against triton's do_bench), `kopt baselines`
# storing the GEMM tasks' production baselines in a memory, and the busy-GPU check with an idle
# PyTorch helper of kopt's own (declared: ok; undeclared: gpu_busy).
# Run from a folder holding bin/kopt, bin/kopt-sandbox, bin/kopt-compile, bench/, scripts/, tasks/.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/q"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.used --format=csv
export PATH=$PWD/bin:$PATH PYTHONUNBUFFERED=1
date -u +%Y-%m-%dT%H:%M:%SZ

echo "== busy-GPU check with an idle PyTorch helper holding a context"
python3 -c "import torch,time; torch.ones(1,device='cuda'); print('helper ready',flush=True); time.sleep(40)" &
HELPER=$!
sleep 12
bin/kopt eval axpy --tasks tasks --rounds 1 --json > "$OUT/q/eval_undeclared.json"; echo "undeclared helper: exit $?"
KOPT_OWN_GPU_PIDS=$HELPER bin/kopt eval axpy --tasks tasks --rounds 1 --json > "$OUT/q/eval_declared.json"; echo "declared helper: exit $?"
kill $HELPER; wait $HELPER 2>/dev/null

echo "== kopt baselines (GEMM tasks, no torch.compile) into a fresh memory"
bin/kopt baselines sgemm bf16_gemm gemm_bias_relu matvec --tasks tasks --db "$OUT/q/m.db" --no-compile \
  --helper scripts/torch_baselines.py
bin/kopt baselines --list --db "$OUT/q/m.db"
rm -f "$OUT/q/m.db"*

echo "== quality bench"
timeout 420 python3 bench/quality.py "$OUT/q" --worker bin/kopt-sandbox --sweep --check-do-bench \
  --budget-s 900 2> "$OUT/q/quality.stderr.log"
echo "quality exit $?"
tail -5 "$OUT/q/quality.stderr.log"
