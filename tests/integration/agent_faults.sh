#!/usr/bin/env bash
# Networks that drop and lie (issue 17): lib/faultproxy.py between the agent
# and lighttpd cuts object and delta downloads with TCP resets, stalls them,
# truncates them (with a right and with a lying Content-Length), answers
# bursts of 5xx, ignores or falsifies Range requests and loops redirects.
# For each case a fresh copy of a device on release 1 updates to release 2
# through the proxy: every case must end in a correct slot (boots release 2,
# `eqota verify` clean), after at most a few clean, retried failures (exit
# 1 with a message, the device still booting release 1), and the bytes the
# proxy sent for objects and deltas must stay within a bound of the ideal
# (an undisturbed update through the same proxy): no endless re-downloads.
# Usage: agent_faults.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" agent_faults "$@"
t_start=$(date +%s)

# ---- two releases of 10 packages, 3.4 MB of incompressible data.
# Names sort in install order: the largest changed package comes first, so
# the faults hit the object whose re-download would cost the most.
# r2: a-big and c-app new (full objects), b-lib and d-data partly changed
# (deltas), e-conf a small new file, f..j unchanged (kept).
python3 - <<'PY'
import io, os, random, tarfile
rnd = random.Random(17)
def blob(n):
    return rnd.randbytes(n)
def pkg(d, name, ver, files):
    os.makedirs(d, exist_ok=True)
    with tarfile.open("%s/%s_%s.tar" % (d, name, ver), "w", format=tarfile.PAX_FORMAT) as t:
        dirs = set()
        for path in files:
            parts = path.split("/")
            for i in range(1, len(parts)):
                p = "/".join(parts[:i])
                if p not in dirs:
                    dirs.add(p)
                    ti = tarfile.TarInfo(p)
                    ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                    t.addfile(ti)
        for path, body in files.items():
            ti = tarfile.TarInfo(path)
            ti.mode, ti.size = 0o644, len(body)
            t.addfile(ti, io.BytesIO(body))
lib1, data1 = blob(400_000), blob(600_000)
lib2 = bytearray(lib1); lib2[100_000:200_000] = blob(100_000)
kept = {n: blob(s) for n, s in [("f-fonts", 300_000), ("g-locale", 250_000), ("h-firmware", 500_000),
                                 ("i-icons", 150_000), ("j-zoneinfo", 100_000)]}
for rel, big, app, lib, data, conf in [("p1", blob(1_200_000), blob(300_000), lib1, data1, b"level = 1\n"),
                                       ("p2", blob(1_200_000), blob(300_000), bytes(lib2),
                                        data1 + blob(150_000), b"level = 2\n")]:
    v = rel[1]
    pkg(rel, "a-big", v, {"usr/lib/big/blob.bin": big})
    pkg(rel, "b-lib", v, {"usr/lib/libb.so.1": lib})
    pkg(rel, "c-app", v, {"usr/bin/app": app})
    pkg(rel, "d-data", v, {"usr/share/d/data.bin": data})
    pkg(rel, "e-conf", v, {"etc/e.conf": conf})
    for n, b in kept.items():
        pkg(rel, n, "1", {"usr/share/%s/data" % n: b})
PY
"$gen" keygen --out k >/dev/null
publish() { "$gen" -q publish --repo repo --board b --channel stable --release "r$1" --packages "p$1" --key k.key \
  --store repo.db --level 3 >/dev/null; }
publish 1
mkdir -p logs
httpd_start "$w/repo" "$w/logs"

# The device: 2 retries 10 ms apart per request; a transfer under 1 KiB/s
# for 2 s is cut (curl's rate is an average over its last seconds, so a
# stall after a fast start is cut some seconds later).
d0=$w/dev0
simdevice_make "$d0" "$HTTPD_URL" b "$w/k.pub" repository.retries=2 repository.retry-delay-ms=10 \
  repository.low-speed-time=2 repository.connect-timeout=5
simdevice_eq "$d0" "$eqota" provision --slot A >/dev/null 2>&1
simdevice_boot "$d0" "$simboot"
[ "$(simdevice_running "$d0" "$eqota")" = 1 ] || { echo "provisioning failed"; exit 1; }
publish 2

