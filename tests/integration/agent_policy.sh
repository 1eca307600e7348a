#!/usr/bin/env bash
# What keeps simulated devices served by lighttpd from installing a release
# they could verify (docs/fleet.md):
# - [update] pin: a device on release 1 pinned to 2 installs release 2 from
#   its own manifest although the channel offers 3, then stays;
# - a hold (`eqota hold` and [update] hold-until): nothing installs until
#   it is lifted or passes;
# - a staged rollout over 24 devices with their own ids: at 0 % none
#   installs, at 40 % exactly the devices an independent implementation of
#   the documented hash picks, a halt stops every other device at any
#   percentage (the ones running it stay), resuming at 100 % brings the rest;
# - bad input: a damaged hold file, a missing device id, hold times out of
#   range, rollout steps for the wrong release or repository.
# Usage: agent_policy.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" agent_policy "$@"

for k in R K T; do "$gen" keygen --out "$k" >/dev/null; done
"$gen" root init --repo repo --key R.key --root-pub R.pub --release-pub K.pub --timestamp-pub T.pub >/dev/null
cp repo/root/1.root.json pinned.root.json # the publisher's pin, outside the repository
pub() { # RELEASE [OPTIONS...]
  local rel=$1; shift
  mkdir -p "p$rel"
  tarpkg "p$rel/base_1.tar" usr/share/base "base"
  tarpkg "p$rel/tool_$rel.tar" usr/share/tool "tool $rel"
  "$gen" -q publish --repo repo --board b --channel stable --release "r$rel" --packages "p$rel" --key K.key \
    --timestamp-key T.key --store repo.db --level 1 --trusted-root pinned.root.json "$@" >/dev/null
}
rollout() { "$gen" -q rollout --repo repo --board b --channel stable --key T.key --trusted-root pinned.root.json "$@"; }
pub 1
mkdir -p logs
httpd_start "$w/repo" "$w/logs"

# device NAME [SECTION.KEY=VALUE...]: a device on release 1 whose id is
# "id-NAME" in its own file
device() {
  local d=$w/$1; shift
  simdevice_make "$d" "$HTTPD_URL" b "$w/repo/root/1.root.json" repository.retries=0 \
    "update.device-id-file=$d/machine-id" "$@"
  echo "id-$(basename "$d")" >"$d/machine-id"
  EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" provision --slot A --release 1 >/dev/null 2>&1
  cat /proc/sys/kernel/random/uuid >"$d/boot_id"
  "$simboot" --env "$d/bootenv" --cmdline "$d/cmdline" >/dev/null
}
eq() { local d=$w/$1; shift; simdevice_eq "$d" "$eqota" "$@"; }
# reboot_commit NAME: boots the slot on trial and confirms it
reboot_commit() {
  cat /proc/sys/kernel/random/uuid >"$w/$1/boot_id"
  "$simboot" --env "$w/$1/bootenv" --cmdline "$w/$1/cmdline" >/dev/null
  eq "$1" mark-good >/dev/null 2>&1
}
running() { eq "$1" status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["slots"][d["booted"]]["number"])'; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d = d[k] if d is not None else None
print(json.dumps(d))' "$1"; }

# ---- pin
device pinned update.pin=2
pub 2
pub 3
out=$(eq pinned check)
grep -q "pin = 2 stops this device" <<<"$out" && pass "check names the pin" || fail "check: $out"
rc=0; eq pinned update >/dev/null 2>&1 || rc=$?
[ $rc -eq 3 ] && reboot_commit pinned && [ "$(running pinned)" = 2 ] &&
  pass "pinned to 2: installed release 2 while the channel offers 3" || fail "pin: exit $rc, running $(running pinned)"
out=$(eq pinned update 2>&1) && grep -q "pin = 2: the running release is that one or newer" <<<"$out" &&
  [ "$(running pinned)" = 2 ] && pass "pinned at 2: release 3 is not installed" || fail "pin stays: $out"
