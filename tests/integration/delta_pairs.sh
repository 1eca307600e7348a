#!/bin/bash
# integration.delta_pairs: on real Debian package pairs (bookworm point
# release vs bookworm-security), create and apply each delta with eq-delta,
# check the result is the new payload byte for byte, and that applying to
# the wrong reference fails with a verification error and leaves no output;
# creation is deterministic (a second run gives the same bytes) and a delta
# forced to method 1 (bsdiff-class) round-trips too.
# Usage: delta_pairs.sh EQ_DELTA [EQ_PAYLOAD]
set -euo pipefail
EQ_DELTA=${1:?usage: delta_pairs.sh EQ_DELTA [EQ_PAYLOAD]}
SRC=${EQ_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
EQ_PAYLOAD=${2:-${EQ_BUILD_DIR:-$SRC/build-deltas}/tests/eq-payload}
CACHE=${EQ_CACHE_DIR:-$SRC/.cache}
PAIRS_DIR=$CACHE/debs/pairs
PKGS=${DELTA_PAIRS_PKGS:-"libc6 libssl3 libcurl4 systemd perl-base libsystemd0 openssl zlib1g libexpat1 libxml2"}
WORK=$(mktemp -d /tmp/eq-delta-pairs.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

. "$SRC/bench/delta-pairs-lib.sh"

fetch_pairs "$PAIRS_DIR" $PKGS
n=0
while read -r pkg old new; do
	O=$WORK/$pkg.old.tar N=$WORK/$pkg.new.tar
	make_payload "$PAIRS_DIR" "$pkg" "$old" "$O"
	make_payload "$PAIRS_DIR" "$pkg" "$new" "$N"
	"$EQ_DELTA" create "$O" "$N" "$WORK/d" >/dev/null
	"$EQ_DELTA" apply "$O" "$WORK/d" "$WORK/out"
	cmp "$N" "$WORK/out"
	# Determinism and the forced bsdiff-class method on the smaller pairs:
	# creating libc6's delta three times would only cost minutes.
	if [ "$(stat -c%s "$N")" -lt 4000000 ]; then
		"$EQ_DELTA" create "$O" "$N" "$WORK/d2" >/dev/null
		cmp "$WORK/d" "$WORK/d2"
		"$EQ_DELTA" create -m 2 -l 9 "$O" "$N" "$WORK/d1" >/dev/null
		"$EQ_DELTA" info "$WORK/d1" | grep -qx "method 1"
		"$EQ_DELTA" apply "$O" "$WORK/d1" "$WORK/out"
		cmp "$N" "$WORK/out"
	fi
	method=$("$EQ_DELTA" info "$WORK/d" | awk '/^method/ { print $2 }')
	if "$EQ_DELTA" apply "$N" "$WORK/d" "$WORK/bad" 2>"$WORK/err"; then
		echo "FAIL: $pkg: delta applied to the wrong reference" >&2
		exit 1
	fi
	grep -q "verification failed" "$WORK/err"
	test ! -e "$WORK/bad" && test ! -e "$WORK/bad.tmp"
	echo "ok $pkg $old -> $new ($(stat -c%s "$WORK/d") bytes, method $method, payload $PAYLOAD_TOOL)"
	n=$((n + 1))
done < <(list_pairs "$PAIRS_DIR" $PKGS)
test "$n" -gt 0
echo "$n pairs ok"
