#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (missing packages, build) and runs every
# test: the whole CTest suite with -Werror, then the unit, integration and
# fuzz-replay tests once more under AddressSanitizer + UBSan. Both builds
# have the test hooks (EQ_TEST_HOOKS), which only tests may have. Last, a
# clang libFuzzer build (build-fuzz, no hooks) fuzzes every fuzz target for
# EQ_FUZZ_SECONDS (default 10) seconds, two at a time; a crash fails the run
# and names the saved input (docs/testing-in-ci.md, "Fuzzing"). A test
# that cannot run here is reported as skipped with its reason, listed at
# the end; on a Debian 12 root machine set up by scripts/setup.sh only the
# interop tests without EQ_BITBAKE_DIR and qemu.qemuarm64.daemon (left out
# of the suite for its time, tests/qemu/qemu.cmake) are.
# Usage: scripts/test.sh            (CI runs exactly this through .ci/run)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc)

"$top/scripts/setup.sh" "$top/build-ci" -DEQ_WERROR=ON -DEQ_TEST_HOOKS=ON
"$top/scripts/fetch-debs.sh"

# The next pass's build runs beside this pass's tests at idle priority
# (SCHED_IDLE: it gets only the CPU time the tests leave, waiting on
# servers, sleeps and QEMU's I/O), so the run does not stop to compile.
# idle_build LOG CMAKE-ARGS...: starts it, sets bg_pid.
idle_cmd=(chrt --idle 0)
"${idle_cmd[@]}" true 2>/dev/null || idle_cmd=(nice -n 19)
idle_build() {
  local log=$1
  shift
  ("${idle_cmd[@]}" cmake --build "$@" -j"$jobs" >"$log" 2>&1) &
  bg_pid=$!
}
# wait_build LOG: waits for it; a failed build shows its log and fails.
wait_build() {
  if ! wait "$bg_pid"; then
    tail -n 60 "$1"
    echo "build failed ($1)"
    exit 1
  fi
  tail -n 1 "$1"
}
# cpu_mark / cpu_busy: the share of the machine's CPU time in use between
# the two, from /proc/stat (what the next speed-up can count on).
cpu_mark() { read -r _ u n s i w q sq st _ </proc/stat; cpu0=$((u + n + s + q + sq + st)) idle0=$((i + w)); }
cpu_busy() {
  local u n s i w q sq st
  read -r _ u n s i w q sq st _ </proc/stat
  local busy=$((u + n + s + q + sq + st - cpu0)) idle=$((i + w - idle0))
  echo "cpu: $((100 * busy / (busy + idle + 1))) % busy during $1"
}

# -O1 for the sanitizer build, as AddressSanitizer's documentation advises
# for usable speed: the same checks, and eqota's own delta and payload
# code (the sanitizers do not reach into Debian's libzstd and mbedTLS) runs
# faster than at -O0 (unit.test_deltas: 22-26 s against 33-40 s, same
# loaded machine). Asserts stay on (Debug, no NDEBUG).
# UBSan traps (EQ_UBSAN_TRAP): the same checks without libubsan, so that
# LeakSanitizer's scan at each of the pass's thousands of process exits
# skips libubsan's zeroed globals; ASan's SIGILL report names the line.
cmake -S "$top" -B "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DEQ_WERROR=ON \
  -DEQ_TEST_HOOKS=ON -DEQ_SANITIZE=address,undefined -DEQ_UBSAN_TRAP=ON >/dev/null
idle_build "$top/build-asan/idle-build.log" "$top/build-asan"

status=0
echo "== ctest (all labels, -Werror build)"
cpu_mark
ctest --test-dir "$top/build-ci" --output-on-failure -j"$jobs" || status=1
cpu_busy "the suite (the sanitizer build beside it at idle priority)"

echo "== ctest under AddressSanitizer + UndefinedBehaviorSanitizer (unit, integration, fuzz)"
wait_build "$top/build-asan/idle-build.log"
# 10 s a target keeps the whole run under the hour on 2 cores; campaigns
# (bench/fuzz-campaign.sh) are where fuzzing finds things.
fuzz_seconds=${EQ_FUZZ_SECONDS:-10}
CC=clang cmake -S "$top" -B "$top/build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEQ_FUZZ=ON \
  -DEQ_FUZZ_SECONDS="$fuzz_seconds" >/dev/null
idle_build "$top/build-fuzz/idle-build.log" "$top/build-fuzz" --target eq_fuzz_targets
cpu_mark
ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:handle_sigill=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir "$top/build-asan" --output-on-failure -j"$jobs" -L 'unit|integration|fuzz' || status=1
cpu_busy "the sanitizer pass (the fuzz build beside it at idle priority)"

echo "== fuzzing: every fuzz target for ${fuzz_seconds} s (clang, libFuzzer, ASan + UBSan)"
wait_build "$top/build-fuzz/idle-build.log"
# -L '^fuzz': the corpus replays (fuzz.*) under libFuzzer, then the timed
# runs (fuzz-run.*); two at a time whatever nproc says, each run is one core.
ctest --test-dir "$top/build-fuzz" --output-on-failure -j2 -L '^fuzz' || status=1

# CTest names skipped tests but shows their output only with -V: the reasons.
for b in build-ci build-asan; do
  awk -v b="$b" '/^[0-9]+\/[0-9]+ Testing: / { t = $3 } /^SKIP: / && !seen[t $0]++ { print b ": " t ": " $0 }' \
    "$top/$b/Testing/Temporary/LastTest.log" 2>/dev/null || true
done
exit $status
