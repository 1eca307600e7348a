#!/usr/bin/env bash
# Forged fleet reports (issue 29, finding 4) against the real collector:
# lighttpd with TLS on 127.0.0.1 runs eqota-report.cgi, asks every client
# for a certificate of the fleet's CA but also lets clients without one
# reach it (the worst case: a collector anyone can POST to).
#   A. A healthy release, 100 devices with certificates committed it. Ten
#      invented `rolled_back` reports without a certificate (9.1 % if
#      counted) do not make `rollout --auto-halt 0.05` halt it: it decides
#      as without them. A report that brings its own "auth" is refused. A
#      device with a certificate that writes 10 device ids counts once.
#   B. A bad release, 10 of 100 devices rolled back (10 %). 150 invented
#      `committed` reports (4 % if counted) do not stop --auto-halt 0.05.
#   C. --unauthenticated counts them, and the forgeries then work: what
#      the reader did before it knew identities.
#   D. --inventory limits the count to a known fleet.
# Usage: fleet_forgery.sh EQOTA_GEN COLLECTOR_CGI SOURCE_DIR
set -Eeuo pipefail
gen=$1 cgi=$2 src=$3
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/tarpkg.sh"
w=$(mktemp -d /tmp/eq-forgery.XXXXXX)
trap 'httpd_stop; [ -n "${EQ_KEEP:-}" ] || rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"

# A throw-away test CA, the server's certificate and 100 device
# certificates (CN device-N, one key for speed): never used elsewhere.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=eqota test CA" \
  -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" -keyout srv.key -out srv.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >srv.ext
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile srv.ext -out srv.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=x" -keyout dev.key -out dev.csr 2>/dev/null
mkdir certs
for i in $(seq 0 99); do
  openssl x509 -req -in dev.csr -subj "/CN=device-$i" -CA ca.pem -CAkey ca.key -set_serial $((i + 100)) -days 2 \
    -out "certs/device-$i.pem" 2>/dev/null
done

# The repository: release 1 '2026.12.1' is current, with a root, so that
# `rollout` may halt it.
for k in R K T; do "$gen" keygen --out "$k" >/dev/null; done
"$gen" root init --repo repo --key R.key --root-pub R.pub --release-pub K.pub --timestamp-pub T.pub >/dev/null
# The operator's pin, kept outside the repository (docs/eqota-gen.md).
cp repo/root/1.root.json pinned.root.json
mkdir p && tarpkg p/app_1.tar usr/share/app "app 1"
"$gen" -q publish --repo repo --board qemuarm64 --channel stable --release 2026.12.1 --packages p \
  --key K.key --timestamp-key T.key --store s.db --level 1 --trusted-root pinned.root.json >/dev/null

collector() { # FILE
  httpd_stop
  mkdir -p www
  HTTPD_EXTRA_CONF="server.modules += ( \"mod_openssl\" )
ssl.engine = \"enable\"
ssl.pemfile = \"$w/srv.pem\"
ssl.privkey = \"$w/srv.key\"
ssl.ca-file = \"$w/ca.pem\"
ssl.verifyclient.activate = \"enable\"
ssl.verifyclient.enforce = \"disable\"
$(httpd_collector_conf /report "$1" "$cgi")" httpd_start "$w/www" "$w/logs"
}

# post: reads "CERT|EVENT|DEVICE-NUMBER|EXTRA" lines (CERT "-" for none),
# POSTs each as a report on release 1 over one TLS connection per
# certificate, and prints the HTTP status of each, one per line.
cat >post.py <<'PY'
import http.client, json, ssl, sys
port, w = int(sys.argv[1]), sys.argv[2]
conns = {}
for line in sys.stdin:
    cert, event, dev, extra = line.rstrip("\n").split("|")
    if cert not in conns:
        ctx = ssl.create_default_context(cafile=w + "/ca.pem")
        if cert != "-":
            ctx.load_cert_chain(w + "/certs/" + cert + ".pem", w + "/dev.key")
        conns[cert] = http.client.HTTPSConnection("127.0.0.1", port, context=ctx)
    r = {"schema": "eqota-report/1", "time": 1796515200 + len(line), "device": "%032x" % int(dev),
         "board": "qemuarm64", "channel": "stable", "event": event,
         "from": None,
         "to": {"release": "2026.12.1", "number": 1},
         "reason": "health check failed" if event == "rolled_back" else None,
         "bytes": 0, "seconds": 1.0, "agent": "0.1.0"}
    if extra:
        r.update(json.loads(extra))
    c = conns[cert]
    c.request("POST", "/report", body=json.dumps(r, separators=(",", ":")),
              headers={"Content-Type": "application/json"})
    resp = c.getresponse()
    resp.read()
    print(resp.status)
PY
post() { python3 post.py "$HTTPD_PORT" "$w"; }
statuses() { sort | uniq -c | awk '{ printf "%s%s x %s", sep, $1, $2; sep = ", " }'; }
halt() { # REPO FILE [OPTIONS]: the first line of --auto-halt 0.05
  local repo=$1 file=$2; shift 2
  "$gen" -q rollout --repo "$repo" --board qemuarm64 --channel stable --key T.key --auto-halt 0.05 \
    --trusted-root pinned.root.json --reports "$file" "$@" | head -n1
}
halted() { "$gen" -q rollout --repo "$1" --board qemuarm64 --channel stable | grep -q "halted"; }

