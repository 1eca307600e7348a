#!/usr/bin/env bash
# Recovery after a leaked timestamp key and a leaked release key, end to end
# (issue 29), against a real lighttpd on loopback. The operator's commands
# are those of docs/security.md, "Revoke a stolen key (unplanned)", word for
# word: keep the two in step.
#
# The attacker holds the timestamp key T1 and answers one poll of each
# device (a mirror, a captive portal) with a validly signed timestamp that
# names the genuine manifest: version 2^53 (every genuine timestamp is then
# older), or issued in 9999 (every root and manifest then expired). The
# device whose clock is set refuses the second; the one without a clock
# (1970) takes it. After the operator rotates the timestamp role, both
# devices update without anyone touching them. Then the release key leaks
# too and is rotated out the same way.
# Usage: agent_trust_recovery.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 simboot=$3 src=$4
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to build the test packages"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl is needed to forge the attacker's timestamp"; exit 77; }
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
. "$src/tests/integration/lib/tarpkg.sh"
w=$(mktemp -d /tmp/eq-trust-rec.XXXXXX)
cleanup() { httpd_stop || true; rm -rf "$w"; }
trap cleanup EXIT
trap 'echo "agent_trust_recovery.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"

# The keys and the root of docs/security.md, "Start": 2 of 3 root keys.
for k in root-a root-b root-c release timestamp; do "$gen" keygen --out "$k" >/dev/null; done
pub() { # RELEASE KEY [OPTIONS]
  local rel=$1 key=$2; shift 2
  mkdir -p "p-$rel"
  tarpkg "p-$rel/base_1.tar" usr/share/base "base 1"
  tarpkg "p-$rel/tool_1.tar" usr/share/tool "tool $rel"
  "$gen" -q publish --repo repo --board tb --channel stable --release "$rel" --packages "p-$rel" --key "$key" \
    --trusted-root "$pin" --store s.db --level 1 "$@" >/dev/null
}
"$gen" root init --repo repo --key root-a.key --key root-b.key \
    --root-pub root-a.pub --root-pub root-b.pub --root-pub root-c.pub --root-threshold 2 \
    --release-pub release.pub --timestamp-pub timestamp.pub >/dev/null
# The operator's pin, outside the repository (docs/security.md, "Start":
# /secure/ota/root.json there).
cp repo/root/1.root.json root.json
pin=$w/root.json
pub r1 release.key --timestamp-key timestamp.key
mkdir -p logs image
cp repo/root/1.root.json repo/root/1.root.json.sig image/
httpd_start "$w/repo" "$w/logs"
serve() { local port=$HTTPD_PORT; httpd_stop; HTTPD_PORT_WANTED=$port httpd_start "$1" "$w/logs"; }

