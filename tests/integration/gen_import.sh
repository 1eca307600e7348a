#!/usr/bin/env bash
# eqota-gen equiv import --repo: a lost equivalence store rebuilt from the
# repository's signed manifests. After the import a rebuild with new
# taskhashes and identical payloads keeps every unihash (a fresh store would
# change them all); a second import adds nothing; a tampered, malformed or
# unsigned manifest is refused naming the file; a root chain works too.
# Usage: gen_import.sh EQOTA_GEN SOURCE_DIR
set -euo pipefail
gen=$1 src=$2
. "$src/tests/integration/lib/tarpkg.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to build the test packages"; exit 77; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
# refused_all NAME SUBSTRING... -- CMD...: CMD must fail and print every SUBSTRING.
refused_all() {
  local name=$1 want=(); shift
  while [ "$1" != -- ]; do want+=("$1"); shift; done; shift
  if out=$("$@" 2>&1); then fail "$name: succeeded: $out"; return; fi
  local s; for s in "${want[@]}"; do
    grep -qF -- "$s" <<<"$out" || { fail "$name: message lacks '$s': $out"; return; }
  done
  pass "$name"
}
M=eqota-payload-v1
B=(--board tb --channel stable)
hex() { printf '%s' "$1" | sha256sum | cut -c1-64; }

# pkgs DIR VERSION-OF-b: packages a, b and c; only b's content follows the argument.
pkgs() {
  mkdir -p "$1"
  tarpkg "$1/a_1.tar" usr/share/a/data "a content"
  tarpkg "$1/b_$2.tar" usr/share/b/data "b content $2"
  tarpkg "$1/c_1.tar" usr/bin/c "c content"
}
# index FILE BUILD: a build index giving every package a taskhash of that build.
index() { for p in a b c; do echo "$p $(hex "$2-$p")"; done > "$1"; }
pin=() # the publisher's pin once a repository has a root
pub() { # REPO STORE RELEASE PKGDIR INDEX [KEY]
  "$gen" -q publish --repo "$1" "${B[@]}" --key "${6:-rel.key}" --store "$2" --level 1 --release "$3" \
    --packages "$4" --build-index "$5" "${pin[@]}" >/dev/null
}
# unihashes REPO NUMBER: "name unihash" per package of release NUMBER.
unihashes() {
  python3 -c 'import json,sys
for p in json.load(open(sys.argv[1]))["packages"]: print(p["name"], p["unihash"])' \
    "$1/boards/tb/stable/releases/$2/manifest.json"
}
imp() { "$gen" equiv import --repo "$@"; }
jget() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

"$gen" keygen --out rel >/dev/null
"$gen" keygen --out other >/dev/null
pkgs p1 1; pkgs p2 2
index i1 build1; index i2 build2; index i3 build3

# ---- releases 1 and 2 into store A, then store A is lost
pub repo A.db r1 p1 i1
pub repo A.db r2 p2 i2
unihashes repo 2 > r2.uni
[ "$(grep -c . r2.uni)" = 3 ] || fail "release 2 has $(grep -c . r2.uni) packages"
# a and c are unchanged in release 2: they kept release 1's unihash (a new taskhash inherited it)
[ "$(unihashes repo 1 | grep -v '^b ')" = "$(grep -v '^b ' r2.uni)" ] && pass "a and c keep their unihash in release 2" ||
  fail "release 2's a and c changed unihash"
cp -a repo repo-c   # what a fresh store would be asked to extend
rm -f A.db A.db-wal A.db-shm

# ---- import into store B
if out=$(imp repo --key rel.pub --store B.db --json 2>&1); then pass "import --key"; else fail "import: $out"; fi
echo "$out"
[ "$(jget "$out" manifests)" = 2 ] && [ "$(jget "$out" packages)" = 6 ] && [ "$(jget "$out" added)" = 6 ] &&
  [ "$(jget "$out" present)" = 0 ] && [ "$(jget "$out" conflicts)" = 0 ] && [ "$(jget "$out" outhashes_added)" = 6 ] &&
  [ "$(jget "$out" published_added)" = 4 ] && pass "import counts: 2 manifests, 6 mappings, 4 published payloads" ||
  fail "import counts: $out"
