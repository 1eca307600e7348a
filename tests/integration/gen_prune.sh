#!/usr/bin/env bash
# eqota-gen prune: with --keep 2, a channel's older release folders go, and
# with them the objects and deltas nothing kept refers to, while another
# channel's releases keep theirs; --dry-run removes nothing; the grace period
# keeps what is recent; manifest deltas that do not lead to the current
# manifest go; every channel still verifies, the next publish works, and
# prune waits for a publish holding the lock.
# Usage: gen_prune.sh EQOTA_GEN
set -euo pipefail
gen=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
export XDG_CACHE_HOME=$w/cache

# mk DIR V0 V1 V2: packages p0..p4; p0, p1 and p2 at the versions given,
# p3 and p4 at version 1. A version's content is its own (32 KB).
mk() {
  python3 - "$@" <<'PY'
import io, os, random, sys, tarfile
out, vers = sys.argv[1], [int(v) for v in sys.argv[2:]] + [1, 1]
os.makedirs(out, exist_ok=True)
for i, v in enumerate(vers):
    base = random.Random(i).randbytes(32768)
    body = bytearray(base)
    for k in range(0, len(body), 997):
        body[k] = (body[k] + v) & 0xff
    name = "p%d" % i
    with tarfile.open(os.path.join(out, "%s_%d.tar" % (name, v)), "w", format=tarfile.PAX_FORMAT) as t:
        ti = tarfile.TarInfo("usr/share/%s/data" % name)
        ti.mode, ti.size = 0o644, len(body)
        t.addfile(ti, io.BytesIO(bytes(body)))
PY
}
mk s1 1 1 1
mk s2 2 1 1
mk s3 3 2 1
mk s4 3 2 2
mk s5 4 2 2
"$gen" keygen --out k >/dev/null
pub() { "$gen" -q publish --repo repo --board b --key k.key --store s.db --level 3 --channel "$1" --release "$2" \
  --packages "$3" >/dev/null; }
pub stable r1 s1
pub stable r2 s2
pub stable r3 s3
pub stable r4 s4
pub testing t1 s1
manifest_of() { python3 -c 'import json,sys
m = json.load(open(sys.argv[1]))
for p in m["packages"]:
    if p["name"] == sys.argv[2]:
        print(p["object"]["path"], " ".join(d["path"] for d in p.get("deltas", [])))' "$@"; }
# p0's version 2: its object and its delta from version 1 are in release 2 only
read -r p0v2 p0v2_delta <<<"$(manifest_of repo/boards/b/stable/releases/2/manifest.json p0)"
[ -f "repo/$p0v2" ] && [ -f "repo/$p0v2_delta" ] || { fail "setup: $p0v2 / $p0v2_delta missing"; exit 1; }
snap() { find repo -path repo/.tmp-\* -prune -o -type f -print | grep -v '\.publish\.lock$' | sort | xargs sha256sum; }
before=$(snap)

out=$("$gen" prune --repo repo --keep 2 --grace-hours 0 --dry-run)
if grep -q "^would remove 2 releases, 1 objects, " <<<"$out" && grep -q "would remove .*stable/releases/1 " <<<"$out" &&
  grep -q "would remove .*stable/releases/2 " <<<"$out" && grep -qF "repo/$p0v2 " <<<"$out" &&
  grep -qF "repo/$p0v2_delta " <<<"$out" && [ "$(snap)" = "$before" ]; then
  pass "--dry-run lists stable's releases 1 and 2, p0's version-2 object and delta, and removes nothing"
else fail "dry run: $out"; fi

out=$("$gen" prune --repo repo --keep 2 --grace-hours 1)
grep -q "^removed 0 releases, 0 objects, 0 deltas, 0 manifest deltas" <<<"$out" && [ "$(snap)" = "$before" ] &&
  pass "within the grace period nothing goes (the releases after 1 and 2 are seconds old)" || fail "grace: $out"

out=$("$gen" prune --repo repo --keep 2 --grace-hours 0)
if grep -q "^removed 2 releases, 1 objects, " <<<"$out" && [ ! -e repo/boards/b/stable/releases/1 ] &&
  [ ! -e repo/boards/b/stable/releases/2 ] && [ -e repo/boards/b/stable/releases/3 ] &&
  [ ! -e "repo/$p0v2" ] && [ ! -e "repo/$p0v2_delta" ] && [ -e repo/boards/b/testing/releases/1 ]; then
  pass "prune --keep 2: stable's releases 1 and 2 go with what only they used; testing keeps its release"
else fail "prune: $out"; fi
read -r p0v1 _ <<<"$(manifest_of repo/boards/b/testing/releases/1/manifest.json p0)"
[ -f "repo/$p0v1" ] && pass "an object stable no longer needs stays for testing" || fail "$p0v1 was removed"
for c in stable testing; do
  "$gen" verify --repo repo --board b --channel $c --key k.pub --deep >/dev/null &&
    pass "$c verifies after the prune, every object and delta present" || fail "$c does not verify"
done
cur=$(sha256sum repo/boards/b/stable/manifest.json | cut -c1-64)
stale=$(find repo/boards/b/stable/manifest-deltas -type f ! -name "*-$cur.delta" | wc -l)
[ "$stale" -eq 0 ] && [ -n "$(find repo/boards/b/stable/manifest-deltas -name "*-$cur.delta")" ] &&
  pass "manifest deltas to older manifests went; those to the current one stayed" ||
  fail "$stale manifest deltas lead elsewhere"

# the next publish rebuilds its summary from what is left
pub stable r5 s5
"$gen" verify --repo repo --board b --channel stable --key k.pub --deep >/dev/null &&
  grep -q "^r 5 r5$" repo/boards/b/stable/publisher-history && ! grep -q "^r 1 " repo/boards/b/stable/publisher-history &&
  pass "a publish after the prune works; its summary lists the releases left" || fail "publish after prune"

# prune waits for a publish (or another prune) holding the lock
flock repo/.publish.lock sleep 2 &
holder=$!
sleep 0.3
t0=$(date +%s%N)
"$gen" prune --repo repo --keep 2 --grace-hours 0 >/dev/null
t1=$(date +%s%N)
wait "$holder"
[ $(((t1 - t0) / 1000000)) -ge 1500 ] && pass "prune waited for the lock's holder" ||
  fail "prune did not wait ($(((t1 - t0) / 1000000)) ms)"

expect_fail "keep 0" "--keep '0': expected 1 or more" "$gen" prune --repo repo --keep 0
expect_fail "no keep" "missing --keep N" "$gen" prune --repo repo
expect_fail "not a repository" "is not a repository" "$gen" prune --repo "$w/nothing" --keep 1
[ "$fails" -eq 0 ]
