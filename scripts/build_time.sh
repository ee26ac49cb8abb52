#!/usr/bin/env bash
# How long a fresh checkout takes to build everything (the tests too), as CI does it: the
# committed HEAD exported to a scratch folder, configured as scripts/setup.sh configures, built
# with `-j $(nproc)` and no compiler cache. Writes OUT_DIR/build_time.json (machine, date,
# commit, seconds) and prints one line.
#
#   scripts/build_time.sh OUT_DIR [TARGET ...]    # no TARGET: everything
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$1"
shift
mkdir -p "$out"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
commit="$(git -C "$here" rev-parse --short HEAD)"
git -C "$here" archive HEAD | tar -x -C "$scratch"
cmake -S "$scratch" -B "$scratch/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" > "$out/build_time.log" 2>&1
targets=()
for t in "$@"; do targets+=(--target "$t"); done
started=$(date +%s.%N)
CCACHE_DISABLE=1 cmake --build "$scratch/build" -j "$(nproc)" "${targets[@]}" >> "$out/build_time.log" 2>&1
ended=$(date +%s.%N)
python3 - "$out/build_time.json" "$commit" "$started" "$ended" "${*:-everything}" <<'PY'
import json, os, platform, sys, datetime
path, commit, started, ended, what = sys.argv[1:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
row = {
    "device": f"{os.cpu_count()} cores, {cpu}",
    "os": platform.platform(),
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "commit": commit,
    "built": what,
    "seconds": round(float(ended) - float(started), 1),
}
json.dump(row, open(path, "w"), indent=2)
print(f"built {what} at {commit} in {row['seconds']:.0f} s on {row['device']}")
PY
