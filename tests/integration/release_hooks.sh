#!/bin/bash
# Finding 8 of issue 12: no test hook in an installed build. Configures a
# release build (EQ_TEST_HOOKS=OFF, EQ_BUILD_TESTS=OFF) in a temporary
# folder, builds only eqota and eqota-gen, and searches both binaries
# (strings and symbol table) for every hook name:
#   - each EQ_TEST_* name in the sources of the libraries and programs
#     (the environment variables EQ_TEST_NOW, EQ_TEST_NO_OPENAT2,
#     EQ_TEST_PUBLISH_UNCHECKED, ... and the EQ_TEST_HOOKS macro),
#   - the hook functions and variables (eq_alloc_fail_at,
#     eq_bl_grub_crash_at, eq_bl_grub_inspect) and "test hook" (the grub
#     backend's simulated power cut, the "(test hooks)" of --version).
# Usage: release_hooks.sh SOURCE_DIR C_COMPILER [BUILT_DIR]
# With BUILT_DIR (CTest passes release_build.sh's), that build's eqota and
# eqota-gen are checked, and the programs in its Debian packages
# (BUILT_DIR/packages/*.deb) too; without, a release build is made here.
# A build with hooks as BUILT_DIR shows the check fail.
set -eu
src=$1 cc=$2 built=${3:-}
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"

names=$(cd "$src" && grep -rhoE 'EQ_TEST_[A-Z0-9_]+' --include='*.c' --include='*.h' \
  common agent manifest delta bootloader | sort -u)
case "$names" in
*EQ_TEST_NOW*) ;;
*) echo "release_hooks: found no EQ_TEST_NOW in the sources: the name search is broken"; exit 1 ;;
esac
names="$names eq_alloc_fail_at eq_bl_grub_crash_at eq_bl_grub_inspect"

if [ -z "$built" ]; then
  tmp=$(mktemp -d /tmp/eq-release-hooks.XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  built=$tmp
  if ! cmake -S "$src" -B "$tmp" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DEQ_TEST_HOOKS=OFF -DEQ_BUILD_TESTS=OFF -DEQ_HOST_TOOLS=ON >"$tmp/configure.log" 2>&1; then
    cat "$tmp/configure.log"
    exit 1
  fi
  if ! cmake --build "$tmp" --target eqota eqota-gen -j2 >"$tmp/build.log" 2>&1; then
    tail -n 40 "$tmp/build.log"
    exit 1
  fi
fi

bins="$built/agent/eqota $built/eqota-gen"
for deb in "$built"/packages/*.deb; do
  [ -f "$deb" ] || continue
  x=$(mktemp -d /tmp/eq-release-deb.XXXXXX)
  dpkg-deb -x "$deb" "$x"
  for p in "$x"/usr/bin/*; do
    cp "$p" "$built/packages/$(basename "$deb" .deb).$(basename "$p")"
    bins="$bins $built/packages/$(basename "$deb" .deb).$(basename "$p")"
  done
  rm -rf "$x"
done
for bin in $bins; do
  if [ ! -f "$bin" ]; then
    echo "release_hooks: $bin was not built"
    exit 1
  fi
  for n in $names; do
    if grep -aq -- "$n" "$bin"; then
      fail "$bin contains the test hook name '$n'"
    fi
  done
  if grep -aqi -- "test hook" "$bin"; then
    fail "$bin contains 'test hook' (a hook's message or the '(test hooks)' version suffix)"
  fi
  v=$("$bin" --version 2>&1 || true)
  case "$v" in
  *"test hooks"*) fail "$bin --version says '$v'" ;;
  esac
done
[ "$fails" -eq 0 ] || exit 1
pass "eqota and eqota-gen carry none of: $names, 'test hook'"
