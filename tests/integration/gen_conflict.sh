#!/usr/bin/env bash
# A release whose packages share a path: Debian 12's busybox and
# busybox-static both ship bin/busybox (and its man page). eqota-gen publish
# refuses the pair, naming the paths and both packages; with path owner
# rules (--path-owner, --path-owners) it publishes the non-owner without
# those paths, and a simulated device then updates three times (the last
# release drops busybox) downloading exactly the bytes its plan announced,
# with no kept package found modified.
# Usage: gen_conflict.sh EQOTA EQOTA_GEN EQ_SIMBOOT EQ_PAYLOAD SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 simboot=$3 eqpayload=$4 src=$5
cache=${EQ_CACHE_DIR:-$src/.cache}/debs
pool=$cache/pool
first() { local f; for f in "$@"; do [ -e "$f" ] && { echo "$f"; return 0; }; done; return 0; }

# ---- the two packages: busybox from the demo set, busybox-static fetched
# the way scripts/fetch-debs.sh fetches, into the same git-ignored pool.
bb=$(first "$pool"/busybox_*.deb)
if [ -z "$bb" ]; then
  "$src/scripts/fetch-debs.sh" "$cache" >/dev/null || true
  bb=$(first "$pool"/busybox_*.deb)
fi
[ -n "$bb" ] || { echo "SKIP: busybox is not in $pool and scripts/fetch-debs.sh could not fetch it"; exit 77; }
ver=$(dpkg-deb -f "$bb" Version)
bbs=$(first "$pool"/busybox-static_*.deb)
if [ -z "$bbs" ]; then
  # The same version as busybox if the archive still has it, else its newest.
  (cd "$pool" && { apt-get download -q "busybox-static=$ver" || apt-get download -q busybox-static; }) >/dev/null 2>&1 || true
  bbs=$(first "$pool"/busybox-static_*.deb)
fi
[ -n "$bbs" ] || { echo "SKIP: busybox-static could not be fetched (apt-get download busybox-static=$ver into $pool)"; exit 77; }

. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
. "$src/tests/integration/lib/tarpkg.sh"
w=$(mktemp -d /tmp/eq-conflict.XXXXXX)
cleanup() { httpd_stop || true; rm -rf "$w"; }
trap cleanup EXIT
trap 'echo "gen_conflict.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
hex() { printf '%s' "$1" | sha256sum | cut -c1-64; }

# Three releases: the two busybox packages unchanged, plus a small package
# that changes every time (so each update has something to fetch).
big() { python3 -c 'import hashlib,sys; print("".join(hashlib.sha256(f"{sys.argv[1]}{i}".encode()).hexdigest() for i in range(100)))' "$1"; }
# Release 4 drops busybox: busybox-static stays with the files both shipped.
for r in 1 2 3 4; do
  mkdir -p "p$r"
  ln -s "$bbs" "p$r/"
  [ "$r" = 4 ] || ln -s "$bb" "p$r/"
  tarpkg "p$r/app_$r.tar" usr/share/app/data "$(big "app$r")"
  # A build index: the busybox packages keep their taskhashes (unchanged
  # recipes), as a Yocto build gives them.
  { echo "busybox $(hex busybox)"; echo "busybox-static $(hex busybox-static)"; echo "app $(hex "app$r")"; } > "i$r"
done
"$gen" keygen --out rel >/dev/null
P=(--board tb --channel stable --key rel.key --store store.db --level 3)
bbn=$(basename "$bb") bbsn=$(basename "$bbs")

# ---- 1. publish refuses the pair, naming every shared path and both packages
run "publish without rules" 1 "$gen" -q publish --repo repo0 "${P[@]}" --release r1 --packages p1 --build-index i1 &&
  pass "publish refuses the release (exit 1)"
grep -qF "bin/busybox is shipped by busybox-static ($bbsn) and busybox ($bbn) (content differs)" <<<"$out" &&
  pass "the error names bin/busybox and both packages with their files" || fail "message: $out"
grep -qF "usr/share/man/man1/busybox.1.gz is shipped by busybox-static ($bbsn) and busybox ($bbn)" <<<"$out" &&
  grep -qF "2 paths are shipped by more than one package" <<<"$out" && grep -qF "(see --path-owner)" <<<"$out" &&
  pass "every shared path is reported, not only the first" || fail "message: $out"
# Identical files (the initramfs hooks) are shared without a complaint.
grep -q "initramfs-tools" <<<"$out" && fail "identical shared files reported: $out" ||
  pass "identical shared files (usr/share/initramfs-tools/...) are allowed"
[ ! -e repo0/boards/tb/stable/manifest.json ] && pass "no manifest was written" || fail "a manifest was published"
refused_ok=$([ ! -e repo0/boards/tb/stable/manifest.json ] && echo 1 || echo 0)

# ---- 2. bad rules are refused before anything is read
run "rule without owner" 1 "$gen" publish --repo repo0 "${P[@]}" --release r1 --packages p1 --path-owner bin/busybox &&
  grep -qF "expected PATH=PACKAGE" <<<"$out" && pass "--path-owner without '=PACKAGE' is refused" || fail "bad rule: $out"
run "wrong owner" 1 "$gen" -q publish --repo repo0 "${P[@]}" --release r1 --packages p1 --path-owner bin/busybox=app \
  --path-owner usr/share/man/man1/busybox.1.gz=busybox
grep -qF "app does not ship bin/busybox" <<<"$out" && pass "an owner that does not ship the path is refused" ||
  fail "wrong owner: $out"

