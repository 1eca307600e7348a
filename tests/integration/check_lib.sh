#!/usr/bin/env bash
# integration.check_lib: lib/check.sh, the PASS/FAIL scaffolding of the
# shell tests, does what its header says; in particular setup_step stops a
# test at a failed setup step with its own SETUP FAILED line, instead of
# letting it show up later as a check's confusing failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib/check.sh
. "$here/lib/check.sh"

# in_test SCRIPT: runs SCRIPT in a fresh bash that sourced check.sh; prints
# its output, then "rc=N".
in_test() {
	local rc=0 o
	o=$(bash -c ". '$here/lib/check.sh'; $1" 2>&1) || rc=$?
	printf '%s\nrc=%s\n' "$o" "$rc"
}
want() { # NAME SUBSTRING OUTPUT
	if grep -qF -- "$2" <<<"$3"; then pass "$1"; else fail "$1: no '$2' in: $3"; fi
}

o=$(in_test 'setup_step "make the thing" 0 false; echo "after the step"; exit 0')
want "a failed setup step stops the test" "rc=1" "$o"
want "a failed setup step says so" "SETUP FAILED: make the thing: exit 1, expected 0" "$o"
if grep -q "after the step" <<<"$o"; then fail "the test went on after a failed setup step"; else pass "nothing after a failed setup step runs"; fi
o=$(in_test 'setup_step "exit 3 on purpose" 3 sh -c "exit 3"; echo "after the step"')
want "a setup step with its expected status goes on" "after the step" "$o"
o=$(in_test 'setup_step "a noisy step" 0 sh -c "echo why it broke; exit 2"')
want "a failed setup step shows the command's output" "why it broke" "$o"

o=$(in_test 'fail one; pass two; fail three; echo "fails=$fails"')
want "fail counts, pass does not" "fails=2" "$o"
o=$(in_test 'run "exit 4" 4 sh -c "exit 4" && echo ok4; run "exit 0" 1 true || echo "status $?"; echo "fails=$fails"')
want "run: the expected status" "ok4" "$o"
want "run: another status is a FAIL with status 1" "status 1" "$o"
o=$(in_test 'refused "r" "no such" sh -c "echo no such thing; exit 1"; refused "r2" "no such" true; echo "fails=$fails"')
want "refused: exit 1 with the message passes" "PASS: r: refused (no such)" "$o"
want "refused: success is a FAIL" "fails=1" "$o"
o=$(in_test 'expect_fail "e" "bad" sh -c "echo bad; exit 5"; expect_fail "e2" "bad" true; echo "fails=$fails"')
want "expect_fail: any failure with the message passes" "PASS: e: bad" "$o"
want "expect_fail: success is a FAIL" "fails=1" "$o"
o=$(in_test 'ok "o" echo hi; echo "out=$out"; ok "o2" false; echo "fails=$fails"')
want "ok: output in \$out" "out=hi" "$o"
want "ok: failure is a FAIL" "fails=1" "$o"
[ "$fails" -eq 0 ]
