#!/usr/bin/env bash
# A health check that hangs must not outlive the daemon's step that ran it
# (issue 12): the check runs in its own process group, so no signal to the
# step's group reaches it; the step's handler (eq_health_kill_running)
# kills it. Two ways a step ends: the daemon is
# stopped (SIGTERM) during the confirm step, and the confirm step runs past
# [daemon] cycle-timeout. Each time the check and its child must be gone
# within seconds, and the device must still confirm its trial afterwards.
# Every wait is bounded; only PIDs this script started are signalled.
# Usage: agent_health_kill.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 simboot=$3 src=$4
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
w=$(mktemp -d /tmp/eq-healthkill.XXXXXX)
dpid=""
cleanup() {
  # The daemon, then whatever health checks survived it (their PIDs were
  # written by the check script of this test, so they are ours).
  [ -z "$dpid" ] || { kill -KILL "$dpid" 2>/dev/null || true; wait "$dpid" 2>/dev/null || true; }
  for f in "$w/hc.pids" "$w/hc.kids"; do
    [ -f "$f" ] || continue
    while read -r p; do alive "$p" && kill -KILL "$p" 2>/dev/null || true; done < "$f"
  done
  httpd_stop || true
  rm -rf "$w"
}
trap cleanup EXIT
trap 'echo "agent_health_kill.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$w"
. "$src/tests/integration/lib/check.sh"

# alive PID: the process exists and is not a zombie (a killed check whose
# parent exited may wait for a reaper that a container does not have).
alive() {
  local s
  s=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
}
# gone_within SECONDS PID...: 0 when every PID is gone in time; the ones
# still alive are in $left.
gone_within() {
  local t=$1 p i; shift
  for ((i = 0; i < t * 10; i++)); do
    left=""
    for p in "$@"; do alive "$p" && left="$left $p"; done
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  return 1
}
# since T0: seconds since T0 (date +%s.%N), one decimal.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
# stop_daemon: SIGTERM, at most 15 s, then SIGKILL; sets drc.
stop_daemon() {
  kill -TERM "$dpid" 2>/dev/null || true
  drc=0
  if wait_for 15 eval '! kill -0 "$dpid" 2>/dev/null || ! alive "$dpid"'; then wait "$dpid" || drc=$?
  else kill -KILL "$dpid" 2>/dev/null || true; wait "$dpid" 2>/dev/null || true; drc=timeout; fi
  dpid=""
}

# ---- a release r1 and r2 of one tiny package, and a device on r1
mkdir -p pkgs/root/DEBIAN pkgs/root/usr/share/hello debs
printf 'Package: hello\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: t\n' > pkgs/root/DEBIAN/control
echo hello > pkgs/root/usr/share/hello/greeting
dpkg-deb --root-owner-group -b pkgs/root debs/hello_1.0_all.deb >/dev/null
"$gen" keygen --out rel >/dev/null
P=(--board qemux86-64 --channel stable --key rel.key --store s.db --level 3)
"$gen" -q publish --repo repo "${P[@]}" --release r1 --packages debs >/dev/null
mkdir -p logs
httpd_start "$w/repo" "$w/logs"

# The check: records its PID and its child's, ignores SIGTERM (so only the
# SIGKILL of eq_health_kill_running ends it) and waits for 600 s.
cat > "$w/hc.sh" <<'EOF'
#!/bin/sh
trap '' TERM
echo $$ >> "$1/hc.pids"
sleep 600 &
echo $! >> "$1/hc.kids"
wait
EOF
chmod +x "$w/hc.sh"
d=$w/d
simdevice_make "$d" "http://127.0.0.1:$HTTPD_PORT" qemux86-64 "$w/rel.pub" repository.retries=0 \
  "health.check=$w/hc.sh $w" health.timeout=3600 daemon.interval=3600 daemon.jitter=0 daemon.cycle-timeout=3600
eq() { EQ_TEST_BOOT_ID_FILE=$d/boot_id timeout 120 "$eqota" --config "$d/eqota.conf" "$@"; }
boot() { cat /proc/sys/kernel/random/uuid > "$d/boot_id"; "$simboot" --env "$d/bootenv" --cmdline "$d/cmdline"; }
out=$(eq provision --slot A 2>&1) || { fail "provision: $out"; exit 1; }
[ "$(boot)" = A ] || { fail "the device did not boot A"; exit 1; }
echo hello2 > pkgs/root/usr/share/hello/greeting
sed -i 's/^Version: 1.0/Version: 2.0/' pkgs/root/DEBIAN/control
rm debs/*.deb && dpkg-deb --root-owner-group -b pkgs/root debs/hello_2.0_all.deb >/dev/null
"$gen" -q publish --repo repo "${P[@]}" --release r2 --packages debs >/dev/null
# lighttpd's stat cache may serve a file replaced within the last second
# from the descriptor it still holds: let it expire.
sleep 2
rc=0; out=$(eq update 2>&1) || rc=$?
[ $rc -eq 3 ] || { fail "update: exit $rc, expected 3: $out"; exit 1; }
[ "$(boot)" = B ] || { fail "the bootloader did not try B"; exit 1; }

# daemon_start NAME: runs the daemon until its confirm step has started
# the check; sets hc, kid. The caller ends the step.
daemon_start() {
  # hc.pids and hc.kids only grow: cleanup() reads every PID ever started.
  local n
  n=$(cat "$w/hc.kids" 2>/dev/null | wc -l)
  EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" daemon > "$w/daemon-$1.log" 2>&1 & dpid=$!
  hc="" kid=""
  if wait_for 20 eval '[ "$(cat "$w/hc.kids" 2>/dev/null | wc -l)" -gt "$n" ]'; then
    hc=$(sed -n "$((n + 1))p" "$w/hc.pids") kid=$(sed -n "$((n + 1))p" "$w/hc.kids")
  fi
  [ -n "$hc" ] && [ -n "$kid" ] && alive "$hc" && alive "$kid"
}

# ---- 1. the daemon stopped (SIGTERM) while the confirm step runs the check
if ! daemon_start sigterm; then
  fail "SIGTERM: the health check did not start within 20 s: $(cat "$w/daemon-sigterm.log")"
else
  # The check has its own group: only the step's handler can end it.
  [ "$(awk '{ print $5 }' "/proc/$hc/stat")" = "$hc" ] || fail "SIGTERM: the check is not in a process group of its own"
  t0=$(date +%s.%N)
  stop_daemon
  if gone_within 5 "$hc" "$kid"; then
    pass "SIGTERM to the daemon during the health check: check and its child gone in $(since "$t0") s"
  else
    fail "SIGTERM to the daemon during the health check left it running 5 s later:$left"
  fi
  [ "$drc" = 0 ] && grep -q "stopping on request" "$w/daemon-sigterm.log" && pass "daemon exits 0 on SIGTERM" ||
    fail "daemon exit $drc: $(cat "$w/daemon-sigterm.log")"
fi

# ---- 2. the confirm step past [daemon] cycle-timeout (10 s, the smallest)
sed -i 's/^cycle-timeout = .*/cycle-timeout = 10/' "$d/eqota.conf"
if ! daemon_start timeout; then
  fail "cycle-timeout: the health check did not start within 20 s: $(cat "$w/daemon-timeout.log")"
