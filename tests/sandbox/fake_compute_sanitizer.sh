#!/bin/sh
# A stand-in for compute-sanitizer (sanitizer_report_test.cc): takes the options kopt passes,
# writes the recorded report in $KOPT_FAKE_SANITIZER_REPORT to --log-file when --tool is the one
# named in $KOPT_FAKE_SANITIZER_FINDS (else a clean report), then runs the worker in its place.
# With $KOPT_FAKE_SANITIZER_FILTERS set, appends "TOOL: FILTER..." (its --kernel-name values) there.
tool=""
log=""
filters=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool=$2; shift 2 ;;
    --log-file) log=$2; shift 2 ;;
    --print-limit|--report-api-errors) shift 2 ;;
    --kernel-name) filters="$filters $2"; shift 2 ;;
    *) break ;;
  esac
done
worker=$1
shift
if [ -n "${KOPT_FAKE_SANITIZER_FILTERS:-}" ]; then
  echo "$tool:$filters" >> "$KOPT_FAKE_SANITIZER_FILTERS"
fi
if [ -n "$tool" ] && [ "$tool" = "${KOPT_FAKE_SANITIZER_FINDS:-}" ]; then
  cat "$KOPT_FAKE_SANITIZER_REPORT" > "$log"
else
  printf '========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n' > "$log"
fi
exec "$worker" --device 0