# equiv list holds exactly what the manifests say: taskhash, unihash, outhash, name, version.
"$gen" equiv list --store B.db --method "$M" > list.txt
python3 - repo list.txt <<'PY' && pass "equiv list matches the manifests" || fail "equiv list: $(cat list.txt)"
import glob, json, sys
want = set()
for f in glob.glob(sys.argv[1] + "/boards/tb/stable/releases/*/manifest.json"):
    for p in json.load(open(f))["packages"]:
        want.add((p["taskhash"], p["unihash"], p["payload"]["sha256"], p["name"], p["version"]))
got = set()
for line in open(sys.argv[2]):
    m, t, u, o, pn, pv, _ = line.split()
    got.add((t, u, o, pn, pv))
assert got == want, (got ^ want)
PY

# ---- release 3: new taskhashes, identical payloads
pub repo B.db r3 p2 i3
unihashes repo 3 > r3.uni
[ "$(cat r3.uni)" = "$(cat r2.uni)" ] && pass "after the import release 3 (new taskhashes) keeps release 2's unihashes" ||
  fail "release 3 unihashes differ from release 2's: $(diff r2.uni r3.uni | tr '\n' ' ')"
"$gen" diff --repo repo "${B[@]}" --from r2 --to r3 > d23.txt
grep -q "^total: 0 kept, 3 equivalent, 0 changed, 0 added, 0 removed; download 0 bytes" d23.txt &&
  pass "diff r2 -> r3: all 3 equivalent, 0 bytes" ||
  fail "diff r2 -> r3: $(cat d23.txt)"
# ... and without the import (a fresh store C) every unihash would change.
pub repo-c C.db r3 p2 i3
unihashes repo-c 3 > c3.uni
if python3 - r2.uni c3.uni <<'PY'; then pass "without the import every unihash changes (fresh store)"; else fail "fresh store: $(cat c3.uni)"; fi
import sys
a = dict(l.split() for l in open(sys.argv[1])); b = dict(l.split() for l in open(sys.argv[2]))
assert a.keys() == b.keys() and all(a[k] != b[k] for k in a), (a, b)
PY

# ---- a second import adds nothing
out=$(imp repo --key rel.pub --store B.db --json)
[ "$(jget "$out" added)" = 0 ] && [ "$(jget "$out" outhashes_added)" = 0 ] && [ "$(jget "$out" published_added)" = 0 ] &&
  [ "$(jget "$out" present)" = 9 ] && [ "$(jget "$out" conflicts)" = 0 ] && pass "a second import adds nothing" ||
  fail "second import: $out"
out=$(imp repo --trust rel.pub --store B.db 2>&1 || true)
"$gen" trust --key rel.pub --out rel.trust >/dev/null
out=$(imp repo --trust rel.trust --store B.db 2>&1) && grep -q "0 mappings added, 9 already present, 0 conflicts" <<<"$out" &&
  pass "import --trust, plain output" || fail "import --trust: $out"

# ---- conflicts: the store already maps a taskhash elsewhere; the store's answer stays
T=$(hex build1-a)
"$gen" equiv report --store E.db --method "$M" --taskhash "$T" --outhash "$(hex x)" --unihash "$(hex y)" >/dev/null
out=$(imp repo --key rel.pub --store E.db 2>&1) && grep -q "1 conflicts" <<<"$out" &&
  grep -qF "package 'a' of release 'r1'" <<<"$out" && grep -q "the store's is kept" <<<"$out" &&
  pass "a conflicting mapping is counted and named, the store's kept" || fail "conflict: $out"
[ "$("$gen" equiv get --store E.db --method "$M" --taskhash "$T")" = "$(hex y)" ] && pass "conflict: mapping unchanged" ||
  fail "conflict: mapping overwritten"

