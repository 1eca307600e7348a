#!/usr/bin/env bash
# The manual pages (man/) and bash completion (completion/) agree with the
# programs they describe:
#   - each page renders without a single groff warning;
#   - every command and --option that `eqota --help` / `eqota-gen --help`
#     print is in the page, and every --option in the page is in --help;
#   - every key of the configuration parser (agent/config.c) is in
#     eqota.conf(5), every section too;
#   - the completion scripts offer the commands, each command's options and
#     every --option of --help.
# Usage: manpages.sh EQOTA EQOTA_GEN SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 src=$3
. "$src/tests/integration/lib/check.sh"

# ---- groff warnings
if command -v man >/dev/null && command -v groff >/dev/null; then
  for p in "$src"/man/*.[0-9]; do
    w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=all -E UTF-8 -l -Tutf8 -Z "$p" 2>&1 >/dev/null) || w="man failed: $w"
    [ -z "$w" ] && pass "$(basename "$p") renders without warnings" || fail "$(basename "$p"): $w"
  done
else
  echo "SKIP: man or groff not installed: the pages are not rendered (scripts/setup.sh installs man-db)"
  skipped=1
fi

# The page's text with roff's escapes undone: \- is -, font changes go.
text() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\e/\\/g' "$1"; }
# Commands (first word of an indented usage line) and --options of a help.
commands() { sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' <<<"$1" | sort -u; }
options() { grep -oE -- '--[a-z][a-z0-9-]*' <<<"$1" | sort -u; }
check_page() { # PAGE HELP
  local page=$1 help=$2 t missing="" extra="" w
  t=$(text "$page")
  for w in $(commands "$help") $(options "$help"); do
    grep -qE -- "(^|[^a-z-])$w([^a-z-]|$)" <<<"$t" || missing="$missing $w"
  done
  [ -z "$missing" ] && pass "$(basename "$page"): every command and option of --help is documented" ||
    fail "$(basename "$page") lacks:$missing"
  for w in $(options "$t"); do
    # --help and --version are the programs' own, not in the usage text.
    grep -qE -- "(^|[^a-z-])$w([^a-z-]|$)" <<<"$help --help --version" || extra="$extra $w"
  done
  [ -z "$extra" ] && pass "$(basename "$page"): every option it names exists" ||
    fail "$(basename "$page") names options --help does not have:$extra"
}
h_agent=$("$eqota" --help)
h_gen=$("$gen" --help)
check_page "$src/man/eqota.8" "$h_agent"
check_page "$src/man/eqota-gen.1" "$h_gen"

# ---- eqota.conf(5): every section and key of the parser's table
keys=$(sed -n 's/^\t{SEC_\([A-Z]*\), "\([^"]*\)",.*/\1 \2/p' "$src/agent/config.c")
[ "$(wc -l <<<"$keys")" -ge 30 ] || { fail "found only $(wc -l <<<"$keys") keys in agent/config.c: the extraction is broken"; keys=""; }
t=$(text "$src/man/eqota.conf.5")
missing=""
while read -r sec key; do
  [ -n "$key" ] || continue
  sec=$(tr 'A-Z' 'a-z' <<<"$sec")
  grep -qx "\.SH \[$sec\]" <<<"$t" || missing="$missing [$sec]"
  # The key must be named in its own section of the page.
  awk -v s="[$sec]" -v k="$key" '
    /^\.SH / { in_s = ($2 == s) }
    in_s && /^\.(B|BR|TP)/ { n = split($0, w, /[ ,"]+/); for (i = 1; i <= n; i++) if (w[i] == k) found = 1 }
    END { exit !found }' <<<"$t" || missing="$missing $sec.$key"
done <<<"$keys"
[ -z "$missing" ] && pass "eqota.conf.5: all $(wc -l <<<"$keys") keys of agent/config.c, each in its section" ||
  fail "eqota.conf.5 lacks:$(tr ' ' '\n' <<<"$missing" | sort -u | tr '\n' ' ')"

# ---- bash completion
# complete PROG WORDS...: what the completion offers for the last word.
complete_words() {
  local prog=$1; shift
  bash --norc --noprofile -c '
    source "$1"; shift
    fn=$(complete -p "$1" | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
    "$fn"
    printf "%s\n" "${COMPREPLY[@]}"' _ "$src/completion/$prog" "$prog" "$@"
}
expect_completion() { # WANT PROG WORDS...
  local want=$1 got; shift
  got=$(complete_words "$@" | sort | tr '\n' ' ')
  [ "$got" = "$want " ] && pass "completion of '$*': $got" || fail "completion of '$*': '$got', expected '$want'"
}
expect_completion "mark-bad mark-good" eqota ma
expect_completion "--reboot --retry" eqota update --re
expect_completion "A B" eqota provision --slot ''
expect_completion "--release --repo" eqota-gen publish --re
expect_completion "--unverified" eqota-gen equiv import --un
expect_completion "init" eqota-gen root in
for prog in eqota eqota-gen; do
  h=$("$prog" --help 2>/dev/null || true)
  [ "$prog" = eqota ] && h=$h_agent
  [ "$prog" = eqota-gen ] && h=$h_gen
  missing=""
  for w in $(commands "$h") $(options "$h"); do
    [ "$w" = "--*-threshold" ] && continue
    grep -qE -- "(^|[^a-z-])$w([^a-z-]|$)" "$src/completion/$prog" || missing="$missing $w"
  done
  [ -z "$missing" ] && pass "completion/$prog offers every command and option of --help" ||
    fail "completion/$prog lacks:$missing"
done

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
[ -z "${skipped:-}" ] || exit 77
echo "all manual page and completion checks passed"
