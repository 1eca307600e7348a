#!/usr/bin/env bash
# The demo release pair (scripts/fetch-debs.sh: 135 Debian 12 packages, a few
# security updates apart), measured end to end in one run:
#   - time of `eqota-gen publish` for release 1, release 2, and release 2 again
#   - full set compressed (the release's zstd -19 objects), the changed
#     packages as full objects, as eqota deltas, and the same pairs with
#     bsdiff, xdelta3 and zstd --patch-from, all on the same canonical payloads
#   - peak RSS of applying the largest eqota delta
# Usage: bench/release-pair.sh [BUILD_DIR]      (default: build)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
gen=$build/eqota-gen
eqd=$build/tests/eq-delta
[ -x "$gen" ] && [ -x "$eqd" ] || { echo "build first: cmake --build $build" >&2; exit 1; }
need=()
for t in bsdiff xdelta3 zstd; do command -v $t >/dev/null || need+=("$t"); done
[ -x /usr/bin/time ] || need+=(time)
[ ${#need[@]} -eq 0 ] || apt-get install -y -qq "${need[@]}" >/dev/null
cache=$src/.cache/debs
[ -d "$cache/release2" ] || "$src/scripts/fetch-debs.sh" >/dev/null
w=$(mktemp -d /tmp/eq-bench-release.XXXXXX)
trap 'rm -rf "$w"' EXIT
cd "$w"
"$gen" keygen --out k >/dev/null
B=(--repo repo --board qemux86-64 --channel stable --key k.key --store store.db --level 19)
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}'; }
t1=$(secs "$gen" -q publish "${B[@]}" --release r1 --packages "$cache/release1" --build-index "$cache/release1.index")
t2=$(secs "$gen" -q publish "${B[@]}" --release r2 --packages "$cache/release2" --build-index "$cache/release2.index")
t3=$(secs "$gen" -q publish "${B[@]}" --release r3 --packages "$cache/release2" --build-index "$cache/release2.index")

"$gen" show --repo repo --board qemux86-64 --channel stable --release r1 --json > r1.json
"$gen" show --repo repo --board qemux86-64 --channel stable --release r2 --json > r2.json
# name old_object old_payload new_object new_payload delta_path (for changed packages)
python3 - r1.json r2.json > changed.txt <<'PY'
import json, sys
a = {p["name"]: p for p in json.load(open(sys.argv[1]))["packages"]}
b = json.load(open(sys.argv[2]))
full = sum(p["object"]["size"] for p in b["packages"])
print("#full", full, len(b["packages"]))
for p in b["packages"]:
    o = a.get(p["name"])
    if o and o["unihash"] != p["unihash"]:
        d = [x for x in p["deltas"] if x["from"] == o["payload"]["sha256"]]
        print(p["name"], o["object"]["path"], p["object"]["path"], p["object"]["size"], p["payload"]["size"],
              d[0]["path"] if d else "-")
PY
read -r _ full_set npk < <(grep '^#full' changed.txt)
sz() { stat -c %s "$1"; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f%%", 100 * a / b }'; }
printf '%-12s %10s %10s %10s %10s %10s %10s\n' package payload full eqota bsdiff xdelta3 zstd-pf
s_full=0 s_eq=0 s_bsd=0 s_xd=0 s_zs=0 largest=0 largest_d=
gz_changed=0 gz_repro=0 gz_changed_b=0 gz_repro_b=0
: > gz_why
while read -r name oobj nobj nsize psize dpath; do
  [ "$name" = "#full" ] && continue
  zstd -q -d -f "repo/$oobj" -o old.tar
  zstd -q -d -f "repo/$nobj" -o new.tar
  if [ "$dpath" != - ]; then e=$(sz "repo/$dpath"); else e=$nsize; fi
  bsdiff old.tar new.tar p.bsd; b=$(sz p.bsd)
  xdelta3 -e -9 -S djw -f -s old.tar new.tar p.xd; x=$(sz p.xd)
  zstd -q -f -19 --long=31 --patch-from=old.tar new.tar -o p.zs 2>/dev/null; z=$(sz p.zs)
  printf '%-12s %10d %10d %10d %10d %10d %10d\n' "$name" "$psize" "$nsize" "$e" "$b" "$x" "$z"
  "$eqd" gzstat old.tar new.tar > gz
  gz_changed=$((gz_changed + $(awk '$1 == "gz_changed" { print $2 }' gz)))
  gz_repro=$((gz_repro + $(awk '$1 == "gz_reproduced" { print $2 }' gz)))
  gz_changed_b=$((gz_changed_b + $(awk '$1 == "gz_changed_bytes" { print $2 }' gz)))
  gz_repro_b=$((gz_repro_b + $(awk '$1 == "gz_reproduced_bytes" { print $2 }' gz)))
  awk '$1 == "not_reproduced" { c = $2; $1 = ""; $2 = ""; for (i = 0; i < c; i++) print }' gz >> gz_why
  s_full=$((s_full + nsize)) s_eq=$((s_eq + e)) s_bsd=$((s_bsd + b)) s_xd=$((s_xd + x)) s_zs=$((s_zs + z))
  if [ "$dpath" != - ] && [ "$psize" -gt "$largest" ]; then largest=$psize; largest_d=$dpath; cp old.tar largest.ref; cp new.tar largest.new; fi
done < changed.txt
printf '%-12s %10s %10d %10d %10d %10d %10d\n' SUM "" "$s_full" "$s_eq" "$s_bsd" "$s_xd" "$s_zs"
echo
printf '%-46s %12s %8s\n' "what a device on release 1 downloads" bytes "of full"
printf '%-46s %12d %8s\n' "full set, $npk packages (zstd -19 objects)" "$full_set" "100%"
printf '%-46s %12d %8s\n' "changed packages as full objects" "$s_full" "$(pct "$s_full" "$full_set")"
printf '%-46s %12d %8s\n' "changed packages as eqota deltas" "$s_eq" "$(pct "$s_eq" "$full_set")"
printf '%-46s %12d %8s\n' "changed packages as bsdiff patches" "$s_bsd" "$(pct "$s_bsd" "$full_set")"
printf '%-46s %12d %8s\n' "changed packages as xdelta3 -9 patches" "$s_xd" "$(pct "$s_xd" "$full_set")"
printf '%-46s %12d %8s\n' "changed packages as zstd -19 --patch-from" "$s_zs" "$(pct "$s_zs" "$full_set")"
echo "eqota deltas vs: bsdiff $(pct "$s_eq" "$s_bsd"), xdelta3 $(pct "$s_eq" "$s_xd"), zstd --patch-from $(pct "$s_eq" "$s_zs")"
if [ $((s_eq * 3)) -le "$s_bsd" ]; then echo "target met: eqota sum <= 1/3 of bsdiff sum"; else echo "target NOT met: eqota sum > 1/3 of bsdiff sum"; fi
printf 'changed .gz files (content not in the old payload): %d, reproduced exactly by the device: %d (%d of %d bytes)\n' \
  "$gz_changed" "$gz_repro" "$gz_repro_b" "$gz_changed_b"
[ -s gz_why ] && sort gz_why | awk '{ n[$0]++ } END { for (w in n) print "  not reproduced: " n[w] " x " w }'
echo
if [ -n "$largest_d" ]; then
  peak=$(/usr/bin/time -v "$eqd" apply largest.ref "repo/$largest_d" out.tar 2>&1 >/dev/null | awk -F: '/Maximum resident/ {gsub(/ /,"",$2); print $2}')
  cmp -s out.tar largest.new || { echo "FAIL: applying $largest_d gave other bytes" >&2; exit 1; }
  bound=$("$eqd" info "repo/$largest_d" | awk '/^mem_bound/ {print $2}')
  echo "apply largest delta (reference payload $largest bytes): peak RSS $peak KiB; documented bound $bound bytes"
  . "$src/bench/lib.sh"
  echo "apply largest delta: peak anonymous memory $(peak_anon "$eqd" apply largest.ref "repo/$largest_d" out.tar) bytes" \
    "(reference images file-backed)"
fi
echo
printf '%-40s %8s\n' "eqota-gen publish" seconds
printf '%-40s %8s\n' "release 1, first time (all objects)" "$t1"
printf '%-40s %8s\n' "release 2 (changed objects + deltas)" "$t2"
printf '%-40s %8s\n' "release 2 again (nothing new)" "$t3"
