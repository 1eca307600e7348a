#!/usr/bin/env bash
# static.shellcheck: shellcheck at severity warning over every shell script of the tree
# (tests, scripts, bench, packaging, boards, .ci, completion), with the
# settings of .shellcheckrc and inline "shellcheck disable=SCxxxx # reason"
# comments. Any finding fails. First it proves it can fail: a planted
# script with an unused variable, an unassigned one and an unchecked cd
# must be reported, with the tree's .shellcheckrc in force.
# Usage: shellcheck.sh SOURCE_DIR
set -euo pipefail
src=$1
. "$src/tests/static/lib.sh"
static_need shellcheck
mkdir -p "$src/.cache"
w=$(mktemp -d "$src/.cache/shellcheck.XXXXXX")
trap 'rm -rf "$w"' EXIT
args=(-S warning -f gcc)

# Planted inside the tree so that the tree's .shellcheckrc applies to it
# (an rc that disabled these checks would fail here).
cat > "$w/planted.sh" <<'SH'
#!/bin/bash
unused=1
cd /nonexistent
echo "$never_assigned"
SH
if out=$(shellcheck "${args[@]}" "$w/planted.sh" 2>&1); then
	echo "FAIL: shellcheck found nothing in a planted script: the check itself is broken"
	exit 1
fi
for code in SC2034 SC2154 SC2164; do
	grep -q "\[$code\]" <<<"$out" || { echo "FAIL: shellcheck missed $code in a planted script: $out"; exit 1; }
done
echo "shellcheck finds planted bugs: $(grep -c . <<<"$out") findings"
rm -f "$w/planted.sh"

static_shell_scripts "$src" > "$w/list"
n=$(grep -c . "$w/list")
# A tree without its shell scripts would pass for the wrong reason.
[ "$n" -ge 50 ] || { echo "FAIL: only $n shell scripts found: the file list is broken"; exit 1; }
t0=$SECONDS
if ! out=$(cd "$src" && xargs -d '\n' -n 8 -P 2 shellcheck "${args[@]}" < "$w/list" 2>&1); then
	echo "$out" | sed "s|^$src/||" | head -80
	echo "FAIL: shellcheck: $(grep -c . <<<"$out") findings in $(grep -oE '^[^:]+:' <<<"$out" | sort -u | wc -l) files" \
		"(fix them, or disable one where it occurs with its reason)"
	exit 1
fi
echo "shellcheck: all $n shell scripts clean at severity warning in $((SECONDS - t0)) s"
