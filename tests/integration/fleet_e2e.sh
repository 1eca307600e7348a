#!/usr/bin/env bash
# A fleet operator's day, end to end (docs/fleet.md), on simulated devices
# served by lighttpd, whose reports go to the CGI collector on the same
# server:
#   1. publish release 2 to testing; the lab device takes and commits it;
#   2. promote it to stable with a 10 % rollout: exactly the stable devices
#      the documented hash picks install it;
#   3. widen to 100 %: half of the rest poll and install; one fails its
#      health check and rolls back;
#   4. `rollout --auto-halt 0.02` over the collected reports halts the
#      release (1 of the devices that installed it rolled back, above 2 %);
#      the other half poll and install nothing;
#   5. more releases to testing, then `prune --keep 2`: old releases go,
#      and what stable's current release needs stays (verify --deep);
#   6. resume: the waiting devices install it from the pruned repository;
#   7. `eqota-gen fleet` over the collected reports tells exactly this
#      story, in text and JSON.
# Usage: fleet_e2e.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" fleet_e2e "$@"
B=qemuarm64
N=40

for k in root release ts; do "$gen" keygen --out "$k" >/dev/null; done
"$gen" root init --repo repo --key root.key --root-pub root.pub --release-pub release.pub --timestamp-pub ts.pub >/dev/null
cp repo/root/1.root.json pinned.root.json # the publisher's pin, outside the repository
publish() { # RELEASE: to testing, as CI does
  mkdir -p "p$1"
  tarpkg "p$1/base_1.tar" usr/share/base "base"
  tarpkg "p$1/app_$1.tar" usr/share/app "app $1"
  "$gen" -q publish --repo repo --board $B --channel testing --release "2026.12.$1" --packages "p$1" \
    --key release.key --timestamp-key ts.key --store repo.db --level 1 --trusted-root pinned.root.json >/dev/null
}
promote() { # RELEASE [OPTIONS]: testing to stable
  local r=$1; shift
  "$gen" -q promote --repo repo --board $B --from-channel testing --release "2026.12.$r" --to-channel stable \
    --key release.key --timestamp-key ts.key --trusted-root pinned.root.json "$@" >/dev/null
}
rollout() { "$gen" -q rollout --repo repo --board $B --channel stable --key ts.key --trusted-root pinned.root.json "$@"; }
publish 1
promote 1
reports=$w/reports.jsonl
HTTPD_EXTRA_CONF=$(httpd_collector_conf /eqota/report "$reports" "$(dirname "$gen")/eqota-report.cgi") httpd_start "$w/repo" "$w/logs"
printf '#!/bin/sh\ntest ! -e "$(dirname "$0")/bad"\n' >"$w/health"
chmod +x "$w/health"

# device NAME CHANNEL: a device on the channel's release 1, id "id-NAME",
# whose health check fails when its folder holds a file "bad"
device() {
  local d=$w/$1
  simdevice_make "$d" "$HTTPD_URL" $B "$w/repo/root/1.root.json" repository.retries=0 \
    "update.device-id-file=$d/machine-id" "report.url=$HTTPD_URL/eqota/report" "health.check=$d/health"
  sed -i "s/^channel = stable/channel = $2/" "$d/eqota.conf"
  echo "id-$1" >"$d/machine-id"
  cp "$w/health" "$d/health"
  simdevice_eq "$d" "$eqota" provision --slot A --release 1 >/dev/null 2>&1
  simdevice_boot "$d" "$simboot"
}
# poll NAME: what the daemon does at a poll and after the reboot; prints
# "installed" or "nothing"
poll() {
  local d=$w/$1 rc=0
  simdevice_eq "$d" "$eqota" update >/dev/null 2>&1 || rc=$?
  if [ $rc -eq 3 ]; then
    simdevice_boot "$d" "$simboot"
    simdevice_eq "$d" "$eqota" mark-good >/dev/null 2>&1 || true
    [ -e "$d/bad" ] && simdevice_boot "$d" "$simboot" # back into the old slot
    echo installed
  elif [ $rc -eq 0 ]; then
    echo nothing
  else
    echo "error $rc"
  fi
}
running() { simdevice_running "$w/$1" "$eqota"; }
# selected NAME NUMBER PERCENT: the rule of docs/fleet.md, independently
selected() {
  python3 - "id-$1" "$2" "$3" <<'PY'
import hashlib, sys
dev, number, pct = sys.argv[1], sys.argv[2], int(sys.argv[3])
h = hashlib.sha256(b"\0".join(x.encode() for x in ["eqota-rollout-1", dev, "qemuarm64", "stable", number]) + b"\0").digest()
sys.exit(0 if int.from_bytes(h[:8], "big") % 10000 < pct * 100 else 1)
PY
}

device lab testing
for i in $(seq 1 $N); do device "s$i" stable; done

