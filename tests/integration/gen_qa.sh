#!/usr/bin/env bash
# qa and equivalence with a real compiler: a program that uses __FILE__,
# built in two build folders, once without and once with -ffile-prefix-map.
# Without, qa names the embedded path and the builds get different unihashes;
# with it, qa is clean and the second build resolves to the first's unihash.
# Usage: gen_qa.sh EQOTA_GEN
set -euo pipefail
# before any cd: $0 may be a relative path
# shellcheck source=tests/integration/lib/check.sh
. "$(dirname "$0")/lib/check.sh"
gen=$1
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
"$gen" keygen --out k >/dev/null

build() { # BUILD_DIR OUT_FOLDER EXTRA_CFLAGS
  local b=$1
  mkdir -p "$b/src" "$b/root/DEBIAN" "$b/root/usr/bin" "$2"
  cat > "$b/src/hello.c" <<'C'
#include <stdio.h>
int main(void) { printf("built from %s\n", __FILE__); return 0; }
C
  (cd "$b" && gcc -O2 $3 -o root/usr/bin/hello "$PWD/src/hello.c")
  printf 'Package: hello\nVersion: 1.0\nArchitecture: amd64\nMaintainer: t <t@example.org>\nDescription: t\n' > "$b/root/DEBIAN/control"
  dpkg-deb --root-owner-group -b "$b/root" "$2/hello_1.0_amd64.deb" >/dev/null
}
th() { echo "hello $(echo "$1" | sha256sum | cut -c1-64)" > "$2"; }
th build-one one.index; th build-two two.index

for mode in plain mapped; do
  flags=""
  [ $mode = mapped ] && flags="-ffile-prefix-map=$w/$mode-1=/usr/src/hello -ffile-prefix-map=$w/$mode-2=/usr/src/hello"
  build "$w/$mode-1" "out-$mode-1" "$flags"
  build "$w/$mode-2" "out-$mode-2" "$flags"
  set +e; qa=$("$gen" qa --packages "out-$mode-1" --build-dir "$w/$mode-1"); rc=$?; set -e
  if [ $mode = plain ]; then
    [ $rc -eq 3 ] && grep -q "usr/bin/hello embeds the build directory '$w/$mode-1'" <<<"$qa" &&
      pass "qa names the file that embeds the build folder" || fail "qa missed it (rc $rc): $qa"
  else
    [ $rc -eq 0 ] && pass "qa is clean with -ffile-prefix-map" || fail "qa rc $rc: $qa"
  fi
  P=(--repo "repo-$mode" --board b --channel c --key k.key --store "store-$mode.db" --level 3)
  "$gen" -q publish "${P[@]}" --release one --packages "out-$mode-1" --build-index one.index >/dev/null
  "$gen" -q publish "${P[@]}" --release two --packages "out-$mode-2" --build-index two.index >/dev/null
  u1=$("$gen" show --repo "repo-$mode" --board b --channel c --release one --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["packages"][0]["unihash"])')
  u2=$("$gen" show --repo "repo-$mode" --board b --channel c --release two --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["packages"][0]["unihash"])')
  t1=$(cut -d' ' -f2 one.index)
  if [ $mode = plain ]; then
    [ "$u1" != "$u2" ] && pass "builds in two folders get different unihashes" || fail "plain builds were equivalent"
  else
    [ "$u1" = "$u2" ] && [ "$u2" = "$t1" ] && pass "the second build resolves to the first build's unihash" ||
      fail "mapped builds: $u1 vs $u2"
  fi
done
echo "gen_qa: $fails failed"
[ "$fails" -eq 0 ]
