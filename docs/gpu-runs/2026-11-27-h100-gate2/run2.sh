#!/bin/bash
# gate2's second H100 call (issue 32): the decode_attention round past 2^31 at its new shape
# (planted kernel and baseline), then the full mutation run with one worker alone on the GPU,
# resuming from the first call's verdicts (.dev/gate2/seed-results.jsonl: those of tasks not
# changed since, without the doubtful ones), and the suite's baselines under the gate.
set -u
here=$PWD; out=${OUT:-/tmp/out}; R=$here/.dev/gate2/repo
mkdir -p "$out" /work/wt; ln -sfn "$R" /work/wt/gate2
mkdir -p "$R/build" && xz -dc .dev/gate2/build.tar.xz | tar -C "$R/build" -xf -
export KOPT_COMMIT=$(cat .dev/gate2/COMMIT) PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo "commit $KOPT_COMMIT"; } | tee "$out/env.txt"
cd "$R"
s=$(date +%s)
timeout 60 build/tests/sandbox/kopt_gate_inputs_gpu_tests \
  --gtest_filter='Kernels/GateInputsOnGpu.*decode_attention_32bit*:Tasks/SuiteOnGpu.*tasks_decode_attention' \
  > "$out/gate_inputs_wide.txt" 2>&1
echo "rc=$? wall=$(( $(date +%s) - s ))s" >> "$out/gate_inputs_wide.txt"
grep -E "^gate-inputs|^task-check|OK \]|FAILED" "$out/gate_inputs_wide.txt" | cut -c1-300
m=/tmp/mutation; mkdir -p $m; cp "$here/.dev/gate2/seed-results.jsonl" $m/mutation-results.jsonl
s=$(date +%s)
bash bench/run.sh mutation $m --worker build/bin/kopt-sandbox --workers 1 \
  --max-seconds ${MAX_SECONDS:-430} > $m/mutation_stdout.txt 2>&1
echo "mutation rc=$? wall=$(( $(date +%s) - s ))s" | tee -a "$out/env.txt"; head -5 $m/mutation.md | tail -2
s=$(date +%s)
timeout ${CHECK_LIMIT:-60} build/bin/kopt tasks check --tasks tasks > "$out/tasks_check.txt" 2>&1
echo "tasks check rc=$? wall=$(( $(date +%s) - s ))s" | tee -a "$out/env.txt"; tail -3 "$out/tasks_check.txt" | cut -c1-240
tar -C $m --exclude=mutants -cJf "$out/mutation.tar.xz" .
ls -la "$out"
