#!/usr/bin/env bash
# The publisher's root of trust (issue 12): root init, rotate and revoke,
# the timestamp, publish in a repository with a root, and verify --root
# walking the chain as a device does. Each refusal is checked for its
# message, and nothing refused may be written.
# Usage: gen_trust.sh EQOTA_GEN SOURCE_DIR
set -euo pipefail
gen=$1 src=$2
. "$src/tests/integration/lib/tarpkg.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to build the test packages"; exit 77; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"

for k in R1 R2 R3 K1 K2 T1 T2; do "$gen" keygen --out "$k" >/dev/null; done

# pkgs DIR VERSION: one small package whose content depends on VERSION
pkgs() { mkdir -p "$1"; tarpkg "$1/hello_$2.tar" usr/bin/hello "hello $2"; }

# ok NAME CMD...: must succeed; expect_fail NAME SUBSTRING CMD...: must fail
# printing SUBSTRING.
pin=() # no root yet: nothing to pin
pub() { # pub RELEASE KEY [OPTIONS]
  local rel=$1 key=$2; shift 2
  pkgs "p-$rel" "$rel"
  "$gen" -q publish --repo repo --board tb --channel stable --release "$rel" --packages "p-$rel" --key "$key" \
    --store s.db --level 1 "${pin[@]}" "$@"
}
verify() { "$gen" verify --repo repo --board tb --channel stable --root repo/root/1.root.json "$@"; }

expect_fail "timestamp without a root" "has no root/1.root.json" \
  "$gen" timestamp "${pin[@]}" --repo repo --board tb --channel stable --key T1.key
expect_fail "init with a root key that does not sign" "not signed by its own root role" \
  "$gen" root init --repo repo --key R2.key --root-pub R1.pub --release-pub K1.pub --timestamp-pub T1.pub
[ ! -e repo/root/1.root.json ] && pass "nothing written on refusal" || fail "root/1.root.json written on refusal"
expect_fail "init without a timestamp role" "the timestamp role needs at least one public key" \
  "$gen" root init --repo repo --key R1.key --root-pub R1.pub --release-pub K1.pub
ok "root init" "$gen" root init --repo repo --key R1.key --root-pub R1.pub --release-pub K1.pub --timestamp-pub T1.pub
# the operator's pin, kept outside the repository (gen_planted_root.sh tests it)
cp repo/root/1.root.json pinned.root.json
pin=(--trusted-root pinned.root.json)
expect_fail "a second init" "has a root already" \
  "$gen" root init --repo repo --key R1.key --root-pub R1.pub --release-pub K1.pub --timestamp-pub T1.pub

expect_fail "publish signed by a key outside the release role" "do not meet the release role of root version 1" \
  pub r1 K2.key
[ ! -e repo/boards/tb/stable/manifest.json ] && pass "no manifest on refusal" || fail "manifest written on refusal"
ok "publish with --timestamp-key" pub r1 K1.key --timestamp-key T1.key
grep -q '"version": 1' repo/boards/tb/stable/timestamp.json && pass "timestamp version 1" \
  || fail "timestamp version: $(cat repo/boards/tb/stable/timestamp.json)"
ok "verify --root" verify
grep -q "root chain to version 1, timestamp, signature" <<<"$out" && pass "verify says what it checked" \
  || fail "verify output: $out"
ok "timestamp refresh" "$gen" timestamp "${pin[@]}" --repo repo --board tb --channel stable --key T1.key --expires-hours 2
grep -q '"version": 2' repo/boards/tb/stable/timestamp.json && pass "timestamp version grows" \
  || fail "timestamp version: $(cat repo/boards/tb/stable/timestamp.json)"
expect_fail "timestamp signed by a release key" "sign with the timestamp role's keys" \
  "$gen" timestamp "${pin[@]}" --repo repo --board tb --channel stable --key K1.key
