#!/usr/bin/env bash
# eqota-gen promote end to end, with real Debian packages: a release
# published to testing is promoted to stable (the same packages, objects and
# unihashes; stable's own number, history and deltas) and a simulated device
# on stable updates to it through lighttpd, with deltas, fetching what
# `eqota-gen diff` predicts. Deltas a target channel needs and nobody made
# yet are made from the objects. Refused, with nothing written: an unknown
# release, a name the target channel has, one channel as source and target,
# a source whose signature does not hold, no public key to check it with.
# Usage: gen_promote.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 simboot=$3 src=$4
cache=${EQ_CACHE_DIR:-$src/.cache}/debs
[ -d "$cache/release2" ] || "$src/scripts/fetch-debs.sh" "$cache" >/dev/null
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
w=$(mktemp -d /tmp/eq-promote.XXXXXX)
cleanup() { httpd_stop || true; rm -rf "$w"; }
trap cleanup EXIT
trap 'echo "gen_promote.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$w"
export XDG_CACHE_HOME=$w/cache
. "$src/tests/integration/lib/check.sh"
run() { # NAME WANT_RC CMD...: output in $out
  local name=$1 want=$2 rc=0; shift 2
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" -eq "$want" ]; then return 0; fi
  fail "$name: exit $rc, expected $want"; echo "$out" | tail -20; return 1
}

"$gen" keygen --out rel >/dev/null
B=qemux86-64
pub() { # CHANNEL RELEASE SET
  "$gen" -q publish --repo repo --board $B --channel "$1" --release "$2" --key rel.key --store store.db --level 9 \
    --packages "$cache/$3" --build-index "$cache/$3.index" >/dev/null
}
promote() { "$gen" promote --repo repo --board $B --key rel.key --level 9 "$@"; }
pub stable r1 release1
pub testing r1 release1
pub testing r2 release2

# ---- a device on stable's release 1
mkdir -p logs
httpd_start "$w/repo" "$w/logs"
dev=$w/dev
simdevice_make "$dev" "http://127.0.0.1:$HTTPD_PORT" $B "$w/rel.pub" repository.retries=1
eq() { EQ_TEST_BOOT_ID_FILE=$dev/boot_id "$eqota" --config "$dev/eqota.conf" "$@"; }
boot() { cat /proc/sys/kernel/random/uuid > "$dev/boot_id"; "$simboot" --env "$dev/bootenv" --cmdline "$dev/cmdline"; }
run "provision" 0 eq provision --slot A
boot >/dev/null

# ---- promote testing's r2 to stable
objects_before=$(find repo/objects -type f | wc -l)
run "promote r2" 0 promote --from-channel testing --release r2 --to-channel stable &&
  grep -qE "^promoted $B/testing release 'r2' to stable as number 2: [0-9]+ packages, 0 new deltas" <<<"$out" &&
  pass "promote: stable's release 2, no delta to make (testing made them from the same payloads)" ||
  fail "promote said: $out"
[ "$(find repo/objects -type f | wc -l)" = "$objects_before" ] && pass "promote wrote no object" ||
  fail "objects changed: $objects_before -> $(find repo/objects -type f | wc -l)"
if python3 - repo/boards/$B/testing/releases/2/manifest.json repo/boards/$B/stable/releases/2/manifest.json <<'PY'
import json, sys
t, s = (json.load(open(p)) for p in sys.argv[1:])
assert s["channel"] == "stable" and s["number"] == 2 and s["release"] == "r2", (s["channel"], s["number"], s["release"])
key = lambda p: {k: p[k] for k in ("name", "version", "arch", "taskhash", "unihash", "payload", "object")}
assert [key(p) for p in t["packages"]] == [key(p) for p in s["packages"]], "packages differ"
assert sum(len(p.get("deltas", [])) for p in s["packages"]) > 0, "no deltas offered"
PY
then pass "stable's release 2 has testing's packages, objects and unihashes, and offers deltas"
else fail "stable's release 2 is not testing's"; fi
run "verify --deep" 0 "$gen" verify --repo repo --board $B --channel stable --key rel.pub --deep &&
  pass "the promoted release verifies, every object and delta present and hash-checked"

# ---- the device takes it, with deltas, as diff predicts
expect=$("$gen" diff --repo repo --board $B --channel stable --from r1 --to r2 --json |
  python3 -c 'import json,sys; t=json.load(sys.stdin)["totals"]; print(t["download_bytes"], t["full_bytes"])')
read -r expect_dl full <<<"$expect"
httpd_log_flush; : > "$HTTPD_ACCESS_LOG"
run "update" 3 eq update && pass "the device on stable installs the promoted release (exit 3)"
httpd_log_flush
got=$(awk '$2 ~ /^\/(objects|deltas)\// && ($3 == 200 || $3 == 206) { s += $4 } END { print s + 0 }' "$HTTPD_ACCESS_LOG")
deltas=$(awk '$2 ~ /^\/deltas\// && $3 == 200' "$HTTPD_ACCESS_LOG" | wc -l)
[ "$got" = "$expect_dl" ] && [ "$deltas" -gt 0 ] && [ "$got" -lt "$full" ] &&
  pass "fetched $got bytes with $deltas deltas, as predicted (the full release is $full)" ||
  fail "fetched $got bytes ($deltas deltas), predicted $expect_dl, full $full"
