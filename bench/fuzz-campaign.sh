#!/usr/bin/env bash
# A longer fuzzing campaign over every fuzz target (or the ones named):
#   bench/fuzz-campaign.sh [SECONDS] [TARGET...]      e.g. bench/fuzz-campaign.sh 3600
# SECONDS per target (default 600), JOBS targets at a time (default 2),
# BUILD the clang EQ_FUZZ build folder (default build-fuzz, configured and
# built here). Each target runs as its fuzz-run.<name> CTest test
# (tests/fuzz/run.sh): its corpus grows in BUILD/fuzz-run/<name>/corpus and
# is kept for the next campaign; crashes are saved next to it. Prints a
# table: target, edges (libFuzzer's cov), features (ft), executions,
# exec/s, crashes (crash-, leak-, timeout-, oom- files). Exit status 1 when
# any target crashed. See docs/testing-in-ci.md, "Fuzzing".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
shift || true
jobs=${JOBS:-2}
build=${BUILD:-$top/build-fuzz}
case "$build" in /*) ;; *) build=$top/$build ;; esac

CC=clang cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEQ_FUZZ=ON -DEQ_FUZZ_SECONDS="$secs" \
  >/dev/null || exit 1
cmake --build "$build" --target eq_fuzz_targets -j"$(nproc)" >/dev/null || exit 1

regex='^fuzz-run\.'
if [ $# -gt 0 ]; then
  regex="^fuzz-run\\.($(IFS='|'; echo "$*"))\$"
fi
ctest --test-dir "$build" -R "$regex" -j"$jobs" >"$build/fuzz-campaign.log" 2>&1
status=0

printf '%-14s %8s %9s %12s %9s %8s\n' target edges features executions exec/s crashes
for log in "$build"/fuzz-run/*/fuzz.log; do
  [ -f "$log" ] || continue
  d=$(dirname "$log")
  name=$(basename "$d")
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
    continue
  fi
  last=$(grep -E 'cov: [0-9]+' "$log" | tail -n 1)
  cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$last")
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log")
  rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log")
  crashes=$(find "$d" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  [ "$crashes" -eq 0 ] || status=1
  printf '%-14s %8s %9s %12s %9s %8s\n' "$name" "${cov:--}" "${ft:--}" "${execs:--}" "${rate:--}" "$crashes"
done
if [ $status -ne 0 ]; then
  echo "crash inputs:"
  find "$build/fuzz-run" -maxdepth 2 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort
fi
exit $status
