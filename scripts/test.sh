#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (missing packages, build) and runs every
# test: the whole CTest suite with -Werror, then the unit, integration and
# fuzz-replay tests once more under AddressSanitizer + UBSan.
# Usage: scripts/test.sh            (CI runs exactly this through .ci/run)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc)

"$top/scripts/setup.sh" "$top/build-ci" -DEQ_WERROR=ON
"$top/scripts/fetch-debs.sh"

status=0
echo "== ctest (all labels, -Werror build)"
ctest --test-dir "$top/build-ci" --output-on-failure -j"$jobs" || status=1

echo "== ctest under AddressSanitizer + UndefinedBehaviorSanitizer (unit, integration, fuzz)"
cmake -S "$top" -B "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DEQ_WERROR=ON \
  -DEQ_SANITIZE=address,undefined >/dev/null
cmake --build "$top/build-asan" -j"$jobs"
ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir "$top/build-asan" --output-on-failure -j"$jobs" -L 'unit|integration|fuzz' || status=1

exit $status
