#!/usr/bin/env bash
# Every eqota-gen command refuses every option it does not take, with a usage
# error naming the option and the command, before it does any work (issue 30:
# `publish --dry-run` and `promote --dry-run` used to publish). The commands
# and their options come from the program's own table (the hidden
# --list-commands and --list-options), so a command or an option added later
# is walked too. Each command's --help, its synopsis in the manual page and in
# docs/eqota-gen.md, and the bash completion name exactly the options it takes.
# Usage: gen_options.sh EQOTA_GEN SOURCE_DIR
set -Eeuo pipefail
gen=$1 src=$2
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to build the packages"; exit 77; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
# shellcheck source=tests/integration/lib/tarpkg.sh
. "$src/tests/integration/lib/tarpkg.sh"
# An option taken by mistake may write: only ever here.
export HOME=$w XDG_CACHE_HOME=$w/cache XDG_DATA_HOME=$w/data

die() { echo "FAIL: $*"; exit 1; }
# ---- the explicit cases: a dry run of publish or promote changes nothing.
"$gen" keygen --out rel >/dev/null
mkdir p1
tarpkg p1/hello_1.tar usr/share/hello/data "hello 1"
B=(--repo repo --board tb --key rel.key --store s.db --level 1)
"$gen" -q publish "${B[@]}" --channel testing --release r1 --packages p1 >/dev/null ||
  die "setup: publishing release r1 failed"
snap() { find repo -printf '%p %s %T@\n' | sort | sha256sum; }
before=$(snap)
run "publish --dry-run" 2 "$gen" publish "${B[@]}" --channel testing --release r2 --packages p1 --dry-run &&
  { grep -qF "eqota-gen publish: option --dry-run is not taken by this command" <<<"$out" &&
    pass "publish --dry-run: refused" || fail "publish --dry-run: $out"; }
run "promote --dry-run" 2 "$gen" promote --repo repo --board tb --key rel.key --level 1 --from-channel testing \
  --release r1 --to-channel stable --dry-run &&
  { grep -qF "eqota-gen promote: option --dry-run is not taken by this command" <<<"$out" &&
    pass "promote --dry-run: refused" || fail "promote --dry-run: $out"; }
[ "$(snap)" = "$before" ] && [ ! -e repo/boards/tb/stable ] && pass "the repository is unchanged" ||
  fail "a refused dry run changed the repository"
# The option after the operands, and abbreviated, is refused just as well.
run "publish --dry" 2 "$gen" publish "${B[@]}" --channel testing --release r2 --packages p1 --dry &&
  { grep -qF "option --dry-run is not taken" <<<"$out" && pass "publish --dry: refused" || fail "publish --dry: $out"; }
[ "$(snap)" = "$before" ] || fail "publish --dry changed the repository"
# And the commands still work with what they take.
run "publish" 0 "$gen" -q publish "${B[@]}" --channel testing --release r2 --packages p1 -j 1 &&
  pass "publish with the options it takes"
run "prune --dry-run" 0 "$gen" prune --repo repo --keep 1 --dry-run && pass "prune takes --dry-run"

cmds=$("$gen" --list-commands) || die "eqota-gen --list-commands failed: $cmds"
all=$("$gen" --list-options) || die "eqota-gen --list-options failed: $all"
# The walk below proves nothing if the lists came out empty or cut short.
[ "$(wc -l <<<"$cmds")" -ge 19 ] || die "--list-commands printed $(wc -l <<<"$cmds") commands: $cmds"
[ "$(wc -l <<<"$all")" -ge 55 ] || die "--list-options printed $(wc -l <<<"$all") options"
grep -qx -- "--dry-run" <<<"$all" || die "--list-options lacks --dry-run"

# words LINE: the command's words (before the first option); opts LINE: its
# options as --name (an argument's "=" dropped), one a line, sorted.
words() { local x out=""; for x in $1; do [[ $x == --* ]] && break; out="$out${out:+ }$x"; done; echo "$out"; }
opts() { local x; for x in $1; do [[ $x == --* ]] && echo "${x%=}"; done | sort -u; }
# same NAME WANT GOT: two sorted lists of options are equal.
same() {
  local d; d=$({ diff <(echo "$2") <(echo "$3") || true; } | sed -n 's/^</ lacks/p; s/^>/ has, not taken:/p' | tr -d '\n')
  [ -z "$d" ] && pass "$1 names exactly the options the command takes" || fail "$1:$d"
}