[ "$(boot)" = B ] && run "mark-good" 0 eq mark-good && pass "the device boots the promoted release and commits it"

# ---- a channel whose payloads no delta starts from: deltas are made
pub edge e2 release2
run "promote r1 to edge" 0 promote --from-channel testing --release r1 --to-channel edge &&
  n=$(sed -nE "s/.* ([0-9]+) new deltas.*/\1/p" <<<"$out") && [ "${n:-0}" -gt 0 ] &&
  pass "promote to a channel on other payloads makes its $n deltas from the objects" || fail "promote to edge: $out"
run "verify edge" 0 "$gen" verify --repo repo --board $B --channel edge --key rel.pub --deep &&
  pass "edge's promoted release verifies with its new deltas"

# ---- refusals, each leaving the target channel as it was
snap() { find repo/boards/$B -type f -exec sha256sum {} + | sort; }
before=$(snap)
run "unknown release" 1 promote --from-channel testing --release r9 --to-channel stable &&
  grep -q "no release 'r9' in $B/testing" <<<"$out" && pass "an unknown release is refused by name" || fail "r9: $out"
run "name taken" 1 promote --from-channel testing --release r2 --to-channel stable &&
  grep -q "release 'r2' is already published for $B/stable as number 2" <<<"$out" &&
  pass "a name the target channel has is refused" || fail "r2 again: $out"
run "same channel" 1 promote --from-channel testing --release r2 --to-channel testing &&
  grep -q "both the source and the target channel" <<<"$out" && pass "one channel as source and target is refused" ||
  fail "same channel: $out"
m=repo/boards/$B/testing/releases/2/manifest.json
cp "$m" m.orig
sed -i '0,/"version": "/s//"version": "9/' "$m"
run "tampered source" 1 promote --from-channel testing --release r2 --to-channel lts &&
  grep -q "release 'r2' of $B/testing is not promoted" <<<"$out" && grep -q "does not verify" <<<"$out" &&
  [ ! -e repo/boards/$B/lts/manifest.json ] &&
  pass "a source manifest whose signature does not hold is not signed anew" || fail "tampered: $out"
cp m.orig "$m"
cp rel.key lone.key
run "no public key" 1 "$gen" promote --repo repo --board $B --key lone.key --from-channel testing --release r2 \
  --to-channel lts && grep -q "public keys beside the signing keys" <<<"$out" &&
  pass "without a root, a signing key with no .pub beside it cannot check the source" || fail "lone.key: $out"
[ "$(snap)" = "$before" ] && pass "the refusals wrote nothing" || fail "a refusal changed the repository"
run "usage" 2 "$gen" promote --repo repo --board $B --key rel.key --release r2 --to-channel lts &&
  grep -q "missing --from-channel" <<<"$out" && pass "a missing option is a usage error" || fail "usage: $out"

# ---- root mode: the source is checked against the root's release role,
# and the promoted release gets its timestamp
for k in R K T; do "$gen" keygen --out "$k" >/dev/null; done
"$gen" root init --repo rrepo --key R.key --root-pub R.pub --release-pub K.pub --timestamp-pub T.pub >/dev/null
cp rrepo/root/1.root.json pinned.root.json # the publisher's pin, outside the repository
tiny=("$cache/release1"/*.deb)
mkdir -p tiny && ln -sf "${tiny[@]:0:4}" tiny/
"$gen" -q publish --repo rrepo --board $B --channel testing --release t1 --key K.key --timestamp-key T.key \
  --store rstore.db --level 3 --packages tiny --trusted-root pinned.root.json >/dev/null
run "promote (root)" 0 "$gen" promote --repo rrepo --board $B --key K.key --timestamp-key T.key \
  --trusted-root pinned.root.json --from-channel testing --release t1 --to-channel stable &&
  run "verify (root)" 0 "$gen" verify --repo rrepo --board $B --channel stable --root rrepo/root/1.root.json --deep &&
  pass "root mode: the promoted release and its timestamp verify as a device with the root checks them" ||
  fail "root mode: $out"
run "promote signed outside the role" 1 "$gen" promote --repo rrepo --board $B --key rel.key \
  --trusted-root pinned.root.json --from-channel testing --release t1 --to-channel beta &&
  grep -q "none of the keys given (--key) is in the release role" <<<"$out" && [ ! -e rrepo/boards/$B/beta/manifest.json ] &&
  pass "root mode: keys outside the release role cannot promote" || fail "outside the role: $out"
sed -i '0,/"version": "/s//"version": "9/' rrepo/boards/$B/testing/releases/1/manifest.json
run "tampered source (root)" 1 "$gen" promote --repo rrepo --board $B --key K.key \
  --trusted-root pinned.root.json --from-channel testing --release t1 --to-channel beta &&
  grep -q "does not verify" <<<"$out" && pass "root mode: a tampered source is refused against the release role" ||
  fail "tampered (root): $out"

echo "$fails failed"
[ "$fails" -eq 0 ]
