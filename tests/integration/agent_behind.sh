#!/usr/bin/env bash
# Devices that skipped releases: a simulated device three releases behind
# updates through lighttpd straight to the newest release, with deltas from
# the payloads it runs (publish offers them from the last --deltas-from
# distinct versions), fetching exactly what `eqota-gen diff --from` its
# release predicts; the same after `eqota-gen prune --keep 2` removed its
# release from the repository; and with full objects where the publisher
# kept no delta that far back (--deltas-from 1).
# Usage: agent_behind.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 simboot=$3 src=$4
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
. "$src/tests/integration/lib/check.sh"
. "$src/tests/integration/lib/tarpkg.sh"
w=$(mktemp -d /tmp/eq-behind.XXXXXX)
cleanup() { httpd_stop || true; rm -rf "$w"; }
trap cleanup EXIT
trap 'echo "agent_behind.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$w"
export XDG_CACHE_HOME=$w/cache

# Release v: p0_v and p1_v of tarpkg_pair (each version changes a byte in
# every 997), and base_1, the same bytes in every release (never fetched).
tarpkg base_1.tar usr/share/base/data "base 1"
for v in 1 2 3 4; do tarpkg_pair "s$v" "$v"; cp base_1.tar "s$v/"; done
"$gen" keygen --out k >/dev/null
pub() { # REPO RELEASE SET [OPTIONS...]
  local repo=$1 rel=$2 set=$3
  shift 3
  "$gen" -q publish --repo "$repo" --board b --channel stable --key k.key --store "$repo.db" --level 3 \
    --release "$rel" --packages "$set" "$@" >/dev/null
}
mkdir -p logs
httpd_start "$w" "$w/logs"

# device DIR REPO: a device on REPO's release 1
device() {
  set -- "$w/$1" "$2"
  simdevice_make "$1" "http://127.0.0.1:$HTTPD_PORT/$2" b "$w/k.pub" repository.retries=0
  EQ_TEST_BOOT_ID_FILE=$1/boot_id "$eqota" --config "$1/eqota.conf" provision --slot A --release 1 >/dev/null
  cat /proc/sys/kernel/random/uuid >"$1/boot_id"
  "$simboot" --env "$1/bootenv" --cmdline "$1/cmdline" >/dev/null
}
# update_from DIR REPO WHAT: updates the device to the newest release and
# checks the bytes fetched against diff's prediction; prints the number of
# deltas fetched
update_from() {
  local dev=$w/$1 repo=$2 what=$3 want got rc=0
  want=$("$gen" diff --repo "$repo" --board b --channel stable --from 1 --to r4 --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["download_bytes"])')
  httpd_log_flush
  : >"$HTTPD_ACCESS_LOG"
  EQ_TEST_BOOT_ID_FILE=$dev/boot_id "$eqota" --config "$dev/eqota.conf" update >"$dev/out" 2>&1 || rc=$?
  httpd_log_flush
  got=$(awk '$2 ~ /\/(objects|deltas)\// && ($3 == 200 || $3 == 206) { s += $4 } END { print s + 0 }' "$HTTPD_ACCESS_LOG")
  deltas=$(awk '$2 ~ /\/deltas\// && $3 == 200' "$HTTPD_ACCESS_LOG" | wc -l)
  objects=$(awk '$2 ~ /\/objects\// && $3 == 200' "$HTTPD_ACCESS_LOG" | wc -l)
  if [ "$rc" -eq 3 ] && [ "$got" = "$want" ]; then
    pass "$what: the update to release 4 fetched $got bytes ($deltas deltas, $objects objects), as diff --from 1 predicts"
  else
    fail "$what: exit $rc, fetched $got bytes, diff predicts $want"
    tail -5 "$dev/out"
  fi
}

# ---- deltas reach three releases back (--deltas-from 3, the default)
pub r3 r1 s1
device d1 r3
for v in 2 3 4; do pub r3 "r$v" "s$v"; done
update_from d1 r3 "three releases behind"
[ "$deltas" -eq 2 ] && [ "$objects" -eq 0 ] && pass "three releases behind: p0 and p1 came as deltas from the device's own payloads, base not at all" ||
  fail "three releases behind: $deltas deltas, $objects objects"

# ---- the same after the device's release was pruned from the repository
pub r3p r1 s1
device d2 r3p
for v in 2 3 4; do pub r3p "r$v" "s$v"; done
"$gen" prune --repo r3p --keep 2 --grace-hours 0 >/dev/null
[ ! -e r3p/boards/b/stable/releases/1 ] && pass "prune removed release 1, which the device still runs" ||
  fail "release 1 still there"
# diff needs release 1's manifest, which the prune removed: the twin
# repository r3 (the same inputs, so the same objects and deltas) predicts it
httpd_log_flush
: >"$HTTPD_ACCESS_LOG"
rc=0
EQ_TEST_BOOT_ID_FILE=$w/d2/boot_id "$eqota" --config "$w/d2/eqota.conf" update >d2/out 2>&1 || rc=$?
httpd_log_flush
got=$(awk '$2 ~ /\/(objects|deltas)\// && ($3 == 200 || $3 == 206) { s += $4 } END { print s + 0 }' "$HTTPD_ACCESS_LOG")
want=$("$gen" diff --repo r3 --board b --channel stable --from 1 --to r4 --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["download_bytes"])')
[ "$rc" -eq 3 ] && [ "$got" = "$want" ] &&
  pass "pruned release: the device still updates with the kept delta ($got bytes, as in the unpruned repository)" ||
  { fail "pruned release: exit $rc, fetched $got, want $want"; tail -5 d2/out; }

# ---- no delta kept that far back: full objects, as diff predicts
pub r1d r1 s1 --deltas-from 1
device d3 r1d
for v in 2 3 4; do pub r1d "r$v" "s$v" --deltas-from 1; done
update_from d3 r1d "--deltas-from 1"
[ "$deltas" -eq 0 ] && [ "$objects" -eq 2 ] && pass "--deltas-from 1: p0 and p1 came as their full objects, base not at all" ||
  fail "--deltas-from 1: $deltas deltas, $objects objects"
[ "$fails" -eq 0 ]
