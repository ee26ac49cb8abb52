#!/bin/bash
# issue 35 (helper speed): `kopt run` throughput on the whole suite, one H100.
nvidia-smi -L
mkdir -p b && xz -dc .dev/speed/build.tar.xz | tar -C b -xf - || exit 1
export KOPT_COMMIT=$(cat .dev/speed/COMMIT)
keep() {  # the results and the daemon's own lines that matter, not every log
  mkdir -p "$OUT/$2"
  cp "$1"/daemon_throughput.* "$OUT/$2/" 2>/dev/null
  for f in "$1"/kopt-run-*.txt; do cp "$f" "$OUT/$2/"; done
  for f in "$1"/kopt-run-*.log; do
    grep -E "sanitiz|provisional|GPU workers|stopping|jobs at once|run [0-9]+ (finished|budget)" "$f" | tail -80 > "$OUT/$2/$(basename $f .log).lines.txt"
  done
}
bash .dev/speed/bench/run.sh daemon_throughput /tmp/excl --worker b/bin/kopt-sandbox --seconds ${SECONDS_PER_RUN:-50} --modes tuner,llm --tasks tasks --bin b/bin > $OUT/exclusive.txt 2>&1
keep /tmp/excl exclusive
tail -8 $OUT/exclusive.txt
KOPT_SANITIZER_LANE=concurrent bash .dev/speed/bench/run.sh daemon_throughput /tmp/conc --worker b/bin/kopt-sandbox --seconds ${CONC_SECONDS:-40} --modes llm --tasks tasks --bin b/bin > $OUT/concurrent.txt 2>&1
keep /tmp/conc concurrent
tail -5 $OUT/concurrent.txt
