#!/usr/bin/env bash
# eqota's hashserv client against the real bitbake-hashserv (EQ_BITBAKE_DIR):
# unix:// sockets, users and permissions (login from the environment, a
# refused login, a user without @report), a 2,000-package release in
# batches, and that an upstream client (BitBake's own) sees what eqota
# reported.
# Usage: hashserv_client.sh EQOTA_GEN SOURCE_DIR
set -euo pipefail
gen=$1
src=$2
# shellcheck source=tests/interop/lib/hashserv.sh
. "$src/tests/interop/lib/hashserv.sh"
need_bitbake
w=$(mktemp -d)
trap 'hashserv_cleanup; rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
M=eqota-payload-v1
h() { printf '%s' "$1" | sha256sum | cut -c1-64; }
# upstream ADDR USER TOKEN PYTHON...: runs PYTHON with c = BitBake's client.
upstream() {
  local addr=$1 user=$2 token=$3; shift 3
  "$HS_PY" - "$EQ_BITBAKE_DIR/lib" "$addr" "$user" "$token" <<PY
import sys
sys.path.insert(0, sys.argv[1])
import hashserv
c = hashserv.create_client(sys.argv[2], sys.argv[3] or None, sys.argv[4] or None)
$*
c.close()
PY
}

# 1. A unix socket, as BB_HASHSERVE=unix://... names it.
sock=$w/hs.sock
PYTHONUNBUFFERED=1 "$HS_PY" "$EQ_BITBAKE_DIR/bin/bitbake-hashserv" --bind "unix://$sock" --database unix.db >unix.log 2>&1 &
HS_PIDS+=($!)
for _ in $(seq 1 200); do [ -S "$sock" ] && break; sleep 0.05; done
u=$("$gen" equiv report --hashserv "unix://$sock" --method "$M" --taskhash "$(h t1)" --outhash "$(h o1)")
[ "$u" = "$(h t1)" ] &&
  [ "$(upstream "unix://$sock" "" "" 'print(c.get_unihash("'$M'", "'"$(h t1)"'"))')" = "$u" ] &&
  pass "unix:// socket: eqota's report is what BitBake's client reads" || fail "unix socket: $u"
u2=$("$gen" equiv report --hashserv "unix://$sock" --method "$M" --taskhash "$(h t2)" --outhash "$(h o1)")
[ "$u2" = "$(h t1)" ] && pass "unix:// socket: same outhash, the first taskhash's unihash" || fail "equivalence: $u2"

# 2. Users and permissions: anonymous may only read.
hashserv_start users.db --admin-user admin --admin-password adminpw --anon-perms @read
tokens=$(upstream "$HS_ADDR" admin adminpw '
print(c.new_user("builder", ["@read", "@report"])["token"])
print(c.new_user("reader", ["@read"])["token"])')
builder=$(sed -n 1p <<<"$tokens")
reader=$(sed -n 2p <<<"$tokens")
R=(equiv report --hashserv "$HS_ADDR" --method "$M" --outhash "$(h o2)")
EQOTA_HASHSERV_USERNAME=builder EQOTA_HASHSERV_TOKEN=$builder "$gen" "${R[@]}" --taskhash "$(h t3)" >/dev/null &&
  [ "$(upstream "$HS_ADDR" "" "" 'print(c.get_unihash("'$M'", "'"$(h t3)"'"))')" = "$(h t3)" ] &&
  pass "login from EQOTA_HASHSERV_USERNAME/TOKEN: a user with @report records" || fail "builder login"
BB_HASHSERVE_USERNAME=builder BB_HASHSERVE_PASSWORD=$builder "$gen" "${R[@]}" --taskhash "$(h t4)" >/dev/null &&
  pass "login from BitBake's BB_HASHSERVE_USERNAME/PASSWORD" || fail "BB_ login"
expect_fail "a wrong token" "Unable to authenticate as builder" \
  env EQOTA_HASHSERV_USERNAME=builder EQOTA_HASHSERV_TOKEN=wrong "$gen" "${R[@]}" --taskhash "$(h t5)"
expect_fail "anonymous (@read only): report not recorded" "did not record the report" "$gen" "${R[@]}" --taskhash "$(h t5)"
expect_fail "a user without @report" "did not record the report" \
  env EQOTA_HASHSERV_USERNAME=reader EQOTA_HASHSERV_TOKEN=$reader "$gen" "${R[@]}" --taskhash "$(h t6)"
EQOTA_HASHSERV_USERNAME=reader EQOTA_HASHSERV_TOKEN=$reader "$gen" equiv get --hashserv "$HS_ADDR" --method "$M" --taskhash "$(h t3)" |
  grep -qx "$(h t3)" && pass "a reader looks up" || fail "reader get"
hashserv_stop
hashserv_start none.db --admin-user admin --admin-password adminpw --anon-perms @none
expect_fail "anonymous with @none" "refused" "$gen" equiv get --hashserv "$HS_ADDR" --method "$M" --taskhash "$(h t3)"
hashserv_stop

# 3. 2,000 packages in one publish: batched, and fast on loopback.
hashserv_start big.db
/usr/bin/python3 - <<'PY'
import io, os, tarfile
os.makedirs("big")
for i in range(2000):
    name = "p%04d" % i
    body = name.encode()
    with tarfile.open("big/%s_1.0.tar" % name, "w") as t:
        f = tarfile.TarInfo("usr/share/%s" % name)
        f.size = len(body)
        t.addfile(f, io.BytesIO(body))
PY
for f in big/*.tar; do p=$(basename "$f" _1.0.tar); echo "$p $(h "big-$p")"; done > big.index
"$gen" keygen --out k >/dev/null
t0=$(date +%s.%N)
"$gen" -q publish --repo repo --board b --channel c --key k.key --level 1 --release r1 --packages big \
  --build-index big.index --hashserv "$HS_ADDR" >/dev/null
t1=$(date +%s.%N)
n=$("$HS_PY" -c 'import sqlite3,sys; db=sqlite3.connect("big.db"); print(db.execute("SELECT count(*) FROM outhashes_v2").fetchone()[0])')
[ "$n" = 2000 ] && pass "2,000 packages reported ($(echo "$t0 $t1" | awk '{printf "%.1f", $2 - $1}') s for the whole publish)" ||
  fail "2,000 packages: $n outhash rows"
hashserv_stop

echo "hashserv_client: $fails failed"
[ "$fails" -eq 0 ]
