#!/usr/bin/env bash
# eq-simboot, the boot script of simulated devices, run as other tests run
# it: picks the first slot with attempts left, decrements only BOOT_TRIAL's
# counter and saves it before "booting", writes eqota.slot=<S>.
# Usage: simboot.sh EQ_SIMBOOT
set -euo pipefail
simboot=${1:?usage: simboot.sh EQ_SIMBOOT}
w=$(mktemp -d /tmp/eq-simboot.XXXXXX)
trap 'rm -rf "$w"' EXIT
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
env=$w/bootenv cmd=$w/cmdline
boot() { "$simboot" --env "$env" --cmdline "$cmd" "$@"; }
val() { sed -n "s/^$1=//p" "$env"; }

# A committed, B on trial with one attempt.
printf 'bootargs=quiet\nBOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=1\nBOOT_TRIAL=B\n' > "$env"
chmod 600 "$env"
s=$(boot)
[ "$s" = B ] && pass "trial slot B booted" || fail "booted '$s', expected B"
[ "$(cat "$cmd")" = "eqota.slot=B" ] && pass "command line names B" || fail "cmdline: $(cat "$cmd")"
[ "$(val BOOT_B_LEFT)" = 0 ] && pass "B's attempt saved before booting" || fail "BOOT_B_LEFT=$(val BOOT_B_LEFT)"
[ "$(val bootargs)" = quiet ] && pass "other variables kept" || fail "bootargs lost"
[ "$(stat -c %a "$env")" = 600 ] && pass "file mode kept" || fail "mode $(stat -c %a "$env")"
[ "$(ls "$w" | wc -l)" = 2 ] && pass "no temporary files left" || fail "left: $(ls "$w")"
s=$(boot)
[ "$s" = A ] && pass "B out of attempts: A booted" || fail "booted '$s', expected A"
[ "$(cat "$cmd")" = "eqota.slot=A" ] || fail "cmdline: $(cat "$cmd")"
for _ in 1 2 3 4; do boot >/dev/null; done
[ "$(val BOOT_A_LEFT)" = 3 ] && pass "a committed slot is never decremented" || fail "BOOT_A_LEFT=$(val BOOT_A_LEFT)"

# Both slots exhausted: committed slots of the order are re-armed, the
# trial slot is not, and the device boots.
printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=0\nBOOT_B_LEFT=0\nBOOT_TRIAL=\n' > "$env"
rc=0; out=$(boot 2>"$w/err") || rc=$?
[ $rc -eq 0 ] && [ "$out" = A ] && grep -q "no slot has attempts left.*re-arming" "$w/err" &&
  [ "$(val BOOT_A_LEFT)" = 3 ] && [ "$(val BOOT_B_LEFT)" = 3 ] &&
  pass "both exhausted, no trial: both re-armed, A booted" || fail "exhausted: rc $rc '$out' $(cat "$w/err") $(cat "$env")"
printf 'BOOT_ORDER=B A\nBOOT_A_LEFT=0\nBOOT_B_LEFT=0\nBOOT_TRIAL=B\n' > "$env"
rc=0; out=$(boot 2>"$w/err") || rc=$?
[ $rc -eq 0 ] && [ "$out" = A ] && [ "$(val BOOT_A_LEFT)" = 3 ] && [ "$(val BOOT_B_LEFT)" = 0 ] &&
  [ -z "$(val BOOT_TRIAL)" ] &&
  pass "both exhausted, B on trial: only A re-armed, trial cleared, A booted" || fail "exhausted trial: rc $rc '$out' $(cat "$env")"
rm -f "$w/err"
# Nothing to re-arm: the device stays off.
printf 'BOOT_ORDER=\nBOOT_A_LEFT=0\nBOOT_B_LEFT=0\nBOOT_TRIAL=\n' > "$env"
rm -f "$cmd"
rc=0; out=$(boot 2>&1) || rc=$?
[ $rc -eq 1 ] && grep -q "nothing to re-arm, the device stays off" <<<"$out" &&
  pass "empty order: exit 1 with a clear message" || fail "empty order: rc $rc '$out'"
[ ! -e "$cmd" ] && pass "no command line written when nothing boots" || fail "cmdline written"
# A trial that ran out with no fallback.
printf 'BOOT_ORDER=B\nBOOT_A_LEFT=0\nBOOT_B_LEFT=1\nBOOT_TRIAL=B\n' > "$env"
[ "$(boot)" = B ] || fail "last attempt of B"
rc=0; boot >/dev/null 2>&1 || rc=$?
[ $rc -eq 1 ] && pass "trial without fallback: one boot, then off" || fail "rc $rc"

# Garbled: read as a boot script reads it, with a warning, and not repaired.
printf 'BOOT_ORDER=C A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n' > "$env"
before=$(sha256sum < "$env")
rc=0; out=$(boot 2>"$w/err") || rc=$?
[ $rc -eq 0 ] && [ "$out" = A ] && grep -q "warning: .*BOOT_ORDER='C A': unknown slot 'C'" "$w/err" &&
  pass "garbled order: unknown slot skipped with a warning" || fail "garbled: rc $rc '$out' $(cat "$w/err")"
[ "$(sha256sum < "$env")" = "$before" ] && pass "a boot that decrements nothing writes nothing" || fail "env changed"
rm -f "$w/err"
# Missing counters: --good-attempts is the script's default.
printf 'BOOT_ORDER=B A\nBOOT_TRIAL=B\n' > "$env"
[ "$(boot --good-attempts 2 2>/dev/null)" = B ] && [ "$(val BOOT_B_LEFT)" = 1 ] &&
  pass "missing counter read as --good-attempts (2), then decremented" || fail "good-attempts: $(cat "$env")"
# A trial whose attempt cannot be saved is skipped for the fallback.
printf 'BOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=1\nBOOT_TRIAL=B\n\x01junk\n' > "$env"
rc=0; out=$(boot 2>"$w/err") || rc=$?
[ $rc -eq 0 ] && [ "$out" = A ] && grep -q "cannot save the attempt of trial slot B" "$w/err" &&
  pass "unsaveable attempt: the fallback boots" || fail "unsaveable: rc $rc '$out' $(cat "$w/err")"
rm -f "$w/err"

# No environment, bad usage.
rm -f "$env"
rc=0; out=$(boot 2>&1) || rc=$?
[ $rc -eq 1 ] && grep -q "no boot environment" <<<"$out" && pass "missing env: exit 1" || fail "missing: rc $rc '$out'"
rc=0; "$simboot" --env "$env" >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] && pass "usage error: exit 2" || fail "usage: rc $rc"
rc=0; boot --good-attempts 12 >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "--good-attempts 12 accepted"

echo "simboot: $fails failed"
[ "$fails" -eq 0 ]
