#!/usr/bin/env bash
# Runs one GPU benchmark and leaves its results in OUT_DIR:
#
#   bench/run.sh throughput|mix|fidelity|quality|baseline_agreement|multi_gpu|daemon_idle|daemon_throughput|sanitizer_cost|mutation OUT_DIR [options of that benchmark]
#
# The benchmark's progress goes to OUT_DIR/NAME.log; its markdown table is the last thing printed.
# Needs the prebuilt worker (build/bin/kopt-sandbox, or --worker PATH) and, except with the
# options that skip them, python3 with torch and triton.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -lt 2 ]; then
  sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
fi
bench="$1"
out="$2"
shift 2
script="$here/$bench.py"
[ -f "$here/$bench/run.py" ] && script="$here/$bench/run.py"  # a benchmark of several files
if [ ! -f "$script" ]; then
  echo "bench/run.sh: no benchmark '$bench' (throughput, mix, fidelity, quality, baseline_agreement, multi_gpu, daemon_idle, daemon_throughput, sanitizer_cost, mutation)" >&2
  exit 2
fi
mkdir -p "$out"
worker="$here/../build/bin/kopt-sandbox"
case " $* " in *" --worker "*) ;; *)
  if [ ! -x "$worker" ]; then
    echo "bench/run.sh: $worker is missing: build it (cmake --build build --target kopt-sandbox)" >&2
    echo "or carry build/bin to this machine" >&2
    exit 2
  fi ;;
esac
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: ${KOPT_COMMIT:-$(git -C "$here/.." rev-parse HEAD 2>/dev/null || echo unknown)}"
  echo "command: bench/run.sh $bench $out $*"
  nvidia-smi -L 2>&1 || true
} > "$out/$bench.env.txt"
started=$(date +%s)
python3 "$script" "$out" "$@" 2> "$out/$bench.log"
status=$?
if [ $status -ne 0 ]; then
  echo "bench/run.sh: $bench failed (exit $status) after $(($(date +%s) - started)) s; the end of $out/$bench.log:" >&2
  tail -n 40 "$out/$bench.log" >&2
fi
exit $status
