#!/usr/bin/env bash
# A device in root mode end to end (issue 12): the agent walks the root
# chain, follows the timestamp, survives a key rotation and a revocation,
# and refuses a rolled-back, frozen or key-compromised repository, against
# a real lighttpd on loopback. Packages are small tarballs built here.
# Usage: agent_trust.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 simboot=$3 src=$4
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to build the test packages"; exit 77; }
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
. "$src/tests/integration/lib/tarpkg.sh"
w=$(mktemp -d /tmp/eq-trust.XXXXXX)
cleanup() { httpd_stop || true; rm -rf "$w"; }
trap cleanup EXIT
trap 'echo "agent_trust.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"

for k in R1 R2 K1 K2 T1 T2; do "$gen" keygen --out "$k" >/dev/null; done
pkgs() { # DIR VERSION: three small packages, one of which changes with VERSION
  mkdir -p "$1"
  tarpkg "$1/base_1.tar" usr/share/base "base 1"
  tarpkg "$1/tool_1.tar" usr/share/tool "tool $2"
  tarpkg "$1/data_1.tar" usr/share/data "data 1"
}
pub() { # RELEASE KEY [OPTIONS]
  local rel=$1 key=$2; shift 2
  pkgs "p-$rel" "$rel"
  "$gen" -q publish --repo repo --board tb --channel stable --release "$rel" --packages "p-$rel" --key "$key" \
    --store s.db --level 1 "${pin[@]}" "$@" >/dev/null
}

"$gen" root init --repo repo --key R1.key --root-pub R1.pub --release-pub K1.pub --timestamp-pub T1.pub >/dev/null
cp repo/root/1.root.json pinned.root.json # the publisher's pin, outside the repository
pin=(--trusted-root pinned.root.json)
pub r1 K1.key --timestamp-key T1.key
cp -a repo snap-r1 # what an attacker replays later
mkdir -p logs image
cp repo/root/1.root.json repo/root/1.root.json.sig image/ # the root in the device's image
httpd_start "$w/repo" "$w/logs"
url=$HTTPD_URL