[ "$(eq pinned check --json | field deferred)" = '"pinned"' ] && pass "check --json: deferred pinned" ||
  fail "check --json pinned"
eq pinned status | grep -q "pin: release 2 at most" && pass "status shows the pin" || fail "status pin"

# ---- hold, by command and by config
device held
expect_fail "hold in the past" "that time has passed" eq held hold --until 2020-01-01T00:00:00Z
expect_fail "hold for too long" "at most 366 days" eq held hold --for 400d
expect_fail "hold without a time" "hold needs one of" eq held hold
expect_fail "hold with a bad duration" "--for expects" eq held hold --for 6w
eq held hold --for 6h | grep -q "no new release is installed until" && pass "hold --for 6h" || fail "hold --for"
out=$(eq held update 2>&1) && grep -q "updates are held until .*by 'eqota hold'" <<<"$out" &&
  [ "$(running held)" = 1 ] && pass "held: nothing installed" || fail "held update: $out"
eq held status | grep -q "hold: no update until" && pass "status shows the hold" || fail "status hold"
printf 'until=soon\n' >"$w/held/data/hold"
expect_fail "damaged hold file" "hold file $w/held/data/hold: expected one line" eq held update
[ "$(running held)" = 1 ] && pass "damaged hold file: the device stays on its release" || fail "damaged hold"
eq held hold --off >/dev/null
rc=0; eq held update >/dev/null 2>&1 || rc=$?
[ $rc -eq 3 ] && pass "hold lifted: the update installs" || fail "after hold --off: exit $rc"
device cfgheld "update.hold-until=$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)"
out=$(eq cfgheld update 2>&1) && grep -q "by \[update\] hold-until" <<<"$out" && pass "hold by the config" ||
  fail "config hold: $out"
device cfgpast "update.hold-until=2020-01-01T00:00:00Z"
rc=0; eq cfgpast update >/dev/null 2>&1 || rc=$?
[ $rc -eq 3 ] && pass "a hold-until that has passed holds nothing" || fail "past config hold: exit $rc"

# ---- staged rollout over 24 devices
pub 4 --rollout-percent 0
n=24
for i in $(seq 1 $n); do device "f$i"; done
# selected NAME NUMBER PERCENT: the documented rule (docs/fleet.md),
# implemented independently of the agent
selected() {
  python3 - "$(cat "$w/$1/machine-id")" "$2" "$3" <<'PY'
import hashlib, sys
dev, number, pct = sys.argv[1], sys.argv[2], int(sys.argv[3])
h = hashlib.sha256(b"\0".join(x.encode() for x in ["eqota-rollout-1", dev, "b", "stable", number]) + b"\0").digest()
sys.exit(0 if int.from_bytes(h[:8], "big") % 10000 < pct * 100 else 1)
PY
}
updated=0
for i in $(seq 1 $n); do
  eq "f$i" update >/dev/null 2>&1 || { [ $? -eq 3 ] && updated=$((updated + 1)); }
done
[ $updated -eq 0 ] && pass "rollout at 0 %: no device installs" || fail "0 %: $updated devices installed"
out=$(eq f1 check)
grep -q "rolled out to 0 % of devices, not yet to this one" <<<"$out" && pass "check says the device is out" ||
  fail "check out: $out"
expect_fail "rollout for another release" "not 'r3': a rollout applies to the current release only" \
  rollout --release r3 --percent 40
rollout --release r4 --percent 40 | grep -q "rollout 40 %" && pass "rollout --percent 40" || fail "rollout 40"
"$gen" -q timestamp --repo repo --board b --channel stable --key T.key --trusted-root pinned.root.json >/dev/null
[ "$(rollout)" = "release 'r4' (number 4): rollout 40 %" ] && pass "a timestamp refresh keeps the rollout" ||
  fail "after eqota-gen timestamp: $(rollout)"
want=() got=()
for i in $(seq 1 $n); do
  selected "f$i" 4 40 && want+=("f$i")
  rc=0; eq "f$i" update >/dev/null 2>&1 || rc=$?
  [ $rc -eq 3 ] && got+=("f$i")
