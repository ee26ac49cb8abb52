#!/bin/bash
# The merged tree of the second 2026-11-26 session on a lent GPU. PART=tests: every gpu-labelled
# ctest test. PART=realworld: `kopt tasks check` of the real-world suite (fp8_block_gemm included)
# and `kopt baselines` recording its production baselines in a fresh memory, then the GEMM tasks'
# cuBLASLt rows. PART=quality: bench/quality.py over the teaching suite (cuBLASLt from the worker,
# PyTorch one sample at a time, do_bench cross-check). The build tree (no objects, stripped) is
# carried in .devcarry-final/build with its commit in .devcarry-final/COMMIT; from the repository root:
#   PART=tests bash docs/gpu-runs/2026-11-26-h100-session2/run.sh
set -u
here=$PWD; out=${OUT:-/tmp/out}; mkdir -p "$out" /work
[ -e /work/main ] || ln -s "$here" /work/main   # the tests have the source path compiled in
rm -rf build && cp -a .devcarry-final/build build
export KOPT_COMMIT=$(cat .devcarry-final/COMMIT) PATH=$here/build/bin:$PATH PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
step() { local t=$1; shift; local s=$(date +%s); timeout "$t" "$@"; echo "[$* -> rc=$? in $(( $(date +%s) - s )) s]"; }
case " ${PART:-tests} " in *" tests "*)
  s=$(date +%s)
  (cd build && timeout ${CTEST_LIMIT:-420} ctest -L gpu -j1 --output-on-failure --timeout 300 ${CTEST_ARGS:-}) > "$out/ctest_gpu.txt" 2>&1
  echo "ctest -L gpu rc=$? wall=$(( $(date +%s) - s ))s"
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|Skipped|\*\*\*" "$out/ctest_gpu.txt" | tail -25 ;;
esac
case " ${PART:-tests} " in *" realworld "*)
  step 150 kopt tasks check --tasks tasks_realworld > "$out/realworld_check.txt" 2>&1
  tail -7 "$out/realworld_check.txt" | cut -c1-200
  rm -f /tmp/rw.db*
  step 400 kopt baselines --tasks tasks_realworld --db /tmp/rw.db > "$out/realworld_baselines.txt" 2>&1
  step 200 kopt baselines --tasks tasks --db /tmp/rw.db --no-torch sgemm bf16_gemm gemm_bias_relu matvec > "$out/gemm_cublaslt.txt" 2>&1
  kopt baselines --list --db /tmp/rw.db | tee "$out/baselines_list.txt" | cut -c1-150
  kopt baselines --list --json --db /tmp/rw.db > "$out/baselines_list.json"
  grep "not measured" "$out/realworld_baselines.txt" "$out/gemm_cublaslt.txt" | cut -c1-250 ;;
esac
case " ${PART:-tests} " in *" quality "*)
  step ${QUALITY_LIMIT:-470} bench/run.sh quality "$out/q" --worker build/bin/kopt-sandbox --sweep --check-do-bench --budget-s 900 > "$out/quality.txt" 2>&1
  tail -30 "$out/quality.txt" ;;
esac
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
