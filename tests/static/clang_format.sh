#!/usr/bin/env bash
# Every C file of the tree is formatted as .clang-format says
# (scripts/format.sh rewrites them). First it proves it can fail: a
# misformatted copy of a file must be reported.
# Usage: clang_format.sh SOURCE_DIR
set -euo pipefail
src=$1
. "$src/tests/static/lib.sh"
static_need clang-format
mkdir -p "$src/.cache"
planted=$(mktemp "$src/.cache/planted.XXXXXX.c")
trap 'rm -f "$planted"' EXIT
printf 'int  planted( int a ){return a+1;}\n' > "$planted"
if clang-format --dry-run --Werror --style=file "$planted" >/dev/null 2>&1; then
	echo "FAIL: clang-format accepted a misformatted file: the check itself is broken"
	exit 1
fi
static_sources "$src" > "${planted%.c}.list"
n=$(wc -l < "${planted%.c}.list")
if ! out=$(xargs clang-format --dry-run --Werror --style=file < "${planted%.c}.list" 2>&1); then
	files=$(grep -oE '^[^:]+\.[ch]:' <<<"$out" | sort -u | sed "s|^$src/||; s|:$||")
	echo "$out" | head -40
	echo "FAIL: not formatted as .clang-format says: $(echo $files) (run scripts/format.sh)"
	rm -f "${planted%.c}.list"
	exit 1
fi
rm -f "${planted%.c}.list"
echo "clang-format: all $n C files follow .clang-format"
