#!/usr/bin/env bash
# eq-blctl on the file backend: every command, the garbled exit code and
# usage errors, so the board tests can trust what it prints.
# Usage: blctl.sh EQ_BLCTL
set -euo pipefail
blctl=${1:?usage: blctl.sh EQ_BLCTL}
w=$(mktemp -d /tmp/eq-blctl.XXXXXX)
trap 'rm -rf "$w"' EXIT
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
bl() { "$blctl" --backend file --path "$w/env" "$@"; }
expect() { # expect "STATE" "PICK" description
  local got; got=$(bl get)
  [ "$got" = "$1"$'\n'"pick=$2" ] && pass "$3" || fail "$3: got '$got'"
}

rc=0; bl get 2>"$w/err" || rc=$?
[ $rc -eq 1 ] && grep -q "$w/env" "$w/err" && pass "no environment: exit 1 naming the file" || fail "missing: rc $rc"
bl init-default A && expect "order=A a_left=3 b_left=0 trial=" A "init-default A"
rc=0; bl try-once A 2>"$w/err" || rc=$?
[ $rc -eq 1 ] && [ -s "$w/err" ] && pass "try-once A refused: B is no fallback" || fail "try-once without fallback: rc $rc"
bl set "A B" 3 3 - && expect "order=A B a_left=3 b_left=3 trial=" A "set"
bl try-once B && expect "order=B A a_left=3 b_left=2 trial=B" B "try-once B: the default 2 attempts"
bl mark-good B && expect "order=B A a_left=3 b_left=3 trial=" B "mark-good B"
bl mark-bad A && expect "order=B a_left=0 b_left=3 trial=" B "mark-bad A"
bl set "B A" 0 0 B && expect "order=B A a_left=0 b_left=0 trial=B" - "set, nothing bootable"
rc=0; bl set "A B" 1 2 - --good-attempts 5 2>/dev/null || rc=$?
[ $rc -eq 2 ] && pass "extra arguments after the command are a usage error" || fail "extra args: rc $rc"
rc=0; bl set "A A" 1 1 - 2>"$w/err" || rc=$?
[ $rc -eq 1 ] && grep -q "set:" "$w/err" && pass "a slot twice in the order is refused by the library" || fail "'A A': rc $rc"
"$blctl" --backend file --path "$w/env" --good-attempts 5 set "A B" 1 2 - &&
  "$blctl" --backend file --path "$w/env" --good-attempts 5 rearm A &&
  expect "order=A B a_left=5 b_left=2 trial=" A "rearm with --good-attempts 5"
printf 'BOOT_ORDER=C A\nBOOT_A_LEFT=x\nBOOT_B_LEFT=2\n' > "$w/env"
rc=0; out=$(bl get 2>"$w/err") || rc=$?
[ $rc -eq 3 ] && [ "$out" = $'order=A a_left=0 b_left=2 trial=\npick=-' ] && grep -q "BOOT_ORDER='C A'" "$w/err" &&
  pass "garbled: exit 3, message, state as a script reads it" || fail "garbled: rc $rc '$out' $(cat "$w/err")"
for args in "set A 10 1 -" "try-once C" "frob A" ""; do
  rc=0; eval bl "$args" 2>/dev/null || rc=$?
  [ $rc -eq 2 ] && pass "usage error: '$args'" || fail "'$args': rc $rc"
done
rc=0; "$blctl" --backend nosuch --path "$w/env" get 2>"$w/err" || rc=$?
[ $rc -eq 1 ] && grep -q "nosuch" "$w/err" && pass "unknown backend named" || fail "unknown backend: rc $rc"

[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
