#!/usr/bin/env bash
# One eqota at a time on a device (issue 17, "Two eqota commands at once"):
# while `mark-good` runs a slow health check, an operator's `update` and
# `check` are refused with a message naming the holder, `status` still
# answers, and the daemon skips its confirm instead of running it twice;
# the lock goes with its holder: after a SIGKILL the next command runs.
# Usage: agent_lock.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" agent_lock "$@"

"$gen" keygen --out k >/dev/null
pub() {
  mkdir -p "p$1"
  tarpkg "p$1/app_$1.tar" usr/share/app "app $1"
  "$gen" -q publish --repo repo --board b --channel stable --release "r$1" --packages "p$1" --key k.key \
    --store repo.db --level 1 >/dev/null
}
pub 1
mkdir -p logs
httpd_start "$w/repo" "$w/logs"
# A health check that says when it starts and takes its time.
printf '#!/bin/sh\ntouch %s/started\nsleep 4\n' "$w" >"$w/slow"
chmod +x "$w/slow"
d=$w/dev
simdevice_make "$d" "$HTTPD_URL" b "$w/k.pub" repository.retries=0 "health.check=$w/slow" health.timeout=60
eq() { simdevice_eq "$d" "$eqota" "$@"; }
# eqota itself in the background ($! is then its PID, not a subshell's)
eq_bg() { EQ_TEST_BOOT_ID_FILE=$d/boot_id exec "$eqota" --config "$d/eqota.conf" "$@"; }
eq provision --slot A >/dev/null 2>&1
simdevice_boot "$d" "$simboot"
pub 2
rc=0; eq update >/dev/null 2>&1 || rc=$?
[ $rc -eq 3 ] && pass "release 2 installed, on trial" || fail "update: exit $rc"
simdevice_boot "$d" "$simboot"

# ---- mark-good holds the lock while its check runs
(eq_bg mark-good >"$w/mg.out" 2>&1) &
mg=$!
bg+=("$mg")
wait_for 10 test -e "$w/started" || fail "the health check did not start"
expect_fail "update while mark-good runs" "another eqota is working on this device (eqota mark-good, PID $mg)" eq update
expect_fail "check while mark-good runs" "try again when it is done" eq check
out=$(eq status 2>&1) && grep -q "update: trying" <<<"$out" && pass "status answers meanwhile" || fail "status: $out"
(eq_bg daemon >"$w/daemon.out" 2>&1) &
dm=$!
bg+=("$dm")
wait_for 10 grep -qs "this poll is skipped" "$w/daemon.out" &&
  pass "the daemon skips its confirm while mark-good holds the lock" || fail "daemon: $(cat "$w/daemon.out")"
kill "$dm" 2>/dev/null || true
wait "$dm" 2>/dev/null || true
rc=0; wait "$mg" || rc=$?
[ $rc -eq 0 ] && grep -q "committed" "$w/mg.out" && pass "mark-good committed release 2 alone" ||
  fail "mark-good: exit $rc, $(cat "$w/mg.out")"
rc=0; eq update >/dev/null 2>&1 || rc=$?
[ $rc -eq 0 ] && pass "then update runs" || fail "update after: exit $rc"

# ---- a holder killed by SIGKILL leaves nothing held
pub 3
eq update >/dev/null 2>&1 || true
simdevice_boot "$d" "$simboot"
rm -f "$w/started"
(eq_bg mark-good >/dev/null 2>&1) &
mg=$!
bg+=("$mg")
wait_for 10 test -e "$w/started" || fail "the health check did not start"
kill -9 "$mg"
wait "$mg" 2>/dev/null || true
# (its health check, a sleep in a process group of its own, ends by itself)
out=$(eq mark-good 2>&1) && grep -q "committed" <<<"$out" && pass "after a SIGKILL the next mark-good runs and commits" ||
  fail "after SIGKILL: $out"
grep -q "eqota mark-good, PID" "$d/data/lock" && pass "the lock file names its last holder" ||
  fail "lock file: $(cat "$d/data/lock")"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "one eqota at a time"
