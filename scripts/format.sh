#!/usr/bin/env bash
# Formats every tracked C file with the house style (.clang-format).
# Usage: scripts/format.sh [--check]
#   --check   change nothing; list the files that differ and exit 1
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tests/static/lib.sh"
static_need clang-format
if [ "${1:-}" = --check ]; then
	exec bash "$top/tests/static/clang_format.sh" "$top"
fi
static_sources "$top" | xargs clang-format -i --style=file
echo "format: $(static_sources "$top" | wc -l) files formatted"