# ---- 3. with owner rules: published, the non-owner's payload lacks the paths
printf '# busybox-static is the base set'"'"'s; Debian'"'"'s busybox keeps only its applets\nusr/share/man/man1/busybox.1.gz busybox-static\n' > owners
R=(--path-owner bin/busybox=busybox-static --path-owners owners)
run "publish r1 with rules" 0 "$gen" -q publish --repo repo "${P[@]}" "${R[@]}" --release r1 --packages p1 --build-index i1 &&
  pass "publish with --path-owner and --path-owners succeeds (after a refused run with the same store and index)"
payload_list() { # REPO NUMBER PACKAGE: the entries of the package's payload
  local obj
  obj=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print([p for p in m["packages"] if p["name"]==sys.argv[2]][0]["object"]["path"])' \
    "$1/boards/tb/stable/releases/$2/manifest.json" "$3")
  zstd -q -dc "$1/$obj" > "$w/pl"
  "$eqpayload" list "$w/pl"
}
l_bb=$(payload_list repo 1 busybox)
l_bbs=$(payload_list repo 1 busybox-static)
! grep -qE ' bin/busybox$' <<<"$l_bb" && ! grep -q 'man1/busybox.1.gz' <<<"$l_bb" && grep -q ' bin$' <<<"$l_bb" &&
  pass "busybox's payload lacks bin/busybox and the man page (its bin/ stays)" || fail "busybox payload: $l_bb"
grep -qE ' bin/busybox$' <<<"$l_bbs" && grep -q 'man1/busybox.1.gz' <<<"$l_bbs" &&
  pass "busybox-static's payload keeps both" || fail "busybox-static payload: $l_bbs"
grep -q 'initramfs-tools/hooks/zz-busybox' <<<"$l_bb" && grep -q 'initramfs-tools/hooks/zz-busybox' <<<"$l_bbs" &&
  pass "the identical shared files stay in both" || fail "identical files: $l_bb"

# ---- 4. a device updates twice: exactly the planned bytes, nothing "modified"
mkdir -p logs
httpd_start "$w/repo" "$w/logs"
boot() { cat /proc/sys/kernel/random/uuid > "$1/boot_id"; "$simboot" --env "$1/bootenv" --cmdline "$1/cmdline"; }
eq() { local d=$1; shift; EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" "$@"; }
log_reset() { httpd_log_flush; : > "$HTTPD_ACCESS_LOG"; }
fetched() { httpd_log_flush; awk '$2 ~ /^\/(objects|deltas)\// && ($3 == 200 || $3 == 206) { s += $4 } END { print s + 0 }' "$HTTPD_ACCESS_LOG"; }
dev=$w/dev
simdevice_make "$dev" "$HTTPD_URL" tb "$w/rel.pub" repository.retries=0 health.check=/bin/true
run "provision" 0 eq "$dev" provision --slot A && pass "provision slot A with release 1"
[ "$(boot "$dev")" = A ] || fail "the device does not boot A"
static_sum=$(dpkg-deb --fsys-tarfile "$bbs" | tar -xOf - ./bin/busybox | sha256sum | cut -c1-64)
slot=A
for r in 2 3 4; do
  "$gen" -q publish --repo repo "${P[@]}" "${R[@]}" --release "r$r" --packages "p$r" --build-index "i$r" >/dev/null
  run "check r$r" 0 eq "$dev" check --json
  plan=$(python3 -c 'import json,sys; c=json.loads(sys.argv[1]); print(c["download_bytes"], sorted(p["name"] for p in c["plan"] if p["action"]=="keep"))' "$out")
  read -r plan_dl kept <<<"$plan"
  want="['busybox', 'busybox-static']" nkept=2
  [ "$r" != 4 ] || want="['busybox-static']" nkept=1
  [ "$kept" = "$want" ] && pass "release $r: the plan keeps $want" || fail "release $r: plan $plan"
  log_reset
  run "update to r$r" 3 eq "$dev" update && pass "update installs release $r"
  got=$(fetched)
  [ "$got" = "$plan_dl" ] && pass "release $r: bytes fetched ($got) equal the plan's (access log)" ||
    fail "release $r: fetched $got bytes, the plan said $plan_dl"
  grep -qF "$nkept packages kept" <<<"$out" && grep -qF "0 fell back to full objects" <<<"$out" &&
    ! grep -q "downloading the full object" <<<"$out" && pass "release $r: no kept package found modified" ||
    fail "release $r: $out"
  slot=$([ "$slot" = A ] && echo B || echo A)
  [ "$(sha256sum < "$dev/$slot/bin/busybox" | cut -c1-64)" = "$static_sum" ] &&
    pass "release $r: bin/busybox in slot $slot is busybox-static's" || fail "release $r: bin/busybox is not busybox-static's"
  hook=$dev/$slot/usr/share/initramfs-tools/hooks/zz-busybox
  [ -f "$hook" ] && [ "$(stat -c %a "$hook")" = 755 ] &&
    pass "release $r: the file both packages shipped identically is there" || fail "release $r: $hook missing"
  [ "$r" != 4 ] || { [ ! -e "$dev/$slot/usr/share/doc/busybox/copyright" ] &&
    pass "release 4: busybox's own files are gone, the shared ones stay with busybox-static" ||
    fail "release 4: busybox's files are still in slot $slot"; }
  [ "$(boot "$dev")" = "$slot" ] || fail "the bootloader did not try $slot"
  run "mark-good r$r" 0 eq "$dev" mark-good || true
done

echo "gen_conflict: $fails failed"
[ "$refused_ok" = 1 ] || echo "(publish accepted the conflicting pair: this code has no path table)"
[ "$fails" -eq 0 ]