# start_proxy LOG [FAULT OPTIONS...]: faultproxy.py on a free port in
# front of lighttpd; sets PROXY_PORT and PROXY_PID.
start_proxy() {
  local log=$1 port pid; shift
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    port=$(httpd_free_port)
    python3 "$src/tests/integration/lib/faultproxy.py" "$port" "$HTTPD_PORT" --log "$log" --lifetime 170 \
      --stall-seconds 30 "$@" &
    pid=$!
    if httpd_wait_port_ "$port" "$pid"; then bg+=("$pid"); PROXY_PORT=$port PROXY_PID=$pid; return 0; fi
    wait "$pid" 2>/dev/null || true
  done
  echo "faultproxy.py did not start" >&2; return 1
}
stop_proxy() { kill "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; }
# payload_bytes LOG: body bytes the proxy sent for objects and deltas
payload_bytes() { awk '$2 ~ /^\/(objects|deltas)\// { s += $4 } END { print s + 0 }' "$1"; }

# Largest object or delta of release 2 that an update may fetch.
max_obj=$(find repo/objects repo/deltas -type f -printf '%s\n' | sort -n | tail -1)

# run_case NAME CLASS MAX-ATTEMPTS FAULT-OPTIONS...: one device, updated
# through the proxy until it installs (at most 5 runs of `eqota update
# --retry`); more than MAX-ATTEMPTS runs is a failure. Every run's output
# goes to $w/out-NAME.log.
rows=()
ideal=0
run_case() {
  local name=$1 class=$2 max=$3 d=$w/dev-$1 log=$w/proxy-$1.log rc=0 out attempts=0 result bytes bound t0
  shift 3
  t0=$(date +%s)
  cp -a "$d0" "$d"
  sed -i "s|$d0/|$d/|g" "$d/eqota.conf"
  : >"$log"
  start_proxy "$log" "$@"
  sed -i "s|^url = .*|url = http://127.0.0.1:$PROXY_PORT|" "$d/eqota.conf"
  local errs=()
  while [ $attempts -lt 5 ]; do
    attempts=$((attempts + 1))
    rc=0; out=$(timeout 90 env EQ_TEST_BOOT_ID_FILE="$d/boot_id" "$eqota" --config "$d/eqota.conf" update --retry 2>&1) ||
      rc=$?
    printf '%s\n' "$out" >>"$w/out-$name.log"
    [ $rc -eq 3 ] && break
    errs+=("exit $rc: $(grep -m1 -E '^(error|err):|error' <<<"$out" || tail -1 <<<"$out")")
    if [ $rc -ne 1 ] || ! grep -q . <<<"$out"; then
      fail "$name: attempt $attempts: exit $rc, not a clean failure: $out"; break
    fi
    # a clean failure leaves the device on release 1: it still boots it
    simdevice_boot "$d" "$simboot"
    local now; now=$(simdevice_running "$d" "$eqota")
    [ "$now" = 1 ] || fail "$name: after failed attempt $attempts the device boots release $now"
  done
  stop_proxy
  bytes=$(payload_bytes "$log")
  result=ok
  if [ $rc -ne 3 ]; then
    result="NOT INSTALLED"; fail "$name: no install after $attempts attempts: ${errs[*]:-}"
  else
    simdevice_boot "$d" "$simboot"
    out=$(simdevice_eq "$d" "$eqota" mark-good 2>&1) || { result="mark-good failed"; fail "$name: mark-good: $out"; }
    local now; now=$(simdevice_running "$d" "$eqota")
    [ "$now" = 2 ] || { result="runs r$now"; fail "$name: the device runs release $now, not 2"; }
    out=$(simdevice_eq "$d" "$eqota" verify 2>&1) || { result="verify failed"; fail "$name: verify: $out"; }
  fi
  if [ $attempts -gt "$max" ]; then
    result="$result, >$max attempts"; fail "$name: $attempts runs of eqota update, $max expected"
  fi
  if [ "$class" = ideal ]; then
    ideal=$bytes bound=$bytes
  elif [ "$class" = resume ]; then
    bound=$((ideal + max_obj / 2))
  else
    bound=$((2 * ideal + max_obj))
  fi
  if [ "$bytes" -gt "$bound" ]; then
    result="$result, OVER BOUND"
    fail "$name: the proxy sent $bytes bytes of objects and deltas, bound $bound (ideal $ideal)"
  fi
  [ "$result" = ok ] && pass "$name: release 2 after $attempts attempt(s), $bytes bytes (bound $bound)"
  for e in "${errs[@]}"; do echo "    $name: $e"; done
  rows+=("$(printf '%-20s %8s %10s %6s %10s %5s  %s' "$name" "$attempts" "$bytes" \
    "$(awk -v b="$bytes" -v i="$ideal" 'BEGIN { printf "%.2f", i ? b / i : 0 }')" "$bound" \
    "$(($(date +%s) - t0))" "$result")")
  rm -rf "$d"
}

# Bounds: a client that resumes gets every byte of a cut answer into its
# .part (the proxy resets only once the half it sent is acknowledged), so
# cuts, stalls, truncations, 5xx and redirects ("resume") cost the ideal;
# the slack of half the largest object is for bytes lost in flight, while
# a client that started from zero on each retry would pay 1.5 objects more
# here. Lies ("lie": a Range ignored, a 206 from another offset, wrong
# bytes only the hash catches) may each cost the object they hit once
# more, and a delta whose bytes lie falls back to its full object: at most
# 2 x ideal + the largest object. (A refused 206 is not counted: the proxy
# sends its body only when the client did not hang up on its headers.)
# MAX-ATTEMPTS: what a device with retries=2 (3 requests per download
# and run) needs for the schedule: a fault burst longer than 3 requests
# costs one failed run.
run_case none ideal 1
[ "$ideal" -gt 1000000 ] || fail "an undisturbed update downloaded only $ideal bytes"
run_case reset-mid-body resume 2 --fault reset-mid-body:3
run_case stall resume 1 --fault stall:2
run_case truncate-right-len resume 2 --fault truncate-right-length:3
run_case truncate-wrong-len resume 2 --fault truncate-wrong-length:3
run_case 5xx-burst resume 2 --fault 5xx:4
run_case redirect-loop resume 2 --fault redirect-loop:8
run_case ignore-range lie 1 --fault ignore-range:2 --fault reset-mid-body:2
# A 206 from before the asked offset is a wrong range (retried at once),
# not "more than the bytes the manifest declares" (final for the run).
run_case wrong-206 lie 2 --fault wrong-206:2 --fault reset-mid-body:2
if grep -q "bytes the manifest declares" "$w/out-wrong-206.log"; then
  fail "wrong-206: a wrong Content-Range taken for an oversize body: $(grep -m1 "manifest declares" "$w/out-wrong-206.log")"
fi
run_case wrong-206-bytes lie 2 --fault wrong-206-bytes:1 --fault reset-mid-body:1
run_case manifest-faults resume 2 --meta-fault 5xx:2 --meta-fault reset-mid-body:2 \
  --meta-fault truncate-wrong-length:2 --meta-fault truncate-right-length:1
run_case everything lie 3 --fault wrong-206:1 --fault ignore-range:1 --fault wrong-206-bytes:1 \
  --fault reset-mid-body:2 --fault stall:1 --fault truncate-right-length:1 --fault truncate-wrong-length:1 \
  --fault 5xx:2 --fault redirect-loop:2

# the copies worked on their own slots, never on the template's
[ -z "$(ls -A "$d0/B")" ] || fail "a copy of the device wrote into the template's slot B"

echo
echo "ideal $ideal bytes of objects and deltas; largest object $max_obj bytes"
printf '%-20s %8s %10s %6s %10s %5s  %s\n' case attempts bytes ratio bound "s" result
for r in "${rows[@]}"; do echo "$r"; done
echo "agent_faults: $(( $(date +%s) - t_start )) s, $fails failed"
[ "$fails" -eq 0 ]
