#!/bin/bash
# Does ncu's process run with other L2 limits (fetch granularity, persisting L2) than kopt's
# profile pass? KOPT_PROFILE_TRACE=1 makes both the profile pass and the bracket under ncu print
# them; the bf16_gemm fidelity case runs both sides.
W=$PWD/.devcarry-14x/kopt-sandbox; o=${OUT:-/tmp/o}; mkdir -p $o
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
KOPT_PROFILE_TRACE=1 python3 bench/profile_fidelity.py $o/fid --worker $W --cases bf16_gemm 2>&1 | grep "within"
grep -h "L2" $o/fid/worker-*.log
