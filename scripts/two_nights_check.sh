#!/bin/bash
# The outside review's two-nights check (issue 36), on the CPU: two nights of kopt_test_daemon (the
# fake evaluator) with the replaying fake model on softmax, cross_entropy and layernorm, one
# database. Prints what night 2 judged again of night 1's work, per (task, kernel, tunables):
# rejected by night 1 (should be 0) and verified by night 1 (only the warm start's
# re-verifications, at most daemon.search.warm_start_kernels a task).
# Usage: scripts/two_nights_check.sh [HOURS_PER_NIGHT] (from the repository root, build/ built).
set -eu
hours=${1:-0.02}; dir=$(mktemp -d); db=$dir/memory.db
build/bin/fake-llm-server --port 8090 --replay tests/orchestrator/replay --quiet &
server=$!; trap 'kill $server 2>/dev/null; rm -rf "$dir"' EXIT
sleep 1
for night in 1 2; do
  KOPT_FAKE_DELAY_MS=50 build/tests/orchestrator/kopt_test_daemon --config configs/fake-server.json \
    --db "$db" --tasks tasks/softmax tasks/cross_entropy tasks/layernorm --hours "$hours" \
    --no-display > "$dir/night$night.log" 2>&1 || { echo "night $night failed:"; tail -5 "$dir/night$night.log"; exit 1; }
done
again() {  # night-2 evaluations of a (task, kernel, tunables) night 1 judged with verdict $1
  sqlite3 "$db" "SELECT count(*) FROM evaluations e2 JOIN kernels k ON k.id = e2.kernel_id
    WHERE e2.run_id = 2 AND k.origin_agent != 'baseline' AND EXISTS (SELECT 1 FROM evaluations e1
    WHERE e1.run_id = 1 AND e1.kernel_id = e2.kernel_id AND e1.task_id = e2.task_id
    AND e1.tunables_json = e2.tunables_json AND e1.verdict $1)"
}
echo "night 1: $(sqlite3 "$db" "SELECT count(*) FROM evaluations WHERE run_id = 1") evaluations;" \
     "night 2: $(sqlite3 "$db" "SELECT count(*) FROM evaluations WHERE run_id = 2")"
echo "night 2 judged again what night 1 rejected: $(again "!= 'ok'")"
echo "night 2 judged again what night 1 verified: $(again "= 'ok'") (the warm start's re-verifications)"
