#!/usr/bin/env bash
# The no-download guarantee when the publisher's equivalence store is lost.
# Release 1 is published and installed on a simulated device; the store is
# deleted; release 2 is a rebuild with new taskhashes and identical payloads
# (other archive bytes: .tar.gz instead of .tar; other zstd level, so other
# object files), published into a fresh store, so every unihash changes. The device must still download nothing:
# the plan keeps a package whose payload hash equals the running one
# (agent/plan.c), builds slot B from slot A, boots it and commits release 2.
# Usage: agent_store_loss.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 simboot=$3 src=$4
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to build the test packages"; exit 77; }
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
. "$src/tests/integration/lib/tarpkg.sh"
w=$(mktemp -d /tmp/eq-storeloss.XXXXXX)
cleanup() { httpd_stop || true; rm -rf "$w"; }
trap cleanup EXIT
trap 'echo "agent_store_loss.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
hex() { printf '%s' "$1" | sha256sum | cut -c1-64; }

"$gen" keygen --out rel >/dev/null
# Three packages with some bulk, so that a download could not hide in a
# rounding error (objects of a few KiB each).
big() { python3 -c 'import hashlib,sys; print("".join(hashlib.sha256(f"{sys.argv[1]}{i}".encode()).hexdigest() for i in range(200)))' "$1"; }
mkdir -p p1
tarpkg p1/base_1.tar usr/share/base/data "$(big base)"
tarpkg p1/tool_1.tar usr/bin/tool "$(big tool)"
tarpkg p1/data_1.tar usr/share/data/data "$(big data)"
# The rebuild: same files, other archive (gzip), so only the payload can tell.
mkdir -p p2
for f in p1/*.tar; do gzip -9 -c "$f" > "p2/$(basename "$f").gz"; done
index() { for p in base tool data; do echo "$p $(hex "$2-$p")"; done > "$1"; }
index i1 build1
index i2 build2
P=(--board tb --channel stable --key rel.key)
"$gen" -q publish --repo repo "${P[@]}" --level 3 --store A.db --release r1 --packages p1 --build-index i1 >/dev/null

mkdir -p logs
httpd_start "$w/repo" "$w/logs"
boot() { cat /proc/sys/kernel/random/uuid > "$1/boot_id"; "$simboot" --env "$1/bootenv" --cmdline "$1/cmdline"; }
eq() { local d=$1; shift; EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" "$@"; }
log_reset() { httpd_log_flush; : > "$HTTPD_ACCESS_LOG"; }
# requests and bytes for objects and deltas in the access log
fetched() { httpd_log_flush; awk '$2 ~ /^\/(objects|deltas)\// { n++; s += $4 } END { print n + 0, s + 0 }' "$HTTPD_ACCESS_LOG"; }

dev=$w/dev
simdevice_make "$dev" "$HTTPD_URL" tb "$w/rel.pub" repository.retries=0 health.check=/bin/true
run "provision" 0 eq "$dev" provision --slot A && pass "provision slot A with release 1"
[ "$(boot "$dev")" = A ] || fail "the device does not boot A"
# the log measures what it should: provisioning fetched every object
read -r nreq nbytes < <(fetched)
[ "$nreq" -eq 3 ] && [ "$nbytes" -gt $((3 * 4096)) ] && pass "provision fetched 3 objects ($nbytes bytes, access log)" ||
  fail "provision fetched $nreq objects, $nbytes bytes"

# ---- the store is lost; the rebuild goes into a fresh one
rm -f A.db A.db-wal A.db-shm
# Another zstd level: new object files, so nothing the device fetched (or
# cached) for release 1 can stand in for a download release 2 would need.
"$gen" -q publish --repo repo "${P[@]}" --level 5 --store B.db --release r2 --packages p2 --build-index i2 >/dev/null
if python3 - repo/boards/tb/stable/releases/1/manifest.json repo/boards/tb/stable/releases/2/manifest.json <<'PY'
import json, sys
a, b = ({p["name"]: p for p in json.load(open(f))["packages"]} for f in sys.argv[1:])
assert a.keys() == b.keys() and len(a) == 3, (a.keys(), b.keys())
for n in a:
    assert a[n]["unihash"] != b[n]["unihash"], n            # every unihash changed
    assert a[n]["payload"] == b[n]["payload"], n            # every payload is the same
    assert a[n]["object"]["sha256"] != b[n]["object"]["sha256"], n  # every object is new
PY
then pass "release 2: every unihash and object changed, every payload identical"; else fail "release 2 is not the rebuild this test needs"; fi

# ---- check: a plan that keeps every package and downloads nothing
run "check" 0 eq "$dev" check --json
python3 - "$out" <<'PY' && pass "check --json: release 2 offered, 3 keep, download_bytes 0" || fail "check --json: $out"
import json, sys
c = json.loads(sys.argv[1])
assert c["available"]["number"] == 2 and not c["up_to_date"], c
assert sorted(p["action"] for p in c["plan"]) == ["keep"] * 3, c["plan"]
assert c["download_bytes"] == 0 and all(p["bytes"] == 0 for p in c["plan"]), c
assert c["full_bytes"] > 3 * 4096, c   # what a unihash-only comparison would fetch
PY

# ---- update: nothing fetched, but release 2 is installed, booted and committed
log_reset
run "update" 3 eq "$dev" update && pass "update installs release 2 into slot B (exit 3: reboot needed)"
read -r nreq nbytes < <(fetched)
[ "$nreq" -eq 0 ] && [ "$nbytes" -eq 0 ] && pass "no object or delta requested (access log: $nreq requests, $nbytes bytes)" ||
  fail "fetched $nreq objects/deltas, $nbytes bytes: $(cat "$HTTPD_ACCESS_LOG")"
diff -r --no-dereference -x eqota "$dev/A" "$dev/B" >/dev/null && pass "slot B holds the same files as slot A" ||
  fail "slot B differs from slot A"
[ "$(boot "$dev")" = B ] && pass "the bootloader tries B" || fail "the bootloader did not try B"
run "mark-good" 0 eq "$dev" mark-good && pass "health check passes and B is committed"
run "status" 0 eq "$dev" status --json
python3 -c 'import json,sys; s=json.loads(sys.argv[1]); assert s["booted"]=="B" and s["slots"]["B"]["number"]==2 and s["slots"]["B"]["release"]=="r2", s' "$out" &&
  pass "status --json: booted B, release 'r2' (number 2)" || fail "status: $out"
log_reset
run "update when up to date" 0 eq "$dev" update && read -r nreq nbytes < <(fetched) && [ "$nreq" -eq 0 ] &&
  pass "afterwards up to date, still nothing fetched" || fail "up to date: $out"

echo "agent_store_loss: $fails failed"
[ "$fails" -eq 0 ]
