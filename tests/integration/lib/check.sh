# shellcheck shell=bash
# check.sh: PASS/FAIL lines for shell tests. Source it, then
#   pass MSG / fail MSG          print the line (fail counts in $fails)
#   expect_fail NAME SUBSTRING CMD...
#                                CMD must fail and print SUBSTRING
#   wait_for SECONDS CMD...      polls CMD every 0.1 s until it succeeds
#                                (status 1 when SECONDS pass first)
#   run NAME WANT_RC CMD...      CMD's output in $out; a FAIL line and status
#                                1 when CMD's exit status is not WANT_RC
#   refused NAME MESSAGE CMD...  CMD exits 1 and prints MESSAGE
#   ok NAME CMD...               CMD succeeds (output in $out)
#   setup_step NAME WANT_RC CMD...
#                                a step the later checks rely on: when
#                                CMD's exit status is not WANT_RC, stops the
#                                test (exit 1) with a SETUP FAILED line, so
#                                that it is not reported later as a check's
#                                confusing failure
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
run() {
  local name=$1 want=$2 rc=0; shift 2
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" -eq "$want" ]; then return 0; fi
  fail "$name: exit $rc, expected $want"; echo "$out" | tail -20; return 1
}
refused() {
  local name=$1 msg=$2; shift 2
  if run "$name" 1 "$@"; then
    if grep -qF -- "$msg" <<<"$out"; then pass "$name: refused ($msg)"; else fail "$name: message '$out'"; fi
  fi
}
ok() { # NAME CMD...: CMD succeeds (its output in $out)
  local name=$1; shift
  if out=$("$@" 2>&1); then pass "$name"; else fail "$name: $out"; fi
}
setup_step() {
  local name=$1 want=$2 rc=0 o; shift 2
  o=$("$@" 2>&1) || rc=$?
  [ "$rc" -eq "$want" ] && return 0
  echo "SETUP FAILED: $name: exit $rc, expected $want; the checks after it cannot run"
  echo "$o" | tail -20
  exit 1
}
