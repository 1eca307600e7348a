#!/usr/bin/env bash
# eqota-gen end to end on real Debian packages: two releases, diff, a
# republish that writes nothing, equivalence, default taskhashes that follow
# the content, non-reproducible rebuilds, and every verify failure.
# Usage: gen_publish.sh EQOTA_GEN SOURCE_DIR
set -euo pipefail
gen=$1
src=$2
cache=${EQ_CACHE_DIR:-$src/.cache}/debs
level=${EQ_TEST_LEVEL:-9}
[ -d "$cache/release2" ] || "$src/scripts/fetch-debs.sh" "$cache" >/dev/null
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
B=(--board qemux86-64 --channel stable)

"$gen" keygen --out rel >/dev/null
[ "$(stat -c %a rel.key)" = 600 ] && pass "keygen: private key mode 0600" || fail "keygen: mode $(stat -c %a rel.key)"
expect_fail "keygen refuses to overwrite" "exist" "$gen" keygen --out rel

pub() { "$gen" -q publish --repo repo "${B[@]}" --key rel.key --store store.db --level "$level" "$@"; }
pub --release r1 --packages "$cache/release1" --build-index "$cache/release1.index" >/dev/null
pub --release r2 --packages "$cache/release2" --build-index "$cache/release2.index" > pub2.txt
cat pub2.txt

# The packages whose .deb differs between the two folders are the changed ones.
expected=$(comm -13 <(ls "$cache/release1") <(ls "$cache/release2") | sed 's/_.*//' | sort)
"$gen" diff --repo repo "${B[@]}" --from r1 --to r2 > diff.txt
got=$(awk '$1=="changed"{print $2}' diff.txt | sort)
if [ "$got" = "$expected" ] && [ -n "$got" ]; then pass "diff reports exactly the changed packages: $(echo $got)";
else fail "diff changed set: got '$(echo $got)', expected '$(echo $expected)'"; fi
n=$(ls "$cache/release2" | wc -l)
neq=$(awk '$1=="equivalent"' diff.txt | wc -l)
nch=$(echo "$expected" | wc -l)
[ "$neq" -eq $((n - nch)) ] && pass "rebuilt unchanged packages are equivalent ($neq)" || fail "equivalent count $neq, expected $((n - nch))"
read -r dl full < <(awk '/^total:/{for(i=1;i<=NF;i++){if($i=="download")d=$(i+1); if($i=="of"&&f=="")f=$(i+1)}} END{print d, f}' diff.txt)
if [ "$dl" -gt 0 ] && [ $((dl * 10)) -lt "$full" ]; then pass "download $dl bytes is under 10 % of the full release ($full)";
else fail "download $dl of $full bytes"; fi
grep -q "(delta)" diff.txt && pass "changed packages are offered as deltas" || fail "no deltas offered"
"$gen" diff --repo repo "${B[@]}" --from r1 --to r2 --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
t = d["totals"]
assert t["changed"] == sum(1 for p in d["packages"] if p["state"] == "changed")
assert t["download_bytes"] == sum(p["bytes"] for p in d["packages"])
' && pass "diff --json is consistent" || fail "diff --json"

# The same package set again: same unihashes, no new object or delta.
before=$(find repo/objects repo/deltas -type f | wc -l)
pub --release r3 --packages "$cache/release2" --build-index "$cache/release2.index" > pub3.txt
after=$(find repo/objects repo/deltas -type f | wc -l)
grep -q " 0 new objects, 0 new deltas" pub3.txt && [ "$before" = "$after" ] &&
  pass "republish writes no new object ($after files)" || { fail "republish wrote files"; cat pub3.txt; }
"$gen" diff --repo repo "${B[@]}" --from r2 --to r3 > diff23.txt
if [ "$(grep -c '^kept' diff23.txt)" -eq "$n" ] && grep -q "download 0 bytes" diff23.txt; then
  pass "republish: every unihash identical"; else fail "republish unihashes differ"; cat diff23.txt; fi
"$gen" show --repo repo "${B[@]}" --json | python3 -c '
import json, sys; m = json.load(sys.stdin); assert m["number"] == 3 and m["release"] == "r3"' &&
  pass "show --json names the current release" || fail "show --json"
expect_fail "same release name twice" "already published" pub --release r3 --packages "$cache/release2"

# Equivalence store through the CLI: a new taskhash with a known outhash.
T1=$(echo t1 | sha256sum | cut -c1-64); T2=$(echo t2 | sha256sum | cut -c1-64); O=$(echo o | sha256sum | cut -c1-64)
u1=$("$gen" equiv report --store eq.db --method m --taskhash "$T1" --outhash "$O" | cut -c1-64)
u2=$("$gen" equiv report --store eq.db --method m --taskhash "$T2" --outhash "$O" | cut -c1-64)
[ "$u1" = "$T1" ] && [ "$u2" = "$T1" ] && pass "equiv: new taskhash, same content keeps the unihash" || fail "equiv $u1 $u2"
[ "$("$gen" equiv get --store eq.db --method m --taskhash "$T2")" = "$T1" ] && pass "equiv get" || fail "equiv get"