expect_fail "verify past the timestamp's expiry" "timestamp expired at" verify --at "$(date -u -d '+3 hours' +%Y-%m-%dT%H:%M:%SZ)"
expect_fail "verify past the root's expiry" "root version 1 expired at" verify --at 2099-01-01T00:00:00Z

# a manifest changed after the timestamp was made
cp repo/boards/tb/stable/manifest.json m.bak
sed -i 's/"release": "r1"/"release": "r9"/' repo/boards/tb/stable/manifest.json
expect_fail "verify a changed manifest" "but timestamp version 2 names" verify
cp m.bak repo/boards/tb/stable/manifest.json

# rotation: R1 -> R2 needs both
expect_fail "rotate signed by the old key only" "not signed by its own root role" \
  "$gen" root rotate "${pin[@]}" --repo repo --key R1.key --root-pub R2.pub
expect_fail "rotate signed by the new key only" "not signed by root version 1's root role" \
  "$gen" root rotate "${pin[@]}" --repo repo --key R2.key --root-pub R2.pub
[ ! -e repo/root/2.root.json ] && pass "no root 2 on refusal" || fail "root/2.root.json written on refusal"
ok "rotate R1 -> R2" "$gen" root rotate "${pin[@]}" --repo repo --key R1.key --key R2.key --root-pub R2.pub
expect_fail "rotate with nothing to change" "nothing changes" "$gen" root rotate "${pin[@]}" --repo repo --key R2.key
ok "verify across the rotation" verify
grep -q "root chain to version 2" <<<"$out" && pass "verify walked to version 2" || fail "verify output: $out"

# revoking the only release key is refused; replace it, then revoke
expect_fail "revoke the last release key" "add a key first" \
  "$gen" root revoke "${pin[@]}" --repo repo --key R2.key --revoke K1.pub
ok "add release key K2" "$gen" root rotate "${pin[@]}" --repo repo --key R2.key --release-pub K1.pub --release-pub K2.pub
ok "revoke K1" "$gen" root revoke "${pin[@]}" --repo repo --key R2.key --revoke K1.pub
[ -e repo/root/4.root.json ] && pass "root 4 written" || fail "no root/4.root.json"
expect_fail "verify a release signed by the revoked key" "signed by unknown key" verify
expect_fail "publish with the revoked key" "do not meet the release role of root version 4" pub r2 K1.key
ok "publish with the new release key" pub r2 K2.key --timestamp-key T1.key
ok "verify after the revocation" verify --deep
grep -q "root chain to version 4.*release 'r2'" <<<"$out" && pass "verify walked to version 4" \
  || fail "verify output: $out"
ok "verify --release r2" verify --release r2
expect_fail "verify --release r1 (signed by the revoked key)" "signed by unknown key" verify --release r1

# a broken link in the chain stops verify
cp repo/root/3.root.json.sig r3.bak
cp repo/root/2.root.json.sig repo/root/3.root.json.sig
expect_fail "verify with a broken chain" "root/3.root.json" verify
cp r3.bak repo/root/3.root.json.sig

# thresholds: root role of 2 of R2,R3; one signature is not enough
ok "root threshold 2" "$gen" root rotate "${pin[@]}" --repo repo --key R2.key --key R3.key --root-pub R2.pub --root-pub R3.pub \
  --root-threshold 2
expect_fail "rotate under threshold" "1 of 2 required signatures" \
  "$gen" root rotate "${pin[@]}" --repo repo --key R2.key --timestamp-pub T2.pub
ok "rotate with both" "$gen" root rotate "${pin[@]}" --repo repo --key R2.key --key R3.key --timestamp-pub T2.pub
expect_fail "timestamp by the replaced timestamp key" "sign with the timestamp role's keys" \
  "$gen" timestamp "${pin[@]}" --repo repo --board tb --channel stable --key T1.key
ok "timestamp by the new key" "$gen" timestamp "${pin[@]}" --repo repo --board tb --channel stable --key T2.key
ok "verify at the end" verify

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
