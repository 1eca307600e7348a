#!/usr/bin/env bash
# eqota-gen against the real bitbake-hashserv (EQ_BITBAKE_DIR): the server
# is the equivalence store of publish and equiv. What the server holds is
# read from its own database, not through eqota's client.
# Usage: hashserv_publish.sh EQOTA_GEN SOURCE_DIR
set -euo pipefail
gen=$1
src=$2
# shellcheck source=tests/interop/lib/hashserv.sh
. "$src/tests/interop/lib/hashserv.sh"
# shellcheck source=tests/integration/lib/tarpkg.sh
. "$src/tests/integration/lib/tarpkg.sh"
need_bitbake
w=$(mktemp -d)
trap 'hashserv_cleanup; rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
M=eqota-payload-v1
G=(--board demo --channel test --key rel.key --level 3)
"$gen" keygen --out rel >/dev/null

# Server-side truth: every (method, taskhash, unihash) row, sorted.
server_rows() { # DB
  "$HS_PY" - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
t = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'unihashes%'")]
for m, th, u in sorted(db.execute("SELECT method, taskhash, unihash FROM %s" % t[0])):
    print(m, th, u)
PY
}
# "name taskhash unihash" of every package of release R in repository REPO.
manifest_rows() { # REPO R
  "$gen" show --repo "$1" --board demo --channel test --release "$2" --json |
    "$HS_PY" -c 'import json,sys; [print(p["name"], p["taskhash"], p["unihash"]) for p in json.load(sys.stdin)["packages"]]' | sort
}
th() { printf '%s' "$1" | sha256sum | cut -c1-64; } # a taskhash from a seed
index() { # BUILD PKG... -> build index on stdout
  local b=$1 p; shift
  for p in "$@"; do echo "$p $(th "$b-$p")"; done
}

mkdir r1
for p in alpha beta gamma delta; do tarpkg "r1/${p}_1.0.tar" "usr/share/$p/data" "$p content"; done
hashserv_start server.db
index b1 alpha beta gamma delta > b1.index

# 1. The manifest's unihashes are what the server holds under its taskhashes.
"$gen" -q publish --repo repo "${G[@]}" --hashserv "$HS_ADDR" --release r1 --packages r1 --build-index b1.index >/dev/null
server_rows server.db > s1.rows
ok=1
while read -r name t u; do
  grep -qx "$M $t $u" s1.rows || { ok=0; echo "  $name: $t -> $u not on the server"; }
done < <(manifest_rows repo r1)
[ "$ok" = 1 ] && [ "$(wc -l < s1.rows)" = 4 ] && pass "manifest unihashes = the server's under the manifest's taskhashes" ||
  fail "manifest and server disagree"
"$gen" equiv get --hashserv "$HS_ADDR" --method "$M" --taskhash "$(th b1-beta)" | grep -qx "$(th b1-beta)" &&
  pass "equiv get --hashserv" || fail "equiv get --hashserv"

