#!/bin/bash
# GPU run of the real-world suite's structured inputs (issue 33) on the H100, from
# .dev/realworld/tree (this branch's tasks_realworld/, tests/sandbox/realworld/, scripts/, bench/
# and stripped binaries in build/bin, linked to /work/wt/realworld where the test binaries look).
#   bash .dev/realworld/tree/docs/gpu-runs/2026-11-27-h100-realworld/run.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /work/wt
tree=$PWD/.dev/realworld/tree
[ -e /work/wt/realworld ] || ln -s "$tree" /work/wt/realworld
cd /work/wt/realworld
export PATH=$PWD/build/bin:$PATH PYTHONUNBUFFERED=1 KOPT_HOME=/tmp/kh KOPT_CACHE_DIR=/tmp/kc
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader;
  echo "commit $(cat COMMIT)"; python3 -c "import torch; print('torch', torch.__version__)";
  for m in flashinfer vllm deep_gemm marlin; do python3 -c "import $m" 2>/dev/null && echo "$m importable" || echo "$m not installed"; done; } | tee "$OUT/env.txt"
step() { local t=$1; shift; local s=$(date +%s); timeout "$t" "$@"; echo "[$* -> rc=$? in $(( $(date +%s) - s )) s]"; }
d=docs/gpu-runs/2026-11-27-h100-realworld
case " ${PART:-all} " in *" tests "*|*" all "*)
  step ${TLIMIT:-150} build/bin/kopt_realworld_tests > "$OUT/realworld_tests.txt" 2>&1
  grep -E "^realworld|OK \]|FAILED|PASSED" "$OUT/realworld_tests.txt" | cut -c1-260 ;;
esac
case " ${PART:-all} " in *" check "*|*" all "*)
  if [ -x build/bin/kopt ]; then
    step ${CLIMIT:-150} kopt tasks check --tasks tasks_realworld ${CHECK_TASKS:-} > "$OUT/tasks_check.txt" 2>&1
    tail -12 "$OUT/tasks_check.txt" | cut -c1-260
  else  # the worker's check_task request: the GPU half of kopt tasks check
    for t in ${CHECK_TASKS:-paged_decode_attention causal_prefill_gqa fused_moe w4a16_gemm fp8_block_gemm}; do
      step ${CLIMIT_EACH:-40} python3 $d/check_task.py tasks_realworld/$t build/bin/kopt-sandbox > "$OUT/check_$t.txt" 2>&1
      tail -n +2 "$OUT/check_$t.txt" | cut -c1-400
    done
  fi ;;
esac
case " ${PART:-all} " in *" validate "*|*" all "*)
  for t in ${TASKS:-paged_decode_attention causal_prefill_gqa fused_moe w4a16_gemm fp8_block_gemm}; do
    step ${VLIMIT:-50} python3 $d/validate_torch.py tasks_realworld/$t . > "$OUT/validate_$t.txt" 2>&1
    tail -2 "$OUT/validate_$t.txt" | cut -c1-300
  done ;;
esac
case " ${PART:-all} " in *" baselines "*)
  step ${BLIMIT:-200} kopt baselines --tasks tasks_realworld --db /tmp/rw.db > "$OUT/baselines.txt" 2>&1
  tail -20 "$OUT/baselines.txt" | cut -c1-260 ;;
esac
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
