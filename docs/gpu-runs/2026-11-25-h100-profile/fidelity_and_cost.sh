#!/bin/bash
# Session 6: the committed profile results. bench/profile_fidelity.py (10 kernels against ncu) and
# bench/profile_cost.py (steady-state cost of the pass in a long-lived worker, with
# KOPT_PROFILE_TRACE phase timings) with the worker built at the commit in .devcarry-14x/COMMIT.
W=$PWD/.devcarry-14x/kopt-sandbox; o=${OUT:-/tmp/o}; mkdir -p $o
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $(cat .devcarry-14x/COMMIT)"; } | tee $o/env.txt
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
export KOPT_COMMIT=$(cat .devcarry-14x/COMMIT)
python3 bench/profile_fidelity.py $o/fidelity --worker $W > $o/fidelity.txt 2>&1; echo "fidelity rc=$?"
KOPT_PROFILE_TRACE=1 python3 bench/profile_cost.py $o/cost --worker $W --repeats 3 > $o/cost.txt 2>&1; echo "cost rc=$?"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
tar czf $o/results.tgz -C $o fidelity cost env.txt fidelity.txt cost.txt
grep -E "within tolerance|: first" $o/fidelity.txt $o/cost.txt | sed 's/^.*txt://'
tail -14 $o/cost.txt
