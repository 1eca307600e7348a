#!/usr/bin/env bash
# Every command of eqota against every option it does not take: each must
# be a usage error (exit 2) naming the option and the command, given before
# any work (the configuration named here does not exist). Every option a
# command does take must pass that check and reach the configuration. The
# lists come from the binary's own table (eqota --list-commands), so a
# command or option added later is walked too; the bash completion must
# offer each command exactly the options of its row.
# Usage: agent_cli.sh EQOTA SOURCE_DIR [TABLE_EQOTA]
#   TABLE_EQOTA: read the table from this build instead (to try the walk
#   against an older eqota, which has no --list-commands).
set -Eeuo pipefail
eqota=$1 src=$2 table_from=${3:-$1}
. "$src/tests/integration/lib/check.sh"

table=$("$table_from" --list-commands) || { echo "FAIL: $table_from --list-commands failed"; exit 1; }
declare -A takes_value=()
all_opts=()
while read -r kind name value; do
  [ "$kind" = option ] || continue
  all_opts+=("$name")
  [ "${value:-}" = VALUE ] && takes_value[$name]=1
done <<<"$table"
[ "${#all_opts[@]}" -ge 8 ] || { echo "FAIL: only ${#all_opts[@]} options in --list-commands: the table is broken"; exit 1; }
ncmd=$(grep -c '^command ' <<<"$table")
[ "$ncmd" -ge 10 ] || { echo "FAIL: only $ncmd commands in --list-commands: the table is broken"; exit 1; }

# An argument for an option that wants one; the command never gets to
# look at it, since the configuration is read first.
value_of() {
  case $1 in
  --slot) echo A ;;
  --until) echo 2030-01-01T00:00:00Z ;;
  --for) echo 6h ;;
  *) echo r1 ;;
  esac
}
args_for() { # OPTION: the option and its argument if it takes one
  if [ -n "${takes_value[$1]:-}" ]; then printf '%s\n%s\n' "$1" "$(value_of "$1")"; else printf '%s\n' "$1"; fi
}

missing=/nonexistent/eqota-agent-cli.conf
refused_n=0 accepted_n=0
while read -r kind cmd opts; do
  [ "$kind" = command ] || continue
  read -ra own <<<"${opts:-}"
  for o in "${all_opts[@]}"; do
    mapfile -t a < <(args_for "$o")
    rc=0
    out=$("$eqota" --config "$missing" "$cmd" "${a[@]}" 2>&1) || rc=$?
    if [[ " ${own[*]} " == *" $o "* ]]; then
      # Taken: past the option check, the missing configuration stops it.
      if [ "$rc" -eq 2 ] && grep -qF "$missing" <<<"$out" && ! grep -qF "does not take" <<<"$out"; then
        accepted_n=$((accepted_n + 1))
      else
        fail "eqota $cmd ${a[*]}: exit $rc, expected the option to be taken: $(head -1 <<<"$out")"
      fi
    else
      if [ "$rc" -eq 2 ] && grep -qF "eqota: $cmd does not take the option '$o'" <<<"$out"; then
        refused_n=$((refused_n + 1))
      else
        fail "eqota $cmd ${a[*]}: exit $rc, expected a usage error naming '$o' and '$cmd': $(head -1 <<<"$out")"
      fi
    fi
  done
  # The completion offers exactly this row's options.
  got=$(bash --norc --noprofile -c '
    source "$1"
    COMP_WORDS=(eqota "$2" --); COMP_CWORD=2
    _eqota
    [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}"' _ "$src/completion/eqota" "$cmd" | sort | tr '\n' ' ')
  want=$(printf '%s\n' "${own[@]}" | sed '/^$/d' | sort | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "completion/eqota offers '$cmd' '$got', the table '$want'"
done <<<"$table"
[ "$refused_n" -gt 0 ] && pass "$refused_n options refused by the commands that do not take them, each naming both"
[ "$accepted_n" -gt 0 ] && pass "$accepted_n options taken by their commands"

# An option after the command that no command takes, and one missing its value.
run "unknown option" 2 "$eqota" --config "$missing" status --bogus &&
  { grep -qF "unknown argument '--bogus'" <<<"$out" && pass "status --bogus: unknown argument" ||
    fail "status --bogus: $out"; }
run "value missing" 2 "$eqota" --config "$missing" provision --slot &&
  { grep -qF "option '--slot' needs a value" <<<"$out" && pass "provision --slot: needs a value" ||
    fail "provision --slot: $out"; }

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all command-line option checks passed"