# Default taskhashes follow the content: same name and version, new bytes.
mkpkg() { # NAME VERSION CONTENT OUTDIR
  local d; d=$(mktemp -d "$w/pkg.XXXX")
  mkdir -p "$d/DEBIAN" "$d/usr/share/$1"
  printf 'Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: t\n' "$1" "$2" > "$d/DEBIAN/control"
  echo "$3" > "$d/usr/share/$1/data"
  mkdir -p "$4"; dpkg-deb --root-owner-group -b "$d" "$4/$1_$2_all.deb" >/dev/null
}
mkpkg foo 1.0 first c1; mkpkg foo 1.0 second c2
G=(--board demo --channel test)
"$gen" -q publish --repo repo2 "${G[@]}" --key rel.key --store store2.db --level 3 --release a --packages c1 >/dev/null
"$gen" -q publish --repo repo2 "${G[@]}" --key rel.key --store store2.db --level 3 --release b --packages c2 >/dev/null
"$gen" diff --repo repo2 "${G[@]}" --from a --to b | grep -q "^changed *foo 1.0 -> 1.0" &&
  pass "new content under an unchanged name and version gets a new unihash" || fail "content change hidden"

# No --store on a fresh machine: the default store's folders are created,
# the eqota one private (0700); a file in the way is named in the error.
mkdir home
env -u XDG_DATA_HOME HOME="$w/home" "$gen" -q publish --repo repo4 "${G[@]}" --key rel.key --level 3 --release a --packages c1 >/dev/null &&
  [ -f home/.local/share/eqota/equiv.db ] && [ "$(stat -c %a home/.local/share/eqota)" = 700 ] &&
  pass "publish without --store creates ~/.local/share/eqota (0700) and the store" || fail "default store under HOME"
XDG_DATA_HOME="$w/xdg" HOME=/nonexistent "$gen" equiv list >/dev/null && [ -f xdg/eqota/equiv.db ] &&
  [ "$(stat -c %a xdg/eqota)" = 700 ] && pass "equiv without --store creates \$XDG_DATA_HOME/eqota (0700)" ||
  fail "default store under XDG_DATA_HOME"
mkdir -p home2/.local/share && touch home2/.local/share/eqota
expect_fail "a file where the default store folder goes" "'$w/home2/.local/share/eqota' exists and is not a folder" \
  env -u XDG_DATA_HOME HOME="$w/home2" "$gen" -q publish --repo repo5 "${G[@]}" --key rel.key --level 3 --release a --packages c1

# Same taskhash, other bytes: the stored object stays, reported as not reproducible.
echo "foo $(echo fixed | sha256sum | cut -c1-64)" > fixed.index
"$gen" -q publish --repo repo3 "${G[@]}" --key rel.key --store store3.db --level 3 --release a --packages c1 --build-index fixed.index >/dev/null
out=$("$gen" publish --repo repo3 "${G[@]}" --key rel.key --store store3.db --level 3 --release b --packages c2 --build-index fixed.index 2>&1)
grep -q "not reproducible" <<<"$out" && pass "non-reproducible rebuild reported" || fail "not reported: $out"
"$gen" diff --repo repo3 "${G[@]}" --from a --to b | grep -q "^kept *foo" &&
  pass "non-reproducible rebuild keeps serving the first object" || fail "object replaced"

# One taskhash for two packages (every package of a Yocto recipe shares the
# recipe's hashes): refused in one index, and across releases the second
# package must never be served the first one's bytes.
T=$(echo recipe | sha256sum | cut -c1-64)
mkpkg bar 1.0 bar-bytes c3
printf 'foo %s\nbar %s\n' "$T" "$T" > shared.index
expect_fail "two packages, one taskhash in an index" "package 'bar' has the taskhash of package 'foo' (line 1)" \
  "$gen" -q publish --repo repo6 "${G[@]}" --key rel.key --store store6.db --level 3 --release a --packages c1 --build-index shared.index
echo "foo $T" > foo.index; echo "bar $T" > bar.index
"$gen" -q publish --repo repo6 "${G[@]}" --key rel.key --store store6.db --level 3 --release a --packages c1 --build-index foo.index >/dev/null
expect_fail "a package served another package's payload" "which was published with the payload of another package" \
  "$gen" -q publish --repo repo6 "${G[@]}" --key rel.key --store store6.db --level 3 --release b --packages c3 --build-index bar.index
[ "$(ls repo6/boards/demo/test/releases)" = 1 ] && pass "nothing published for the refused release" || fail "refused release published"

