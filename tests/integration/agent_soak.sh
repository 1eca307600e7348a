#!/usr/bin/env bash
# Months of uptime (issue 17): one `eqota daemon` process through at least
# 1,000 polls (EQ_SOAK_CYCLES; fewer under the sanitizers, see agent.cmake)
# at an accelerated interval (the EQ_TEST_POLL_MS hook) against a loopback
# lighttpd whose repository takes turns: no change, a new release
# (installed, a simulated reboot through the EQ_TEST_REBOOT_CMD hook, the
# confirm step commits it), the server down, HTTP 503 from every path, and
# a damaged manifest (bytes the signature does not cover). The daemon's
# RSS, its open file descriptors and the disk use of its data folder are
# sampled after a warm-up (one round of all that, then 20 polls) and at the
# end, in the same state (idle, a release committed, up to date), and must
# not grow: RSS by at most
# 512 KiB, fds not at all, the data folder by no more than the cached
# manifest of the newer release grew (plus 1 KiB for the state file's
# text). The polls are counted from what the daemon tells its service
# manager (a datagram socket as $NOTIFY_SOCKET, one STATUS per poll).
# Usage: agent_soak.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" agent_soak "$@"

want=${EQ_SOAK_CYCLES:-1000}
poll_ms=${EQ_SOAK_POLL_MS:-40}
t_start=$(date +%s)

# ---- the repository: release N changes app every time, lib every 3rd
"$gen" keygen --out k >/dev/null
mkdir -p pkgs logs
tarpkg pkgs/base_1.tar usr/share/base/data "base data, never changes"
rel=0
pub() {
  rel=$((rel + 1))
  rm -f pkgs/app_*.tar pkgs/lib_*.tar
  tarpkg "pkgs/app_$rel.tar" usr/share/app/version "app $rel"
  tarpkg "pkgs/lib_$((rel / 3)).tar" usr/lib/soak/lib.so "lib $((rel / 3)) $(head -c 3000 /dev/urandom | base64 -w0)"
  "$gen" -q publish --repo repo --board b --channel stable --release "r$rel" --packages pkgs --key k.key \
    --store repo.db --level 1 --expires 800 >/dev/null
}
pub
httpd_start "$w/repo" "$w/logs"
port=$HTTPD_PORT

d=$w/dev
cat >"$w/health.sh" <<EOF
#!/bin/sh
echo "checked \$(cat '$d/boot_id')" >>'$w/health.log'
EOF
cat >"$w/reboot.sh" <<EOF
#!/usr/bin/env bash
set -e
. '$src/tests/integration/lib/simdevice.sh'
simdevice_boot '$d' '$simboot'
echo reboot >>'$w/reboots.log'
EOF
chmod +x "$w/health.sh" "$w/reboot.sh"
simdevice_make "$d" "$HTTPD_URL" b "$w/k.pub" repository.retries=1 repository.retry-delay-ms=10 \
  repository.connect-timeout=5 "health.check=$w/health.sh" daemon.jitter=0
simdevice_eq "$d" "$eqota" provision --slot A >/dev/null 2>&1
simdevice_boot "$d" "$simboot"

# ---- the service manager: every datagram, one line, with a monotonic time
simdevice_notify_listen "$w/notify.sock" "$w/notify.log" || { fail "the notify listener did not start"; exit 1; }
bg+=("$SIMDEVICE_NOTIFY_PID")

(NOTIFY_SOCKET=$w/notify.sock EQ_TEST_POLL_MS=$poll_ms EQ_TEST_REBOOT_CMD=$w/reboot.sh \
  EQ_TEST_BOOT_ID_FILE=$d/boot_id exec "$eqota" --config "$d/eqota.conf" daemon) >"$w/daemon.log" 2>&1 &
pid=$!
bg+=("$pid")

