#!/usr/bin/env bash
# Board and channel names are path components of the repository: eqota-gen
# refuses one that is not a name (<eq/repo_layout.h>) before any path is
# made from it, so nothing is written outside the repository (before issue
# 30, publish made boards/../../NAME, a folder beside the repository, and
# only then refused the board).
# Usage: gen_layout_names.sh EQOTA_GEN
set -euo pipefail
gen=$1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib/check.sh
. "$here/lib/check.sh"
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
"$gen" keygen --out rel >/dev/null || { echo "setup: keygen failed"; exit 1; }
mkdir -p top/repo pkgs

refused "publish --board ../.." "board '../..'" \
  "$gen" publish --repo top/repo --board ../.. --channel escaped --release r1 --packages pkgs --key rel.key
refused "publish --channel ../../x" "channel '../../escaped'" \
  "$gen" publish --repo top/repo --board tb --channel ../../escaped --release r1 --packages pkgs --key rel.key
refused "publish --board .hidden" "board '.hidden'" \
  "$gen" publish --repo top/repo --board .hidden --channel stable --release r1 --packages pkgs --key rel.key
refused "verify --board ../.." "board '../..'" \
  "$gen" verify --repo top/repo --board ../.. --channel escaped --key rel.pub
if [ -e top/escaped ] || [ -e top/repo/escaped ] || [ -e escaped ] || [ -e top/repo/boards/.hidden ]; then
  fail "a folder was made from a refused name: $(find . -name escaped -o -name .hidden | tr '\n' ' ')"
else
  pass "nothing was made from a refused name"
fi
[ "$fails" -eq 0 ]
