#!/usr/bin/env bash
# Runs the whole test suite: set-up (packages, configure, build), then ctest.
# Tests labelled `gpu` report SKIPPED on a machine without a GPU; `./test.sh -L gpu` runs only them.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/scripts/setup.sh"
# Test-only dependency (not kopt's): the report test renders HTML in headless Chromium.
if [ ! -x /usr/bin/chromium ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "test.sh: installing chromium for the report rendering test" >&2
  "${sudo_cmd[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq chromium >&2
fi
# Test-only dependency: the export test runs the exported pytest file (everything skips on a
# machine without torch and a GPU, but it must collect and skip cleanly).
if ! python3 -c "import pytest" 2>/dev/null && ! /usr/bin/python3 -c "import pytest" 2>/dev/null; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "test.sh: installing python3-pytest for the export test" >&2
  "${sudo_cmd[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq python3-pytest >&2
fi
# Test-only dependency: the Slurm tests (label slurm) start their own slurmctld, slurmd and munged.
slurm_packages=(slurmctld slurmd slurm-client munge)
slurm_missing=()
for p in "${slurm_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || slurm_missing+=("$p")
done
if ((${#slurm_missing[@]})); then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "test.sh: installing ${slurm_missing[*]} for the Slurm tests" >&2
  "${sudo_cmd[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${slurm_missing[@]}" >&2
fi
cd "${KOPT_BUILD_DIR:-$here/build}"
ctest --output-on-failure -j "$(nproc)" "$@"