else
  if wait_for 25 grep -q "ran longer than \[daemon\] cycle-timeout (10 s)" "$w/daemon-timeout.log"; then
    t0=$(date +%s.%N)
    if gone_within 5 "$hc" "$kid"; then
      pass "confirm step past cycle-timeout: health check and its child gone in $(since "$t0") s"
    else
      fail "confirm step past cycle-timeout left the health check running 5 s later:$left"
    fi
    alive "$dpid" && pass "the daemon keeps running after a stopped step" ||
      fail "the daemon ended with the step: $(cat "$w/daemon-timeout.log")"
  else
    fail "cycle-timeout: no stop within 25 s: $(cat "$w/daemon-timeout.log")"
  fi
  stop_daemon
  [ "$drc" = 0 ] || fail "daemon exit $drc after the cycle-timeout: $(cat "$w/daemon-timeout.log")"
  # No check started in this test may be left.
  mapfile -t all < <(cat "$w/hc.pids" "$w/hc.kids")
  gone_within 5 "${all[@]}" && pass "no health check left after the daemon stopped (${#all[@]} processes started)" ||
    fail "health checks left after the daemon stopped:$left"
fi

# ---- 2b. SIGTERM to a one-shot `eqota mark-good` running the check (as
# `timeout` or Ctrl-C would send): the check must not outlive it
n=$(cat "$w/hc.kids" 2>/dev/null | wc -l)
EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" mark-good > "$w/oneshot.log" 2>&1 & opid=$!
if wait_for 20 eval '[ "$(cat "$w/hc.kids" 2>/dev/null | wc -l)" -gt "$n" ]'; then
  hc=$(sed -n "$((n + 1))p" "$w/hc.pids") kid=$(sed -n "$((n + 1))p" "$w/hc.kids")
  t0=$(date +%s.%N)
  kill -TERM "$opid"
  orc=0; wait "$opid" || orc=$?
  if gone_within 5 "$hc" "$kid"; then
    pass "SIGTERM to 'eqota mark-good' during the health check: check and its child gone in $(since "$t0") s"
  else
    fail "SIGTERM to 'eqota mark-good' left the health check running 5 s later:$left"
  fi
  [ "$orc" = 143 ] && pass "mark-good dies of the SIGTERM (exit 143)" || fail "mark-good exit $orc: $(cat "$w/oneshot.log")"
else
  kill -KILL "$opid" 2>/dev/null || true; wait "$opid" 2>/dev/null || true
  fail "mark-good: the health check did not start within 20 s: $(cat "$w/oneshot.log")"
fi

# ---- 3. the device is still sane: status reads, the trial can be confirmed
rc=0; out=$(eq status --json 2>&1) || rc=$?
if [ $rc -eq 0 ] && python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["booted"] == "B", s
assert s["state"]["phase"] == "trying", s
assert "A" in s["bootloader"]["order"] and s["bootloader"]["left"]["A"] > 0, s
' "$out" 2>/dev/null; then pass "status after the killed checks: booted B, trial still pending, A still bootable"
else fail "status after the killed checks: exit $rc: $out"; fi
sed -i "s|^check = .*|check = /bin/true|" "$d/eqota.conf"
rc=0; out=$(eq mark-good 2>&1) || rc=$?
[ $rc -eq 0 ] && grep -q "passed its health checks and is committed" <<<"$out" &&
  pass "mark-good after the killed checks commits B" || fail "mark-good: exit $rc: $out"
[ "$(boot)" = B ] && pass "the device boots B again" || fail "the device did not boot B after the commit"
rc=0; out=$(eq status --json 2>&1) || rc=$?
[ $rc -eq 0 ] && python3 -c 'import json,sys; s=json.loads(sys.argv[1]); assert s["state"]["phase"]=="idle" and s["booted"]=="B", s' "$out" &&
  pass "status: idle on B" || fail "status at the end: exit $rc: $out"

echo "agent_health_kill: $fails failed"
[ "$fails" -eq 0 ] || exit 1
