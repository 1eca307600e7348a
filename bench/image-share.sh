#!/usr/bin/env bash
# The image components' share of a security update (issue 31, item 6): the
# mmdebstrap pair of tests/tools/mkimages.sh (r1 = Debian 12, r2 = r1 with
# the security and point-release updates, chrony added, nano dropped) is
# published twice, with its .debs alone (format 1) and in image mode
# (format 2), and `eqota-gen diff --json` says what a device on r1 downloads
# for r2. The table splits image mode's bytes into packages and image
# components. Target: the components add at most 5 % to the packages'
# bytes; the last lines name the largest components when they do not.
# Usage: bench/image-share.sh [BUILD_DIR [CACHE_DIR]]
#   BUILD_DIR  holds eqota-gen (default: build)
#   CACHE_DIR  holds images/ (default: .cache); built by mkimages.sh when
#              missing (root, network)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
cache=${2:-$top/.cache}
gen=$build/eqota-gen
[ -x "$gen" ] || { echo "no eqota-gen in $build: build first" >&2; exit 2; }
"$top/tests/tools/mkimages.sh" "$cache" >&2
imgs=$(cd "$cache/images" && pwd)
w=$(mktemp -d /tmp/eq-image-share.XXXXXX)
trap 'rm -rf "$w"' EXIT
cd "$w"
"$gen" keygen --out K >/dev/null

publish() { # REPO N [--image ...]
  local repo=$1 n=$2; shift 2
  local t0
  t0=$(date +%s.%N)
  "$gen" -q publish --repo "$repo" --board b --channel stable --release "r$n" --packages "$imgs/r$n-debs" \
    --key K.key --store "$repo.db" "$@" >/dev/null
  echo "$(date +%s.%N) - $t0" | bc
}
declare -A secs
for n in 1 2; do
  secs[pkg$n]=$(publish pkgs $n)
  secs[img$n]=$(publish image $n --image "$imgs/r$n.tar" --image-devices)
done
"$gen" diff --repo pkgs --board b --channel stable --from r1 --to r2 --json >pkgs.json
"$gen" diff --repo image --board b --channel stable --from r1 --to r2 --json >image.json

python3 - pkgs.json image.json "${secs[pkg2]}" "${secs[img2]}" <<'PY'
import json, sys
pk = json.load(open(sys.argv[1]))
im = json.load(open(sys.argv[2]))
def is_comp(n): return n.startswith("eqota-image")
def split(d):
    p = [x for x in d["packages"] if not is_comp(x["name"])]
    c = [x for x in d["packages"] if is_comp(x["name"])]
    return p, c
pp, _ = split(pk)
ip, ic = split(im)
def total(xs): return sum(x["bytes"] for x in xs)
def changed(xs): return sum(1 for x in xs if x["state"] in ("changed", "added"))
mb = lambda b: "%.2f MB" % (b / 1e6)
rows = [
    ("packages alone (format 1): packages", changed(pp), total(pp)),
    ("image mode (format 2): packages", changed(ip), total(ip)),
    ("image mode: image components", changed(ic), total(ic)),
    ("image mode: all", changed(ip) + changed(ic), total(ip) + total(ic)),
]
print("| r1 -> r2, what a device downloads | changed or added | bytes |")
print("|---|---:|---:|")
for name, n, b in rows:
    print("| %s | %d | %s (%d B) |" % (name, n, mb(b), b))
share = 100.0 * total(ic) / total(ip) if total(ip) else 0.0
print()
print("image components add %.2f %% to the packages' bytes (target: at most 5 %%)" % share)
print("publish r2: packages alone %.1f s, image mode %.1f s" % (float(sys.argv[3]), float(sys.argv[4])))
print("components, largest first:")
for x in sorted(ic, key=lambda x: -x["bytes"])[:8]:
    print("  %-32s %-8s %10d B%s" % (x["name"], x["state"], x["bytes"], " (delta)" if x["delta"] else ""))
PY
