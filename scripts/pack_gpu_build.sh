#!/bin/bash
# Packs a built tree for a run on the lent GPU machine: the binaries, the gpu-labelled test
# executables (stripped) and the ctest files, as DEST/build.tar.xz (a few MiB; the device has xz,
# not zstd), with the commit in DEST/COMMIT. Usage: scripts/pack_gpu_build.sh REPO DEST
# (DEST an ignored folder such as REPO/.dev/final; docs/gpu-runs/2026-11-27-h100-gpu-label/run.sh
# unpacks and runs it).
set -e
src=$1; dest=$2
rm -rf "$dest"; mkdir -p "$dest"; stage=$(mktemp -d)
cd "$src/build"
exes=$(ctest -N -L gpu -V 2>/dev/null | grep -oE "Test command: [^ ]+" | awk '{print $3}' | grep "^$src/build" | sort -u)
# The test helpers the gpu tests start by path (kopt_gpu_context_holder and the like) too.
helpers=$(find tests/support -maxdepth 1 -type f -executable -name 'kopt_*' 2>/dev/null)
for f in bin/kopt bin/kopt-compile bin/kopt-sandbox bin/kopt-leash bin/fake-llm-server $helpers $(echo "$exes" | sed "s#^$src/build/##"); do
  mkdir -p "$stage/$(dirname $f)"; strip -o "$stage/$f" "$f"
done
find . -name CTestTestfile.cmake -o -name '*_include-*.cmake' -o -name '*_tests-*.cmake' | while read f; do mkdir -p "$stage/$(dirname $f)"; cp "$f" "$stage/$f"; done
find . -path ./CMakeFiles -prune -o -name '*.cmake' -path '*tests*' -print | while read f; do mkdir -p "$stage/$(dirname $f)"; cp -n "$f" "$stage/$f"; done
git -C "$src" rev-parse --short HEAD > "$dest/COMMIT"
tar -C "$stage" -cf - . | xz -T2 -6 > "$dest/build.tar.xz"
rm -rf "$stage"; du -sh "$dest"
