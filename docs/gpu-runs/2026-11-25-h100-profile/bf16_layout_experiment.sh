#!/bin/bash
# Is bf16_gemm's DRAM traffic (kopt 39 GB vs ncu 46.6 GB, stable on both sides) a matter of where
# its buffers sit? KOPT_PROFILE_PAD_MB (an experiment-only switch of that build) allocates a pad
# before the profiled buffers, moving them; then the fidelity table with the new tensor metrics.
W=$PWD/.devcarry-14x/kopt-sandbox; o=${OUT:-/tmp/o}; mkdir -p $o
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
for pad in 0 64 256 1024 4096; do
  KOPT_PROFILE_PAD_MB=$pad python3 bench/profile_cost.py $o/pad$pad --worker $W --repeats 2 --cases bf16_gemm > /dev/null 2>&1
  python3 -c "
import json; r=json.load(open('$o/pad$pad/profile_cost.json'))
for c in r['cases']: print('pad $pad MB', [(round(x['dram_bytes']/1e9,2), round(x['dram_percent'],2), round(x['l2_hit_percent'],2)) for x in c.get('runs',[])], c.get('error'))"
done
python3 bench/profile_fidelity.py $o/fidelity --worker $W 2>&1 | grep -v "^| .* | yes |" | tail -40
tar czf $o/all.tgz -C $o .