# A partial index: packages it does not list get default taskhashes, named in a warning.
mkdir c4 && cp c1/*.deb c3/*.deb c4/
out=$("$gen" publish --repo repo7 "${G[@]}" --key rel.key --store store7.db --level 3 --release a --packages c4 --build-index foo.index 2>&1) &&
  grep -q "lists no taskhash for 1 of 2 packages (bar)" <<<"$out" &&
  [ "$("$gen" show --repo repo7 "${G[@]}" --json | python3 -c 'import json,sys; m={p["name"]:p["taskhash"] for p in json.load(sys.stdin)["packages"]}; print(m["foo"])')" = "$T" ] &&
  pass "partial index: listed packages keep their taskhash, the others get defaults, with a warning" || fail "partial index: $out"

# A republish never costs devices more: a device one, two or three releases
# behind gets a delta, before and after the newest release is republished
# (even with --deltas-from 1, which makes one delta but offers every
# existing one).
head -c 300000 /dev/urandom > base.bin
mkver() { # VERSION OUTDIR: foo whose data is base.bin and a version line
  local d; d=$(mktemp -d "$w/pkg.XXXX")
  mkdir -p "$d/DEBIAN" "$d/usr/share/foo"
  printf 'Package: foo\nVersion: %s\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: t\n' "$1" > "$d/DEBIAN/control"
  { cat base.bin; echo "version $1"; } > "$d/usr/share/foo/data"
  mkdir -p "$2"; dpkg-deb --root-owner-group -b "$d" "$2/foo_$1_all.deb" >/dev/null
}
for i in 1 2 3 4; do mkver "1.$i" "v$i"; done
R=(--repo repo8 "${G[@]}" --key rel.key --store store8.db --level 3)
for i in 1 2 3 4; do "$gen" -q publish "${R[@]}" --release "r$i" --packages "v$i" >/dev/null; done
"$gen" -q publish "${R[@]}" --release r5 --packages v4 > pub5.txt
"$gen" -q publish "${R[@]}" --release r6 --packages v4 --deltas-from 1 > pub6.txt
grep -q " 0 new deltas" pub5.txt && grep -q " 0 new deltas" pub6.txt &&
  pass "republishing makes no new delta" || fail "republish made deltas: $(cat pub5.txt pub6.txt)"
for to in r4 r5 r6; do
  for k in 1 2 3; do
    if "$gen" diff --repo repo8 "${G[@]}" --from "r$k" --to "$to" | grep -q "^changed *foo 1.$k -> 1.4 [0-9]* (delta)"; then
      pass "a device on r$k gets a delta to $to"
    else
      fail "a device on r$k downloads foo in full to $to"
    fi
  done
done

# verify: the good case, then each failure with its own message.
"$gen" verify --repo repo "${B[@]}" --key rel.pub --deep >/dev/null && pass "verify accepts the release" || fail "verify"
"$gen" keygen --out other >/dev/null
expect_fail "wrong key" "unknown key" "$gen" verify --repo repo "${B[@]}" --key other.pub
"$gen" trust --key rel.pub --key other.pub --threshold 2 --out trust2.json >/dev/null
expect_fail "threshold not met" "1 of 2 required signatures" "$gen" verify --repo repo "${B[@]}" --trust trust2.json
expect_fail "expired" "expired at" "$gen" verify --repo repo "${B[@]}" --key rel.pub --at 2099-01-01T00:00:00Z
# A manifest served under another board's path (a mix-up on the server).
mkdir -p repo-b/boards/qemuarm64/stable
cp repo/boards/qemux86-64/stable/manifest.json* repo-b/boards/qemuarm64/stable/
expect_fail "wrong board" "this device is 'qemuarm64'" "$gen" verify --repo repo-b --board qemuarm64 --channel stable --key rel.pub
cp -r repo repo-t
mf=repo-t/boards/qemux86-64/stable/manifest.json
size=$(stat -c %s "$mf")
for off in 0 7 $((size / 3)) $((size / 2)) $((size - 2)); do
  cp repo/boards/qemux86-64/stable/manifest.json "$mf"
  printf '\x01' | dd of="$mf" bs=1 seek="$off" conv=notrunc status=none
  expect_fail "tampered manifest byte $off" "does not verify" "$gen" verify --repo repo-t "${B[@]}" --key rel.pub
done
cp repo/boards/qemux86-64/stable/manifest.json "$mf"
obj=$(find repo-t/objects -type f -printf "%f\n" -quit)
printf 'x' >> "repo-t/objects/$obj"
expect_fail "tampered object" "bytes, the manifest says" "$gen" verify --repo repo-t "${B[@]}" --key rel.pub

echo "gen_publish: $fails failed"
[ "$fails" -eq 0 ]