done
echo "at 40 %: ${#got[@]} of $n devices installed: ${got[*]}"
[ "${want[*]}" = "${got[*]}" ] && [ ${#got[@]} -gt 0 ] && [ ${#got[@]} -lt $n ] &&
  pass "rollout at 40 %: exactly the devices the documented hash picks (${#got[@]} of $n)" ||
  fail "40 %: wanted ${want[*]}, got ${got[*]}"
for d in "${got[@]}"; do reboot_commit "$d"; done
[ "$(eq "${got[0]}" status --json | field rollout.selected)" = true ] && pass "status: a chosen device says so" ||
  fail "status selected"
rollout --halt | grep -q "halted" && pass "rollout --halt" || fail "halt"
rollout --percent 100 >/dev/null
[ "$(rollout)" = "release 'r4' (number 4): rollout 100 %, halted: devices that have not installed it do not" ] &&
  pass "rollout prints the halted state" || fail "rollout state: $(rollout)"
late=0
for i in $(seq 1 $n); do
  rc=0; eq "f$i" update >/dev/null 2>&1 || rc=$?
  [ $rc -eq 3 ] && late=$((late + 1))
done
stay=0
for d in "${got[@]}"; do [ "$(running "$d")" = 4 ] && stay=$((stay + 1)); done
[ $late -eq 0 ] && [ $stay -eq ${#got[@]} ] &&
  pass "halted at 100 %: no new installs, the $stay devices running it stay" || fail "halt: $late new, $stay stayed"
for i in $(seq 1 $n); do selected "f$i" 4 40 || { outdev=f$i; break; }; done
out=$(eq "$outdev" update 2>&1)
grep -q "the rollout of release 4 is halted" <<<"$out" && pass "update says the rollout is halted" || fail "halted: $out"
rollout --resume | grep -q "out to every device" && pass "rollout --resume at 100 %" || fail "resume"
rest=0
for i in $(seq 1 $n); do
  rc=0; eq "f$i" update >/dev/null 2>&1 || rc=$?
  [ $rc -eq 3 ] && rest=$((rest + 1))
done
[ $rest -eq $((n - ${#got[@]})) ] && pass "resumed: the other $rest devices install" || fail "resume: $rest installed"

# ---- the device id is needed only while a rollout is staged
pub 5 --rollout-percent 100
device noid
rm "$w/noid/machine-id"
rc=0; eq noid update >/dev/null 2>&1 || rc=$?
[ $rc -eq 3 ] && pass "no device id, rollout complete: installs" || fail "noid at 100: exit $rc"
device noid2
rm "$w/noid2/machine-id"
rollout --percent 99 >/dev/null
out=$(eq noid2 update 2>&1) && grep -q "cannot tell whether it is one of them (device id $w/noid2/machine-id" <<<"$out" &&
  pass "no device id, staged rollout: waits, naming the file" || fail "noid staged: $out"

# ---- the publisher refuses
expect_fail "rollout --percent 101" "expected 0..100" rollout --percent 101
expect_fail "rollout --halt --resume" "exclude each other" rollout --halt --resume
expect_fail "rollout without a key" "missing --key" "$gen" rollout --repo repo --board b --channel stable --percent 5
expect_fail "rollout with a release key" "not written: sign with the timestamp role's keys" \
  "$gen" rollout --repo repo --board b --channel stable --percent 5 --key K.key --trusted-root pinned.root.json
expect_fail "publish --rollout-percent without a timestamp key" "--rollout-percent needs --timestamp-key" \
  "$gen" publish --repo repo --board b --channel stable --release r9 --packages p1 --key K.key --rollout-percent 5
mkdir -p legacy
"$gen" -q publish --repo legacy --board b --channel stable --release r1 --packages p1 --key K.key --store l.db >/dev/null
expect_fail "rollout on a repository without a root" "no root" \
  "$gen" rollout --repo legacy --board b --channel stable --percent 5 --key T.key

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "pin, hold and staged rollout hold"
