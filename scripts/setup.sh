#!/usr/bin/env bash
# Everything a fresh Debian 12 machine needs before kopt runs: the missing Debian packages,
# a configured build folder, and an incremental build. Safe to run again: it only does what is
# missing. Used by ./kopt, ./test.sh and .ci/run. KOPT_SETUP_TARGETS (./kopt sets it) builds only
# those targets; without it, everything (the tests too).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KOPT_BUILD_DIR:-$here/build}"
cuda="${CUDA_HOME:-/usr/local/cuda}"

packages=(cmake g++ make pkg-config libcurl4-openssl-dev libsqlite3-dev libspdlog-dev
          nlohmann-json3-dev libcxxopts-dev libgtest-dev libfmt-dev python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >&2
fi
if [ ! -x "$cuda/bin/nvcc" ] && [ ! -f "$cuda/include/nvrtc.h" ]; then
  echo "setup: the CUDA toolkit was not found at $cuda (set CUDA_HOME); kopt needs NVRTC and CUPTI" >&2
  exit 1
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT="$cuda" >&2
fi
targets=()
for t in ${KOPT_SETUP_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}" >&2
