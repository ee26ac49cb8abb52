#!/bin/bash
# End of session 6 on the merged main: every gpu-labelled ctest test (PART=tests, the export's
# self-test excluded; PART=all runs every one and `kopt tasks check`; PART=export runs it, then `kopt tasks check` and `kopt eval --profile` on
# three baselines). The build tree (no objects, stripped) is carried in .devcarry-s6/build.
set -u
here=$PWD; out=${OUT:-/tmp/out}; mkdir -p "$out" /work
[ -e /work/main ] || ln -s "$here" /work/main
rm -rf build && cp -a .devcarry-s6/build build
export KOPT_COMMIT=$(cat .devcarry-s6/COMMIT)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $KOPT_COMMIT"; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
if [ "${PART:-tests}" = all ]; then
  s=$(date +%s)
  (cd build && timeout 540 ctest -L gpu --output-on-failure --timeout 320) > "$out/ctest_gpu.txt" 2>&1
  echo "ctest -L gpu rc=$? wall=$(( $(date +%s) - s ))s"
  grep -E "tests passed|Failed|\*\*\*" "$out/ctest_gpu.txt" | tail -12
  grep -h "numerical gelu\|baseline  gelu" "$out/ctest_gpu.txt"
  export KOPT_HOME=/tmp/kh KOPT_CACHE_DIR=/tmp/kc
  s=$(date +%s); timeout 200 build/bin/kopt tasks check > "$out/tasks_check.txt" 2>&1
  echo "kopt tasks check rc=$? wall=$(( $(date +%s) - s ))s"; tail -2 "$out/tasks_check.txt"
fi
if [ "${PART:-tests}" = tests ]; then
  s=$(date +%s)
  (cd build && timeout 560 ctest -L gpu -E ExportSelfTest --output-on-failure --timeout 300) > "$out/ctest_gpu.txt" 2>&1
  echo "ctest -L gpu -E ExportSelfTest rc=$? wall=$(( $(date +%s) - s ))s"
  grep -E "tests passed|Failed|\*\*\*|Skipped" "$out/ctest_gpu.txt" | tail -12
  grep -A3 "bf16_gemm_wmma.cu:" "$out/ctest_gpu.txt" | head -4
fi
if [ "${PART:-tests}" = export ]; then
  s=$(date +%s)
  (cd build && timeout 120 ctest -L gpu -R NumericalOnGpu --output-on-failure) > "$out/ctest_numerical.txt" 2>&1
  echo "ctest NumericalOnGpu rc=$? wall=$(( $(date +%s) - s ))s"; grep -E "tests passed|Failed" "$out/ctest_numerical.txt"
  s=$(date +%s)
  (cd build && timeout 330 ctest -L gpu -R ExportSelfTest --output-on-failure --timeout 320) > "$out/ctest_export.txt" 2>&1
  echo "ctest ExportSelfTest rc=$? wall=$(( $(date +%s) - s ))s"; grep -E "tests passed|Failed" "$out/ctest_export.txt"
  export KOPT_HOME=/tmp/kh KOPT_CACHE_DIR=/tmp/kc
  s=$(date +%s); timeout 200 build/bin/kopt tasks check > "$out/tasks_check.txt" 2>&1
  echo "kopt tasks check rc=$? wall=$(( $(date +%s) - s ))s"; tail -2 "$out/tasks_check.txt"
  for t in axpy transpose sgemm; do
    timeout 60 build/bin/kopt eval $t --profile > "$out/eval_profile_$t.txt" 2>&1; echo "kopt eval $t --profile rc=$?"
    grep -i -A2 "where the time goes\|profile" "$out/eval_profile_$t.txt" | head -6
  done
fi
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
