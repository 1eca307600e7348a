#!/usr/bin/env bash
# Clock jumps (issue 17, "Months of uptime"): the wall clock the agent sees
# (the EQ_TEST_NOW_FILE hook, read at every use: "+N"/"-N" seconds added to
# the real clock) jumps a year forwards and backwards under a running
# daemon, while it polls and while a trial boot runs its health check. The
# daemon schedules with a monotonic clock, so the polls keep their pace
# (EQ_TEST_POLL_MS): no spin, no year-long sleep. What the wall clock
# decides stays right:
#   - a manifest published with a long expiry (--expires 800 days) stays
#     valid a year on: polls stay "up to date";
#   - a manifest that expires in 30 days looks expired a year on: the new
#     release is refused (expected, correct), the running slot untouched,
#     nothing recorded against the release; back in the present it installs;
#   - a trial boot is neither failed nor committed by a jump: the health
#     check decides (one that passes commits, one that fails rolls back);
#   - the backoff after an install error is a wait of at most 6 h from the
#     error: a clock set back a year after the error does not turn it into
#     a year.
# Usage: agent_clock.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" agent_clock "$@"

year=31536000
poll_ms=200

"$gen" keygen --out k >/dev/null
mkdir -p pkgs logs
tarpkg pkgs/base_1.tar usr/share/base/data "base data"
pub() { # RELEASE EXPIRES_DAYS
  rm -f pkgs/app_*.tar
  tarpkg "pkgs/app_$1.tar" usr/share/app/version "app $1"
  "$gen" -q publish --repo repo --board b --channel stable --release "r$1" --packages pkgs --key k.key \
    --store repo.db --level 1 --expires "$2" >/dev/null
}
pub 1 800
httpd_start "$w/repo" "$w/logs"
port=$HTTPD_PORT
d=$w/dev
# The health check logs the clock it runs under, then waits for the test
# (at most 60 s) and passes or fails as $w/verdict says.
cat >"$w/health.sh" <<EOF
#!/bin/sh
echo "check of boot \$(cat '$d/boot_id') under clock \$(cat '$w/now')" >>'$w/health.log'
i=0
while [ ! -e '$w/go' ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
rm -f '$w/go'
exit "\$(cat '$w/verdict')"
EOF
# The simulated reboot, then the jump $w/jump_at_boot asks for (if any)
# before the confirm step starts.
cat >"$w/reboot.sh" <<EOF
#!/usr/bin/env bash
set -e
. '$src/tests/integration/lib/simdevice.sh'
simdevice_boot '$d' '$simboot'
if [ -s '$w/jump_at_boot' ]; then cp '$w/jump_at_boot' '$w/now'; : >'$w/jump_at_boot'; fi
echo reboot >>'$w/reboots.log'
EOF
chmod +x "$w/health.sh" "$w/reboot.sh"
echo 0 >"$w/verdict"
: >"$w/jump_at_boot"
echo +0 >"$w/now"
simdevice_make "$d" "$HTTPD_URL" b "$w/k.pub" repository.retries=0 "health.check=$w/health.sh" \
  health.timeout=120 daemon.jitter=0
simdevice_eq "$d" "$eqota" provision --slot A >/dev/null 2>&1
simdevice_boot "$d" "$simboot"

simdevice_notify_listen "$w/notify.sock" "$w/notify.log" || { fail "the notify listener did not start"; exit 1; }
bg+=("$SIMDEVICE_NOTIFY_PID")
(NOTIFY_SOCKET=$w/notify.sock EQ_TEST_POLL_MS=$poll_ms EQ_TEST_REBOOT_CMD=$w/reboot.sh EQ_TEST_NOW_FILE=$w/now \
  EQ_TEST_BOOT_ID_FILE=$d/boot_id exec "$eqota" --config "$d/eqota.conf" daemon) >"$w/daemon.log" 2>&1 &
pid=$!
bg+=("$pid")

eqs() { simdevice_eq "$d" "$eqota" "$@"; }
lines() { wc -l <"$w/notify.log"; }
# field PYEXPR: a value of `status --json` (d is the document)
field() { eqs status --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
is() { [ "$(field "$1")" = "$2" ]; } # is PYEXPR VALUE
alive() { kill -0 "$pid" 2>/dev/null || { fail "the daemon died: $(tail -5 "$w/daemon.log")"; exit 1; }; }
# pace FROM SECONDS LABEL: the polls of the next SECONDS after notify line
# FROM: how many, the shortest and the longest gap between two; a spin
# would give gaps far below the interval (a poll takes some 15 ms), a long
# sleep none at all; half the interval allows for the listener's lateness
# on a busy machine.
pace() {
  sleep "$2"
  alive
  python3 - "$w/notify.log" "$1" "$poll_ms" "$2" "$3" <<'PY'
import sys
log, start, ms, secs, label = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
t = [float(l.split()[0]) for l in open(log).read().splitlines()[start:] if "STATUS=last poll" in l]
gaps = [b - a for a, b in zip(t, t[1:])]
ok = len(t) >= secs * 1000 / ms / 3 and gaps and min(gaps) >= 0.5 * ms / 1000 and max(gaps) < 3
print("%s: %d polls in %.0f s, gaps %.3f..%.3f s (interval %.3f s)" % (label, len(t), secs, min(gaps or [0]),
      max(gaps or [0]), ms / 1000))
sys.exit(0 if ok else 1)
PY
}
polls_since() { tail -n +"$(($1 + 1))" "$w/notify.log" | grep -c "STATUS=last poll.*$2" || true; }
wait_polls_since() { # FROM N PATTERN: N polls matching PATTERN after line FROM
  local i
  for ((i = 0; i < 300; i++)); do
    [ "$(polls_since "$1" "$3")" -ge "$2" ] && return 0
    alive
    sleep 0.1
  done
  return 1
}
jump() { echo "$1" >"$w/now"; }

# ---- 1. polling: the clock jumps a year forwards, then a year back
wait_polls_since 0 3 "up to date" || { fail "no polls: $(tail -5 "$w/daemon.log")"; exit 1; }
env0=$(cat "$d/bootenv")
l=$(lines)
pace "$l" 3 "clock right" && pass "polls at the interval with the clock right" || fail "pace with the clock right"
jump +$year
l=$(lines)
pace "$l" 3 "clock +1 year" && pass "a year forwards: the polls keep their pace" || fail "pace after +1 year"
[ "$(polls_since "$l" 'up to date')" -ge 3 ] && [ "$(polls_since "$l" failed)" -eq 0 ] &&
  pass "a year forwards: still up to date (the manifest expires in 800 days)" || fail "+1 year: $(tail -3 "$w/daemon.log")"
jump -$year
l=$(lines)
pace "$l" 3 "clock -1 year" && pass "a year back: the polls keep their pace" || fail "pace after -1 year"
[ "$(polls_since "$l" 'up to date')" -ge 3 ] && [ "$(polls_since "$l" failed)" -eq 0 ] &&
  pass "a year back: still up to date" || fail "-1 year: $(tail -3 "$w/daemon.log")"
[ "$(field 'd["booted"], d["slots"][d["booted"]]["number"], d["state"]["phase"], d["failed"]')" = "A 1 idle None" ] &&
  [ "$(cat "$d/bootenv")" = "$env0" ] && pass "the jumps changed neither the slots, the state nor the bootloader" ||
  fail "after the jumps: $(field 'd')"

# ---- 2. a release whose manifest expires in 30 days, seen from a year on
jump +$year
l=$(lines)
pub 2 30
if wait_polls_since "$l" 3 failed && grep -q "update failed: .*expired at" "$w/daemon.log"; then
  echo "expected: a year on, release 2's manifest (30 days) has expired and is refused:" \
    "$(grep -m1 -o 'update failed: .*expired at [^;]*' "$w/daemon.log")"
  pass "a year forwards: the expired manifest of a new release is refused (expected)"
else
  fail "+1 year, release 2 expiring in 30 days: $(tail -3 "$w/daemon.log")"
fi
[ "$(field 'd["booted"], d["slots"][d["booted"]]["number"], d["state"]["phase"], d["failed"], d["install_error"]')" = \
  "A 1 idle None None" ] && [ "$(cat "$d/bootenv")" = "$env0" ] &&
  pass "the refusal leaves the running slot, the bootloader and the state alone, nothing held against release 2" ||
  fail "after the refusal: $(field 'd')"

# ---- 3. back in the present: release 2 installs; the clock jumps a year
# forwards between the reboot and the confirm step, then a year back while
# the health check runs; the check passes and commits
echo +$year >"$w/jump_at_boot"
: >"$w/health.log"
jump +0
wait_for 30 test -s "$w/health.log" || { fail "release 2: no health check within 30 s: $(tail -5 "$w/daemon.log")"; exit 1; }
grep -q "under clock +$year" "$w/health.log" && pass "trial of release 2: the confirm step runs a year on" ||
  fail "trial clock: $(cat "$w/health.log")"
[ "$(field 'd["booted"], d["state"]["phase"]')" = "B trying" ] && pass "trial of release 2: on trial in slot B" ||
  fail "trial of release 2: $(field 'd')"
jump -$year
sleep 1
[ "$(field 'd["state"]["phase"]')" = trying ] && pass "a year back during the health check: still on trial, not committed" ||
  fail "a year back during the check: $(field 'd')"
echo 0 >"$w/verdict"
touch "$w/go"
wait_for 20 is 'd["state"]["phase"], d["slots"][d["booted"]]["number"]' "idle 2" &&
  grep -q "release 2 ('r2') in slot B passed its health checks and is committed" "$w/daemon.log" &&
  [ "$(wc -l <"$w/health.log")" -eq 1 ] && pass "release 2 committed by its (one) health check, the clock a year off" ||
  fail "release 2 not committed: $(field 'd'); $(tail -5 "$w/daemon.log")"

# ---- 4. the same jumps, and a health check that fails: rolled back
jump +0
echo -$year >"$w/jump_at_boot"
: >"$w/health.log"
echo 1 >"$w/verdict"
pub 3 800
wait_for 30 test -s "$w/health.log" || { fail "release 3: no health check within 30 s: $(tail -5 "$w/daemon.log")"; exit 1; }
jump +$year
sleep 1
[ "$(field 'd["state"]["phase"]')" = trying ] && pass "trial of release 3, a year back then a year on: still on trial" ||
  fail "trial of release 3: $(field 'd')"
touch "$w/go"
wait_for 20 is 'd["state"]["phase"], d["booted"], d["slots"][d["booted"]]["number"]' "idle B 2" &&
  grep -q "release 3 in slot A: health check failed" "$w/daemon.log" &&
  pass "release 3: the failed health check rolled it back to release 2 in B, whatever the clock" ||
  fail "release 3: $(field 'd'); $(tail -5 "$w/daemon.log")"
alive

# ---- 5. an install error, then the clock a year back: the backoff stays
# a wait of minutes from the error, not a year
jump +0
httpd_stop
touch "$w/marker"
sleep 1
pub 4 800
mkdir -p "$w/hidden"
find repo/objects repo/deltas -type f -newer "$w/marker" >"$w/hidden.list"
while read -r f; do mv "$f" "$w/hidden/"; done <"$w/hidden.list"
l=$(lines)
HTTPD_PORT_WANTED=$port httpd_start "$w/repo" "$w/logs"
[ "$HTTPD_PORT" = "$port" ] || { fail "lighttpd came back on port $HTTPD_PORT, not $port"; exit 1; }
wait_for 20 grep -q "release 4: install attempt 1 failed; the next is due at" "$w/daemon.log" &&
  pass "release 4: the install fails (its objects are missing): $(grep -m1 -o 'install attempt 1 failed; .*' "$w/daemon.log")" ||
  fail "release 4: no install error: $(tail -5 "$w/daemon.log")"
wait_for 10 grep -q "release 4 failed to install 1 time .* waiting until" "$w/daemon.log" &&
  pass "release 4 waits for its backoff (at most a minute after one error)" || fail "no backoff: $(tail -3 "$w/daemon.log")"
while read -r f; do mv "$w/hidden/${f##*/}" "$f"; done <"$w/hidden.list"
: >"$w/health.log"
echo 0 >"$w/verdict"
jump -$year
t0=$(date +%s)
if wait_for 30 test -s "$w/health.log"; then
  pass "a year back after the install error: release 4 is tried again at once ($(($(date +%s) - t0)) s), not in a year"
  touch "$w/go"
  wait_for 20 is 'd["state"]["phase"], d["slots"][d["booted"]]["number"]' "idle 4" &&
    pass "release 4 installed and committed" || fail "release 4: $(field 'd')"
else
  fail "a year back after the install error: release 4 not retried within 30 s: $(grep 'release 4' "$w/daemon.log" | tail -2)"
fi

# ---- the pace, all along: the whole log
python3 - "$w/notify.log" "$poll_ms" <<'PY' && pass "no two polls closer than the interval, in the whole run" || fail "spin"
import sys
t = [float(l.split()[0]) for l in open(sys.argv[1]) if "STATUS=last poll" in l]
gaps = [b - a for a, b in zip(t, t[1:])]
print("whole run: %d polls, shortest gap %.3f s" % (len(t), min(gaps)))
sys.exit(0 if min(gaps) >= 0.5 * int(sys.argv[2]) / 1000 else 1)
PY
rc=0
kill -TERM "$pid"
wait "$pid" || rc=$?
[ "$rc" -eq 0 ] && pass "the daemon (one process all along) stops on SIGTERM with 0" || fail "daemon exit $rc"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed; daemon log: $(tail -20 "$w/daemon.log")"; exit 1; }
echo "clock jumps change nothing but the schedule"
