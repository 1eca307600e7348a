#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (missing packages, build) and runs every
# test: the whole CTest suite with -Werror, then the unit, integration and
# fuzz-replay tests once more under AddressSanitizer + UBSan. Both builds
# have the test hooks (EQ_TEST_HOOKS), which only tests may have. A test
# that cannot run here is reported as skipped with its reason, listed at
# the end; on a Debian 12 root machine set up by scripts/setup.sh none is.
# Usage: scripts/test.sh            (CI runs exactly this through .ci/run)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc)

"$top/scripts/setup.sh" "$top/build-ci" -DEQ_WERROR=ON -DEQ_TEST_HOOKS=ON
"$top/scripts/fetch-debs.sh"

status=0
echo "== ctest (all labels, -Werror build)"
ctest --test-dir "$top/build-ci" --output-on-failure -j"$jobs" || status=1

echo "== ctest under AddressSanitizer + UndefinedBehaviorSanitizer (unit, integration, fuzz)"
cmake -S "$top" -B "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DEQ_WERROR=ON -DEQ_TEST_HOOKS=ON \
  -DEQ_SANITIZE=address,undefined >/dev/null
cmake --build "$top/build-asan" -j"$jobs"
ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir "$top/build-asan" --output-on-failure -j"$jobs" -L 'unit|integration|fuzz' || status=1

# CTest names skipped tests but shows their output only with -V: the reasons.
for b in build-ci build-asan; do
  awk -v b="$b" '/^[0-9]+\/[0-9]+ Testing: / { t = $3 } /^SKIP: / && !seen[t $0]++ { print b ": " t ": " $0 }' \
    "$top/$b/Testing/Temporary/LastTest.log" 2>/dev/null || true
done
exit $status
