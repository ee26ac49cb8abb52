set -u
mkdir -p /work && ln -sfn "$PWD" /work/wt23c
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader | head -3
timeout 200 build/tests/sandbox/kopt_shapes_tests 2>&1 | grep -E "^shapes|FAILED|PASSED|tests ran" | cut -c1-230
# The planted bugs through kopt eval with random seeds (a fresh draw each time), 5 times each.
for k in softmax:softmax_drops_tail_at_2_mod_4 prefix_sum:prefix_sum_carry_table_256_tiles decode_attention:decode_attention_pow2_group_ratio cross_entropy:cross_entropy_max_from_zero topk:topk_keeps_8_per_thread; do
  t=${k%%:*}; f=${k#*:}; v=""
  for i in 1 2 3 4 5; do
    v="$v $(timeout 60 build/bin/kopt eval $t tests/sandbox/shapes/$f.cu --no-time 2>&1 | grep -m1 -oE '^verdict +[a-z_]+' | awk '{print $2}')"
  done
  echo "kopt eval x5 $f:$v"
done
