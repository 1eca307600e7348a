#!/bin/sh
# Builds what a distribution would ship, for the tests that check it
# (integration.release_hooks, integration.packages): a release
# configuration (no test hooks, no tests, prefix /usr) of eqota and
# eqota-gen in BUILD_DIR, and its Debian packages with CPack
# (cmake/EqInstall.cmake), written to BUILD_DIR/packages.
# Usage: release_build.sh SOURCE_DIR C_COMPILER BUILD_DIR
set -eu
src=$1 cc=$2 b=$3
rm -rf "$b"
mkdir -p "$b"
if ! cmake -S "$src" -B "$b" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
    -DEQ_TEST_HOOKS=OFF -DEQ_BUILD_TESTS=OFF -DEQ_HOST_TOOLS=ON -DEQ_WERROR=ON >"$b/configure.log" 2>&1; then
  cat "$b/configure.log"
  exit 1
fi
if ! cmake --build "$b" -j2 >"$b/build.log" 2>&1; then
  tail -n 40 "$b/build.log"
  exit 1
fi
# Fixed file times in the packages: the same sources give the same bytes.
if ! (cd "$b" && SOURCE_DATE_EPOCH=0 cpack -B "$b/packages" >"$b/cpack.log" 2>&1); then
  cat "$b/cpack.log"
  exit 1
fi
ls "$b/packages"/*.deb
