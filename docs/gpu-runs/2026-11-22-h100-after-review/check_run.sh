#!/bin/bash
# The GPU preflight of `kopt run` on a GPU machine: a GPU that does not exist is refused, a real
# run on axpy goes through.
set -u
mkdir -p build/bin && cp .devcarry/bin/* build/bin/
export KOPT_HOME=/tmp/h KOPT_CACHE_DIR=/tmp/c
echo "\$ kopt run --tasks tasks/axpy --gpus 5 --db /tmp/d.db --no-display"
build/bin/kopt run --tasks tasks/axpy --gpus 5 --db /tmp/d.db --no-display; echo "exit $?"
echo "\$ kopt run --tasks tasks/axpy tasks/softmax --hours 0.01 --db /tmp/d.db --no-display"
timeout 120 build/bin/kopt run --tasks tasks/axpy tasks/softmax --hours 0.01 --db /tmp/d.db --no-display 2>/tmp/run.log; echo "exit $?"
grep -E "GPU:|baseline|finished" /tmp/run.log | cut -c1-160
