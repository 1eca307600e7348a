#!/usr/bin/env bash
# The agent over HTTPS: lighttpd with TLS on loopback and a test CA made
# here. With the CA configured (ca-file) a device provisions and checks;
# without it the certificate is refused with a clear error; a certificate for
# another name is refused as well. Reports go to a collector that wants a
# client certificate: with [report] client-cert and client-key they arrive,
# without them they stay queued and the update still succeeds.
# Usage: agent_https.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 simboot=$3 src=$4
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
w=$(mktemp -d /tmp/eq-https.XXXXXX)
trap 'httpd_stop; rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"

# A throw-away test CA and server certificates (never used outside this test).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=eqota test CA" \
  -keyout ca.key -out ca.pem 2>/dev/null
cert() { # NAME SAN
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" -keyout "$1.key" -out "$1.csr" 2>/dev/null
  printf 'subjectAltName=%s\n' "$2" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
cert good IP:127.0.0.1
cert other DNS:update.example.org

# A tiny release.
mkdir -p pkgs/root/DEBIAN pkgs/root/usr/share/hello
printf 'Package: hello\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: t\n' > pkgs/root/DEBIAN/control
echo hello > pkgs/root/usr/share/hello/greeting
mkdir -p debs && dpkg-deb --root-owner-group -b pkgs/root debs/hello_1.0_all.deb >/dev/null
"$gen" keygen --out rel >/dev/null
"$gen" -q publish --repo repo --board qemux86-64 --channel stable --key rel.key --store s.db --level 3 --release r1 --packages debs >/dev/null

tls() { # CERTNAME
  httpd_stop
  HTTPD_EXTRA_CONF="server.modules += ( \"mod_openssl\" )
ssl.engine = \"enable\"
ssl.pemfile = \"$w/$1.pem\"
ssl.privkey = \"$w/$1.key\"" httpd_start "$w/repo" "$w/logs"
}
device() { # DIR [CAFILE]
  simdevice_make "$1" "https://127.0.0.1:$HTTPD_PORT" qemux86-64 "$w/rel.pub" repository.retries=0 \
    "repository.ca-file=${2:-}"
}

tls good
device "$w/d1" "$w/ca.pem"
if "$eqota" --config "$w/d1/eqota.conf" provision --slot A >out.txt 2>&1; then pass "provision over HTTPS with the configured CA";
else fail "provision over HTTPS: $(cat out.txt)"; fi
"$simboot" --env "$w/d1/bootenv" --cmdline "$w/d1/cmdline" >/dev/null
"$eqota" --config "$w/d1/eqota.conf" check >out.txt 2>&1 && grep -q "up to date" out.txt && pass "check over HTTPS" ||
  fail "check over HTTPS: $(cat out.txt)"

device "$w/d2"
if "$eqota" --config "$w/d2/eqota.conf" provision --slot A >out.txt 2>&1; then fail "an unknown CA was accepted";
elif grep -qi "certificate" out.txt; then pass "without the CA the server certificate is refused: $(grep -io 'ssl[^:]*certificate[^,]*' out.txt | head -n1)";
else fail "unexpected error: $(cat out.txt)"; fi

tls other
device "$w/d3" "$w/ca.pem"
if "$eqota" --config "$w/d3/eqota.conf" provision --slot A >out.txt 2>&1; then fail "a certificate for another name was accepted";
elif grep -qiE "certificate|subject|name" out.txt; then pass "a certificate for another host name is refused";
else fail "unexpected error: $(cat out.txt)"; fi

# ---- reports over TLS with a client certificate ([report] client-cert)
cert device DNS:device-1.example.org
printf 'hello 2\n' > pkgs/root/usr/share/hello/greeting
sed -i 's/^Version: 1.0/Version: 2.0/' pkgs/root/DEBIAN/control
dpkg-deb --root-owner-group -b pkgs/root debs/hello_2.0_all.deb >/dev/null
rm debs/hello_1.0_all.deb
httpd_stop
mkdir -p "$w/www"
# The collector alone behind TLS that requires a device certificate of the
# test CA; the devices read the repository from files.
HTTPD_EXTRA_CONF="server.modules += ( \"mod_openssl\" )
ssl.engine = \"enable\"
ssl.pemfile = \"$w/good.pem\"
ssl.privkey = \"$w/good.key\"
ssl.ca-file = \"$w/ca.pem\"
ssl.verifyclient.activate = \"enable\"
ssl.verifyclient.enforce = \"enable\"
$(httpd_collector_conf /report "$w/reports.jsonl" "$(dirname "$gen")/eqota-report.cgi")" httpd_start "$w/www" "$w/logs"
reporting() { # DIR [CERTNAME]
  simdevice_make "$1" "file://$w/repo" qemux86-64 "$w/rel.pub" "report.url=https://127.0.0.1:$HTTPD_PORT/report" \
    "report.ca-file=$w/ca.pem" "report.client-cert=${2:+$w/$2.pem}" "report.client-key=${2:+$w/$2.key}"
  "$eqota" --config "$1/eqota.conf" provision --slot A --release r1 >/dev/null 2>&1
  "$simboot" --env "$1/bootenv" --cmdline "$1/cmdline" >/dev/null
}
"$gen" -q publish --repo repo --board qemux86-64 --channel stable --key rel.key --store s.db --level 3 --release r2 --packages debs >/dev/null
reporting "$w/d4" device
rc=0; "$eqota" --config "$w/d4/eqota.conf" update >out.txt 2>&1 || rc=$?
[ $rc -eq 3 ] && [ "$(wc -l < "$w/reports.jsonl" 2>/dev/null || echo 0)" -eq 1 ] && [ -z "$(ls "$w/d4/data/reports")" ] &&
  pass "a report over TLS with the device's client certificate arrived" || fail "client certificate: exit $rc, $(cat out.txt)"
python3 -c 'import json, sys; r = json.loads(open(sys.argv[1]).readline()); assert r["auth"] == "device", r' \
  "$w/reports.jsonl" && pass "the collector stored the certificate's CN as the report's identity (\"auth\")" ||
  fail "no auth: $(cat "$w/reports.jsonl")"
reporting "$w/d5"
rc=0; "$eqota" --config "$w/d5/eqota.conf" -v update >out.txt 2>&1 || rc=$?
[ $rc -eq 3 ] && [ "$(wc -l < "$w/reports.jsonl")" -eq 1 ] && [ "$(ls "$w/d5/data/reports" | wc -l)" -eq 1 ] &&
  pass "without a client certificate the collector refuses the report; it stays queued, the update installed" ||
  fail "no client certificate: exit $rc, $(ls "$w/d5/data/reports"), $(cat out.txt)"

echo "agent_https: $fails failed"
[ "$fails" -eq 0 ]
