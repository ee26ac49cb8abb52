#!/usr/bin/env bash
# The memory measures of issue 36 on the CPU, into OUT_DIR/memory_measures.md:
#
#   bench/memory_measures.sh OUT_DIR [--densities 100,1000,10000] [--db NIGHT.db]
#
# 1. memory_planted: planted known-good pairs among distractors built from the suite's real
#    kernels, at each density (bench/memory_planted.cc).
# 2. memory_loo: leave-one-out ranking over a recorded night (bench/memory_loo.cc). Without
#    --db, the night is made here: kopt_test_daemon (`kopt run` with the fake evaluator) on axpy
#    and softmax against `fake-llm-server --healthy --replay tests/orchestrator/replay`, so its
#    gold is the script's and the number measures the plumbing, not retrieval quality.
# 3. technique_audit: the technique classifier's labels on the suite's real kernels, into
#    OUT_DIR/technique_labels.md, for a person to judge (bench/technique_audit.cc).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: bench/memory_measures.sh OUT_DIR [--densities LIST] [--db NIGHT.db]}"
shift
densities="100,1000,10000"
night=""
while [ $# -gt 0 ]; do
  case "$1" in
    --densities) densities="$2"; shift 2 ;;
    --db) night="$2"; shift 2 ;;
    *) echo "bench/memory_measures.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
build="${KOPT_BUILD_DIR:-$here/build}"
mkdir -p "$out"
cmake --build "$build" -j 2 --target memory_planted memory_loo technique_audit kopt_test_daemon fake-llm-server >&2

if [ -z "$night" ]; then
  work="$(mktemp -d)"
  trap 'kill "${server_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
  mkdir -p "$work/tasks"
  cp -r "$here/tasks/axpy" "$here/tasks/softmax" "$work/tasks/"
  "$build/bin/fake-llm-server" --port 0 --replay "$here/tests/orchestrator/replay" --healthy \
    > "$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 50); do grep -q "listening on" "$work/server.log" && break; sleep 0.1; done
  port="$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/server.log")"
  cat > "$work/config.json" <<JSON
{"format": 1, "llm": {
  "providers": {"fake": {"type": "openai", "base_url": "http://127.0.0.1:$port/v1",
                         "timeout_s": 30, "max_concurrent": 4, "max_attempts": 2,
                         "backoff_initial_s": 0.1}},
  "agents": {"planner": {"provider": "fake", "model": "replay-planner", "max_tokens": 4096},
             "coder": {"provider": "fake", "model": "replay-coder", "max_tokens": 4096},
             "summarizer": {"provider": "fake", "model": "replay-summarizer", "max_tokens": 1024}}}}
JSON
  "$build/tests/orchestrator/kopt_test_daemon" --db "$work/memory.db" --no-display \
    --tasks "$work/tasks" --config "$work/config.json" --hours 0.03 --max-usd 5 \
    --candidates-per-task 80 > "$work/daemon.out" 2> "$out/night.log"
  night="$work/memory.db"
  night_source="a night of kopt_test_daemon against fake-llm-server --healthy (axpy, softmax)"
else
  night_source="$night"
fi

commit="$(git -C "$here" rev-parse --short HEAD)$(git -C "$here" diff --quiet || echo '+changes')"
{
  echo "# Memory measured honestly (issue 36)"
  echo
  echo "Device: CPU devbox (no GPU), $(nproc) cores. Date: $(date -u +%F). Commit: $commit."
  echo "Command: \`bench/memory_measures.sh $out --densities $densities\`."
  echo
  echo "## 1. Planted known-good pairs among distractors"
  echo
  "$build/bench/memory_planted" --densities "$densities" | sed 's/^# /### /'
  echo "## 2. Leave-one-out over a recorded night"
  echo
  echo "Night: $night_source. Its gold is the script's: the number measures the plumbing, not"
  echo "retrieval quality."
  echo
  "$build/bench/memory_loo" --db "$night" | sed 's/^# /### /'
} | tee "$out/memory_measures.md"
"$build/bench/technique_audit" > "$out/technique_labels.md"
