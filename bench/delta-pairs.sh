#!/bin/bash
# Delta sizes on real Debian package pairs (bookworm point release vs
# bookworm-security): eqota delta vs full object, bsdiff, xdelta3 and
# zstd --patch-from, all on the same canonical payloads; then the peak RSS
# of applying the largest delta next to eq_delta_apply_mem_bound().
# Usage: bench/delta-pairs.sh [BUILD_DIR]   (default build-deltas)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build-deltas}
EQ_DELTA=$BUILD/tests/eq-delta
EQ_PAYLOAD=$BUILD/tests/eq-payload
PAIRS_DIR=$SRC/.cache/debs/pairs
PKGS=${DELTA_PAIRS_PKGS:-"libc6 libssl3 libcurl4 systemd perl-base libsystemd0 openssl zlib1g libexpat1 libxml2 bash"}
[ -x "$EQ_DELTA" ] || { echo "build first: $EQ_DELTA missing" >&2; exit 1; }
need=()
command -v bsdiff >/dev/null || need+=(bsdiff)
command -v xdelta3 >/dev/null || need+=(xdelta3)
command -v zstd >/dev/null || need+=(zstd)
[ -x /usr/bin/time ] || need+=(time)
if [ "${#need[@]}" -gt 0 ]; then
	apt-get install -y -qq "${need[@]}" >/dev/null
