# shellcheck shell=bash
# check.sh: PASS/FAIL lines for shell tests. Source it, then
#   pass MSG / fail MSG          print the line (fail counts in $fails)
#   expect_fail NAME SUBSTRING CMD...
#                                CMD must fail and print SUBSTRING
#   wait_for SECONDS CMD...      polls CMD every 0.1 s until it succeeds
#                                (status 1 when SECONDS pass first)
# and end the test with `[ "$fails" -eq 0 ]`.
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect_fail() {
  local name=$1 want=$2 out; shift 2
  if out=$("$@" 2>&1); then fail "$name: succeeded"; echo "$out"; return; fi
  if grep -qF -- "$want" <<<"$out"; then pass "$name: $want"; else fail "$name: wanted '$want', got: $out"; fi
}
wait_for() {
  local t=$1 i; shift
  for ((i = 0; i < t * 10; i++)); do "$@" && return 0; sleep 0.1; done
  return 1
}
