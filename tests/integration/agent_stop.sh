#!/usr/bin/env bash
# SIGTERM stops eqota cleanly at any step (issue 14; docs/agent.md,
# "Stopping"): the daemon's step stops at its next safe point, says where,
# leaves the slot it was building out of the boot order and records no
# install error; the next start abandons the half-built slot and installs
# again, resuming the download. Cases:
#   1. the daemon during a download (a throttled lighttpd);
#   2. the daemon between two packages of the install (the test hook
#      EQ_TEST_TERM_PARENT_AT sends the SIGTERM as a given package starts);
#   3. a one-shot `eqota update` during a download: it stops the same way,
#      then dies of the signal (exit status 143).
# Every wait is bounded; only PIDs this script started are signalled.
# Usage: agent_stop.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 simboot=$3 src=$4
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
. "$src/tests/integration/lib/tarpkg.sh"
w=$(mktemp -d /tmp/eq-stop.XXXXXX)
dpid=""
cleanup() {
  [ -z "$dpid" ] || { kill -KILL "$dpid" 2>/dev/null || true; wait "$dpid" 2>/dev/null || true; }
  httpd_stop || true
  rm -rf "$w"
}
trap cleanup EXIT
trap 'echo "agent_stop.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$w"
. "$src/tests/integration/lib/check.sh"

# ---- two releases: five small packages and one of 3 MiB of random bytes
# (a delta cannot shrink it, so r2 downloads it whole), all changed in r2.
mkdir -p r1 r2
for r in 1 2; do
  for p in pkg-a pkg-b pkg-c pkg-d pkg-e; do
    tarpkg "r$r/${p}_$r.0.tar" "usr/share/$p/data" "$p release $r"
  done
  head -c 3145728 /dev/urandom > "big$r"
  python3 - "r$r/pkg-big_$r.0.tar" "big$r" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    t.add(sys.argv[2], arcname="usr/share/pkg-big/blob", filter=lambda i: (setattr(i, "uid", 0), setattr(i, "gid", 0), i)[-1])
PY
done
"$gen" keygen --out rel >/dev/null
P=(--board qemux86-64 --channel stable --key rel.key --store s.db --level 3)
"$gen" -q publish --repo repo "${P[@]}" --release r1 --packages r1 >/dev/null
mkdir -p logs
httpd_start "$w/repo" "$w/logs"

d=$w/d
simdevice_make "$d" "http://127.0.0.1:$HTTPD_PORT" qemux86-64 "$w/rel.pub" repository.retries=0 \
  health.check=/bin/true daemon.interval=3600 daemon.jitter=0
eq() { EQ_TEST_BOOT_ID_FILE=$d/boot_id timeout 120 "$eqota" --config "$d/eqota.conf" "$@"; }
boot() { cat /proc/sys/kernel/random/uuid > "$d/boot_id"; "$simboot" --env "$d/bootenv" --cmdline "$d/cmdline"; }
out=$(eq provision --slot A 2>&1) || { fail "provision: $out"; exit 1; }
[ "$(boot)" = A ] || { fail "the device did not boot A"; exit 1; }
"$gen" -q publish --repo repo "${P[@]}" --release r2 --packages r2 >/dev/null
sleep 2 # lighttpd's stat cache
cp -a "$d" "$w/pristine"
fresh() { rm -rf "$d"; cp -a "$w/pristine" "$d"; }
# serve fast|slow: lighttpd (one at a time) at full speed or at 256 KiB/s,
# and the device pointed at it.
serve() {
  httpd_stop
  if [ "$1" = slow ]; then HTTPD_EXTRA_CONF='connection.kbytes-per-second = 256' httpd_start "$w/repo" "$w/logs"
  else httpd_start "$w/repo" "$w/logs"; fi
  sed -i "s|^url = .*|url = http://127.0.0.1:$HTTPD_PORT|" "$d/eqota.conf"
}

# The state the agent left: phase, and whether B is in the boot order.
# Also: no install error recorded (a stop is not a failure of the release).
check_stopped() { # NAME
  local s
  s=$(eq status --json 2>&1) || { fail "$1: status: $s"; return; }
  python3 - "$s" <<'PY' && pass "$1: state installing, slot B out of the boot order, no install error" || fail "$1: status $s"
import json, sys
s = json.loads(sys.argv[1])
assert s["state"]["phase"] == "installing", s["state"]
assert "B" not in s["bootloader"]["order"] and s["bootloader"]["trial"] is None, s["bootloader"]
assert s["install_error"] is None, s["install_error"]
PY
  [ "$(boot)" = A ] && pass "$1: the device still boots slot A" || fail "$1: the device did not boot A"
}
# The next start: the daemon's confirm step (mark-good) abandons the
# half-built slot, the update installs release 2, and slot B commits.
check_next_start() { # NAME
  local out rc=0
  out=$(eq mark-good 2>&1) || rc=$?
  [ $rc -eq 0 ] && grep -q "an interrupted install of release 2 into slot B is abandoned" <<<"$out" &&
    pass "$1: the next start abandons the half-built slot B" || fail "$1: mark-good exit $rc: $out"
  rc=0; out=$(eq update 2>&1) || rc=$?
  [ $rc -eq 3 ] && pass "$1: the next update installs release 2" || fail "$1: update exit $rc: $out"
  [ "$(boot)" = B ] || fail "$1: the device did not try B"
  rc=0; out=$(eq mark-good 2>&1) || rc=$?
  [ $rc -eq 0 ] && grep -q "is committed" <<<"$out" && pass "$1: release 2 committed in slot B" ||
    fail "$1: confirm exit $rc: $out"
}
stop_daemon() { # sets drc, dt
  local t0
  t0=$(date +%s%N)
  kill -TERM "$dpid"
  drc=0
  if wait_for 40 eval '! kill -0 "$dpid" 2>/dev/null'; then wait "$dpid" || drc=$?
  else kill -KILL "$dpid" 2>/dev/null || true; wait "$dpid" 2>/dev/null || true; drc=timeout; fi
  dpid=""
  dt=$(( ($(date +%s%N) - t0) / 1000000 ))
}
part_grows() { [ -n "$(find "$d/data/downloads" -name '*.part' -size +64k -print -quit 2>/dev/null)" ]; }

