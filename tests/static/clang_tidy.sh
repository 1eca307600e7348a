#!/usr/bin/env bash
# clang-tidy over every translation unit of a build (its
# compile_commands.json) with the checked-in .clang-tidy (tests/ adds
# tests/.clang-tidy); every enabled check is an error. First it proves it
# can fail: a planted misplaced strlen argument must be reported.
# Usage: clang_tidy.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
. "$src/tests/static/lib.sh"
static_need clang-tidy
w=$(mktemp -d "$src/.cache/eq-tidy.XXXXXX" 2>/dev/null || mktemp -d /tmp/eq-tidy.XXXXXX)
trap 'rm -rf "$w"' EXIT

# The planted file must sit below the source folder to get its .clang-tidy.
mkdir -p "$src/.cache"
planted=$(mktemp "$src/.cache/planted.XXXXXX.c")
trap 'rm -rf "$w" "$planted"' EXIT
cat > "$planted" <<'C'
#include <stdlib.h>
#include <string.h>
char *planted(const char *s)
{
	return malloc(strlen(s + 1));
}
C
if out=$(clang-tidy --quiet "$planted" -- -std=c11 2>&1); then
	echo "FAIL: clang-tidy found nothing in a planted bug: the check itself is broken"
	exit 1
fi
grep -q 'bugprone-misplaced-operator-in-strlen-in-alloc' <<<"$out" ||
	{ echo "FAIL: clang-tidy missed a planted bug: $out"; exit 1; }
echo "clang-tidy finds a planted bug (bugprone-misplaced-operator-in-strlen-in-alloc)"

t0=$SECONDS
static_units "$build" > "$w/units"
# One process per few files, two at a time: the machine has two cores.
if ! xargs -P2 -n4 clang-tidy -p "$build" --quiet < "$w/units" > "$w/findings" 2>"$w/stderr"; then
	grep -E 'warning:|error:' "$w/findings" | sed "s|^$src/||" | sort -u
	echo "FAIL: clang-tidy: $(grep -cE 'warning:|error:' "$w/findings") findings (fix them, or NOLINTNEXTLINE(check) with a reason)"
	exit 1
fi
echo "clang-tidy: $(wc -l < "$w/units") translation units clean in $((SECONDS - t0)) s"