boot() { cat /proc/sys/kernel/random/uuid > "$1/boot_id"; "$simboot" --env "$1/bootenv" --cmdline "$1/cmdline"; }
eq() { local d=$1; shift; EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" "$@"; }
mkdevice() { simdevice_make "$1" "$url" tb "$w/image/1.root.json" repository.retries=0 repository.low-speed-time=5; }
serve() { local port=$HTTPD_PORT; httpd_stop; HTTPD_PORT_WANTED=$port httpd_start "$1" "$w/logs"; }
number_of() { # DEVICE SLOT: the release number status shows for SLOT
  eq "$1" status --json | python3 -c 'import json,sys; print((json.load(sys.stdin)["slots"][sys.argv[1]] or {}).get("number"))' "$2"
}

dev=$w/dev
mkdevice "$dev"
grep -q "^root = $w/image/1.root.json" "$dev/eqota.conf" && pass "device configured in root mode" ||
  fail "config: $(cat "$dev/eqota.conf")"
run "provision" 0 eq "$dev" provision --slot A && pass "provision slot A through root, timestamp and manifest"
boot "$dev" >/dev/null
[ -f "$dev/data/trust/timestamp.json" ] && pass "the accepted timestamp is stored" || fail "no stored timestamp"

# ---- up to date: the manifest the timestamp names comes from the cache
httpd_log_flush; : > "$HTTPD_ACCESS_LOG"
run "check up to date" 0 eq "$dev" check && pass "check: up to date"
httpd_log_flush
if grep -q "^GET /boards/tb/stable/timestamp.json 304" "$HTTPD_ACCESS_LOG" &&
  ! grep -q "^GET /boards/tb/stable/timestamp.json.sig " "$HTTPD_ACCESS_LOG" &&
  ! grep -q "^GET /boards/tb/stable/manifest.json " "$HTTPD_ACCESS_LOG"; then
  pass "an unchanged timestamp is a 304 to a conditional GET: no .sig, no manifest"
else fail "requests: $(cat "$HTTPD_ACCESS_LOG")"; fi
# what the whole check cost above TCP (requests and answers with headers)
wire=$(awk '{ s += $6 + $7 } END { print s + 0 }' "$HTTPD_ACCESS_LOG")
[ "$wire" -gt 0 ] && [ "$wire" -le 1024 ] && pass "an unchanged check costs $wire bytes on the wire (at most 1 KiB)" ||
  fail "unchanged check: $wire bytes on the wire: $(cat "$HTTPD_ACCESS_LOG")"
# validators that name other bytes than the stored timestamp are not sent
cp "$dev/data/timestamp.validators" "$w/validators"
sed -i "1s/^sha256 .*/sha256 $(printf '0%.0s' $(seq 64))/" "$dev/data/timestamp.validators"
httpd_log_flush; : > "$HTTPD_ACCESS_LOG"
run "check, validators of other bytes" 0 eq "$dev" check
httpd_log_flush
grep -q "^GET /boards/tb/stable/timestamp.json 200" "$HTTPD_ACCESS_LOG" &&
  pass "an ETag kept for other bytes than the stored timestamp is not used" || fail "requests: $(cat "$HTTPD_ACCESS_LOG")"
cmp -s "$dev/data/timestamp.validators" "$w/validators" && pass "the ETag is saved again once the timestamp verified" ||
  fail "validators: $(cat "$dev/data/timestamp.validators")"

# ---- a release whose timestamp is not made yet: the device keeps to what the
# timestamp names (its cached manifest), one without that copy refuses the
# new bytes; both get release 2 once the timestamp names it
pub r2 K1.key
run "manifest newer than its timestamp" 0 eq "$dev" update && grep -q "up to date (release 'r1'" <<<"$out" &&
  pass "a manifest the timestamp does not name yet is not used" || fail "update: $out"
cp -a "$dev" "$w/nocache"; rm "$w/nocache/data/manifest.json"; sed -i "s|$dev/|$w/nocache/|g" "$w/nocache/eqota.conf"
httpd_log_flush; : > "$HTTPD_ACCESS_LOG"
refused "manifest newer than its timestamp (no cache)" "but timestamp version 1 names" eq "$w/nocache" update
httpd_log_flush
# the compressed manifest is release 2's, not what the timestamp names: the full one is fetched
grep -q "^GET /boards/tb/stable/manifest.json.zst 200" "$HTTPD_ACCESS_LOG" &&
  grep -q "^GET /boards/tb/stable/manifest.json 200" "$HTTPD_ACCESS_LOG" &&
  pass "a compressed manifest that is not the one the timestamp names is set aside for the full one" ||
  fail "requests: $(cat "$HTTPD_ACCESS_LOG")"
rm -rf "$w/nocache"
"$gen" timestamp "${pin[@]}" --repo repo --board tb --channel stable --key T1.key >/dev/null
httpd_log_flush; : > "$HTTPD_ACCESS_LOG"
run "update to r2" 3 eq "$dev" update && pass "update installs release 2 once the timestamp names it"
httpd_log_flush
# the device holds release 1's manifest: release 2's comes as a manifest delta
if grep -q "^GET /boards/tb/stable/manifest-deltas/[0-9a-f]*-[0-9a-f]*.delta 200" "$HTTPD_ACCESS_LOG" &&
  ! grep -qE "^GET /boards/tb/stable/manifest.json(.zst)? " "$HTTPD_ACCESS_LOG"; then
  pass "the new manifest comes as a delta from the one the device holds"
else fail "requests: $(cat "$HTTPD_ACCESS_LOG")"; fi
[ "$(boot "$dev")" = B ] || fail "did not try B"
run "mark-good" 0 eq "$dev" mark-good && pass "release 2 committed"

# ---- rollback: the server replays the repository of release 1
serve "$w/snap-r1"
refused "replayed old repository" "timestamp version 1 is older than the version 2 this device accepted" \
  eq "$dev" update
serve "$w/repo"

# ---- freeze: a timestamp valid for one hour, the device's clock two hours on
"$gen" timestamp "${pin[@]}" --repo repo --board tb --channel stable --key T1.key --expires-hours 1 >/dev/null
run "fresh timestamp" 0 eq "$dev" check && pass "a fresh timestamp is accepted"
later=$(( $(date +%s) + 7200 ))
refused "frozen timestamp" "timestamp expired at" env EQ_TEST_NOW=$later \
  EQ_TEST_BOOT_ID_FILE="$dev/boot_id" "$eqota" --config "$dev/eqota.conf" update
# without a clock (1970), the newest accepted issue time is the lower bound:
# the timestamp is not expired then and the device stays up to date
run "no clock" 0 env EQ_TEST_NOW=1 EQ_TEST_BOOT_ID_FILE="$dev/boot_id" "$eqota" --config "$dev/eqota.conf" check &&
  pass "a device whose clock says 1970 still checks (lower bound from the timestamp)"

# ---- key compromise: K1 and T1 leak. Root 2 adds K2 and T2, root 3 revokes K1 and T1.
cp -a repo evil # the attacker's copy, made before the rotation
"$gen" root rotate "${pin[@]}" --repo repo --key R1.key --release-pub K1.pub --release-pub K2.pub --timestamp-pub T2.pub >/dev/null
"$gen" root revoke "${pin[@]}" --repo repo --key R1.key --revoke K1.pub >/dev/null
pub r3 K2.key --timestamp-key T2.key
# a damaged manifest delta: the compressed manifest stands in
for f in repo/boards/tb/stable/manifest-deltas/*.delta; do printf 'XXXXXXXX' | dd of="$f" bs=1 seek=120 conv=notrunc 2>/dev/null; done
httpd_log_flush; : > "$HTTPD_ACCESS_LOG"
run "update across two rotations" 3 eq "$dev" update && pass "update walks roots 2 and 3 and installs release 3"
httpd_log_flush
grep -q "^GET /boards/tb/stable/manifest-deltas/.* 200" "$HTTPD_ACCESS_LOG" &&
  grep -q "^GET /boards/tb/stable/manifest.json.zst 200" "$HTTPD_ACCESS_LOG" &&
  ! grep -q "^GET /boards/tb/stable/manifest.json " "$HTTPD_ACCESS_LOG" &&
  pass "a damaged manifest delta is set aside for the compressed manifest" || fail "requests: $(cat "$HTTPD_ACCESS_LOG")"
[ -f "$dev/data/trust/root/3.root.json" ] && pass "roots 2 and 3 stored" || fail "stored: $(ls "$dev/data/trust/root")"
run "status --json trust" 0 eq "$dev" status --json
python3 -c 'import json,sys; t=json.loads(sys.argv[1])["trust"]; assert t["root_version"]==3 and t["timestamp_version"]>=1 and t["timestamp_expires"]>t["root_expires"]-400*86400, t' "$out" &&
  pass "status --json shows root version 3 and the timestamp" || fail "status trust: $out"
run "status trust" 0 eq "$dev" status && grep -q "^trust: root version 3 (expires" <<<"$out" &&
  pass "status shows the trust line" || fail "status: $out"
[ "$(boot "$dev")" = A ] || fail "did not try A"
run "mark-good r3" 0 eq "$dev" mark-good
# The attacker signs release 9 with the leaked keys and hides the new roots.
(cd evil && pkgs "../p-r9" r9 && "$gen" -q publish --repo . --board tb --channel stable --release r9 \
  --packages ../p-r9 --key ../K1.key --timestamp-key ../T1.key --store ../evil.db --level 1 --trusted-root ../pinned.root.json \
  >/dev/null 2>&1)
serve "$w/evil"
refused "repository signed with revoked keys" "not signed by the timestamp role of root version 3" eq "$dev" update
serve "$w/repo"
[ "$(number_of "$dev" A)" = 3 ] && pass "after the attack the device still runs release 3" || fail "slot A: $(number_of "$dev" A)"
# The slot of release 2 (signed by the revoked K1) is still read as installed.
[ "$(number_of "$dev" B)" = 2 ] && pass "the installed slot signed by the revoked key still reads" ||
  fail "slot B: $(number_of "$dev" B)"

# ---- a device installed with root 1 and never online until now
old=$w/old
mkdevice "$old"
run "late provision" 0 eq "$old" provision --slot A && grep -q "release 'r3' (number 3)" <<<"$out" &&
  pass "a device with root 1 in its image catches up to root 3 and installs release 3" || fail "late provision: $out"

# ---- a damaged trust store never adds trust
echo garbage > "$dev/data/trust/root/3.root.json"
run "check with a damaged store" 0 eq "$dev" check
grep -q "stored root version 3 ignored" <<<"$out" && pass "a damaged stored root is reported and fetched again" ||
  fail "damaged store: $out"
cmp -s "$dev/data/trust/root/3.root.json" repo/root/3.root.json && pass "the stored root is repaired" ||
  fail "stored root 3 not repaired"

# ---- a server that refuses HEAD: the root chain is walked with GET
old2=$w/old2
mkdevice "$old2"
port=$HTTPD_PORT; httpd_stop
HTTPD_PORT_WANTED=$port HTTPD_EXTRA_CONF='server.modules += ( "mod_access" )
$HTTP["request-method"] == "HEAD" { url.access-deny = ( "" ) }' httpd_start "$w/repo" "$w/logs"
: > "$HTTPD_ACCESS_LOG"
run "provision, HEAD refused" 0 eq "$old2" provision --slot A
httpd_log_flush
if grep -q "release 'r3' (number 3)" <<<"$out" && grep -q "^HEAD /root/2.root.json 403" "$HTTPD_ACCESS_LOG" &&
  grep -q "^GET /root/2.root.json 200" "$HTTPD_ACCESS_LOG" && grep -q "^GET /root/4.root.json 404" "$HTTPD_ACCESS_LOG"; then
  pass "a server that refuses HEAD: roots 2 and 3 fetched with GET, release 3 installed"
else fail "HEAD refused: $out: $(cat "$HTTPD_ACCESS_LOG")"; fi
serve "$w/repo"

# ---- releases a factory still provisions, across a release-key rotation
# (docs/security.md, "Releases that devices still install"). Release 2 was
# signed by K1 alone, which root 3 revoked: refused now, to new devices too.
fac=$w/fac
mkdevice "$fac"
refused "provision of a release only a revoked key signed" "0 of 1 required signatures" eq "$fac" provision --slot A --release 2
# The planned way: root 4 adds K3 beside K2; while both are in the role,
# release 3 (K2's) is promoted with both keys to the channel factories
# install from; root 5 then removes K2.
"$gen" keygen --out K3 >/dev/null
"$gen" root rotate "${pin[@]}" --repo repo --key R1.key --release-pub K2.pub --release-pub K3.pub >/dev/null
run "promote with the old and the new key" 0 "$gen" -q promote "${pin[@]}" --repo repo --board tb --from-channel stable \
  --release r3 --to-channel factory --key K2.key --key K3.key --timestamp-key T2.key --level 1 &&
  pass "release 3 promoted to factory, signed by K2 and K3"
"$gen" root revoke "${pin[@]}" --repo repo --key R1.key --revoke K2.pub >/dev/null
refused "provision of release 3 of stable after K2 left the role" "0 of 1 required signatures" \
  eq "$fac" provision --slot A --release 3
sed -i 's/^channel = stable$/channel = factory/' "$fac/eqota.conf"
run "provision from factory" 0 eq "$fac" provision --slot A --release r3 && grep -q "release 'r3'" <<<"$out" &&
  pass "the release promoted with the new key still provisions after the old key left the role" ||
  fail "provision from factory: $out"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
