#!/usr/bin/env bash
# [persist] on a simulated device (issue 31, item 3). The release ships a
# machine id and a hostname of its own (in packages that stay the same from
# release to release, so they are kept) and no ssh host key; the device has
# its own three. The agent reads its id where a real device does: in the
# slot that booted ($d/root points at it, as / would). Checked:
#   - after r1 -> r2 the new slot holds the device's id, key and hostname,
#     with their modes, and the release's versions beside the records;
#   - the rollout choice (status --json, a 50 % rollout the device is in and
#     the release's id is not) and the report id (the queued reports of
#     "installed", sent from slot A, and "committed", from slot B) are the
#     same before and after the update, and what the documented hashes give;
#   - `eqota verify` passes and counts the persisted entries, after the
#     first boot changed them in the provisioned slot and after updates;
#     every update keeps both packages (no fallback download) and the
#     device's files arrive again;
#   - over [persist] max-bytes the update stops before the switch, and the
#     running slot and the boot order are unchanged.
# Usage: agent_persist.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" agent_persist "$@"

image_id=0123456789abcdef0123456789abcdef
# A device id in release 2's 50 % rollout whose release id is not in it
# (docs/fleet.md: the rollout hash), so the choice tells the two apart.
bucket() { # ID NUMBER
  python3 - "$1" "$2" <<'PY'
import hashlib, sys
h = hashlib.sha256(b"\0".join(x.encode() for x in ["eqota-rollout-1", sys.argv[1], "b", "stable", sys.argv[2]]) + b"\0").digest()
print(int.from_bytes(h[:8], "big") % 10000)
PY
}
[ "$(bucket $image_id 2)" -ge 5000 ] || { echo "the release id is in the 50 % rollout: pick another" >&2; exit 1; }
dev_id=$(python3 - <<'PY'
import hashlib
for i in range(1000):
    d = "%032x" % (0xd0d0 * 1000003 + i)
    h = hashlib.sha256(b"\0".join(x.encode() for x in ["eqota-rollout-1", d, "b", "stable", "2"]) + b"\0").digest()
    if int.from_bytes(h[:8], "big") % 10000 < 5000:
        print(d)
        break
PY
)
report_id() { python3 -c 'import hashlib,sys; print(hashlib.sha256(b"eqota-report-id-1\0" + sys.argv[1].encode()).hexdigest()[:32])' "$1"; }

for k in R K T; do "$gen" keygen --out "$k" >/dev/null; done
"$gen" root init --repo repo --key R.key --root-pub R.pub --release-pub K.pub --timestamp-pub T.pub >/dev/null
cp repo/root/1.root.json pinned.root.json
pub() { # RELEASE [OPTIONS...]
  local rel=$1; shift
  mkdir -p "p$rel"
  tarpkg "p$rel/base_1.tar" etc/hostname "image-host"
  tarpkg "p$rel/ident_1.tar" etc/machine-id "$image_id"
  tarpkg "p$rel/tool_$rel.tar" usr/share/tool/version "tool $rel"
  "$gen" -q publish --repo repo --board b --channel stable --release "r$rel" --packages "p$rel" --key K.key \
    --timestamp-key T.key --store repo.db --level 1 --trusted-root pinned.root.json "$@" >/dev/null
}
pub 1
mkdir -p logs
httpd_start "$w/repo" "$w/logs"
d=$w/dev
# Reports go to a port nothing listens on: they stay queued, to be read.
simdevice_make "$d" "$HTTPD_URL" b "$w/repo/root/1.root.json" repository.retries=0 \
  "update.device-id-file=$d/root/etc/machine-id" report.url=http://127.0.0.1:9/r report.timeout=1
