#!/usr/bin/env bash
# The agent against a hostile network (issue 12, findings 4-6): servers on
# loopback that trickle, send endless error bodies, or redirect an https
# repository to plain http. Each case is bounded by timeout(1), so a device
# that hangs is a FAIL, never a hung test.
# Usage: agent_hostile_net.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 simboot=$3 src=$4
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
w=$(mktemp -d /tmp/eq-hostile.XXXXXX)
bad_pids=()
cleanup() {
  for p in "${bad_pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  httpd_stop || true
  rm -rf "$w"
}
trap cleanup EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"

# start_bad MODE [ARGS...]: badhttp.py on a free port; sets BAD_PORT.
start_bad() {
  local mode=$1 port pid; shift
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    port=$(httpd_free_port)
    python3 "$src/tests/integration/lib/badhttp.py" "$mode" "$port" "$w/repo" --lifetime 120 --max-requests 50 \
      --log "$w/bad-$mode.log" "$@" &
    pid=$!
    if httpd_wait_port_ "$port" "$pid"; then bad_pids+=("$pid"); BAD_PORT=$port; return 0; fi
    wait "$pid" 2>/dev/null || true
  done
  echo "badhttp.py $mode did not start" >&2; return 1
}

# A tiny release, provisioned on a device from a well-behaved server.
mkdir -p pkgs/root/DEBIAN pkgs/root/usr/share/hello
printf 'Package: hello\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: t\n' > pkgs/root/DEBIAN/control
echo hello > pkgs/root/usr/share/hello/greeting
mkdir -p debs && dpkg-deb --root-owner-group -b pkgs/root debs/hello_1.0_all.deb >/dev/null
"$gen" keygen --out rel >/dev/null
"$gen" -q publish --repo repo --board qemux86-64 --channel stable --key rel.key --store s.db --level 3 --release r1 \
  --packages debs >/dev/null
mkdir -p logs
httpd_start "$w/repo" "$w/logs"
device() { # DIR URL [SECTION.KEY=VALUE...]
  local d=$1 u=$2; shift 2
  simdevice_make "$d" "$u" qemux86-64 "$w/rel.pub" repository.retries=0 "$@"
}
device "$w/d" "http://127.0.0.1:$HTTPD_PORT" repository.low-speed-time=3
"$eqota" --config "$w/d/eqota.conf" provision --slot A >/dev/null 2>&1 || fail "provision"
"$simboot" --env "$w/d/bootenv" --cmdline "$w/d/cmdline" >/dev/null
point() { sed -i "s|^url = .*|url = $2|" "$1/eqota.conf"; }

# ---- endless error body: stop at the status, read nothing of the body
start_bad endless-error
point "$w/d" "http://127.0.0.1:$BAD_PORT"
t0=$(date +%s); rc=0
out=$(timeout 60 "$eqota" --config "$w/d/eqota.conf" check 2>&1) || rc=$?
t=$(( $(date +%s) - t0 ))
if [ $rc -eq 124 ]; then fail "endless 503 body: check still reading after 60 s";
elif [ $rc -ne 0 ] && grep -q "HTTP 503" <<<"$out" && [ $t -le 15 ]; then pass "endless 503 body: check stops at the status in ${t} s ($out)";
else fail "endless 503 body: exit $rc after ${t} s: $out"; fi

# ---- trickle: 2 bytes/s is cut by the minimum rate (low-speed-time = 3 s)
start_bad trickle
point "$w/d" "http://127.0.0.1:$BAD_PORT"
t0=$(date +%s); rc=0
out=$(timeout 60 "$eqota" --config "$w/d/eqota.conf" check 2>&1) || rc=$?
t=$(( $(date +%s) - t0 ))
if [ $rc -eq 124 ]; then fail "trickling server: check still busy after 60 s";
elif [ $rc -ne 0 ] && grep -q "too slow" <<<"$out" && [ $t -le 20 ]; then pass "trickling server: cut after ${t} s ($out)";
else fail "trickling server: exit $rc after ${t} s: $out"; fi
trickle_port=$BAD_PORT