# ---- 1. the daemon stopped during a download, telling a service manager
# (a datagram socket standing in for systemd's $NOTIFY_SOCKET) its state.
fresh; serve slow
python3 - "$w/notify.sock" "$w/notify.log" <<'PY' & npid=$!
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(1)
end = time.time() + 60
with open(sys.argv[2], "a") as log:
    while time.time() < end:
        try:
            m = s.recv(4096).decode()
        except socket.timeout:
            continue
        log.write(m.replace("\n", " | ") + "\n")
        log.flush()
        if "STOPPING=1" in m:
            break
PY
wait_for 10 test -S "$w/notify.sock" || fail "notify: the listener did not start"
NOTIFY_SOCKET=$w/notify.sock EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" daemon > "$w/d1.log" 2>&1 & dpid=$!
if ! wait_for 30 part_grows; then fail "download: no .part above 64 KiB within 30 s: $(cat "$w/d1.log")"; exit 1; fi
stop_daemon
log=$(cat "$w/d1.log")
[ "$drc" = 0 ] && pass "download: the daemon exits 0 on SIGTERM, $dt ms after it" || fail "download: daemon exit $drc: $log"
grep -q "stopped on request while downloading objects/.*; the part downloaded stays and is resumed" <<<"$log" &&
  grep -q "slot B stays out of the boot order, and the next start installs release 2 again, resuming the downloads" <<<"$log" &&
  grep -q "stopping on request" <<<"$log" && pass "download: the log says where it stopped" || fail "download: log: $log"
grep -q "update failed" <<<"$log" && fail "download: the stop was logged as a failed update: $log"
wait_for 10 eval '! kill -0 $npid 2>/dev/null' || kill $npid 2>/dev/null || true
wait $npid 2>/dev/null || true
n=$(cat "$w/notify.log" 2>/dev/null || true)
grep -q "^READY=1 | STATUS=confirming the booted slot" <<<"$n" && grep -q "^STATUS=slot confirmed; polling every 3600 s" <<<"$n" &&
  [ "$(tail -1 <<<"$n")" = "STOPPING=1" ] && pass "notify: READY=1, the status, then STOPPING=1" ||
  fail "notify: the service manager got: $n"
part=$(find "$d/data/downloads" -name '*.part' -print -quit)
[ -n "$part" ] && [ "$(stat -c %s "$part")" -gt 65536 ] && pass "download: the partial download stays ($(stat -c %s "$part") bytes)" ||
  fail "download: no .part left"
check_stopped download
serve fast
check_next_start download
httpd_log_flush
grep -q ' 206 ' "$HTTPD_ACCESS_LOG" && pass "download: the next start resumed the object with a Range request" ||
  fail "download: no 206 answer after the restart: $(cat "$HTTPD_ACCESS_LOG")"

# ---- 2. the daemon stopped between two packages of the install
fresh; serve fast
EQ_TEST_TERM_PARENT_AT=pkg-c EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" daemon > "$w/d2.log" 2>&1 & dpid=$!
drc=0
if wait_for 40 eval '! kill -0 "$dpid" 2>/dev/null'; then wait "$dpid" || drc=$?
else kill -KILL "$dpid" 2>/dev/null || true; wait "$dpid" 2>/dev/null || true; drc=timeout; fi
dpid=""
log=$(cat "$w/d2.log")
[ "$drc" = 0 ] && pass "install: the daemon exits 0 on SIGTERM" || fail "install: daemon exit $drc: $log"
grep -q "slot B: stopped on request before package 'pkg-c' (3 of 6 installed); slot B stays out of the boot order" <<<"$log" &&
  grep -q "stopping on request" <<<"$log" && pass "install: the log says where it stopped" || fail "install: log: $log"
check_stopped install
check_next_start install

# ---- 3. a one-shot update stopped during a download dies of the signal
fresh; serve slow
EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" update > "$w/u3.log" 2>&1 & dpid=$!
if ! wait_for 30 part_grows; then fail "one-shot: no .part within 30 s: $(cat "$w/u3.log")"; exit 1; fi
stop_daemon
log=$(cat "$w/u3.log")
[ "$drc" = 143 ] && pass "one-shot update: dies of SIGTERM (exit 143) after $dt ms" || fail "one-shot update: exit $drc: $log"
grep -q "stopped on request while downloading objects/" <<<"$log" && pass "one-shot update: says where it stopped" ||
  fail "one-shot update: log: $log"
check_stopped one-shot

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all stop checks passed"
