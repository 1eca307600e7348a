#!/usr/bin/env bash
# The page of `eqota-gen fleet --html` in a real browser: Debian's Chromium,
# headless, takes a screenshot of the page made from a simulated fleet's
# reports (300 devices taking a release over two days, 12 of them rolling
# back). The screenshot must show the chart: the installed, committed and
# rolled-back lines in their colours, a rising line (the installs at the
# chart's right end stand higher than at its left), and the page must have
# loaded nothing (it has no script, font or image from elsewhere; Chromium
# logs a load its Content-Security-Policy blocked, which was checked by hand
# with an <img> and a <script> from elsewhere added to the page).
# Usage: fleet_html.sh EQOTA_GEN SOURCE_DIR
set -Eeuo pipefail
gen=$1 src=$2
. "$src/tests/integration/lib/check.sh"
browser=
for b in chromium chromium-browser; do command -v "$b" >/dev/null && browser=$(command -v "$b") && break; done
if [ -z "$browser" ] && [ "$(id -u)" -eq 0 ]; then
  . "$src/scripts/apt-wait.sh"
  eq_apt_get install -y -q --no-install-recommends chromium >&2 || true
  command -v chromium >/dev/null && browser=$(command -v chromium)
fi
if [ -z "$browser" ]; then
  echo "SKIP: no Chromium to render the page (scripts/setup.sh installs Debian's chromium)"
  exit 77
fi
w=$(mktemp -d /tmp/eq-fleet-html.XXXXXX)
trap 'rm -rf "$w"' EXIT
cd "$w"

python3 - "$w/reports.jsonl" <<'PY'
import hashlib, json, random, sys
rnd = random.Random(7)
t0 = 1796515200
with open(sys.argv[1], "w") as f:
    def put(t, dev, ev, to, why=None, b=0):
        f.write(json.dumps({"schema": "eqota-report/1", "time": t, "device": dev, "board": "qemuarm64",
                            "channel": "stable", "event": ev, "from": {"release": "2026.11.1", "number": 4},
                            "to": {"release": "2026.12.1", "number": 5}, "reason": why, "bytes": b,
                            "seconds": 3.5, "agent": "0.1.0", "auth": "device-" + dev}) + "\n")
    for i in range(300):
        dev = hashlib.sha256(b"device-%d" % i).hexdigest()[:32]
        t = t0 + int(rnd.random() ** 2 * 172800)   # more devices late: a ramp
        put(t, dev, "installed", 5, b=rnd.randint(200000, 900000))
        if i % 25 == 3:
            put(t + 300, dev, "rolled_back", 5, "health check failed: /usr/bin/app-check exited 1")
        else:
            put(t + 240, dev, "committed", 5)
PY
"$gen" fleet --reports reports.jsonl --html --out fleet.html
grep -q "<polyline" fleet.html && pass "the page has a chart" || fail "no chart in the page"

# --no-sandbox: the test may run as root; the page is our own, with a CSP
# that allows nothing but its inline styles.
rc=0
timeout 120 "$browser" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
  --disable-extensions --enable-logging=stderr --v=0 --window-size=900,1100 --screenshot="$w/shot.png" "file://$w/fleet.html" \
  >"$w/browser.log" 2>&1 || rc=$?
if [ $rc -ne 0 ] || [ ! -s "$w/shot.png" ]; then
  fail "Chromium took no screenshot (exit $rc)"
  tail -20 "$w/browser.log"
  exit 1
fi
pass "Chromium rendered the page"
# With --enable-logging the console's messages reach the log: a load the
# page's Content-Security-Policy blocked says "violates", one that failed
# "net::ERR".
if grep -iE "violates the following Content Security Policy|Refused to|net::ERR" "$w/browser.log"; then
  fail "the page asked for something from elsewhere"
else
  pass "the page loaded nothing from elsewhere"
fi

# Reads the PNG (8-bit RGB or RGBA, not interlaced: what Chromium writes)
# with zlib alone and checks the chart's colours and shape.
out=$(python3 - "$w/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    n, typ = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if typ == b"IHDR":
        width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
    elif typ == b"IDAT":
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = width * bpp
rows, prev, i = [], bytearray(stride), 0
for y in range(height):
    ft = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if ft == 1: line[x] = (line[x] + a) & 255
        elif ft == 2: line[x] = (line[x] + b) & 255
        elif ft == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif ft == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line); prev = line
def near(px, col, tol=40):
    return all(abs(px[k] - col[k]) <= tol for k in range(3))
cols = {"installed": (0x1f, 0x6f, 0xeb), "committed": (0x1a, 0x7f, 0x37), "rolledback": (0xcf, 0x22, 0x2e)}
count = {k: 0 for k in cols}
where = {k: [] for k in cols}
dark = 0
for y, line in enumerate(rows):
    for x in range(width):
        px = line[x * bpp:x * bpp + 3]
        if sum(px) < 600:
            dark += 1
        for k, c in cols.items():
            if near(px, c):
                count[k] += 1
                where[k].append((x, y))
print("pixels: " + ", ".join("%s %d" % (k, v) for k, v in count.items()) + ", not white %d" % dark)
ok = all(v >= 150 for v in count.values()) and dark > 5000
# A rising line: within the longest run of columns the installed colour
# spans (the chart's line, not the legend's key), the right end lies higher
# (smaller y) than the left end.
cols_x = sorted({x for x, _ in where["installed"]})
best, start = (0, -1, -1), None
for k, x in enumerate(cols_x):
    if k == 0 or x - cols_x[k - 1] > 3:
        start = x
    if x - start > best[0]:
        best = (x - start, start, x)
width_run, x0, x1 = best
if width_run > 200:
    left = [y for x, y in where["installed"] if x0 <= x <= x0 + 5]
    right = [y for x, y in where["installed"] if x1 - 5 <= x <= x1]
    print("installed line: %d px wide, left end at y %d, right end at y %d" % (width_run, max(left), min(right)))
    ok = ok and min(right) < max(left) - 50
else:
    ok = False
print("ok" if ok else "bad")
PY
)
echo "$out"
tail -1 <<<"$out" | grep -qx ok && pass "the screenshot shows the three lines, the installs rising" ||
  fail "the screenshot does not show the chart"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "the fleet page renders in Chromium"
