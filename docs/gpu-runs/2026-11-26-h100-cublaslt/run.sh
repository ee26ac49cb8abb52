#!/bin/bash
# cuBLASLt timed by the kopt-sandbox worker (issue 26) and a third KernelBench level-2 fusion
# (issue 27) on a lent GPU: the worker's cuBLASLt GPU test, bench/run.sh baseline_agreement
# (worker vs ctypes/events vs PyTorch; PyTorch vs do_bench), and KernelBench problem files read
# from the public repository (carried in .devcarry-s2/kb, never committed) imported and validated.
# Binaries (stripped) come in .devcarry-s2/build, their commit in .devcarry-s2/COMMIT:
#   bash docs/gpu-runs/2026-11-26-h100-cublaslt/run.sh
set -u
here=$PWD; out=${OUT:-/tmp/out}; mkdir -p "$out" /work
[ -e /work/main ] || ln -s "$here" /work/main   # the test has the source path compiled in
rm -rf build && cp -a .devcarry-s2/build build
export KOPT_COMMIT=$(cat .devcarry-s2/COMMIT) PATH=$here/build/bin:$PATH PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
  echo "commit $KOPT_COMMIT"; ls /usr/local/cuda/lib64/libcublasLt.so.* 2>&1
  python3 -c "import torch, torch.nn.functional as F; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'F.scaled_mm', hasattr(F, 'scaled_mm'))"
} 2>&1 | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
step() { local t=$1; shift; local s=$(date +%s); timeout "$t" "$@"; echo "[$* -> rc=$? in $(( $(date +%s) - s )) s]"; }
step 240 build/tests/sandbox/kopt_cublaslt_gpu_tests > "$out/cublaslt_gpu_test.txt" 2>&1
grep -E "^\[  |^(sgemm|bf16_gemm|gemm_bias_relu|matvec):|Failure" "$out/cublaslt_gpu_test.txt" | cut -c1-300
if [ "${AGREEMENT:-1}" = 1 ]; then
  step 480 bench/run.sh baseline_agreement "$out/agreement" > "$out/agreement.txt" 2>&1
  tail -25 "$out/agreement.txt"
fi
rm -rf /tmp/kb_tasks; mkdir -p /tmp/kb_tasks
step 200 kopt tasks import --kernelbench .devcarry-s2/kb/*.py \
  --references tests/tasks/import/kernelbench_references --tasks /tmp/kb_tasks > "$out/kernelbench.txt" 2>&1
grep -E "^(imported|cannot|analysed|refused)" "$out/kernelbench.txt" | cut -c1-200
step 150 kopt tasks check --tasks /tmp/kb_tasks > "$out/kb_check.txt" 2>&1; tail -5 "$out/kb_check.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
