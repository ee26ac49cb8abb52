#!/bin/bash
# gate2's one H100 call (issue 32): the planted 32-bit offset kernels against the new rounds past
# 2^31 elements (and their cover without them), one full mutation run with 8 workers sharing the
# GPU (doubtful verdicts judged again alone), and the suite's baselines under the gate.
# Carried: .dev/gate2/build.tar.xz (/work/pack.sh of the gate2 worktree), .dev/gate2/COMMIT, and
# .dev/gate2/repo (tasks, tasks_realworld, tests/sandbox, bench of that commit). The test binary
# has /work/wt/gate2 compiled in. From the repository root:  bash .dev/gate2/run.sh
set -u
here=$PWD; out=${OUT:-/tmp/out}; R=$here/.dev/gate2/repo
mkdir -p "$out" /work/wt; ln -sfn "$R" /work/wt/gate2
mkdir -p "$R/build" && xz -dc .dev/gate2/build.tar.xz | tar -C "$R/build" -xf -
export KOPT_COMMIT=$(cat .dev/gate2/COMMIT) PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo "commit $KOPT_COMMIT"; } | tee "$out/env.txt"
cd "$R"
s=$(date +%s)
( timeout ${PLANTED_LIMIT:-150} build/tests/sandbox/kopt_gate_inputs_gpu_tests \
    --gtest_filter='Kernels/GateInputsOnGpu.*bit*' > "$out/gate_inputs_wide.txt" 2>&1
  echo "rc=$? wall=$(( $(date +%s) - s ))s" >> "$out/gate_inputs_wide.txt" ) &
planted=$!
bash bench/run.sh mutation "$out/mutation" --worker build/bin/kopt-sandbox --workers ${WORKERS:-8} \
  --max-seconds ${MAX_SECONDS:-180} --rejudge-seconds ${REJUDGE:-40} > "$out/mutation_stdout.txt" 2>&1
echo "mutation rc=$? wall=$(( $(date +%s) - s ))s"; head -4 "$out/mutation_stdout.txt" | tail -2
wait $planted; grep -E "^gate-inputs|OK \]|FAILED|rc=" "$out/gate_inputs_wide.txt" | cut -c1-260
s=$(date +%s)
timeout ${CHECK_LIMIT:-90} build/bin/kopt tasks check --tasks tasks > "$out/tasks_check.txt" 2>&1
echo "tasks check rc=$? wall=$(( $(date +%s) - s ))s"; tail -4 "$out/tasks_check.txt" | cut -c1-240
rm -f "$out"/mutation/mutants/*.cu 2>/dev/null; rmdir "$out/mutation/mutants" 2>/dev/null
ls "$out" "$out/mutation"
