#!/bin/bash
# Session 6, issue 14, first GPU call: where the profile pass's time goes (KOPT_PROFILE_TRACE),
# the fidelity table with the read-sweep L2 flush, the bf16_gemm DRAM gap (repeats on both sides,
# ncu without its cache control), and ncu's breakdown of sm__throughput plus smsp__warps_active.sum
# (does the sum of the warp states equal it?). Worker carried stripped in .devcarry-14x/.
#   bash docs/gpu-runs/2026-11-25-h100-profile/explore.sh   (PART=a|b)
set -u
W=$PWD/.devcarry-14x/kopt-sandbox
out=${OUT:-/tmp/out}/explore; mkdir -p "$out"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .devcarry-14x/COMMIT; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
export KOPT_PROFILE_TRACE=1
STALLS="long_scoreboard short_scoreboard mio_throttle lg_throttle barrier membar math_pipe_throttle wait not_selected selected no_instruction dispatch_stall drain sleeping tex_throttle imc_miss branch_resolving misc gmma"
M="breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__warps_active.sum,sm__inst_executed.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active"
for r in $STALLS; do M="$M,smsp__warps_issue_stalled_$r.sum"; done
ncu_case() {  # task kernel tag [ncu flags]
  local task=$1 kernel=$2 tag=$3; shift 3
  KOPT_SANDBOX_UNDER_PROFILER=1 timeout 300 ncu --profile-from-start off \
    --target-processes all --csv --page raw --print-units base "$@" --metrics "$M" \
    --log-file "$out/ncu-$tag.csv" python3 bench/profile_fidelity.py "$out" --worker "$W" \
    --bracket-child "$task:$kernel" > "$out/ncu-$tag.stdout" 2>&1
  echo "ncu $tag rc=$?"
}
if [[ "${PART:-a}" == *a* ]]; then
  s=$(date +%s); python3 bench/profile_fidelity.py "$out/fidelity" --worker "$W" 2>&1 | tail -12
  echo "fidelity wall $(( $(date +%s) - s )) s"; cat "$out/fidelity/worker-stderr.log" | grep "profile pass"
  for c in "axpy tasks/axpy/baseline.cu" "softmax tasks/softmax/baseline.cu" "transpose tasks/transpose/baseline.cu" "sgemm tasks/sgemm/baseline.cu" "bf16_gemm tasks/bf16_gemm/baseline.cu" "axpy tests/sandbox/profile/bank_conflict_axpy.cu"; do
    set -- $c; ncu_case $1 $2 "breakdown-$1-$(basename $2 .cu)" --cache-control all --clock-control none
  done
fi
if [[ "${PART:-a}" == *c* ]]; then
  python3 bench/profile_cost.py "$out/cost" --worker "$W" --repeats 3 2>&1 | tail -12
  grep -h "profile pass" "$out"/cost/worker-*.log
  KOPT_PROFILE_KERNEL_REPLAY=1 python3 bench/profile_cost.py "$out/cost-kernel-replay" --worker "$W" --repeats 3 --cases axpy,sgemm 2>&1 | tail -8
  grep -h "profile pass\|replay" "$out"/cost-kernel-replay/worker-*.log
  s=$(date +%s); python3 bench/profile_fidelity.py "$out/fidelity" --worker "$W" 2>&1 | grep -v "^| .* | yes |"
  echo "fidelity wall $(( $(date +%s) - s )) s"
fi
if [[ "${PART:-a}" == *b* ]]; then
  for i in 1 2; do python3 bench/profile_fidelity.py "$out/bf16-repeat$i" --worker "$W" --cases bf16_gemm 2>&1 | tail -3; grep -h "DRAM\|L2 hit" "$out/bf16-repeat$i/profile_fidelity.md"; done
  M="dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum"
  ncu_case bf16_gemm tasks/bf16_gemm/baseline.cu bf16-nocache --cache-control none --clock-control none
  ncu_case bf16_gemm tasks/bf16_gemm/baseline.cu bf16-cache-again --cache-control all --clock-control none
  ncu_case bf16_gemm tasks/bf16_gemm/baseline.cu bf16-clock-base --cache-control all --clock-control base
  grep -h "bf16_gemm" "$out"/ncu-bf16-*.csv | cut -c1-400 | head
fi
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
[ -n "${OUT:-}" ] && tar czf "$OUT/explore.tgz" -C "$(dirname "$out")" explore