boot() { cat /proc/sys/kernel/random/uuid > "$1/boot_id"; "$simboot" --env "$1/bootenv" --cmdline "$1/cmdline"; }
# dev: a clock that is set; nc: no real-time clock, its clock says 1970
eq() { local d=$1; shift; EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" "$@"; }
eqnc() { local d=$1; shift; EQ_TEST_NOW=1 EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" "$@"; }
dev=$w/dev nc=$w/nc
for d in "$dev" "$nc"; do
  simdevice_make "$d" "$HTTPD_URL" tb "$w/image/1.root.json" repository.retries=0 repository.low-speed-time=5
done
run "provision dev" 0 eq "$dev" provision --slot A && boot "$dev" >/dev/null
run "provision nc" 0 eqnc "$nc" provision --slot A && boot "$nc" >/dev/null

# ---- the attacker's two timestamps, signed with the leaked T1 (timestamp.key)
# version 2^53: eqota-gen itself, on a copy whose timestamp says 2^53 - 1
cp -a repo evil-version
sed -i 's/"version": [0-9]*/"version": 9007199254740991/' evil-version/boards/tb/stable/timestamp.json
"$gen" timestamp --repo evil-version --board tb --channel stable --key timestamp.key --trusted-root "$pin" >/dev/null
grep -q '"version": 9007199254740992' evil-version/boards/tb/stable/timestamp.json ||
  fail "forged version: $(cat evil-version/boards/tb/stable/timestamp.json)"
# issued in 9999: the attacker's own tools (eqota-gen never vouches past the
# manifest's expiry); the signature file format is documented
cp -a repo evil-future
tsf=evil-future/boards/tb/stable/timestamp.json
python3 - "$tsf" <<'EOF'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = re.sub(r'"version": (\d+)', lambda m: '"version": %d' % (int(m.group(1)) + 1), s)
s = re.sub(r'"issued": "[^"]*"', '"issued": "9999-12-30T00:00:00Z"', s)
s = re.sub(r'"expires": "[^"]*"', '"expires": "9999-12-31T00:00:00Z"', s)
open(p, "w").write(s)
EOF
keyid=$(openssl pkey -pubin -in timestamp.pub -outform DER | sha256sum | cut -d' ' -f1)
sig=$(openssl dgst -sha256 -sign timestamp.key "$tsf" | base64 -w0)
printf '{\n  "signatures": [\n    {\n      "keyid": "%s",\n      "sig": "%s"\n    }\n  ]\n}\n' "$keyid" "$sig" >"$tsf.sig"

# ---- one poll each answered by the attacker
serve "$w/evil-future"
refused "issued in 9999, clock set" "was issued at 9999-12-30T00:00:00Z, more than 24 hours after this device's clock" \
  eq "$dev" check
run "issued in 9999, no clock" 1 eqnc "$nc" check && grep -q '"issued": "9999-12-30T00:00:00Z"' "$nc/data/trust/timestamp.json" &&
  pass "a device without a clock takes the timestamp issued in 9999" || fail "nc: $out"
serve "$w/evil-version"
run "forged version 2^53" 0 eq "$dev" check && grep -q '"version": 9007199254740992' "$dev/data/trust/timestamp.json" &&
  pass "a device takes the timestamp of version 2^53 signed with the leaked key" || fail "stored: $(cat "$dev/data/trust/timestamp.json")"
serve "$w/repo"

# ---- the genuine repository moves on: both devices are stuck
pub r2 release.key --timestamp-key timestamp.key
refused "dev frozen" "older than the version 9007199254740992 this device accepted" eq "$dev" update
refused "nc frozen" "(now 9999-12-30T00:00:00Z)" eqnc "$nc" update
# a reboot changes nothing
boot "$dev" >/dev/null
refused "dev frozen after a reboot" "older than the version 9007199254740992" eq "$dev" update

# ---- docs/security.md, "Revoke a stolen key (unplanned)", the timestamp key
"$gen" keygen --out timestamp2
"$gen" root rotate --repo repo --key root-a.key --key root-b.key --trusted-root "$pin" \
    --timestamp-pub timestamp2.pub
"$gen" timestamp --repo repo --board tb --channel stable --key timestamp2.key --trusted-root "$pin"

# ---- both devices update on their next poll
run "dev recovers" 3 eq "$dev" update && grep -q "r2" <<<"$out" &&
  pass "the device frozen by version 2^53 installs release 2 after the rotation" || fail "dev: $out"
[ "$(boot "$dev")" = B ] && run "dev mark-good" 0 eq "$dev" mark-good || fail "dev did not try B"
run "nc recovers" 3 eqnc "$nc" update && grep -q "r2" <<<"$out" &&
  pass "the device frozen at 9999 installs release 2 after the rotation" || fail "nc: $out"
[ "$(boot "$nc")" = B ] && run "nc mark-good" 0 eqnc "$nc" mark-good || fail "nc did not try B"
! grep -q 9007199254740992 "$dev/data/trust/timestamp.json" && ! grep -q '"9999-' "$nc/data/trust/timestamp.json" &&
  pass "the forged timestamps are gone from both trust stores" || fail "stored: $(cat "$dev/data/trust/timestamp.json" "$nc/data/trust/timestamp.json")"
# the attacker's timestamps again: signed by a key the timestamp role no longer holds
serve "$w/evil-version"
refused "forged version replayed" "not signed by the timestamp role of root version 2" eq "$dev" check
serve "$w/evil-future"
refused "forged 9999 replayed" "not signed by the timestamp role of root version 2" eqnc "$nc" check
serve "$w/repo"

# ---- the release key leaks as well: the same procedure, for both roles
cp -a repo evil-release
"$gen" keygen --out release2
"$gen" keygen --out timestamp3
"$gen" root rotate --repo repo --key root-a.key --key root-b.key --trusted-root "$pin" \
    --release-pub release2.pub --timestamp-pub timestamp3.pub
pub r3 release2.key --timestamp-key timestamp3.key # eqota-gen publish ... --key release2.key --timestamp-key timestamp3.key
run "dev after the release key rotation" 3 eq "$dev" update && grep -q "r3" <<<"$out" &&
  pass "release 3, signed by the new release key, installs" || fail "dev r3: $out"
[ "$(boot "$dev")" = A ] && run "dev mark-good r3" 0 eq "$dev" mark-good || fail "dev did not try A"
# the attacker signs release 9 with the old release key and both old timestamp keys
(cd evil-release && mkdir -p ../p-r9 && tarpkg ../p-r9/base_1.tar usr/share/base "evil" &&
  "$gen" -q publish --repo . --board tb --channel stable --release r9 --packages ../p-r9 --key ../release.key \
    --timestamp-key ../timestamp2.key --trusted-root "$pin" --store ../evil.db --level 1 >/dev/null 2>&1)
serve "$w/evil-release"
refused "release signed with the old keys" "not signed by the timestamp role of root version 3" eq "$dev" update
serve "$w/repo"
run "status" 0 eq "$dev" status --json
python3 -c 'import json,sys; s=json.loads(sys.argv[1]); assert s["trust"]["root_version"]==3, s' "$out" &&
  pass "the device runs release 3 under root version 3" || fail "status: $out"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
