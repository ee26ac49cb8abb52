#!/bin/bash
# The export's checks timed on the H100 (one device call). Run from the carried tree:
#   bash docs/gpu-runs/2026-11-25-h100-export/run.sh   ($OUT: where logs go)
# 1. export_selftest_gpu_test (the sample memory: axpy and softmax; ctest and pytest, timed);
# 2. cross_entropy and softmax (their baselines recorded as wins, make_memory.py) exported by the
#    real kopt, then cmake configure + build, ctest (the self-tests) and pytest (the binding), each
#    timed with `date`.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
BIN=$ROOT/build/bin
TESTBIN=$ROOT/build/tests/memory_store
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
echo "date: $(date -u +%FT%TZ)  commit: $(cat "$ROOT/../COMMIT" 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader
python3 -c "import torch, pytest; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'pytest', pytest.__version__)"
cmake --version | head -1; g++ --version | head -1

t() { local s=$(date +%s.%N); "$@"; local rc=$?; echo "TIME $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s rc=$rc: $*"; return $rc; }

echo "== 1. export_selftest_gpu_test"
t "$TESTBIN/export_selftest_gpu_test" 2>&1 | tail -60

echo "== 2. cross_entropy and softmax"
W=$(mktemp -d)
python3 "$HERE/make_memory.py" "$ROOT/tasks" > "$W/memory.jsonl"
"$BIN/kopt" memory import --db "$W/memory.db" --jsonl "$W/memory.jsonl"
t "$BIN/kopt" export --db "$W/memory.db" --out "$W/kernels" --tasks "$ROOT/tasks"
ls "$W/kernels"
t cmake -S "$W/kernels" -B "$W/build" -DCUDAToolkit_ROOT=/usr/local/cuda > "$OUT/configure.log" 2>&1
t cmake --build "$W/build" -j 16 > "$OUT/build.log" 2>&1
t ctest --test-dir "$W/build" --output-on-failure -V > "$OUT/ctest.log" 2>&1
grep -E "^(ok|FAIL|[0-9]+:) |passed|failed|Test +#" "$OUT/ctest.log" | tail -20
export KOPT_KERNELS_BUILD_DIR="$W/build"
t python3 -m pytest -v -p no:cacheprovider "$W/kernels/test_kopt_kernels.py" > "$OUT/pytest.log" 2>&1
tail -15 "$OUT/pytest.log"
cp "$W/kernels/manifest.json" "$OUT/manifest.json"
echo "== summary"
grep -h "^TIME\|export timing" "$OUT/run.log"
