#!/bin/bash
# GPU run of the fp8 task (issue 27) on the H100, from .devcarry-fp8 on the device: stripped
# binaries in bin/, this branch's scripts/, bench/ and tasks_realworld/ beside them.
#   cd .devcarry-fp8 && bash run.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader;
  echo "commit $(cat COMMIT)"; } | tee "$OUT/env.txt"
export PATH=$PWD/bin:$PATH PYTHONUNBUFFERED=1 KOPT_HOME=/tmp/kh KOPT_CACHE_DIR=/tmp/kc
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())" | tee -a "$OUT/env.txt"
step() { local t=$1; shift; local s=$(date +%s); timeout "$t" "$@"; echo "[$* -> rc=$? in $(( $(date +%s) - s )) s]"; }
echo "== 1. kopt tasks check (hygiene, reference finite on every stress round, baseline on every round)"
step 80 kopt tasks check --tasks tasks_realworld fp8_block_gemm > "$OUT/tasks_check.txt" 2>&1
tail -15 "$OUT/tasks_check.txt" | cut -c1-300
echo "== 2. the reference against torch_op.py (float64) at every shape and stress round"
step 45 python3 validate_torch.py tasks_realworld/fp8_block_gemm . > "$OUT/validate_torch.txt" 2>&1
tail -6 "$OUT/validate_torch.txt" | cut -c1-300
echo "== 3. production baselines (torch eager, torch.compile) at the default shape"
step 80 kopt baselines --tasks tasks_realworld --db /tmp/fp8.db fp8_block_gemm > "$OUT/baselines.txt" 2>&1
tail -8 "$OUT/baselines.txt" | cut -c1-300
step 20 python3 tests/tasks/import/time_torch_ops.py tasks_realworld fp8_block_gemm 2>&1 | tee "$OUT/torch_ops.txt"
