#!/usr/bin/env bash
# cppcheck over every translation unit of a build (its
# compile_commands.json), with the checked-in suppressions
# (.cppcheck/suppressions.txt) and inline "cppcheck-suppress ID ; reason"
# comments. Any finding fails. First it proves it can fail: a planted
# uninitialised read and NULL dereference must be reported.
# Usage: cppcheck.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
. "$src/tests/static/lib.sh"
static_need cppcheck
w=$(mktemp -d /tmp/eq-cppcheck.XXXXXX)
trap 'rm -rf "$w"' EXIT
# shellcheck disable=SC2054 # the commas are cppcheck's list syntax
args=(--enable=warning,style,performance,portability --std=c11 --inline-suppr --quiet --error-exitcode=1
	"--suppressions-list=$src/.cppcheck/suppressions.txt" --template='{file}:{line}: {severity}/{id}: {message}')

cat > "$w/planted.c" <<'C'
#include <stddef.h>
int planted(int k)
{
	int v;
	int *p = NULL;
	if (k > 1)
		return v;
	return *p;
}
C
if out=$(cppcheck "${args[@]}" "$w/planted.c" 2>&1); then
	echo "FAIL: cppcheck found nothing in a planted bug: the check itself is broken"
	exit 1
fi
grep -q uninitvar <<<"$out" && grep -q nullPointer <<<"$out" ||
	{ echo "FAIL: cppcheck missed a planted bug: $out"; exit 1; }
echo "cppcheck finds planted bugs: $(grep -c ': error/' <<<"$out") errors"

t0=$SECONDS
if ! cppcheck "${args[@]}" -j2 "--project=$build/compile_commands.json" "--cppcheck-build-dir=$w" \
	"-i$build" 2>"$w/findings"; then
	sed "s|^$src/||" "$w/findings"
	echo "FAIL: cppcheck: $(grep -c . "$w/findings") findings (fix them, or suppress one with a reason)"
	exit 1
fi
if [ -s "$w/findings" ]; then sed "s|^$src/||" "$w/findings"; echo "FAIL: cppcheck printed findings"; exit 1; fi
echo "cppcheck: $(static_units "$build" | wc -l) translation units clean in $((SECONDS - t0)) s"