eq() { simdevice_eq "$d" "$eqota" "$@"; }
booted() { eq status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["booted"])'; }
# boot: the bootloader's choice, and that slot as the device's root
boot() { simdevice_boot "$d" "$simboot"; ln -sfn "$d/$(booted)" "$d/root"; }
selected() { eq status --json | python3 -c 'import json,sys; r=json.load(sys.stdin)["rollout"]; print(r and r["selected"])'; }
reports() { cat "$d"/data/reports/*.json 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["event"], r["device"])'; }

eq provision --slot A --release 1 >/dev/null 2>&1
boot
[ "$(booted)" = A ] || fail "provisioned slot A does not boot"
[ "$(cat "$d/A/etc/machine-id")" = $image_id ] && pass "provisioning copies nothing: slot A has the release's id" ||
  fail "provision: $(cat "$d/A/etc/machine-id")"
# First boot: the device makes its own identity (systemd-machine-id-setup,
# sshd-keygen, the factory's hostname).
echo "$dev_id" >"$d/A/etc/machine-id"
echo "device-7" >"$d/A/etc/hostname"
out=$(eq verify) && rc=0 || rc=$?
[ $rc -eq 0 ] && grep -q "2 entries at \[persist\] paths" <<<"$out" &&
  pass "verify after the first boot: the device's id and hostname are persistent, not damage" ||
  fail "verify on A: exit $rc: $out"
mkdir -p "$d/A/etc/ssh"
printf 'device host key\n' >"$d/A/etc/ssh/ssh_host_ed25519_key"
chmod 0600 "$d/A/etc/ssh/ssh_host_ed25519_key"
printf 'device host key.pub\n' >"$d/A/etc/ssh/ssh_host_ed25519_key.pub"

pub 2 --rollout-percent 50
eq check >/dev/null 2>&1 # fetches the timestamp that names the rollout
before=$(selected)
[ "$before" = True ] && pass "before: the device is in release 2's 50 % rollout (bucket $(bucket "$dev_id" 2))" ||
  fail "before: selected=$before"

out=$(eq update 2>&1) && rc=0 || rc=$?
echo "$out" | tail -1
# Provisioning kept the release's id and hostname beside the records, so
# the first boot's own ones do not cost a download of their packages.
[ $rc -eq 3 ] && grep -q "installed release 'r2'.* 2 packages kept, .* 0 fell back" <<<"$out" &&
  pass "update r1 -> r2: base and ident kept, though the first boot changed their files" ||
  fail "update: exit $rc: $out"
[ "$(cat "$d/B/etc/machine-id")" = "$dev_id" ] && [ "$(cat "$d/B/etc/hostname")" = device-7 ] &&
  [ "$(cat "$d/B/etc/ssh/ssh_host_ed25519_key")" = "device host key" ] &&
  [ "$(stat -c %a "$d/B/etc/ssh/ssh_host_ed25519_key")" = 600 ] &&
  [ -f "$d/B/etc/ssh/ssh_host_ed25519_key.pub" ] &&
  pass "slot B holds the device's id, hostname and host keys (0600 kept)" || fail "slot B: $(cat "$d/B/etc/machine-id")"
[ "$(cat "$d/B/usr/lib/eqota/slot/persist/image/etc/machine-id")" = $image_id ] &&
  pass "the release's id is kept beside the records" || fail "image copy"

boot
[ "$(booted)" = B ] || fail "slot B does not boot"
eq mark-good >/dev/null 2>&1
after=$(selected)
[ "$after" = "$before" ] && pass "after: the same rollout choice from slot B's id ($after)" || fail "after: $after"
want=$(report_id "$dev_id")
got=$(reports)
echo "$got"
[ "$(grep -c " $want\$" <<<"$got")" -eq 2 ] && grep -q "^installed $want" <<<"$got" &&
  grep -q "^committed $want" <<<"$got" &&
  pass "the report id is the same before and after the update ($want)" || fail "reports: $got"

out=$(eq verify) && rc=0 || rc=$?
echo "$out"
[ $rc -eq 0 ] && grep -q "every file matches its record" <<<"$out" && grep -q "2 entries at \[persist\] paths" <<<"$out" &&
  pass "verify passes, the persisted entries named" || fail "verify: exit $rc"
[ "$(eq verify --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["persistent"])')" = 2 ] &&
  pass "verify --json: persistent 2" || fail "verify --json"

# ---- the next update keeps the packages that ship a persisted path
pub 3
out=$(eq update 2>&1) && rc=0 || rc=$?
echo "$out" | tail -1
[ $rc -eq 3 ] && grep -q "2 packages kept, .* 0 fell back" <<<"$out" &&
  pass "update r2 -> r3: base and ident kept from slot B, no fallback" || fail "update r3: exit $rc: $out"
[ "$(cat "$d/A/etc/machine-id")" = "$dev_id" ] && [ "$(cat "$d/A/etc/hostname")" = device-7 ] &&
  pass "slot A holds the device's id again" || fail "slot A: $(cat "$d/A/etc/machine-id")"
boot
eq mark-good >/dev/null 2>&1
eq verify >/dev/null && pass "slot A verifies" || fail "verify A"

# ---- over the cap: stopped before the switch
sed -i 's/^\[report\]$/[persist]\nmax-bytes = 16\n[report]/' "$d/eqota.conf"
pub 4
cp -a "$d/A/etc" "$w/etc-before"
out=$(eq update 2>&1) && rc=0 || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 3 ] && grep -q "over \[persist\] max-bytes (16 B)" <<<"$out" &&
  pass "over max-bytes: the update stops ($(grep -o "persist: .*max-bytes (16 B)" <<<"$out" | head -1))" ||
  fail "cap: exit $rc: $out"
diff -r "$w/etc-before" "$d/A/etc" >/dev/null && [ "$(booted)" = A ] && [ "$(simdevice_running "$d" "$eqota")" = 3 ] &&
  pass "the running slot and its release are unchanged" || fail "after the refused update"
boot
[ "$(booted)" = A ] && pass "the next boot is slot A again" || fail "booted $(booted) after a refused update"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "the device keeps its own files across updates"
