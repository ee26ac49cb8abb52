W=$PWD/.devcarry-14x/kopt-sandbox; o=${OUT:-/tmp/o}; mkdir -p $o
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader
python3 bench/profile_cost.py $o/with-trace --worker $W --repeats 2 --cases bf16_gemm 2>&1 | tail -1
KOPT_SANDBOX_UNDER_PROFILER=1 python3 bench/profile_cost.py $o/no-trace --worker $W --repeats 2 --cases bf16_gemm 2>&1 | tail -1
for d in with-trace no-trace; do python3 -c "
import json; r=json.load(open('$o/$d/profile_cost.json'))
for c in r['cases']: print('$d', [(round(x['dram_bytes']/1e9,2), round(x['dram_percent'],2), round(x['l2_hit_percent'],2)) for x in c.get('runs',[])], c.get('error'))"; done