# ---- A: a healthy release and ten invented rollbacks
collector "$w/a.jsonl"
st=$(for i in $(seq 0 99); do echo "device-$i|installed|$i|"; echo "device-$i|committed|$i|"; done | post | statuses)
[ "$st" = "200 x 204" ] && pass "A. 100 devices with certificates reported" || fail "A. devices: $st"
cp a.jsonl a-clean.jsonl
st=$(for i in $(seq 1 10); do echo "-|rolled_back|$((1000 + i))|"; done | post | statuses)
[ "$st" = "10 x 204" ] && pass "A. the collector stored 10 invented rollbacks without a certificate (not refused, not counted)" ||
  fail "A. forged: $st"
st=$(echo '-|rolled_back|2000|{"auth":"device-5"}' | post | statuses)
[ "$st" = "1 x 400" ] && ! grep -q '"device":"000000000000000000000000000007d0"' a.jsonl &&
  pass "A. a report that sets its own \"auth\" is refused (400) and not stored" || fail "A. auth forged: $st"
if grep '"auth"' a.jsonl | grep -vq '"auth":"device-[0-9]*"}$'; then fail "A. a stored auth is not a certificate's CN"; fi
clean=$(halt repo a-clean.jsonl)
out=$(halt repo a.jsonl)
echo "A: $out"
[ "$out" = "$clean" ] && [ "$out" = "release '2026.12.1' (number 1): 0 of 100 devices that reported it rolled back (0.0 %), the limit is 5.0 %" ] &&
  ! halted repo && pass "A. --auto-halt 0.05 decides as without the forged lines: not halted" ||
  fail "A. $out (without the forgeries: $clean)"
# one device, one certificate, ten device ids: counted once, by its last word
st=$(for i in $(seq 1 10); do echo "device-0|rolled_back|$((3000 + i))|"; done | post | statuses)
out=$(halt repo a.jsonl)
[ "$st" = "10 x 204" ] && [ "$out" = "release '2026.12.1' (number 1): 1 of 100 devices that reported it rolled back (1.0 %), the limit is 5.0 %" ] &&
  ! halted repo && pass "A. a device with a certificate writing 10 device ids counts once" || fail "A. one device: $st, $out"

# ---- B: a bad release and 150 invented commits
collector "$w/b.jsonl"
st=$(for i in $(seq 0 99); do
  echo "device-$i|installed|$i|"
  if [ "$i" -lt 10 ]; then echo "device-$i|rolled_back|$i|"; else echo "device-$i|committed|$i|"; fi
done | post | statuses)
[ "$st" = "200 x 204" ] && pass "B. 100 devices reported, 10 rolled back" || fail "B. devices: $st"
cp b.jsonl b-clean.jsonl
st=$(for i in $(seq 1 150); do echo "-|committed|$((5000 + i))|"; done | post | statuses)
[ "$st" = "150 x 204" ] || fail "B. forged: $st"
cp -a repo repo-b
cp -a repo repo-b-clean
clean=$(halt repo-b-clean b-clean.jsonl)
out=$(halt repo-b b.jsonl)
echo "B: $out"
[ "$out" = "$clean" ] && [ "$out" = "release '2026.12.1' (number 1): 10 of 100 devices that reported it rolled back (10.0 %), the limit is 5.0 %" ] &&
  halted repo-b && pass "B. --auto-halt 0.05 halts the bad release despite 150 invented commits" || fail "B. $out"
"$gen" fleet --reports b.jsonl >fleet.txt
grep -q "^150 reports not counted: no authenticated device identity" fleet.txt &&
  grep -q "^350 reports from 100 devices" fleet.txt &&
  pass "B. fleet says how many reports it did not count, and why" || fail "B. fleet: $(cat fleet.txt)"

# ---- C: counted on request, the forgeries do what issue 29 said
cp -a repo repo-c
out=$(halt repo-c a.jsonl --unauthenticated)
halted repo-c && pass "C. --unauthenticated: 10 invented rollbacks halt the healthy release ($out)" || fail "C. A: $out"
cp -a repo repo-d
out=$(halt repo-d b.jsonl --unauthenticated)
! halted repo-d && pass "C. --unauthenticated: 150 invented commits keep the bad release going ($out)" || fail "C. B: $out"

# ---- D: an inventory of the first 50 devices
seq 0 49 | sed 's/^/device-/' >inventory
"$gen" fleet --reports b.jsonl --inventory inventory --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = d["channels"][0]["releases"][0]
assert d["devices"] == 50 and r["rolled_back"] == 10 and d["uninventoried"] == 100 and d["unauthenticated"] == 150, d
' && pass "D. --inventory: only the 50 known identities count" || fail "D. inventory"

echo "fleet_forgery: $fails failed"
[ "$fails" -eq 0 ]
