#!/usr/bin/env bash
# The stalling-model benchmark of issue 13, on the CPU: kopt_test_daemon (`kopt run` with the fake
# evaluator) against the fake LLM server answering as a model that stalls, in the OpenAI and the
# Anthropic shape. Prints and writes OUT_DIR/stall.md: LLM calls and dollars per new evaluated
# kernel, and what was spent after the model ran dry.
#
#   bench/stall_bench.sh OUT_DIR [BEFORE_COMMIT]
#
# With BEFORE_COMMIT (e.g. the main branch), the daemon of that commit is built in a temporary
# folder (git archive, then only the kopt_test_daemon target) and measured first, with a config
# it understands; this checkout's daemon is measured after it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: bench/stall_bench.sh OUT_DIR [BEFORE_COMMIT]}"
before_commit="${2:-}"
build="${KOPT_BUILD_DIR:-$here/build}"
mkdir -p "$out"
cmake --build "$build" -j "$(nproc)" --target kopt_stall_bench fake-llm-server >&2

args=()
if [ -n "$before_commit" ]; then
  src="$(mktemp -d)"
  trap 'rm -rf "$src"' EXIT
  git -C "$here" archive "$before_commit" | tar -x -C "$src"
  cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
  cmake --build "$src/build" -j "$(nproc)" --target kopt_test_daemon >&2
  args=(--before "$src/build/tests/orchestrator/kopt_test_daemon" --before-prompts "$src/prompts")
  before_commit="$(git -C "$here" rev-parse --short "$before_commit")"
fi

commit="$(git -C "$here" rev-parse --short HEAD)$(git -C "$here" diff --quiet || echo '+changes')"
{
  echo "# A model that stalls: LLM calls and dollars per new kernel"
  echo
  echo "Machine: CPU dev VM, fake LLM + fake evaluator ($(nproc) cores). Date: $(date -u +%F)."
  echo "Commit: $commit${before_commit:+ (before: $before_commit)}."
  echo "Command: \`bench/stall_bench.sh $out${before_commit:+ $before_commit}\`."
  echo
  "$build/tests/orchestrator/kopt_stall_bench" "${args[@]}"
} | tee "$out/stall.md"