# polls: the daemon's polls so far (the confirm steps not counted)
polls() { grep -c -e 'STATUS=last poll' -e 'a release was installed' "$w/notify.log" || true; }
boots() { grep -c 'READY=1' "$w/notify.log" || true; }
# wait_polls N: N more polls (at most 1 s each, more is a hang)
wait_polls() {
  local target=$(($(polls) + $1)) deadline=$(($(date +%s) + $1 + 30))
  while [ "$(polls)" -lt "$target" ]; do
    kill -0 "$pid" 2>/dev/null || { fail "the daemon died: $(tail -5 "$w/daemon.log")"; exit 1; }
    [ "$(date +%s)" -lt "$deadline" ] || { fail "no $1 polls within $(($1 + 30)) s"; exit 1; }
    sleep 0.05
  done
}
running() { simdevice_running "$d" "$eqota" 2>/dev/null || echo "?"; }
phase() {
  simdevice_eq "$d" "$eqota" status --json 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["state"]["phase"])' 2>/dev/null || echo "?"
}
# release: publish the next release; the daemon installs it, "reboots" and commits it
release() {
  local b0 deadline
  b0=$(boots)
  pub
  deadline=$(($(date +%s) + 60))
  until [ "$(boots)" -gt "$b0" ] && [ "$(running)" = "$rel" ] && [ "$(phase)" = idle ]; do
    kill -0 "$pid" 2>/dev/null || { fail "the daemon died: $(tail -5 "$w/daemon.log")"; exit 1; }
    [ "$(date +%s)" -lt "$deadline" ] || { fail "release $rel not committed within 60 s: $(tail -5 "$w/daemon.log")"; exit 1; }
    sleep 0.1
  done
  installs=$((installs + 1))
}
serve_503() {
  python3 - "$port" <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(503)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"busy\n")
    do_HEAD = do_GET
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer.allow_reuse_address = True
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
  p503=$!
  bg+=("$p503")
  wait_for 10 eval "(exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null" || { fail "503 server did not start"; exit 1; }
}
httpd_again() {
  HTTPD_PORT_WANTED=$port httpd_start "$w/repo" "$w/logs"
  [ "$HTTPD_PORT" = "$port" ] || { fail "lighttpd came back on port $HTTPD_PORT, not $port"; exit 1; }
}
chan=$w/repo/boards/b/stable
damage_manifest() {
  mkdir -p "$w/keep"
  cp -p "$chan/manifest.json" "$chan/manifest.json.sha256" "$chan/manifest.json.zst" "$w/keep/"
  python3 - "$chan" <<'PY'
import hashlib, sys
d = sys.argv[1]
b = bytearray(open(d + "/manifest.json", "rb").read())
b[len(b) // 2] ^= 0x20
open(d + "/manifest.json", "wb").write(bytes(b))
open(d + "/manifest.json.sha256", "w").write(hashlib.sha256(bytes(b)).hexdigest() + "\n")
PY
  rm -f "$chan/manifest.json.zst"
}
repair_manifest() { cp "$w/keep/"* "$chan/"; }

# rss/fds/disk of the daemon and its data folder
sample() {
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
  fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
  disk=$(du -sb "$d/data" | cut -f1)
  # downloads/manifest.validators (a few dozen bytes) exists or not by what
  # the last polls did (an install clears downloads/): the byte bound
  # covers it, the file count leaves it out
  files=$(find "$d/data" -type f ! -path '*/downloads/manifest.validators' | wc -l)
  mbytes=$(cat "$d/data/manifest.json" "$d/data/manifest.json.sig" 2>/dev/null | wc -c)
}

# round: a release (installed, rebooted into, committed), 25 polls of no
# change, 10 with the server down, 10 of HTTP 503, 5 of no change, 10 of
# a damaged manifest, 5 of no change
round() {
  rounds=$((rounds + 1))
  release
  wait_polls 25
  httpd_stop
  wait_polls 10; down=$((down + 10))
  serve_503
  wait_polls 10; busy=$((busy + 10))
  kill "$p503"; wait "$p503" 2>/dev/null || true
  httpd_again
  wait_polls 5
  damage_manifest
  wait_polls 10; damaged=$((damaged + 10))
  repair_manifest
  wait_polls 5
}

# ---- warm-up: a round (every path once: the caches and validators a
# device keeps are made), then 20 polls of no change
installs=0 rounds=0 down=0 busy=0 damaged=0
round
wait_polls 20
sample
rss0=$rss fds0=$fds disk0=$disk files0=$files m0=$mbytes p0=$(polls)
find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 -printf '%f %l\n' | sort -n >"$w/fds0"
echo "start (after $p0 polls): RSS $rss0 KiB, $fds0 fds ($(tr '\n' ' ' <"$w/fds0")), data folder" \
  "$disk0 bytes in $files0 files ($(cd "$d/data" && find . -type f | sort | tr '\n' ' '))"

# ---- the rounds, until $want polls have happened
while [ "$(polls)" -lt "$want" ]; do round; done
wait_polls 20
sample
p1=$(polls)
find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 -printf '%f %l\n' | sort -n >"$w/fds1"
echo "end (after $p1 polls): RSS $rss KiB, $fds fds, data folder $disk bytes in $files files"

# ---- what happened
n_up=$(grep -c ': up to date;' "$w/notify.log" || true)
n_failed=$(grep -c ': failed, retried at the next poll;' "$w/notify.log" || true)
n_inst=$(grep -c 'a release was installed' "$w/notify.log" || true)
n_boot=$(boots)
echo "$p1 polls in one daemon process (PID $pid): $n_up up to date, $n_failed failed (server down, 503, damaged" \
  "manifest), $n_inst installs; $n_boot confirm steps, $(wc -l <"$w/health.log") health checks;" \
  "$rounds rounds, $(($(date +%s) - t_start)) s"
[ "$p1" -ge "$want" ] && pass "$p1 polls (at least $want) at $poll_ms ms" || fail "only $p1 polls, wanted $want"
kill -0 "$pid" && pass "one daemon process all along (PID $pid)" || fail "the daemon is gone"
[ "$n_inst" -eq "$installs" ] && [ "$n_boot" -eq $((installs + 1)) ] && [ "$(wc -l <"$w/reboots.log")" -eq "$installs" ] &&
  pass "$installs releases installed, each rebooted into and committed by the confirm step" ||
  fail "installs $n_inst, confirm steps $n_boot, reboots $(wc -l <"$w/reboots.log"), wanted $installs"
[ "$n_failed" -ge $((down + busy + damaged - rounds * 3)) ] &&
  grep -q 'update failed: .*\(onnect\|refused\)' "$w/daemon.log" && grep -q 'update failed: .*HTTP 503' "$w/daemon.log" &&
  grep -q 'update failed: .*signature' "$w/daemon.log" &&
  pass "the error polls failed as they should: server down, HTTP 503, damaged manifest" ||
  fail "error polls: $n_failed failed of about $((down + busy + damaged)); $(grep 'update failed' "$w/daemon.log" | sort | uniq -c | sort -rn | head -5)"
bad=$(grep -v -e 'update failed: ' -e 'release .r[0-9]*. installed; rebooting into it' -e 'telling the bootloader' \
  -e 'rebooting: EQ_TEST_REBOOT_CMD' -e 'passed its health checks and is committed' -e 'fetching the manifest' \
  "$w/daemon.log" || true)
[ -z "$bad" ] && pass "the daemon's log holds nothing unexpected" || fail "unexpected log lines: $(head -5 <<<"$bad")"

# ---- growth: RSS +512 KiB, fds +0, the data folder by the manifest's growth + 1 KiB
echo "RSS: first $rss0 KiB, last $rss KiB; fds: first $fds0, last $fds; data folder: first $disk0 bytes" \
  "($files0 files), last $disk bytes ($files files); cached manifest $m0 -> $mbytes bytes"
[ "$rss" -le $((rss0 + 512)) ] && pass "RSS did not grow beyond 512 KiB ($rss0 -> $rss KiB)" ||
  fail "RSS grew from $rss0 to $rss KiB"
[ "$fds" -le "$fds0" ] && pass "no file descriptor leaked ($fds0 -> $fds)" ||
  fail "fds grew from $fds0 to $fds: $(diff "$w/fds0" "$w/fds1" || true)"
allow=$((disk0 + (mbytes > m0 ? mbytes - m0 : 0) + 1024))
[ "$disk" -le "$allow" ] && [ "$files" -le "$files0" ] &&
  pass "the data folder did not grow beyond the current release's needs ($disk0 -> $disk bytes, at most $allow)" ||
  fail "the data folder grew: $disk0 -> $disk bytes (at most $allow), $files0 -> $files files: $(find "$d/data" -type f | head -20)"
left=$(find "$d/data/downloads" -type f ! -name manifest.validators 2>/dev/null)
[ -z "$left" ] && pass "no download left behind" || fail "downloads left: $left"
rc=0
kill -TERM "$pid"
wait "$pid" || rc=$?
[ "$rc" -eq 0 ] && grep -q 'stopping on request' "$w/daemon.log" && pass "the daemon stops on SIGTERM with 0" ||
  fail "daemon exit $rc after SIGTERM"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed; daemon log: $(tail -20 "$w/daemon.log")"; exit 1; }
echo "$p1 polls of one daemon: no growth"
