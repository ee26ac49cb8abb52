#!/usr/bin/env bash
# The daemon end to end on a GPU machine, with kopt already built (binaries in build/bin):
#   1. `kopt run` with no config at all: the built-in tuner over the whole suite for a fixed time;
#   2. `kopt run` with its agents pointed at fake-llm-server, which replays a handful of
#      known-good and known-bad axpy/softmax kernels (tests/orchestrator/replay/);
#   3. what the memory learned: `kopt memory wins`, `kopt export`, and a summary table.
# Everything goes to one folder (default gpu-demo/, or $1), its own database and data directory,
# so the user's memory is not touched.
#
#   scripts/gpu_demo_run.sh [OUT_DIR]        TUNER_HOURS=0.05 LLM_HOURS=0.05 by default
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${KOPT_BIN:-build/bin}
OUT=${1:-gpu-demo}
TUNER_HOURS=${TUNER_HOURS:-0.05}
LLM_HOURS=${LLM_HOURS:-0.05}
PORT=${FAKE_LLM_PORT:-8090}  # configs/fake-server.json points the agents here

for b in kopt kopt-sandbox fake-llm-server; do
  [[ -x "$BIN/$b" ]] || { echo "gpu_demo_run: $BIN/$b is missing; build first" >&2; exit 2; }
done
rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
DB="$OUT/memory.db"
export KOPT_HOME="$OUT/home" KOPT_CACHE_DIR="$OUT/cache"
unset KOPT_CONFIG KOPT_DB KOPT_PROMPTS

echo "== 1. built-in tuner, whole suite, ${TUNER_HOURS} h, no config"
"$BIN/kopt" run --tasks tasks --hours "$TUNER_HOURS" --db "$DB" --no-display \
  >"$OUT/tuner-run.txt" 2>"$OUT/tuner-run.log" || echo "(kopt run exited $?)"
cat "$OUT/tuner-run.txt"

echo
echo "== 2. agents against fake-llm-server replaying tests/orchestrator/replay, ${LLM_HOURS} h"
"$BIN/fake-llm-server" --port "$PORT" --replay tests/orchestrator/replay \
  >"$OUT/fake-llm-server.log" 2>&1 &
FAKE_PID=$!
trap 'kill "$FAKE_PID" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  grep -q listening "$OUT/fake-llm-server.log" && break
  sleep 0.1
done
"$BIN/kopt" run --tasks tasks/axpy tasks/softmax --config configs/fake-server.json --db "$DB" \
  --hours "$LLM_HOURS" --candidates-per-task 40 --no-display \
  >"$OUT/llm-run.txt" 2>"$OUT/llm-run.log" || echo "(kopt run exited $?)"
cat "$OUT/llm-run.txt"
kill "$FAKE_PID" 2>/dev/null || true
wait "$FAKE_PID" 2>/dev/null || true

echo
echo "== 3. what the memory learned"
"$BIN/kopt" memory wins --db "$DB" | tee "$OUT/wins.txt"
"$BIN/kopt" export --db "$DB" --out "$OUT/export" | tee "$OUT/export.txt"

echo
echo "== summary"
for run in 1 2; do "$BIN/kopt" status --db "$DB" --run "$run" || true; echo; done
command -v python3 >/dev/null || { echo "(python3 missing: no per-run table)"; exit 0; }
python3 - "$DB" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(f"{'run':>3} {'status':<12} {'task':<18} {'cands':>5} {'ok':>4} {'baseline us':>11} "
      f"{'best us':>9} {'speedup':>8} {'%SOL':>6}  best kernel by")
for run_id, status in db.execute("SELECT id, status FROM runs ORDER BY id"):
    rows = db.execute("""
        SELECT t.name,
               sum(k.origin_agent <> 'baseline'),
               sum(e.verdict = 'ok'),
               max(CASE WHEN k.origin_agent = 'baseline' THEN e.median_us END)
        FROM evaluations e JOIN tasks t ON t.id = e.task_id JOIN kernels k ON k.id = e.kernel_id
        WHERE e.run_id = ? GROUP BY t.name ORDER BY t.name""", (run_id,)).fetchall()
    for name, cands, ok, base in rows:
        best = db.execute("""
            SELECT e.median_us, e.speedup, e.sol_percent, k.origin_agent
            FROM evaluations e JOIN tasks t ON t.id = e.task_id JOIN kernels k ON k.id = e.kernel_id
            WHERE e.run_id = ? AND t.name = ? AND e.verdict = 'ok'
            ORDER BY e.speedup DESC LIMIT 1""", (run_id, name)).fetchone()
        if best:
            print(f"{run_id:>3} {status:<12} {name:<18} {cands:>5} {ok:>4} {base or 0:>11.2f} "
                  f"{best[0]:>9.2f} {best[1]:>7.3f}x {best[2]:>6.1f}  {best[3]}")
        else:
            print(f"{run_id:>3} {status:<12} {name:<18} {cands:>5} {ok:>4} {'-':>11} {'-':>9} "
                  f"{'-':>8} {'-':>6}  (nothing verified)")
verdicts = db.execute("SELECT verdict, count(*) FROM evaluations GROUP BY verdict ORDER BY 2 DESC")
print("verdicts: " + ", ".join(f"{v} {n}" for v, n in verdicts))
pairs, lessons = db.execute("SELECT count(*), sum(summary <> '') FROM pairs").fetchone()
calls, tokens = db.execute(
    "SELECT count(*), coalesce(sum(prompt_tokens + completion_tokens), 0) FROM llm_calls").fetchone()
print(f"pairs {pairs} (with a lesson: {lessons or 0}); LLM calls {calls}, tokens {tokens}")
EOF
echo "logs, the database and the export are in $OUT"