# ---- refusals
refused_all "no verification option" "give one of --root FILE, --key NAME.pub (repeatable), --trust FILE or --unverified" -- \
  imp repo --store X.db
refused_all "two verification options" "give one of" -- imp repo --key rel.pub --unverified --store X.db
refused_all "another key" "repo/boards/tb/stable/releases/1/manifest.json" "unknown key" -- imp repo --key other.pub --store X.db
refused_all "not a repository" "has no boards/ folder" -- imp p1 --key rel.pub --store X.db
cp -a repo repo-t
f=repo-t/boards/tb/stable/releases/2/manifest.json
old=$(grep -m1 '"unihash"' "$f" | sed 's/.*"\([0-9a-f]\{64\}\)".*/\1/')
sed -i "0,/$old/s//$(hex evil)/" "$f"
refused_all "tampered manifest (changed unihash)" "$f" "does not verify" -- imp repo-t --key rel.pub --store T.db
[ ! -s T.db ] || [ -z "$("$gen" equiv list --store T.db)" ] && pass "tampered: nothing imported" ||
  fail "tampered: rows were imported"
out=$(imp repo-t --unverified --store U.db 2>&1) && grep -q "without checking signatures" <<<"$out" &&
  "$gen" equiv list --store U.db | grep -q "$(hex evil)" && pass "--unverified imports it, with a warning" ||
  fail "--unverified: $out"
rm "$f.sig"
refused_all "missing signature" "$f.sig" -- imp repo-t --key rel.pub --store T.db
printf '{"format": 1, ' > "$f"
refused_all "malformed manifest, unverified" "$f" -- imp repo-t --unverified --store T.db
cp -a repo repo-m
cp repo-m/boards/tb/stable/releases/1/manifest.json* repo-m/boards/tb/stable/releases/3/
refused_all "a manifest in another release's folder" "releases/3/manifest.json" "release number 1" -- \
  imp repo-m --key rel.pub --store T.db
refused_all "... also unverified" "releases/3/manifest.json" "not what its folder says" -- imp repo-m --unverified --store T.db
refused_all "--hashserv" "fills a local store" -- imp repo --key rel.pub --hashserv 127.0.0.1:1

# ---- a repository with a root of trust
for k in R1 K1 K2 T1; do "$gen" keygen --out "$k" >/dev/null; done
"$gen" root init --repo rr --key R1.key --root-pub R1.pub --release-pub K1.pub --timestamp-pub T1.pub >/dev/null
cp rr/root/1.root.json pinned.root.json
pin=(--trusted-root pinned.root.json)
pub rr R.db r1 p1 i1 K1.key
pub rr R.db r2 p2 i2 K1.key
out=$(imp rr --root rr/root/1.root.json --store RR.db --json 2>&1) && [ "$(jget "$out" added)" = 6 ] &&
  pass "import --root" || fail "import --root: $out"
refused_all "--root that is not the repository's" "rr2/boards/tb/stable/releases/1/manifest.json" -- \
  bash -c "mkdir -p rr2 && cp -a rr/boards rr2/ && \"$gen\" root init --repo rr2 --key R1.key --root-pub R1.pub --release-pub K2.pub --timestamp-pub T1.pub >/dev/null && \"$gen\" equiv import --repo rr2 --root rr2/root/1.root.json --store RR2.db"
# After the release role moves to K2 the old releases no longer meet the
# newest root's release role: refused, and --key with both keys imports.
"$gen" root rotate --repo rr --key R1.key --release-pub K2.pub "${pin[@]}" >/dev/null
refused_all "--root after a release key rotation" "rr/boards/tb/stable/releases/1/manifest.json" -- \
  imp rr --root rr/root/1.root.json --store RR3.db
out=$(imp rr --key K1.pub --key K2.pub --store RR3.db --json 2>&1) && [ "$(jget "$out" added)" = 6 ] &&
  pass "--key with the old and the new release key imports" || fail "--key K1 K2: $out"

echo "gen_import: $fails failed"
[ "$fails" -eq 0 ]
