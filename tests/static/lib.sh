# shellcheck shell=bash
# Shared by the static analysis tests: the C files of the tree and the
# translation units of a build.
#   static_sources SRC   every tracked .c and .h file (git ls-files, or find
#                        where the tree is not a git checkout)
#   static_units BUILD   the source files compile_commands.json names,
#                        outside the build folder
#   static_need TOOL     exit 77 (a CTest skip) when TOOL is missing
static_sources() {
	if git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$1" ls-files '*.c' '*.h' | sed "s|^|$1/|"
	else
		(cd "$1" && find common delta manifest gen bootloader agent tests -name '*.[ch]' | sed "s|^|$1/|")
	fi
}
static_units() {
	/usr/bin/python3 - "$1" <<'PY'
import json, os, sys
b = os.path.realpath(sys.argv[1])
seen = set()
for e in json.load(open(os.path.join(b, "compile_commands.json"))):
    f = os.path.realpath(os.path.join(e["directory"], e["file"]))
    if not f.startswith(b + "/") and f not in seen:
        seen.add(f)
        print(f)
PY
}
static_need() {
	command -v "$1" >/dev/null || { echo "SKIP: $1 is not installed (scripts/setup.sh installs it)"; exit 77; }
}
# static_shell_scripts SRC   every tracked shell script: *.sh, and files
#                            whose first line is a sh or bash #! or a
#                            "# shellcheck shell=" directive
static_shell_scripts() {
	local f first
	if git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$1" ls-files
	else
		(cd "$1" && find . -path ./.git -prune -o -path './build*' -prune -o -path ./.cache -prune -o -type f -print | sed 's|^\./||')
	fi | while IFS= read -r f; do
		[ -f "$1/$f" ] || continue
		case $f in
		*.sh) echo "$1/$f"; continue ;;
		*.c | *.h | *.py | *.md | *.json | *.cmake | *.txt | *.deb) continue ;;
		esac
		IFS= read -r first < "$1/$f" 2>/dev/null || continue
		case $first in
		'#!'*/sh | '#!'*/bash | '#!'*/dash | '#!'*'env bash' | '#!'*'env sh' | '#!'*/sh\ * | '#!'*/bash\ * | \
			'# shellcheck shell='*) echo "$1/$f" ;;
		esac
	done
}
