#!/usr/bin/env bash
# The Debian 12 images of tests/tools/mkimages.sh published in image mode:
# r1.tar with its 141 .debs, then r2.tar (security updates, chrony added,
# nano removed) with its own. Checked: both manifests are format 2, the
# image's entries add up, r2's changed components get deltas from r1's.
# Printed (for the report and bench/): the entries from packages and from
# the image, the components' object bytes, and what a device on r1 fetches
# for r2: the packages' bytes and the components' bytes (each its delta
# from r1's payload, else its object), with the components' share.
# Skipped (77) when the images are not in $EQ_CACHE_DIR/images.
# Usage: gen_publish_image_debian.sh EQOTA_GEN SOURCE_DIR
set -Eeuo pipefail
gen=$1 src=$2
imgs=${EQ_CACHE_DIR:-$src/.cache}/images
for f in r1.tar r2.tar r1-debs r2-debs; do
  [ -e "$imgs/$f" ] || { echo "SKIP: no $imgs/$f (tests/tools/mkimages.sh builds the images)"; exit 77; }
done
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
w=$(mktemp -d /tmp/eq-pubdeb.XXXXXX)
cleanup() { rm -rf "$w"; }
trap cleanup EXIT
trap 'echo "gen_publish_image_debian.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
. "$src/tests/integration/lib/check.sh"
cd "$w"
"$gen" keygen --out rel >/dev/null
P=(--repo repo --board deb --channel stable --key rel.key --store store.db --cache cache.db)
for r in 1 2; do
  t0=$(date +%s)
  if run "publish r$r --image r$r.tar" 0 "$gen" -q publish "${P[@]}" --release "r$r" --packages "$imgs/r$r-debs" \
    --image "$imgs/r$r.tar" --image-devices; then
    pass "r$r published in image mode in $(($(date +%s) - t0)) s"
    echo "$out" | grep -E "^(published|image:)"
  fi
done
python3 - repo/boards/deb/stable/releases/{1,2}/manifest.json <<'PY' || fail "the manifests"
import json, sys
m1, m2 = (json.load(open(f)) for f in sys.argv[1:3])
ok = True
for n, m in (("r1", m1), ("r2", m2)):
    img = m.get("image")
    if m["format"] != 2 or not img:
        print("FAIL: %s is not format 2 with an image" % n); ok = False; continue
    comps = img["before"] + img["after"]
    print("%s: %d packages + %d components (%s), replace %d paths, remove %d" % (
        n, len(m["packages"]) - len(comps), len(comps), " ".join(comps), len(img["replace"]), len(img["remove"])))
p1 = {p["name"]: p for p in m1["packages"]}
comps2 = set(m2["image"]["before"] + m2["image"]["after"])
def fetch(p):
    """Bytes a device on r1 fetches for package p of r2."""
    old = p1.get(p["name"])
    if old and old["payload"]["sha256"] == p["payload"]["sha256"]:
        return 0, "keep"
    if old:
        ds = [d["size"] for d in p.get("deltas", []) if d["from"] == old["payload"]["sha256"]]
        if ds:
            return min(ds), "delta"
    return p["object"]["size"], "full"
rows = {"packages": [0, 0, 0], "components": [0, 0, 0]}
deltas = 0
for p in m2["packages"]:
    n, how = fetch(p)
    k = "components" if p["name"] in comps2 else "packages"
    rows[k][0] += n
    rows[k][1] += how != "keep"
    rows[k][2] += p["object"]["size"] if k == "components" else 0
    if k == "components" and how == "delta":
        deltas += 1
    if k == "components" and how != "keep":
        print("  r1 -> r2 component %s: %s %d B (object %d B)" % (p["name"], how, n, p["object"]["size"]))
total = rows["packages"][0] + rows["components"][0]
print("r1 -> r2 bytes a device fetches: packages %d B (%d changed), components %d B (%d changed, %d by delta; "
      "their objects total %d B): components are %.2f %% of the update" % (
          rows["packages"][0], rows["packages"][1], rows["components"][0], rows["components"][1], deltas,
          rows["components"][2], 100.0 * rows["components"][0] / total if total else 0))
if deltas == 0:
    print("FAIL: no component of r2 has a delta from r1's"); ok = False
sys.exit(0 if ok else 1)
PY
[ "$fails" -eq 0 ]
