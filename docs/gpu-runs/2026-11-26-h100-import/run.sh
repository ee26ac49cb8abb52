#!/bin/bash
# GPU run of issue 27 (kopt tasks import, tasks_realworld) on the H100, from .devcarry-27 on the
# device: binaries in build/bin, the KernelBench problem files (read from the public repository,
# never committed) in kb/.
set -u
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,memory.used,driver_version --format=csv
mkdir -p /work && ln -sfn "$PWD" /work/wt27
export PATH=$PWD/build/bin:$PATH PYTHONUNBUFFERED=1
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
step() { local t=$1; shift; local s=$(date +%s); timeout "$t" "$@"; echo "[$* -> rc=$? in $(( $(date +%s) - s )) s]"; }
echo "== 1. derivation tests (pure Python)"
step 30 python3 tests/tasks/import/test_derive.py 2>&1 | tail -3
echo "== 2. import end to end: modules written here, a wrong reference, unimportable files"
step 150 python3 tests/tasks/import/test_import_gpu.py build/bin/kopt /tmp/imported > "$OUT/import_gpu.txt" 2>&1
grep -E "^(ok|FAIL) |failures|disagrees|cannot import|validated" "$OUT/import_gpu.txt" | cut -c1-400
echo "== 3. tasks check, real-world suite (GPU hygiene: reference finite, baseline on every round)"
step 200 kopt tasks check --tasks tasks_realworld > "$OUT/realworld_check.txt" 2>&1
tail -25 "$OUT/realworld_check.txt" | cut -c1-300
echo "== 4. KernelBench: 5 level-1 + 3 level-2 problem files"
rm -rf /tmp/kb_tasks; mkdir -p /tmp/kb_tasks
step 200 kopt tasks import --kernelbench kb/*.py --references tests/tasks/import/kernelbench_references --tasks /tmp/kb_tasks > "$OUT/kernelbench.txt" 2>&1
grep -vE "^  ok " "$OUT/kernelbench.txt" | cut -c1-400 | tail -40
ls /tmp/kb_tasks
echo "== 5. PyTorch's ops (production baselines) at the default shapes"
step 80 python3 tests/tasks/import/time_torch_ops.py tasks_realworld 2>&1 | tee "$OUT/torch_ops.txt"
tar czf "$OUT/imported_tasks.tgz" -C /tmp imported kb_tasks 2>/dev/null
