#!/usr/bin/env bash
# The installer over the real Debian release pair (scripts/fetch-debs.sh):
# publish both releases with eqota-gen, provision slot A from release 1,
# update A -> B to release 2, and check each slot package by package (the
# payload rebuilt from the slot equals the manifest's) with nothing extra.
# Usage: install_debs.sh TEST_INSTALL EQOTA_GEN SOURCE_DIR
set -euo pipefail
drv=$1
gen=$2
src=$3
cache=${EQ_CACHE_DIR:-$src/.cache}/debs
level=${EQ_TEST_LEVEL:-9}
[ -d "$cache/release2" ] || "$src/scripts/fetch-debs.sh" "$cache" >/dev/null
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
. "$src/tests/integration/lib/check.sh"
field() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" <<<"$2"; }

"$gen" keygen --out rel >/dev/null
for r in 1 2; do
  "$gen" -q publish --repo repo --board qemux86-64 --channel stable --release "r$r" \
    --packages "$cache/release$r" --build-index "$cache/release$r.index" --key rel.key \
    --store store.db --level "$level" >/dev/null
done
n1=$(ls "$cache/release1" | wc -l)
mkdir A B wA wB

if out=$("$drv" --install repo qemux86-64 rel.pub 0 - 1 A wA); then
  echo "provision: $out"
  [ "$(field full "$out")" -eq "$n1" ] && [ "$(field fallback "$out")" -eq 0 ] &&
    pass "provision: $n1 packages from full objects, slot A equals release 1" ||
    fail "provision counts: $out"
else
  fail "provision"
fi

if out=$("$drv" --install repo qemux86-64 rel.pub 1 A 2 B wB); then
  echo "update: $out"
  kept=$(field kept "$out"); delta=$(field delta "$out"); fb=$(field fallback "$out")
  fetched=$(field fetched "$out"); planned=$(field planned "$out"); full=$(field full_release "$out")
  [ "$kept" -gt 0 ] && [ "$delta" -gt 0 ] && [ "$fb" -eq 0 ] &&
    pass "update: $kept kept, $delta as deltas, no fallback, slot B equals release 2" ||
    fail "update counts: $out"
  [ "$fetched" -eq "$planned" ] && pass "update fetched exactly the planned $planned bytes" ||
    fail "fetched $fetched bytes, planned $planned"
  [ $((fetched * 10)) -lt "$full" ] && pass "update fetched under 10 % of the full release ($full bytes)" ||
    fail "fetched $fetched of $full bytes"
else
  fail "update"
fi
[ "$(find wA wB -name '.eq-*' | wc -l)" -eq 0 ] && pass "no temporary payload left" || fail "temporary files left"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
