#!/usr/bin/env bash
# eqota-gen signs no file of the repository it did not make or check:
# junk planted under the name of an existing delta (deltas/FROM-TO) or
# object (objects/SHA, same size) before publish or promote is made again
# (or the promotion refused, naming the file), and every object and delta
# the new manifest lists hashes as signed and, for a delta, applied to its
# reference really gives the package's payload.
# Usage: gen_repo_planted.sh EQOTA_GEN EQ_DELTA
set -euo pipefail
gen=$1 eqd=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
export XDG_CACHE_HOME=$w/cache

# shellcheck source=tests/integration/lib/tarpkg.sh
. "$src/tests/integration/lib/tarpkg.sh"
tarpkg_pair s1 1
tarpkg_pair s2 2
"$gen" keygen --out K >/dev/null
pub() { "$gen" -q publish --repo repo --board b --key K.key --store s.db --level 3 --channel "$1" --release "$2" \
  --packages "$3"; }

# sound MANIFEST: every object and delta it lists is what it says; a delta
# applied to its reference (the object of payload FROM, from any manifest
# of the repository) gives the package's payload.
sound() {
  python3 - "$1" "$eqd" <<'PY'
import glob, hashlib, json, os, subprocess, sys, tempfile
m = json.load(open(sys.argv[1]))
eqd = sys.argv[2]
sha = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
obj_of = {}
for f in glob.glob("repo/boards/*/*/releases/*/manifest.json"):
    for p in json.load(open(f))["packages"]:
        obj_of[p["payload"]["sha256"]] = p["object"]["path"]
bad, deltas = [], 0
with tempfile.TemporaryDirectory() as t:
    for p in m["packages"]:
        o = p["object"]
        if sha("repo/" + o["path"]) != o["sha256"] or os.path.getsize("repo/" + o["path"]) != o["size"]:
            bad.append("%s: %s does not hash to %s" % (p["name"], o["path"], o["sha256"]))
        for d in p.get("deltas", []):
            deltas += 1
            f = "repo/" + d["path"]
            if sha(f) != d["sha256"] or os.path.getsize(f) != d["size"]:
                bad.append("%s: %s does not hash to %s" % (p["name"], d["path"], d["sha256"]))
                continue
            ref, out = t + "/ref", t + "/out"
            subprocess.run([eqd, "decompress", "repo/" + obj_of[d["from"]], ref], check=True)
            r = subprocess.run([eqd, "apply", ref, f, out], capture_output=True)
            if r.returncode != 0 or sha(out) != p["payload"]["sha256"]:
                bad.append("%s: %s does not give payload %s" % (p["name"], d["path"], p["payload"]["sha256"]))
print("\n".join(bad) if bad else "ok %d deltas" % deltas)
PY
}
field() { python3 -c 'import json,sys
m = json.load(open(sys.argv[1]))
p = [p for p in m["packages"] if p["name"] == sys.argv[2]][0]
print(p["object"]["path"] if sys.argv[3] == "object" else p["deltas"][0]["path"])' "$@"; }
cur=repo/boards/b/stable/manifest.json

pub stable r1 s1 >/dev/null
pub stable r2 s2 >/dev/null
p0delta=$(field $cur p0 delta)
p1obj=$(field $cur p1 object)

# A planted delta: same name, junk bytes. The republish reuses the name.
head -c 3000 /dev/urandom >"repo/$p0delta"
junk=$(sha256sum "repo/$p0delta" | cut -d' ' -f1)
out=$(pub stable r3 s2 2>&1) || { fail "publish after a planted delta: $out"; }
res=$(sound $cur)
if [ "$res" = "ok 2 deltas" ] && ! grep -q "$junk" $cur; then
  pass "a planted delta is made again before it is signed ($res)"
else fail "planted delta: $res"; fi
grep -qF "is not a delta from payload" <<<"$out" && pass "the publish names the planted delta: $(grep -F "$p0delta" <<<"$out" | head -1)" ||
  fail "no warning naming $p0delta: $out"

# A planted object: same name and size, junk bytes (what devices would
# download and refuse, with no way back).
size=$(stat -c %s "repo/$p1obj")
head -c "$size" /dev/urandom >"repo/$p1obj"
out=$(pub stable r4 s2 2>&1) || { fail "publish after a planted object: $out"; }
res=$(sound $cur)
[ "$res" = "ok 2 deltas" ] && pass "a planted object is made again before it is signed ($res)" ||
  fail "planted object: $res"
grep -qF "$p1obj" <<<"$out" && pass "the publish names the planted object" || fail "no warning naming $p1obj: $out"

# promote: into a channel with history, so its deltas are looked for. The
# plant is a well-formed delta this time, another package's.
pub testing t1 s1 >/dev/null
tdelta=$(field $cur p1 delta)
cp "repo/$(field $cur p0 delta)" "repo/$tdelta"
out=$("$gen" -q promote --repo repo --board b --from-channel stable --release r4 --to-channel testing --key K.key 2>&1) ||
  fail "promote after a planted delta: $out"
res=$(sound repo/boards/b/testing/manifest.json)
[ "$res" = "ok 2 deltas" ] && pass "promote makes a planted delta (another package's) again ($res)" ||
  fail "promote, planted delta: $res"

size=$(stat -c %s "repo/$p1obj")
cp "repo/$p1obj" obj.orig
head -c "$size" /dev/urandom >"repo/$p1obj"
expect_fail "promote with a planted object" "repo/$p1obj' hashes to" \
  "$gen" -q promote --repo repo --board b --from-channel stable --release r3 --to-channel testing --key K.key
cp obj.orig "repo/$p1obj"

[ "$fails" -eq 0 ]
