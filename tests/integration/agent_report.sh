#!/usr/bin/env bash
# Device reports ([report] url, docs/fleet.md "Reports") through a real
# collector: lighttpd runs the eqota-report.cgi collector, which
# appends each POST to a JSON-lines file, and `eqota-gen fleet` sums it up.
# - a simulated device reports installed, committed, rolled back (with the
#   health check's reason) and failed (the missing object's error);
# - with the collector unreachable, updates still succeed, the reports
#   wait in a bounded queue (oldest dropped), and go at the next update;
# - the reports carry a hash of the machine id, never the id;
# - `fleet` counts what the devices did, in text and JSON, and counts and
#   names the lines that are not reports (hostile ones included) instead of
#   trusting them; the HTML page escapes what devices wrote;
# - a device updating an image release (manifest format 2) says in its
#   report how many of the bytes were image components ("component_bytes",
#   as `eqota-gen diff` predicts), and `fleet` sums them.
# Usage: agent_report.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" agent_report "$@"

"$gen" keygen --out k >/dev/null
pub() { # RELEASE
  mkdir -p "p$1"
  tarpkg "p$1/base_1.tar" usr/share/base "base"
  tarpkg "p$1/tool_$1.tar" usr/share/tool "tool $1"
  "$gen" -q publish --repo repo --board b --channel stable --release "r$1" --packages "p$1" --key k.key \
    --store repo.db --level 1 >/dev/null
}
pub 1
reports=$w/reports.jsonl
collector() { # start the web server with the collector at /report
  HTTPD_EXTRA_CONF=$(httpd_collector_conf /report "$reports" "$(dirname "$gen")/eqota-report.cgi") httpd_start "$w/repo" "$w/logs"
}
collector
port=$HTTPD_PORT

d=$w/dev
echo 0123456789abcdef0123456789abcdef >"$w/machine-id"
printf '#!/bin/sh\ntest ! -e %s/fail-health\n' "$w" >"$w/health"
chmod +x "$w/health"
simdevice_make "$d" "$HTTPD_URL" b "$w/k.pub" repository.retries=0 "update.device-id-file=$w/machine-id" \
  "report.url=http://127.0.0.1:$port/report" report.queue=3 report.timeout=5 "health.check=$w/health"