# ---- the walk: every command with every option it does not take, and with
# every option it takes (which must not be refused as not taken).
# One eqota-gen per pair, some 1,100: it stops at the first option it
# refuses, so pairs cannot share a run, and each run of a taken option
# takes its own early path through the command. Under the sanitizers most
# of a run is LeakSanitizer's scan at exit (a usage error: 95 ms without
# it, 254 ms with it, on a loaded 2-core machine); it stays on, since it
# is what checks these paths for leaks.
walked=0 taken=0
mapfile -t every <<<"$all"
while read -r line; do
  cmd=$(words "$line")
  # shellcheck disable=SC2086 # the command's words are separate arguments
  set -- $cmd
  bad=""
  for o in "${every[@]}"; do
    name=${o%=}
    arg=(); [ "$o" != "$name" ] && arg=(1)
    rc=0
    err=$("$gen" "$@" "$name" "${arg[@]}" 2>&1 >/dev/null) || rc=$?
    if [[ " $line " == *" $o "* ]]; then
      [[ $err != *"is not taken"* ]] || bad="$bad $name(refused although taken)"
      taken=$((taken + 1))
      continue
    fi
    want="eqota-gen $cmd: option $name is not taken by this command"
    [ "$rc" -eq 2 ] && [[ $err == *"$want"* ]] || bad="$bad $name(exit $rc: ${err%%$'\n'*})"
    walked=$((walked + 1))
  done
  # -j is --jobs: refused alike where --jobs is.
  if [[ " $line " != *" --jobs= "* ]]; then
    rc=0; err=$("$gen" "$@" -j 1 2>&1 >/dev/null) || rc=$?
    [ "$rc" -eq 2 ] && [[ $err == *"option --jobs is not taken"* ]] || bad="$bad -j(exit $rc)"
    walked=$((walked + 1))
  fi
  [ -z "$bad" ] && pass "$cmd refuses every option it does not take" || fail "$cmd:$bad"
done <<<"$cmds"
echo "walked $walked refused and $taken taken command/option pairs"

# ---- each command's --help: its usage lines name exactly its options.
while read -r line; do
  cmd=$(words "$line")
  # shellcheck disable=SC2086
  h=$("$gen" $cmd --help) || { fail "$cmd --help failed"; continue; }
  same "'$cmd --help'" "$(opts "$line")" "$(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$h" | sort -u)"
done <<<"$cmds"

# ---- bash completion: what it offers after each command.
complete_opts() {
  bash --norc --noprofile -c '
    source "$1"; shift
    COMP_WORDS=(eqota-gen "$@" --); COMP_CWORD=${#COMP_WORDS[@]}; COMP_CWORD=$((COMP_CWORD - 1))
    _eqota_gen
    printf "%s\n" "${COMPREPLY[@]}"' _ "$src/completion/eqota-gen" "$@"
}
while read -r line; do
  cmd=$(words "$line")
  # shellcheck disable=SC2086
  same "completion of '$cmd'" "$(opts "$line")" "$(complete_opts $cmd | sort -u)"
done <<<"$cmds"

# ---- the manual page and docs/eqota-gen.md: each command's synopsis.
# synopses FORMAT FILE: "command words<TAB>--option ..." per synopsis.
synopses() {
  python3 - "$1" "$2" "$(cut -d' ' -f1-2 <<<"$cmds" | sed 's/ --.*//')" <<'PY'
import re, sys
fmt, path, names = sys.argv[1], sys.argv[2], sys.argv[3].split("\n")
lines = open(path, encoding="utf-8").read().split("\n")
out = {}
def name_of(text):
    best = None
    for n in names:
        if text == n or text.startswith(n + " "):
            best = n if best is None or len(n) > len(best) else best
    return best
if fmt == "man":
    i = 0
    while i < len(lines):
        if lines[i] in (".TP", ".TQ") and i + 1 < len(lines):
            head = re.sub(r'^\.(BI?|BR)\s+"?', "", lines[i + 1]).replace("\\-", "-")
            n = name_of(head)
            if n:
                syn = [lines[i + 1]]
                j = i + 2
                while j < len(lines) and lines[j] not in (".br", ".TP", ".TQ") and \
                        (lines[j].startswith(".") and not lines[j].startswith(".SH") or lines[j][:1] in "|\\"):
                    syn.append(lines[j]); j += 1
                text = " ".join(syn).replace("\\-", "-").replace("\\fB", "").replace("\\fR", "")
                out.setdefault(n, set()).update(re.findall(r"--[a-z][a-z0-9-]*", text))
        i += 1
else:
    # Each command's first code block: its lines "eqota-gen NAME ..." and
    # their indented continuations (later blocks are examples).
    inblock, done, here, cur = False, set(), set(), None
    for l in lines:
        if l.startswith("```"):
            if inblock:
                done |= here
            inblock, here, cur = not inblock, set(), None
            continue
        if not inblock:
            continue
        if l.startswith("eqota-gen "):
            cur = name_of(" ".join(l[len("eqota-gen "):].split()))
            if cur in done:
                cur = None
            elif cur:
                here.add(cur)
        elif not l.startswith(" "):
            cur = None
        if cur:
            out.setdefault(cur, set()).update(re.findall(r"--[a-z][a-z0-9-]*", l))
for n in names:
    print(n + "\t" + " ".join(sorted(out.get(n, {"(no synopsis)"}))))
PY
}
for doc in "man $src/man/eqota-gen.1" "md $src/docs/eqota-gen.md"; do
  # shellcheck disable=SC2086
  syn=$(synopses $doc) || { fail "cannot read the synopses of ${doc#* }"; continue; }
  while read -r line; do
    cmd=$(words "$line")
    got=$(awk -F'\t' -v c="$cmd" '$1 == c { print $2 }' <<<"$syn" | tr ' ' '\n' | sort -u)
    same "$(basename "${doc#* }"): '$cmd'" "$(opts "$line")" "$got"
  done <<<"$cmds"
done

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "every command refuses every option it does not take"
