#!/usr/bin/env bash
# The image components' part of the download in the fleet summary
# (docs/fleet.md): reports POSTed to the real collector (eqota-report.cgi
# behind lighttpd on 127.0.0.1), some with the optional "component_bytes"
# (image releases), some without it (older agents, a release of packages
# alone). Checked: the collector stores the field and refuses (400) a
# report whose component_bytes is more than its bytes or not a number;
# `eqota-gen fleet` sums it per release next to the bytes downloaded, in
# text, --json and --html, exactly, and reads the reports without it as 0.
# Usage: fleet_components.sh EQOTA_GEN COLLECTOR_CGI SOURCE_DIR
set -Eeuo pipefail
gen=$1 cgi=$2 src=$3
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
. "$src/tests/integration/lib/httpd.sh"
w=$(mktemp -d /tmp/eq-fleetcomp.XXXXXX)
trap 'httpd_stop; rm -rf "$w"' EXIT
trap 'echo "fleet_components.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"

mkdir -p www logs
HTTPD_EXTRA_CONF="$(httpd_collector_conf /report "$w/reports.jsonl" "$cgi")" httpd_start "$w/www" "$w/logs"

# post DEV EVENT TO BYTES [COMPONENT_BYTES]: one report (the last argument
# is the field's JSON value, absent when not given); prints the HTTP status.
post() {
  python3 - "$@" <<'PY' | curl -s -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' \
    --data-binary @- "$HTTPD_URL/report"
import json, sys
dev, event, to, nbytes = sys.argv[1:5]
r = {"schema": "eqota-report/1", "time": 1796515200 + int(dev), "device": "%032x" % int(dev), "board": "tb",
     "channel": "stable", "event": event, "from": None, "to": {"release": "r" + to, "number": int(to)},
     "reason": "no space" if event == "failed" else None, "bytes": int(nbytes)}
if len(sys.argv) > 5:
    r["component_bytes"] = json.loads(sys.argv[5])
r.update({"seconds": 1.0, "agent": "0.1.0"})
print(json.dumps(r))
PY
}
st=$( {
  post 1 installed 2 3000 2000
  post 1 committed 2 0
  post 2 failed 2 400 100
  post 2 installed 2 600 600
  post 3 installed 2 1000      # an agent from before component_bytes
  post 4 installed 1 500       # release 1: packages alone
} | sort | uniq -c | awk '{printf "%s x %s;", $1, $2}')
[ "$st" = "6 x 204;" ] && pass "the collector took 6 reports, 3 with component_bytes" || fail "posting: $st"
[ "$(grep -c '"component_bytes":' reports.jsonl)" = 3 ] && pass "the collector stored component_bytes as sent" ||
  fail "stored: $(cat reports.jsonl)"
st=$( { post 5 installed 2 1 5; post 6 installed 2 10 '"5"'; post 7 installed 2 10 -1; } | tr '\n' ' ')
[ "$st" = "400 400 400 " ] && [ "$(wc -l < reports.jsonl)" -eq 6 ] &&
  pass "component_bytes more than bytes, a string, negative: refused (400), not stored" || fail "bad reports: $st"
cp reports.jsonl all.jsonl
# The collector refuses them; a file written another way may still hold one.
printf '%s\n' '{"schema":"eqota-report/1","time":1796515300,"device":"'"$(printf '%032x' 8)"'","board":"tb","channel":"stable","event":"installed","from":null,"to":{"release":"r2","number":2},"reason":null,"bytes":1,"component_bytes":5,"seconds":1.0,"agent":"0.1.0"}' >> all.jsonl

# ---- the summary
# (stdout alone: the warning about the bad line goes to stderr)
if out=$("$gen" fleet --unauthenticated --reports all.jsonl --json 2>/dev/null); then
  python3 -c '
import json, sys
d = json.loads(sys.argv[1])
rel = {r["number"]: r for r in d["channels"][0]["releases"]}
assert d["bad"] == 1 and "component_bytes: more than bytes" in d["errors"][0], d
# release 2: devices 1 (3000, of it 2000), 2 (400 + 600, of it 100 + 600) and 3 (1000, nothing said)
assert (rel[2]["bytes_total"], rel[2]["component_bytes_total"]) == (5000, 2700), rel[2]
assert (rel[1]["bytes_total"], rel[1]["component_bytes_total"]) == (500, 0), rel[1]' "$out" &&
    pass "fleet --json: component_bytes_total 2700 of 5000 for release 2, 0 for release 1 (reports without the field)" ||
    fail "fleet --json: $out"
else
  fail "fleet --json: exit status $?"
fi
if run "fleet (text)" 0 "$gen" fleet --unauthenticated --reports all.jsonl; then
  grep -qE "^    downloaded: .* at most; image components 54\.0 % of it$" <<<"$out" &&
    [ "$(grep -c "^    downloaded:" <<<"$out")" = 2 ] && [ "$(grep -c "image components" <<<"$out")" = 1 ] &&
    pass "fleet text: release 2's download is 54.0 % image components; release 1's line says nothing of them" ||
    fail "fleet text: $out"
fi
if run "fleet --html" 0 "$gen" fleet --unauthenticated --reports all.jsonl --html --out fleet.html; then
  grep -qF "<th>image components</th>" fleet.html && grep -qF "<td>54.0 %</td></tr>" fleet.html &&
    pass "fleet --html: the image components' share in the release table" || fail "fleet --html"
fi
[ "$fails" -eq 0 ]
