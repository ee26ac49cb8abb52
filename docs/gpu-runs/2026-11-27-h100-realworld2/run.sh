#!/bin/bash
# GPU run of issue 33's second part (realworld2) on an H100: `kopt tasks check` on the whole
# real-world suite (8 tasks, the 3 new ones included), kopt_realworld_tests for the new planted
# kernels and baselines, and the new references against their torch_op.py in float64.
# The tree (.dev/realworld2/tree.tar.xz: tasks_realworld/, tests/sandbox/realworld/, scripts/,
# bench/, stripped build/bin) is linked to /work/wt/realworld2, where the test binary looks.
#   bash .dev/realworld2/run.sh      (from the repository root of the lent machine)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /work/wt
tree=$PWD/.dev/realworld2/tree; mkdir -p "$tree"
xz -dc .dev/realworld2/tree.tar.xz | tar -C "$tree" -xf -
[ -e /work/wt/realworld2 ] || ln -s "$tree" /work/wt/realworld2
cd /work/wt/realworld2
export PATH=$PWD/build/bin:$PATH PYTHONUNBUFFERED=1 KOPT_HOME=/tmp/kh KOPT_CACHE_DIR=/tmp/kc
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader;
  echo "commit $(cat COMMIT)"; python3 -c "import torch; print('torch', torch.__version__)";
  for m in flashinfer vllm deep_gemm marlin; do python3 -c "import $m" 2>/dev/null && echo "$m importable" || echo "$m not installed"; done; } | tee "$OUT/env.txt"
step() { local t=$1; shift; local s=$(date +%s); timeout "$t" "$@"; echo "[$* -> rc=$? in $(( $(date +%s) - s )) s]"; }
step ${CLIMIT:-170} kopt tasks check --tasks tasks_realworld > "$OUT/tasks_check.txt" 2>&1
tail -14 "$OUT/tasks_check.txt" | cut -c1-300
step ${TLIMIT:-100} build/bin/kopt_realworld_tests --gtest_filter="${FILTER:-*}" > "$OUT/realworld_tests.txt" 2>&1
grep -E "^realworld|OK \]|FAILED|PASSED" "$OUT/realworld_tests.txt" | cut -c1-300
for t in ${EVALS:-fused_moe_grouped_topk paged_decode_attention_fp8kv causal_prefill_varlen}; do
  # The baseline judged and timed as a candidate: holdouts and the round past 2^31 elements too.
  step ${ELIMIT:-30} kopt eval $t tasks_realworld/$t/baseline.cu --tasks tasks_realworld --json > "$OUT/eval_$t.json" 2>&1
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], r.get('verdict'), r.get('median_us'), str(r.get('detail'))[:300])" "$OUT/eval_$t.json" $t 2>&1 | tail -1
done
d=docs/gpu-runs/2026-11-27-h100-realworld
# paged_decode_attention_fp8kv's 64 x 512-page holdout has no float64 oracle (PyTorch's float64
# gather does not fit; in bf16 PyTorch is off by 0.0156 there, its own rounding): validated
# without it, every other holdout included.
mkdir -p /tmp/v && cp -r tasks_realworld/paged_decode_attention_fp8kv /tmp/v/ && python3 -c "
import json; p='/tmp/v/paged_decode_attention_fp8kv/task.json'; t=json.load(open(p)); t['holdout']=t['holdout'][1:]; json.dump(t, open(p, 'w'))"
for t in ${TASKS:-/tmp/v/paged_decode_attention_fp8kv}; do
  step ${VLIMIT:-40} python3 $d/validate_torch.py $t . > "$OUT/validate_$(basename $t).txt" 2>&1
  tail -2 "$OUT/validate_$(basename $t).txt" | cut -c1-300
done
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