# ---- 1. testing
publish 2
[ "$(poll lab)" = installed ] && [ "$(running lab)" = 2 ] && pass "1. the lab device took release 2 from testing" ||
  fail "1. lab: running $(running lab)"

# ---- 2. promote with a 10 % rollout
promote 2 --rollout-percent 10
want=() got=()
for i in $(seq 1 $N); do
  selected "s$i" 2 10 && want+=("s$i")
  [ "$(poll "s$i")" = installed ] && got+=("s$i")
done
echo "10 %: ${#got[@]} of $N: ${got[*]}"
[ "${want[*]}" = "${got[*]}" ] && [ ${#got[@]} -ge 1 ] && [ ${#got[@]} -le 10 ] &&
  pass "2. promoted at 10 %: the ${#got[@]} devices the hash picks installed it, no other" ||
  fail "2. wanted ${want[*]}, got ${got[*]}"
first=("${got[@]}")

# ---- 3. 100 %: half of the rest poll; one of them fails its check
rollout --release 2026.12.2 --percent 100 >/dev/null
rest=()
for i in $(seq 1 $N); do [[ " ${first[*]} " == *" s$i "* ]] || rest+=("s$i"); done
half=$((${#rest[@]} / 2))
touch "$w/${rest[0]}/bad"
n=0
for d in "${rest[@]:0:$half}"; do [ "$(poll "$d")" = installed ] && n=$((n + 1)); done
[ $n -eq $half ] && [ "$(running "${rest[0]}")" = 1 ] && [ "$(running "${rest[1]}")" = 2 ] &&
  pass "3. at 100 %: $n more devices installed it, ${rest[0]} rolled back to release 1" ||
  fail "3. $n of $half installed; ${rest[0]} runs $(running "${rest[0]}")"

# ---- 4. the rollout halts itself
out=$(rollout --auto-halt 0.02 --unauthenticated --reports "$reports")
echo "$out"
grep -q "1 of .* devices that reported it rolled back" <<<"$out" &&
  [ "$(rollout)" = "release '2026.12.2' (number 2): rollout 100 %, halted: devices that have not installed it do not" ] &&
  pass "4. --auto-halt 0.02 halted the release" || fail "4. $(rollout)"
n=0
for d in "${rest[@]:$half}"; do [ "$(poll "$d")" = nothing ] && n=$((n + 1)); done
[ $n -eq $((${#rest[@]} - half)) ] && pass "4. halted: the other $n devices installed nothing" ||
  fail "4. only $n devices stayed"

# ---- 5. prune
for r in 3 4 5; do publish $r; done
before=$(du -sb repo | cut -f1)
out=$("$gen" prune --repo repo --keep 2 --grace-hours 0)
after=$(du -sb repo | cut -f1)
echo "$out ($before -> $after bytes)"
[ ! -d repo/boards/$B/testing/releases/1 ] && [ ! -d repo/boards/$B/testing/releases/3 ] &&
  [ -d repo/boards/$B/stable/releases/2 ] && [ "$after" -lt "$before" ] &&
  "$gen" verify --repo repo --board $B --channel stable --root repo/root/1.root.json --deep >/dev/null &&
  pass "5. prune --keep 2: old testing releases gone, stable's current release whole" || fail "5. prune: $out"

# ---- 6. resume
rollout --resume >/dev/null
n=0
for d in "${rest[@]:$half}"; do [ "$(poll "$d")" = installed ] && [ "$(running "$d")" = 2 ] && n=$((n + 1)); done
[ $n -eq $((${#rest[@]} - half)) ] && pass "6. resumed: the last $n devices installed it from the pruned repository" ||
  fail "6. $n installed"

# ---- 7. the fleet summary from the collected reports
out=$("$gen" fleet --unauthenticated --reports "$reports")
echo "$out"
"$gen" fleet --unauthenticated --reports "$reports" --json | python3 -c '
import json, sys
n = int(sys.argv[1])
d = json.load(sys.stdin)
assert d["bad"] == 0 and d["devices"] == n + 1, d
ch = {(c["board"], c["channel"]): c for c in d["channels"]}
st = {r["number"]: r for r in ch[("qemuarm64", "stable")]["releases"]}[2]
assert st["devices"] == n and st["running"] == n - 1 and st["committed"] == n - 1, st
assert st["rolled_back"] == 1 and st["rolled_back_reasons"][0]["reason"].startswith("health check failed"), st
te = {r["number"]: r for r in ch[("qemuarm64", "testing")]["releases"]}[2]
assert te["devices"] == 1 and te["running"] == 1, te
print("stable release 2: %d devices, %d running, 1 rolled back" % (st["devices"], st["running"]))
' "$N" && pass "7. eqota-gen fleet: $N stable devices reported, $((N - 1)) run release 2, 1 rolled back with its reason" ||
  fail "7. fleet summary"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "publish, promote, roll out, halt, prune and report: the whole fleet flow holds"
