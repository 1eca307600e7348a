#!/bin/bash
# integration.delta_pairs: on real Debian package pairs (bookworm point
# release vs bookworm-security), create and apply each delta with eq-delta,
# check the result is the new payload byte for byte, and that applying to
# the wrong reference fails with a verification error and leaves no output;
# creation is deterministic (a second run gives the same bytes) and a delta
# forced to method 1 (bsdiff-class) round-trips too. Every package named
# must have been measured, or the test fails. Packages missing from the
# cache are downloaded; offline, that is a skip (lib/archive.sh).
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

# shellcheck source=bench/delta-pairs-lib.sh
. "$SRC/bench/delta-pairs-lib.sh"
# shellcheck source=tests/integration/lib/check.sh
. "$SRC/tests/integration/lib/check.sh"
# shellcheck source=tests/integration/lib/archive.sh
. "$SRC/tests/integration/lib/archive.sh"

read -ra pkgs <<<"$PKGS"
have() { list_pairs "$PAIRS_DIR" "$1" | grep -q .; }
missing=()
for p in "${pkgs[@]}"; do have "$p" || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
	archive_need "${missing[0]}"
	fetch_pairs "$PAIRS_DIR" "${missing[@]}"
fi

# measure PKG OLD NEW: the checks of one pair; 1 (with the reason on
# stdout) at the first that fails
measure() {
	local pkg=$1 old=$2 new=$3 O=$WORK/$1.old.tar N=$WORK/$1.new.tar method
	make_payload "$PAIRS_DIR" "$pkg" "$old" "$O" || { echo "no payload of $old"; return 1; }
	make_payload "$PAIRS_DIR" "$pkg" "$new" "$N" || { echo "no payload of $new"; return 1; }
	rm -f "$WORK/d" "$WORK/out" "$WORK/bad" "$WORK/bad.tmp"
	"$EQ_DELTA" create "$O" "$N" "$WORK/d" >/dev/null || { echo "create failed"; return 1; }
	"$EQ_DELTA" apply "$O" "$WORK/d" "$WORK/out" || { echo "apply failed"; return 1; }
	cmp -s "$N" "$WORK/out" || { echo "applied delta differs from the new payload"; return 1; }
	# Determinism and the forced bsdiff-class method on the smaller pairs:
	# creating libc6's delta three times would only cost minutes.
	if [ "$(stat -c%s "$N")" -lt 4000000 ]; then
		"$EQ_DELTA" create "$O" "$N" "$WORK/d2" >/dev/null || { echo "second create failed"; return 1; }
		cmp -s "$WORK/d" "$WORK/d2" || { echo "creation is not deterministic"; return 1; }
		"$EQ_DELTA" create -m 2 -l 9 "$O" "$N" "$WORK/d1" >/dev/null || { echo "create -m 2 failed"; return 1; }
		"$EQ_DELTA" info "$WORK/d1" | grep -qx "method 1" || { echo "create -m 2 did not give method 1"; return 1; }
		"$EQ_DELTA" apply "$O" "$WORK/d1" "$WORK/out" || { echo "apply of method 1 failed"; return 1; }
		cmp -s "$N" "$WORK/out" || { echo "method 1 result differs from the new payload"; return 1; }
	fi
	method=$("$EQ_DELTA" info "$WORK/d" | awk '/^method/ { print $2 }')
	if "$EQ_DELTA" apply "$N" "$WORK/d" "$WORK/bad" 2>"$WORK/err"; then
		echo "delta applied to the wrong reference"
		return 1
	fi
	grep -q "verification failed" "$WORK/err" || { echo "wrong reference: $(cat "$WORK/err")"; return 1; }
	[ ! -e "$WORK/bad" ] && [ ! -e "$WORK/bad.tmp" ] || { echo "wrong reference left output"; return 1; }
	echo "$old -> $new ($(stat -c%s "$WORK/d") bytes, method $method, payload $PAYLOAD_TOOL)"
}

measured=() tried=()
while read -r pkg old new; do
	tried+=("$pkg")
	if r=$(measure "$pkg" "$old" "$new"); then
		pass "$pkg $r"
		measured+=("$pkg")
	else
		fail "$pkg $old -> $new: $r"
	fi
done < <(list_pairs "$PAIRS_DIR" "${pkgs[@]}")
for p in "${pkgs[@]}"; do
	case " ${tried[*]} " in
	*" $p "*) ;;
	*) fail "$p: not measured: $PAIRS_DIR lacks two versions of it (the download failed)" ;;
	esac
done
echo "${#measured[@]} of ${#pkgs[@]} pairs measured"
[ "$fails" -eq 0 ]
