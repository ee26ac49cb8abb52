#!/usr/bin/env bash
# Runs the whole test suite: set-up (packages, configure, build), then ctest.
# Tests labelled `gpu` report SKIPPED on a machine without a GPU; `./test.sh -L gpu` runs only them.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/scripts/setup.sh"
cd "${KOPT_BUILD_DIR:-$here/build}"
ctest --output-on-failure -j "$(nproc)" "$@"