eq() { simdevice_eq "$d" "$eqota" "$@"; }
boot() { simdevice_boot "$d" "$simboot"; }
eq provision --slot A >/dev/null 2>&1
boot
lines() { [ -f "$reports" ] && wc -l <"$reports" || echo 0; }
# last FIELD: the field of the newest stored report
last() { tail -1 "$reports" | python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d = d[k]
print(d)' "$1"; }

# ---- installed, committed
pub 2
rc=0; eq update >/dev/null 2>&1 || rc=$?
[ $rc -eq 3 ] && [ "$(lines)" -eq 1 ] && [ "$(last event)" = installed ] && [ "$(last to.number)" = 2 ] &&
  [ "$(last from.number)" = 1 ] && pass "update: an 'installed' report from 1 to 2" || fail "installed: exit $rc, $(cat "$reports" 2>&1)"
[ "$(last bytes)" -gt 0 ] && pass "the report counts the bytes downloaded ($(last bytes))" || fail "bytes: $(last bytes)"
want=$(python3 -c 'import hashlib; print(hashlib.sha256(b"eqota-report-id-1\0" + b"0123456789abcdef0123456789abcdef").hexdigest()[:32])')
[ "$(last device)" = "$want" ] && ! grep -q 0123456789abcdef0123456789abcdef "$reports" &&
  pass "the device is named by a hash of its machine id, never the id" || fail "device id: $(last device)"
sdev=$(eq status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["device"])')
[ "$sdev" = "$want" ] && eq status | grep -qx "device: $want in reports" &&
  pass "status names the device as its reports do" || fail "status device: $sdev"
mv "$w/machine-id" "$w/machine-id.away"
sdev=$(eq status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["device"])')
[ "$sdev" = None ] && pass "status without an id file: device null" || fail "status device without id: $sdev"
mv "$w/machine-id.away" "$w/machine-id"
boot
eq mark-good >/dev/null 2>&1
[ "$(last event)" = committed ] && [ "$(last to.release)" = r2 ] && [ "$(last from.release)" = r1 ] &&
  pass "mark-good: a 'committed' report" || fail "committed: $(tail -1 "$reports")"

# ---- rolled back, with the reason
pub 3
touch "$w/fail-health"
setup_step "update to release 3" 3 eq update
boot
setup_step "mark-good of release 3, its health check failing" 4 eq mark-good
boot
[ "$(last event)" = rolled_back ] && last reason | grep -q "health check failed" &&
  pass "a failed health check: 'rolled_back' with the reason" || fail "rolled back: $(tail -1 "$reports")"
rm "$w/fail-health"

# ---- failed install
pub 4
obj=$("$gen" show --repo repo --board b --channel stable --json | python3 -c 'import json,sys; print([p["object"]["path"] for p in json.load(sys.stdin)["packages"] if p["name"]=="tool"][0])')
mv "repo/$obj" "$w/obj.saved"
eq update >/dev/null 2>&1 && fail "update without the object succeeded"
[ "$(last event)" = failed ] && last reason | grep -q "404" && pass "a failed install: 'failed' with the error" ||
  fail "failed: $(tail -1 "$reports")"
mv "$w/obj.saved" "repo/$obj"

# ---- the collector is down: updates go on, reports wait in a bounded queue
httpd_stop
n0=$(lines)
HTTPD_EXTRA_CONF="" httpd_start "$w/repo" "$w/logs2"
sed -i "s|^url = http://127.0.0.1:$port/report|url = http://127.0.0.1:$(httpd_free_port)/report|" "$d/eqota.conf"
sed -i "s|^url = http://127.0.0.1:$port$|url = $HTTPD_URL|" "$d/eqota.conf"
rc=0; eq update --retry >/dev/null 2>&1 || rc=$?
[ $rc -eq 3 ] && pass "collector unreachable: the update still installs" || fail "offline update: exit $rc"
boot
eq mark-good >/dev/null 2>&1
for r in 5 6; do
  pub $r
  setup_step "update to release $r, the collector down" 3 eq update
  boot
  eq mark-good >/dev/null 2>&1
done
q=$(ls "$d/data/reports" | wc -l)
[ "$q" -eq 3 ] && pass "6 reports while offline: the queue keeps the newest 3 ([report] queue = 3)" ||
  fail "queue holds $q"
httpd_stop
HTTPD_PORT_WANTED=$port collector
sed -i "s|^url = http://127.0.0.1:[0-9]*/report|url = http://127.0.0.1:$HTTPD_PORT/report|" "$d/eqota.conf"
sed -i "s|^url = http://127.0.0.1:[0-9]*$|url = $HTTPD_URL|" "$d/eqota.conf"
setup_step "a poll with the collector back, nothing to install" 0 eq update
[ "$(ls "$d/data/reports" | wc -l)" -eq 0 ] && [ "$(lines)" -eq $((n0 + 3)) ] &&
  tail -3 "$reports" | python3 -c 'import json,sys; e=[json.loads(l) for l in sys.stdin]; assert [x["event"] for x in e] == ["committed","installed","committed"] and e[-1]["to"]["number"] == 6, e' &&
  pass "back online: the queued reports go at the next poll, oldest first" || fail "flush: $(ls "$d/data/reports"), $(tail -3 "$reports")"

# A report the collector refuses for what it is (400: not a report) is
# dropped, and the one behind it still goes.
printf '{"not":"a report"}\n' >"$d/data/reports/00000000000000000001.json"
n1=$(lines)
pub 7
setup_step "update to release 7" 3 eq update
[ -z "$(ls "$d/data/reports")" ] && [ "$(lines)" -eq $((n1 + 1)) ] && [ "$(last to.number)" = 7 ] &&
  pass "a report the collector refuses (400) is dropped; the next one goes" || fail "refused: $(ls "$d/data/reports")"
boot
eq mark-good >/dev/null 2>&1

# ---- eqota-gen fleet over what the collector stored
out=$("$gen" fleet --unauthenticated --reports "$reports")
echo "$out"
grep -q "release 3 'r3': 1 devices: 0 running it, 0 committed, 0 trying, 1 rolled back (100.0 % of installs)" <<<"$out" &&
  grep -q 'rolled back: 1 x "health check failed' <<<"$out" && grep -q "release 7 'r7': 1 devices: 1 running it" <<<"$out" &&
  pass "fleet: per release, running, rolled back with the reason" || fail "fleet text"
"$gen" fleet --unauthenticated --reports "$reports" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["schema"] == "eqota-gen-fleet/1" and d["devices"] == 1 and d["bad"] == 0, d
rel = {r["number"]: r for r in d["channels"][0]["releases"]}
assert rel[2]["committed"] == 1 and rel[2]["running"] == 0 and rel[3]["rolled_back"] == 1, rel
# r4 failed once, then installed while the collector was down: those two
# reports were dropped from the full queue, so the fleet knows the failure
assert rel[4]["failed"] == 1 and rel[4]["committed"] == 0, rel[4]
assert rel[6]["running"] == 0 and rel[6]["committed"] == 1 and rel[7]["running"] == 1, rel
assert rel[3]["rollback_share"] == 1.0, rel
' && pass "fleet --json: the same numbers" || fail "fleet json"

# ---- hostile lines: counted and named, never trusted; HTML escapes
cp "$reports" "$w/mixed.jsonl"
good=$(lines)
{
  echo 'not json'
  echo '{"schema":"eqota-report/1","time":1,"device":"../../etc","board":"b","channel":"stable","event":"committed","from":null,"to":{"release":"r9","number":9},"reason":null,"bytes":0,"seconds":0,"agent":"x"}'
  echo '{"schema":"eqota-report/1","time":-5,"device":null,"board":"b","channel":"stable","event":"committed","from":null,"to":{"release":"r9","number":9},"reason":null,"bytes":0}'
  echo '{"schema":"eqota-report/1","time":5,"device":"ffffffffffffffffffffffffffffffff","board":"b","channel":"stable","event":"rolled_back","from":null,"to":{"release":"r9","number":9},"reason":"<script>alert(1)</script>\u0007","bytes":0,"seconds":1,"agent":"x"}'
  head -c 5000 /dev/zero | tr '\0' x; echo
} >>"$w/mixed.jsonl"
out=$("$gen" fleet --unauthenticated --reports "$w/mixed.jsonl" 2>&1)
grep -q "4 lines were not reports" <<<"$out" && grep -q "mixed.jsonl:$((good + 2)): device: expected 32 lower-case hex digits" <<<"$out" &&
  grep -q "longer than 4096 bytes" <<<"$out" && pass "fleet: 4 hostile lines counted and named" || fail "hostile: $out"
"$gen" fleet --unauthenticated --reports "$w/mixed.jsonl" --html --out "$w/fleet.html" 2>/dev/null
! grep -q "<script" "$w/fleet.html" && grep -q "&lt;script&gt;alert(1)&lt;/script&gt;" "$w/fleet.html" &&
  ! grep -qE "(src|href)=" "$w/fleet.html" && grep -q "<polyline" "$w/fleet.html" &&
  pass "fleet --html: the device's text is escaped, nothing is loaded from elsewhere, a chart is drawn" || fail "html"
expect_fail "fleet without --reports" "missing --reports" "$gen" fleet
expect_fail "fleet with a missing file" "cannot open '$w/nope.jsonl'" "$gen" fleet --reports "$w/nope.jsonl"

# ---- an image release: its reports say what of their bytes were components
# (a board of its own, so that its release numbers meet no other's)
grep -q '"component_bytes"' "$w/mixed.jsonl" && fail "a release of packages alone reported component_bytes"
mkdir -p pi
tarpkg pi/base_1.tar usr/share/base/data "base"
mkimg() { # FILE V: base's file, and an etc/conf of 20 KB whose every 4096th byte is V
  python3 - "$1" "$2" <<'PY'
import io, random, sys, tarfile
conf = bytearray(random.Random(5).randbytes(20000))
for k in range(0, len(conf), 4096):
    conf[k] = int(sys.argv[2])
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for name, body in (("usr", None), ("usr/share", None), ("usr/share/base", None), ("usr/share/base/data", b"base"),
                       ("etc", None), ("etc/conf", bytes(conf))):
        i = tarfile.TarInfo(name)
        i.type, i.mode = (tarfile.DIRTYPE, 0o755) if body is None else (tarfile.REGTYPE, 0o644)
        i.size = len(body or b"")
        t.addfile(i, io.BytesIO(body or b""))
PY
}
pubi() { # V
  mkimg "img$1.tar" "$1"
  setup_step "publish image release i$1" 0 "$gen" -q publish --repo "$w/repo/img" --board bi --channel stable \
    --release "i$1" --packages pi --image "img$1.tar" --key k.key --store img.db --level 1
}
pubi 1
di=$w/devi
simdevice_make "$di" "$HTTPD_URL/img" bi "$w/k.pub" repository.retries=0 "update.device-id-file=$w/machine-id" \
  "report.url=http://127.0.0.1:$HTTPD_PORT/report"
setup_step "provision the image release i1" 0 simdevice_eq "$di" "$eqota" provision --slot A
simdevice_boot "$di" "$simboot"
pubi 2
want=$("$gen" diff --repo "$w/repo/img" --board bi --channel stable --from i1 --to i2 --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["component_bytes"])')
rc=0; simdevice_eq "$di" "$eqota" update >/dev/null 2>&1 || rc=$?
[ $rc -eq 3 ] && [ "$(last to.release)" = i2 ] && [ "$(last event)" = installed ] && [ "$want" -gt 0 ] &&
  [ "$(last component_bytes)" = "$want" ] && [ "$(last component_bytes)" -le "$(last bytes)" ] &&
  pass "image release: the 'installed' report's component_bytes ($(last component_bytes) of $(last bytes)) are what diff predicts for the components" ||
  fail "image report: exit $rc, want $want, $(tail -1 "$reports")"
"$gen" fleet --unauthenticated --reports "$reports" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = [c for c in d["channels"] if c["board"] == "bi"][0]["releases"][0]
assert r["number"] == 2 and r["component_bytes_total"] == int(sys.argv[1]) and 0 < r["component_bytes_total"] <= r["bytes_total"], r
assert all(r["component_bytes_total"] == 0 for c in d["channels"] if c["board"] == "b" for r in c["releases"]), d
' "$want" && pass "fleet: the image release's component bytes, 0 for the releases of packages alone" || fail "fleet components"

# ---- bad [report] configuration
cp "$d/eqota.conf" "$w/bad.conf"
sed -i 's|^url = http://127.0.0.1:[0-9]*/report|url = file:///tmp/r|' "$w/bad.conf"
expect_fail "report url not http" "[report] url = file:///tmp/r: expected an http:// or https:// URL" \
  "$eqota" --config "$w/bad.conf" status

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "device reports reach the collector and the fleet summary"
