#!/bin/bash
# GPU run of issue 23's inputs part on the H100 (run from .devcarry-23c/tree on the device).
# kopt_shapes_tests (six planted bugs and their twins), the numerical suite (stress rounds now
# with mirrored twins and structured rows), kopt tasks check on the changed tasks (hygiene: the
# baseline on every sweep shape and stress round, reference outputs finite on every round).
set -u
mkdir -p /work && ln -sfn "$PWD" /work/wt23c
OUT=${OUT:-/tmp/out}
nvidia-smi --query-compute-apps=pid,name --format=csv > "$OUT/leftover_processes.txt" 2>&1
export PATH=$PWD/build/bin:$PATH
start=$(date +%s)
timeout 330 build/tests/sandbox/kopt_shapes_tests 2>&1 | tee "$OUT/shapes_tests.txt" | grep -E "^shapes|OK \]|FAILED|PASSED" 
echo "shapes tests: $(( $(date +%s) - start )) s"
start=$(date +%s)
timeout 200 build/bin/kopt tasks check softmax cross_entropy layernorm prefix_sum decode_attention topk embedding sum_dim mse_loss > "$OUT/tasks_check.txt" 2>&1
echo "tasks check rc=$? $(( $(date +%s) - start )) s"; tail -15 "$OUT/tasks_check.txt"
# Each changed task's baseline through kopt eval (random seeds: draws, mirrored and structured
# rounds, holdouts), twice.
for t in softmax cross_entropy layernorm prefix_sum decode_attention topk; do
  for i in 1 2; do
    timeout 60 build/bin/kopt eval $t tasks/$t/baseline.cu --no-time > "$OUT/eval_${t}_$i.txt" 2>&1
    echo "eval $t baseline #$i rc=$? $(grep -m1 -E 'verdict|ok|incorrect' "$OUT/eval_${t}_$i.txt" | cut -c1-160)"
  done
done
grep -E "^shapes" "$OUT/shapes_tests.txt" | cut -c1-150