# 2. A rebuild: new taskhashes, identical payloads, the old unihashes.
mkdir r2 && cp r1/* r2/
index b2 alpha beta gamma delta > b2.index
"$gen" -q publish --repo repo "${G[@]}" --hashserv "$HS_ADDR" --release r2 --packages r2 --build-index b2.index >/dev/null
diff <(manifest_rows repo r1 | awk '{print $1, $3}') <(manifest_rows repo r2 | awk '{print $1, $3}') >/dev/null &&
  [ "$(manifest_rows repo r2 | awk '$2 == $3' | wc -l)" = 0 ] &&
  pass "rebuild with new taskhashes gets the old unihashes back" || fail "rebuild changed unihashes"

# 3. Another builder reported the output first: its unihash is adopted.
tarpkg epsilon_1.0.tar usr/share/epsilon/data "epsilon content"
mkdir probe && cp epsilon_1.0.tar probe/
"$gen" -q publish --repo probe-repo "${G[@]}" --store probe.db --release p --packages probe >/dev/null
out_eps=$("$gen" show --repo probe-repo --board demo --channel test --json |
  "$HS_PY" -c 'import json,sys; print(json.load(sys.stdin)["packages"][0]["payload"]["sha256"])')
other_uni=$(th other-builder-unihash)
"$HS_PY" - "$EQ_BITBAKE_DIR/lib" "$HS_ADDR" "$M" "$(th other-builder-task)" "$out_eps" "$other_uni" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import hashserv
c = hashserv.create_client(sys.argv[2])
r = c.report_unihash(sys.argv[4], sys.argv[3], sys.argv[5], sys.argv[6])
assert r["unihash"] == sys.argv[6], r
c.close()
PY
mkdir r3 && cp r2/* r3/ && cp epsilon_1.0.tar r3/
index b3 alpha beta gamma delta epsilon > b3.index
"$gen" -q publish --repo repo "${G[@]}" --hashserv "$HS_ADDR" --release r3 --packages r3 --build-index b3.index >/dev/null
[ "$(manifest_rows repo r3 | awk '$1 == "epsilon" {print $3}')" = "$other_uni" ] &&
  pass "a unihash another builder reported first is adopted" || fail "other builder's unihash not adopted"

# 4. Two publishers, two repositories, one server, at the same time: they agree.
mkdir r4
for p in alpha beta zeta eta theta; do tarpkg "r4/${p}_2.0.tar" "usr/share/$p/data" "$p content v2"; done
index b4 alpha beta zeta eta theta > b4.index
"$gen" -q publish --repo repoA "${G[@]}" --hashserv "$HS_ADDR" --release x --packages r4 --build-index b4.index >/dev/null &
pa=$!
"$gen" -q publish --repo repoB "${G[@]}" --hashserv "$HS_ADDR" --release x --packages r4 --build-index b4.index >/dev/null &
pb=$!
wait "$pa" && wait "$pb" && diff <(manifest_rows repoA x) <(manifest_rows repoB x) >/dev/null &&
  pass "two eqota-gen publishing different repositories through one server agree" || fail "concurrent publishers disagree"

# 5. A non-reproducible rebuild: same taskhash, other bytes. The server keeps
# its mapping and the repository keeps serving the payload it published.
mkdir r5 && cp r3/* r5/ && rm r5/gamma_1.0.tar && tarpkg r5/gamma_1.0.tar usr/share/gamma/data "gamma, rebuilt differently"
out=$("$gen" publish --repo repo "${G[@]}" --hashserv "$HS_ADDR" --release r5 --packages r5 --build-index b3.index 2>&1)
grep -q "not reproducible" <<<"$out" && "$gen" diff --repo repo --board demo --channel test --from r3 --to r5 | grep -q "^kept *gamma" &&
  pass "non-reproducible rebuild keeps the published payload" || fail "non-reproducible: $out"

# 6. Nothing on the server was ever replaced.
server_rows server.db > s6.rows
[ -z "$(comm -23 s1.rows s6.rows)" ] && pass "every mapping of the first publish is still on the server, unchanged" ||
  fail "server rows replaced: $(comm -23 s1.rows s6.rows)"
[ "$(awk '{print $2}' s6.rows | sort | uniq -d | wc -l)" = 0 ] && pass "one unihash per taskhash on the server" || fail "duplicate taskhash rows"

# 7. A read-only server: lookups publish, a new report is refused clearly.
hashserv_stop
hashserv_start server.db --read-only
"$gen" -q publish --repo repoR "${G[@]}" --hashserv "$HS_ADDR" --release k --packages r3 --build-index b3.index >/dev/null &&
  diff <(manifest_rows repoR k | awk '{print $1, $3}') <(manifest_rows repo r3 | awk '{print $1, $3}') >/dev/null &&
  pass "read-only server: a release of known taskhashes publishes" || fail "read-only server refused known taskhashes"
index b7 alpha beta gamma delta > b7.index
expect_fail "read-only server: a report that is needed" "did not record the report for package" \
  "$gen" -q publish --repo repoR "${G[@]}" --hashserv "$HS_ADDR" --release k2 --packages r2 --build-index b7.index
[ "$(ls repoR/boards/demo/test/releases)" = 1 ] && pass "nothing published after the refused report" || fail "published anyway"
hashserv_stop

# 8. No server, wrong options.
expect_fail "no server" "127.0.0.1:1" "$gen" -q publish --repo repoX "${G[@]}" --hashserv 127.0.0.1:1 --release n --packages r1
expect_fail "--store with --hashserv" "exclude each other" "$gen" -q publish --repo repoX "${G[@]}" --hashserv 127.0.0.1:1 --store x.db --release n --packages r1
expect_fail "equiv list --hashserv" "no listing" "$gen" equiv list --hashserv 127.0.0.1:1

echo "hashserv_publish: $fails failed"
[ "$fails" -eq 0 ]
