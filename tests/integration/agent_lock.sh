#!/usr/bin/env bash
# One eqota at a time on a device (issue 17, "Two eqota commands at once"):
# while `mark-good` runs a slow health check, an operator's `update` and
# `check` are refused with a message naming the holder, `status` still
# answers, and the daemon skips its confirm instead of running it twice;
# the lock goes with its holder: after a SIGKILL the next command runs.
# Issue 29 (docs/security.md, "The agent's lock"): no other user can open
# the lock, so none can hold it (as user nobody, with setpriv, when run as
# root); a symlink or another user's file planted as the lock is refused;
# mark-good waits a while for another eqota and, blocked for longer, leaves
# the trial undecided; the daemon retries a skipped confirm until it runs.
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
setup_step "update to release 3" 3 eq update
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
grep -q "eqota mark-good, PID" "$d/data/agent.lock" && pass "the lock file names its last holder" ||
  fail "lock file: $(cat "$d/data/agent.lock")"

# hold FILE [USER]: holds flock on FILE in the background (as USER, with
# setpriv) until $w/release exists; waits until it is held or refused.
hold() {
  rm -f "$w/release" "$w/nb/held" "$w/nb/refused"
  local as=()
  [ -z "${2:-}" ] || as=(setpriv --reuid="$2" --regid="$(id -g "$2")" --clear-groups)
  ("${as[@]}" bash -c 'exec 9<"$1" && flock -n 9 || { touch "$2/refused"; exit 1; }
    touch "$2/held"; while [ ! -e "$3" ]; do sleep 0.1; done' hold "$1" "$w/nb" "$w/release" 2>/dev/null) &
  holder=$!
  bg+=("$holder")
  wait_for 10 test -e "$w/nb/held" -o -e "$w/nb/refused" || fail "hold $1: neither held nor refused"
  [ -e "$w/nb/held" ]
}
release() { touch "$w/release"; wait "$holder" 2>/dev/null || true; }
mkdir -p "$w/nb"
chmod 777 "$w/nb"
state() { eq status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["state"]["phase"], d["failed"])'; }

# ---- another user holding the lock blocks nothing
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  chmod 755 "$w" "$d"
  pub 4
  setup_step "update to release 4" 3 eq update
  simdevice_boot "$d" "$simboot"
  # As earlier versions left it on every device: world-readable.
  : >"$d/data/lock"
  chmod 644 "$d/data/lock"
  # user nobody holds that one, as it could before the fix...
  hold "$d/data/lock" nobody || fail "user nobody cannot hold the old lock"
  held_by_nobody=$holder
  # ...and cannot open the lock eqota uses now
  if hold "$d/data/agent.lock" nobody; then
    fail "user nobody holds <data>/agent.lock"
  else
    pass "user nobody cannot open or take <data>/agent.lock"
  fi
  out=$(eq mark-good 2>&1) && grep -q "committed" <<<"$out" &&
    pass "mark-good commits release 4 while user nobody tries to hold the lock" || fail "mark-good: $out"
  touch "$w/release"
  wait "$held_by_nobody" 2>/dev/null || true
  [ ! -e "$d/data/lock" ] && pass "the world-readable lock of earlier versions is gone" ||
    fail "old lock: $(ls -l "$d/data/lock")"
  m=$(stat -c '%a %u' "$d/data/agent.lock")
  [ "$m" = "600 0" ] && pass "the lock is 0600, root's" || fail "lock mode and owner: $m"
  hold "$d/data/agent.lock" nobody && fail "user nobody holds the lock after mark-good" ||
    pass "user nobody cannot open the lock after mark-good either"
  out=$(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$eqota" --config "$d/eqota.conf" status 2>&1) &&
    pass "status answers user nobody" || fail "status as nobody: $out"

  # ---- a lock planted by another user, or as a symlink, is refused
  rm -f "$d/data/agent.lock"
  echo keep >"$w/target"
  ln -s "$w/target" "$d/data/agent.lock"
  expect_fail "a symlink planted as the lock" "is a symbolic link, which eqota never makes" eq check
  [ "$(cat "$w/target")" = keep ] && pass "the symlink's target is untouched" || fail "target: $(cat "$w/target")"
  rm -f "$d/data/agent.lock"
  setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups touch "$w/nb/planted"
  mv "$w/nb/planted" "$d/data/agent.lock"
  expect_fail "user nobody's file planted as the lock" "belongs to user $(id -u nobody), not to eqota's user 0" eq check
  rm -f "$d/data/agent.lock"
  : >"$d/data/agent.lock"
  chmod 666 "$d/data/agent.lock"
  out=$(eq check 2>&1) && grep -q "now 0600, continuing" <<<"$out" && [ "$(stat -c %a "$d/data/agent.lock")" = 600 ] &&
    pass "a lock of ours open to others is made 0600" || fail "mode 0666 lock: $out"
  chmod 777 "$d/data"
  out=$(eq check 2>&1) && grep -q "data folder $d/data is writable by other users (mode 777)" <<<"$out" &&
    pass "a data folder open to others is warned about" || fail "mode 0777 data folder: $out"
  chmod 755 "$d/data"
else
  echo "SKIP: the checks with another user need root and setpriv"
fi

# ---- mark-good during a trial waits for another eqota, and a confirmation
# blocked for longer leaves the trial undecided, never failed
pub 5
setup_step "update to release 5" 3 eq update
simdevice_boot "$d" "$simboot"
hold "$d/data/agent.lock" || fail "root cannot hold the lock"
(sleep 2; touch "$w/release") &
bg+=("$!")
out=$(EQ_TEST_LOCK_WAIT_MS=20000 eq mark-good 2>&1) && grep -q "committed" <<<"$out" &&
  pass "mark-good waits for a holder of the lock, then commits release 5" || fail "mark-good waiting: $out"
release
pub 6
setup_step "update to release 6" 3 eq update
simdevice_boot "$d" "$simboot"
hold "$d/data/agent.lock" || fail "root cannot hold the lock"
expect_fail "mark-good blocked past its wait" "a slot on trial stays undecided" env EQ_TEST_LOCK_WAIT_MS=500 \
  EQ_TEST_BOOT_ID_FILE="$d/boot_id" "$eqota" --config "$d/eqota.conf" mark-good
p=$(state)
[ "$p" = "trying None" ] && pass "release 6 stays on trial, not failed" || fail "state after a blocked mark-good: $p"
(EQ_TEST_POLL_MS=300 eq_bg daemon >"$w/daemon2.out" 2>&1) &
dm=$!
bg+=("$dm")
wait_for 10 grep -qs "the confirm step is retried at the next one" "$w/daemon2.out" &&
  pass "the daemon's confirm finds the lock held" || fail "daemon: $(cat "$w/daemon2.out")"
release
wait_for 20 grep -qs "passed its health checks and is committed" "$w/daemon2.out" &&
  pass "the daemon retries its confirm and commits release 6 once the lock is free" ||
  fail "daemon after the holder left: $(cat "$w/daemon2.out")"
kill "$dm" 2>/dev/null || true
wait "$dm" 2>/dev/null || true

# ---- a lock that cannot be taken at all is no other eqota at work: the
# daemon exits with the reason (a unit's ProtectSystem=strict over a data
# folder it was not given, seen on a systemd image: "Read-only file
# system"), instead of waiting for a holder that does not exist
mv "$d/data/agent.lock" "$d/data/agent.lock.keep"
mkdir "$d/data/agent.lock"
rc=0; out=$(timeout 20 env EQ_TEST_POLL_MS=300 EQ_TEST_BOOT_ID_FILE="$d/boot_id" "$eqota" --config "$d/eqota.conf" daemon 2>&1) || rc=$?
if [ $rc -eq 1 ] && grep -q "agent.lock" <<<"$out" && grep -q "cannot work without its lock" <<<"$out" &&
  ! grep -q "retried at the next one" <<<"$out"; then
  pass "a lock that cannot be opened: the daemon exits 1 naming it"
else
  fail "daemon with an unusable lock: exit $rc, $out"
fi
rmdir "$d/data/agent.lock"
mv "$d/data/agent.lock.keep" "$d/data/agent.lock"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "one eqota at a time"