fi
WORK=$(mktemp -d /tmp/eq-bench-delta.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
. "$SRC/bench/delta-pairs-lib.sh"
. "$SRC/bench/lib.sh"

fetch_pairs "$PAIRS_DIR" $PKGS
for p in $PKGS; do
	if [ "$(list_pairs "$PAIRS_DIR" "$p" | wc -l)" -eq 0 ]; then
		echo "note: $p has a single version in the apt lists ($(apt-cache madison "$p" | awk -F'|' '{gsub(/ /,"",$2); print $2}' | tr '\n' ' ')), no pair"
	fi
done

sz() { stat -c%s "$1"; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f%%", 100 * a / b }'; }
printf '%-12s %-22s %-22s %10s %9s %9s %9s %9s %9s %8s %8s\n' package old new payload full eqota bsdiff xdelta3 zstd-pf eq/full eq/bsd
tot_new=0 tot_full=0 tot_eq=0 tot_bsd=0 tot_xd=0 tot_zs=0 tot_secs=0 tot_bsecs=0 tot_tsecs=0
CORES=$(nproc)
gz_changed=0 gz_repro=0 gz_changed_b=0 gz_repro_b=0
: >"$WORK/gz_why"
largest=0 largest_pkg=
while read -r pkg old new; do
	O=$WORK/$pkg.old.tar N=$WORK/$pkg.new.tar
	make_payload "$PAIRS_DIR" "$pkg" "$old" "$O"
	make_payload "$PAIRS_DIR" "$pkg" "$new" "$N"
	"$EQ_DELTA" compress -l 19 "$N" "$WORK/full" >/dev/null
	t0=$(date +%s.%N)
	"$EQ_DELTA" create "$O" "$N" "$WORK/$pkg.delta" >/dev/null
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	"$EQ_DELTA" apply "$O" "$WORK/$pkg.delta" "$WORK/out"
	cmp -s "$N" "$WORK/out" || { echo "FAIL: $pkg: delta result differs" >&2; exit 1; }
	# The filter trials on every core, as eqota-gen publish runs them:
	# the same bytes, sooner.
	t0=$(date +%s.%N)
	"$EQ_DELTA" create -T "$CORES" "$O" "$N" "$WORK/$pkg.delta-T" >/dev/null
	tsecs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	cmp -s "$WORK/$pkg.delta" "$WORK/$pkg.delta-T" || { echo "FAIL: $pkg: -T $CORES gave other bytes" >&2; exit 1; }
	tot_tsecs=$(awk -v a="$tot_tsecs" -v b="$tsecs" 'BEGIN { print a + b }')
	t0=$(date +%s.%N)
	bsdiff "$O" "$N" "$WORK/bsd"
	bsecs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	tot_secs=$(awk -v a="$tot_secs" -v b="$secs" 'BEGIN { print a + b }')
	tot_bsecs=$(awk -v a="$tot_bsecs" -v b="$bsecs" 'BEGIN { print a + b }')
	xdelta3 -e -9 -S djw -f -s "$O" "$N" "$WORK/xd"
	zstd -q -f -19 --long=31 --patch-from="$O" "$N" -o "$WORK/zs" 2>/dev/null
	n=$(sz "$N") f=$(sz "$WORK/full") e=$(sz "$WORK/$pkg.delta") b=$(sz "$WORK/bsd") x=$(sz "$WORK/xd") z=$(sz "$WORK/zs")
	filter=$("$EQ_DELTA" info "$WORK/$pkg.delta" | awk '/^filter/ { print $2 }')
	method=$("$EQ_DELTA" info "$WORK/$pkg.delta" | awk '/^method/ { print $2 }')
	printf '%-12s %-22s %-22s %10d %9d %9d %9d %9d %9d %8s %8s  method=%s filter=%s create=%ss create_T%s=%ss bsdiff=%ss\n' "$pkg" "$old" "$new" "$n" "$f" "$e" "$b" "$x" "$z" \
		"$(pct "$e" "$f")" "$(pct "$e" "$b")" "$method" "$filter" "$secs" "$CORES" "$tsecs" "$bsecs"
	tot_new=$((tot_new + n)) tot_full=$((tot_full + f)) tot_eq=$((tot_eq + e))
	tot_bsd=$((tot_bsd + b)) tot_xd=$((tot_xd + x)) tot_zs=$((tot_zs + z))
	if [ "$n" -gt "$largest" ]; then largest=$n largest_pkg=$pkg; fi
	"$EQ_DELTA" gzstat "$O" "$N" >"$WORK/gz"
	gz_changed=$((gz_changed + $(awk '$1 == "gz_changed" { print $2 }' "$WORK/gz")))
	gz_repro=$((gz_repro + $(awk '$1 == "gz_reproduced" { print $2 }' "$WORK/gz")))
	gz_changed_b=$((gz_changed_b + $(awk '$1 == "gz_changed_bytes" { print $2 }' "$WORK/gz")))
	gz_repro_b=$((gz_repro_b + $(awk '$1 == "gz_reproduced_bytes" { print $2 }' "$WORK/gz")))
	awk '$1 == "not_reproduced" { c = $2; $1 = ""; $2 = ""; for (i = 0; i < c; i++) print }' "$WORK/gz" >>"$WORK/gz_why"
	rm -f "$WORK/out" "$WORK/full"
done < <(list_pairs "$PAIRS_DIR" $PKGS)
printf '%-12s %-22s %-22s %10d %9d %9d %9d %9d %9d %8s %8s\n' SUM "" "" "$tot_new" "$tot_full" "$tot_eq" "$tot_bsd" "$tot_xd" "$tot_zs" \
	"$(pct "$tot_eq" "$tot_full")" "$(pct "$tot_eq" "$tot_bsd")"
echo "payloads made with: $PAYLOAD_TOOL"
echo "delta creation time: eqota-gen's differ ${tot_secs} s on one core, ${tot_tsecs} s with its filter trials on $CORES (publish does so), bsdiff ${tot_bsecs} s (one core)"
echo "eqota sum vs: bsdiff $(pct "$tot_eq" "$tot_bsd"), xdelta3 $(pct "$tot_eq" "$tot_xd"), zstd --patch-from $(pct "$tot_eq" "$tot_zs")"
if [ $((tot_eq * 3)) -le "$tot_bsd" ]; then echo "target met: eqota sum <= 1/3 of bsdiff sum"; else echo "target NOT met: eqota sum > 1/3 of bsdiff sum"; fi
printf 'changed .gz files (content not in the old payload): %d, reproduced exactly by the device: %d (%d of %d bytes)\n' \
	"$gz_changed" "$gz_repro" "$gz_repro_b" "$gz_changed_b"
[ -s "$WORK/gz_why" ] && sort "$WORK/gz_why" | awk '{ n[$0]++ } END { for (w in n) print "  not reproduced: " n[w] " x " w }'

# Peak RSS of applying the largest delta vs the documented bound.
D=$WORK/$largest_pkg.delta
"$EQ_DELTA" info "$D" >"$WORK/info"
bound=$(awk '/^mem_bound/ { print $2 }' "$WORK/info")
wlog=$(awk '/^window_log/ { print $2 }' "$WORK/info")
rss() { /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F: '/Maximum resident set size/ { gsub(/ /, "", $2); print $2 * 1024 }'; }
base=$(rss "$EQ_DELTA" membound 0 10)
peak=$(rss "$EQ_DELTA" apply "$WORK/$largest_pkg.old.tar" "$D" "$WORK/out")
cmp -s "$WORK/$largest_pkg.new.tar" "$WORK/out"
echo "apply $largest_pkg (window 2^$wlog): peak RSS $peak bytes, process baseline $base bytes," \
	"library use <= $((peak - base)); eq_delta_apply_mem_bound = $bound: $([ $((peak - base)) -le "$bound" ] && echo holds || echo EXCEEDED)"
anon=$(peak_anon "$EQ_DELTA" apply "$WORK/$largest_pkg.old.tar" "$D" "$WORK/out")
regions=$(awk '/^gzip_regions/ { print $2 }' "$WORK/info")
abound=$(( (1 << wlog) + 4 * 1024 * 1024 + ${regions:-0} * 24 + 3072 ))
echo "apply $largest_pkg: peak anonymous memory $anon bytes (the reference images are file-backed);" \
	"2^window + 4 MiB + region table <= $abound: $([ "$anon" -le "$abound" ] && echo holds || echo EXCEEDED)"
