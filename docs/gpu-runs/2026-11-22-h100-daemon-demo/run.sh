#!/bin/bash
set -u
mkdir -p build/bin && cp .devcarry/bin/* build/bin/
nvidia-smi -L
TUNER_HOURS=0.04 LLM_HOURS=0.03 timeout 560 bash scripts/gpu_demo_run.sh /tmp/demo 2>&1 | tee /tmp/demo-console.txt | tail -n 60
cp /tmp/demo-console.txt /tmp/demo/console.txt 2>/dev/null
tar czf $OUT/demo.tgz -C /tmp/demo --exclude=cache --exclude=home . 2>/dev/null
ls -la $OUT
