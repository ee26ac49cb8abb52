#!/bin/bash
# gate-mem (issue 32: memory that belongs to nobody, the keyed mask, the sanitizer where bugs
# live) on a lent GPU. The build is carried stripped in .dev/gate-mem/ (tests/, tasks/ and the
# build's test lists beside it); the tests have /work/wt/gate-mem compiled in, so that path is
# made to point there. From the repository root:
#   bash .dev/gate-mem/run.sh
set -u
here=$PWD; out=${OUT:-/tmp/out}; mkdir -p "$out" /work/wt
D=$here/.dev/gate-mem
ln -sfn "$D" /work/wt/gate-mem
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $(cat $D/COMMIT)"; } | tee "$out/env.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
cd "$D/build/tests/sandbox"
s=$(date +%s)
# The memory kernels and their twins, the adversarial kernels the new guards, fills and poisons
# touch (their verdicts must not change), and every task's baseline and reference (no false
# rejects). ADV_RE='AdversarialOnGpu|AdversarialBaselinesOnGpu' runs the whole suite.
mine='stashes_in_granule|overreads_both_inputs|scan_trusts_scratch_fill|skips_finished_outputs|reads_own_outputs_first'
touched='reads_reference_outputs|write_past_end|write_before_start|uninitialized_scratch|skips_unpoisoned_outputs|fast_float4|modifies_input|compensates_input_checksum'
timeout ${ADV_LIMIT:-140} ctest -L gpu -j1 --output-on-failure --timeout 130 \
  -R "${ADV_RE:-AdversarialOnGpu.*/($mine|$touched)|AdversarialBaselinesOnGpu}" > "$out/ctest_adversarial.txt" 2>&1
echo "adversarial rc=$? wall=$(( $(date +%s) - s ))s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" "$out/ctest_adversarial.txt" | tail -15
grep -E "^adversarial |^baseline " "$out/ctest_adversarial.txt" > "$out/verdicts.txt"
grep -E "stashes_in_granule|overreads_both|scan_trusts|skips_finished|reads_own_outputs|reads_reference" "$out/verdicts.txt" | cut -c1-200
s=$(date +%s)
# The sanitizer at every shape class: a write that exists only at the timed shape, and its twin.
timeout ${SAN_LIMIT:-80} ctest -L gpu -j1 --output-on-failure --timeout 75 \
  -R 'SanitizerOnGpu.*(writes_far_past_at_timed_shape|axpy_in_bounds)' > "$out/ctest_sanitizer.txt" 2>&1
echo "sanitizer rc=$? wall=$(( $(date +%s) - s ))s"
grep -E "tests passed|tests failed|^sanitizer " "$out/ctest_sanitizer.txt" | cut -c1-400
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