# ---- the daemon against a trickling server with no useful rate limit:
# the poll past cycle-timeout (10 s) is stopped, and a SIGTERM during the
# next cycle ends daemon and cycle within seconds (not lost around fork()).
device "$w/s" "http://127.0.0.1:$HTTPD_PORT" repository.low-speed-time=3600 repository.min-rate=1 \
  daemon.interval=60 daemon.jitter=0 daemon.cycle-timeout=10
out=$("$eqota" --config "$w/s/eqota.conf" provision --slot A 2>&1) || fail "provision s: $out"
"$simboot" --env "$w/s/bootenv" --cmdline "$w/s/cmdline" >/dev/null
point "$w/s" "http://127.0.0.1:$trickle_port"
# SIGTERM during a cycle: with the default cycle-timeout the update cycle
# is still trickling 4 s after the start.
sed -i 's/^cycle-timeout = .*/cycle-timeout = 600/' "$w/s/eqota.conf"
"$eqota" --config "$w/s/eqota.conf" daemon > "$w/daemon0.log" 2>&1 & dpid=$!
sleep 4
kids=$(pgrep -P $dpid || true)
[ -n "$kids" ] || fail "SIGTERM: no cycle running 4 s after the daemon started"
kill -TERM $dpid
t0=$(date +%s)
for _ in $(seq 1 150); do kill -0 $dpid 2>/dev/null || break; sleep 0.1; done
if kill -0 $dpid 2>/dev/null; then kill -KILL $dpid; fail "daemon still running 15 s after SIGTERM during a cycle";
else
  left=""
  for k in $kids; do kill -0 "$k" 2>/dev/null && left="$left $k"; done
  [ -z "$left" ] && pass "SIGTERM during a cycle: daemon and cycle ended in $(( $(date +%s) - t0 )) s" ||
    fail "SIGTERM during a cycle left it running:$left"
fi
wait $dpid 2>/dev/null || true
sed -i 's/^cycle-timeout = .*/cycle-timeout = 10/' "$w/s/eqota.conf"
"$eqota" --config "$w/s/eqota.conf" daemon > "$w/daemon.log" 2>&1 & dpid=$!
for _ in $(seq 1 300); do grep -q "cycle-timeout" "$w/daemon.log" && break; sleep 0.1; done
if grep -q "ran longer than \[daemon\] cycle-timeout (10 s)" "$w/daemon.log"; then
  pass "daemon: a poll past cycle-timeout is stopped"
else fail "daemon: no cycle-timeout stop: $(cat "$w/daemon.log")"; fi
kill -TERM $dpid
for _ in $(seq 1 150); do kill -0 $dpid 2>/dev/null || break; sleep 0.1; done
kill -0 $dpid 2>/dev/null && { kill -KILL $dpid; fail "daemon ignored SIGTERM"; }
wait $dpid 2>/dev/null || true

# ---- https repository redirected to plain http: refused, nothing fetched over http
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=eqota test CA" \
  -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=good" -keyout good.key -out good.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' > good.ext
openssl x509 -req -in good.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile good.ext -out good.pem 2>/dev/null
start_bad ok
plain_port=$BAD_PORT
httpd_stop
HTTPD_EXTRA_CONF="server.modules += ( \"mod_openssl\", \"mod_redirect\" )
ssl.engine = \"enable\"
ssl.pemfile = \"$w/good.pem\"
ssl.privkey = \"$w/good.key\"
url.redirect = ( \"^/(.*)\" => \"http://127.0.0.1:$plain_port/\$1\" )" httpd_start "$w/repo" "$w/logs"
device "$w/h" "https://127.0.0.1:$HTTPD_PORT" repository.ca-file="$w/ca.pem"
rc=0; out=$(timeout 60 "$eqota" --config "$w/h/eqota.conf" provision --slot A 2>&1) || rc=$?
if [ $rc -ne 0 ] && grep -q "redirect refused: the repository is https:// and is never continued over another protocol" <<<"$out" &&
   [ ! -s "$w/bad-ok.log" ]; then pass "https -> http redirect refused, nothing fetched over http ($out)"
else fail "https -> http redirect: exit $rc: $out; plain http requests: $(cat "$w/bad-ok.log" 2>/dev/null | wc -l)"; fi

echo "agent_hostile_net: $fails failed"
[ "$fails" -eq 0 ]
