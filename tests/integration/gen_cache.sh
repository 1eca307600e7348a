#!/usr/bin/env bash
# eqota-gen publish -j and its input cache on real Debian packages: a
# republish reads no unchanged file and gives the same release; -j 1, -j 2
# and --no-cache agree; a file rewritten in place (same size, mtime put
# back) is read again; damaged or lying cache entries are never believed; a
# shared cache folder is refused; a broken package is named in file order.
# Usage: gen_cache.sh EQOTA_GEN SOURCE_DIR
set -euo pipefail
gen=$1
src=$2
cache=${EQ_CACHE_DIR:-$src/.cache}/debs
[ -d "$cache/release2" ] || "$src/scripts/fetch-debs.sh" "$cache" >/dev/null
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
B=(--board qemux86-64 --channel stable)
"$gen" keygen --out rel >/dev/null
export XDG_CACHE_HOME=$w/xdg
n=$(ls "$cache/release1" | wc -l)

pub() { local repo=$1; shift; "$gen" publish --repo "$repo" "${B[@]}" --key rel.key --level 3 "$@" 2>&1; }
# The packages of the channel's current manifest, one JSON line each.
pkgs() { python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["packages"]: print(json.dumps(p, sort_keys=True))' \
  "$1/boards/qemux86-64/stable/manifest.json"; }
not_read() { sed -n 's/.* \([0-9]*\) unchanged files not read again.*/\1/p' <<<"$1"; }

out=$(pub repo --store s.db --release r1 --packages "$cache/release1")
[ "$(not_read "$out")" = 0 ] && pass "first publish reads every file" || fail "first publish: $out"
[ -s xdg/eqota/inputs.db ] && [ "$(stat -c %a xdg/eqota)" = 700 ] &&
  pass "default cache in \$XDG_CACHE_HOME/eqota, folder 0700" || fail "default cache: $(ls -la xdg/eqota 2>&1)"
pkgs repo > r1.txt
out=$(pub repo --store s.db --release r1b --packages "$cache/release1")
[ "$(not_read "$out")" = "$n" ] && pass "republish reads none of the $n files" || fail "republish: $out"
pkgs repo > r1b.txt
cmp -s r1.txt r1b.txt && pass "republish from the cache gives the same packages" || fail "republish differs"

# The same release from scratch, every way: the manifests' packages agree.
for v in "-j 1 --no-cache" "-j 2 --no-cache" "-j 2"; do
  d=repo-${v// /}
  # shellcheck disable=SC2086
  out=$(pub "$d" --store "$d.db" --release r1 --packages "$cache/release1" $v)
  pkgs "$d" > "$d.txt"
  if cmp -s r1.txt "$d.txt"; then pass "publish $v into a new repository: same packages"; else
    fail "publish $v differs"; diff r1.txt "$d.txt" | head -5; fi
done
# The last one knew every file but had to write every object: from the
# package, checked against the cache, and devices' checks pass.
grep -q "$n unchanged files not read again), $n new objects" <<<"$out" &&
  pass "cached inputs into an empty repository: $n objects written" || fail "new repository: $out"
"$gen" verify --repo repo--j2 "${B[@]}" --key rel.pub --deep >/dev/null && pass "verify --deep of it" ||
  fail "verify --deep of the repository made from cached inputs"

expect_fail "--jobs 0 is refused" "--jobs '0': expected 1..64" "$gen" publish --repo x "${B[@]}" --key rel.key \
  --release r --packages "$cache/release1" -j 0

# A tarball package rewritten in place: same size, its mtime put back. Only
# its ctime tells; the change must be seen.
mkdir -p tp/usr/share/app && printf 'version one of the data\n' > tp/usr/share/app/data
mkdir own && tar -C tp -cf own/app_1.tar usr
sleep 3 # older than the cache's "may still change" window, so it is stored
out=$(pub repo2 --store s2.db --release a --packages own)
out=$(pub repo2 --store s2.db --release b --packages own)
[ "$(not_read "$out")" = 1 ] && pass "a stable file is cached" || fail "tar cached: $out"
before=$(pkgs repo2 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["payload"]["sha256"])')
touch -r own/app_1.tar stamp
printf 'version two of the data\n' > tp/usr/share/app/data
tar -C tp -cf own/new.tar usr && cat own/new.tar > own/app_1.tar && rm own/new.tar
touch -r stamp own/app_1.tar
out=$(pub repo2 --store s2.db --release c --packages own)
after=$(pkgs repo2 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["payload"]["sha256"])')
[ "$(not_read "$out")" = 0 ] && [ "$before" != "$after" ] &&
  pass "same size, same mtime, new content: read again" || fail "rewritten file: $out ($before $after)"

# Entries that do not decode are ignored: the file is read again.
python3 - xdg/eqota/inputs.db <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT key, value FROM inputs").fetchall()
for i, (k, v) in enumerate(rows):
    bad = [b"", b"\x01", v[: len(v) // 2], v + b"x", bytes(len(v)), v[:8] + b"\xff" * 8 + v[16:]][i % 6]
    db.execute("UPDATE inputs SET value = ? WHERE key = ?", (bad, k))
db.commit()
PY
out=$(pub repo --store s.db --release r1c --packages "$cache/release1")
pkgs repo > r1c.txt
[ "$(not_read "$out")" = 0 ] && cmp -s r1.txt r1c.txt && pass "damaged cache entries: every file read again" ||
  fail "damaged cache: $out"

# An entry that decodes but lies about the payload: the package is read
# when its object must be written, and the difference refuses the run.
python3 - xdg/eqota/inputs.db <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for k, v in db.execute("SELECT key, value FROM inputs").fetchall():
    v = bytearray(v)
    p = 8
    for _ in range(3):  # name, version, arch
        p += 8 + int.from_bytes(v[p:p + 8], "little")
    v[p] ^= 1  # the payload's SHA-256
    db.execute("UPDATE inputs SET value = ? WHERE key = ?", (bytes(v), k))
db.commit()
PY
expect_fail "a cache entry with another payload hash" "is not the one the input cache recorded" \
  pub repo3 --store s3.db --release r1 --packages "$cache/release1"

# Other owner rules make other payloads: nothing cached applies.
rm -f xdg/eqota/inputs.db*
out=$(pub repo4 --store s4.db --release r1 --packages "$cache/release1")
out=$(pub repo4 --store s4.db --release r2 --packages "$cache/release1" --path-owner usr/share/nothing=base-files)
[ "$(not_read "$out")" = 0 ] && pass "other path owner rules: files read again" || fail "rules: $out"

# A cache folder others may write to could make a package say anything.
mkdir -p xdg2/eqota && chmod 777 xdg2/eqota
expect_fail "a shared cache folder is refused" "writable by others" \
  env XDG_CACHE_HOME="$w/xdg2" "$gen" publish --repo repo5 "${B[@]}" --key rel.key --release r1 --packages own
out=$(XDG_CACHE_HOME=$w/xdg2 pub repo5 --release r1 --packages own --store s5.db --no-cache) &&
  pass "... and --no-cache works without it" || fail "--no-cache: $out"

# Broken packages read on two threads: the first in file order is named.
mkdir mixed && cp "$cache"/release1/*.deb mixed/
head -c 3000 mixed/"$(ls mixed | sed -n 40p)" > mixed/m-broken_1_all.deb
head -c 100 /dev/urandom > mixed/z-broken_1_all.deb
first=$(cd mixed && for f in [mz]-broken*; do echo "$f"; break; done)
expect_fail "a broken package among $((n + 2)) on 2 threads" "mixed/$first" \
  pub repo6 --store s6.db --release r1 --packages mixed -j 2 --no-cache
echo "gen_cache: $fails failed"
[ "$fails" -eq 0 ]
