#!/usr/bin/env bash
# Checks every #include "<eq/...>" against the module graph of DESIGN.md:
# agent -> manifest, delta, bootloader; gen -> manifest, delta;
# manifest, delta, bootloader -> common; common -> nothing.
set -euo pipefail
top=${1:?usage: check_deps.sh SOURCE_DIR}
cd "$top"
allowed() {
  case "$1" in
    common) echo "common" ;;
    delta|bootloader|manifest) echo "common $1" ;;
    gen) echo "common manifest delta gen" ;;
    agent) echo "common manifest delta bootloader agent" ;;
  esac
}
module_of() {
  case "$1" in
    gen/*) echo gen ;;
    common/*|delta/*|bootloader/*|manifest/*|agent/*) echo "${1%%/*}" ;;
  esac
}
# A module may have more than one public header: <eq/gen_*.h> belong to gen,
# <eq/repo_layout.h> to manifest; any other <eq/NAME.h> to module NAME.
module_of_header() {
  case "$1" in
    gen_*) echo gen ;;
    repo_layout) echo manifest ;;
    *) echo "$1" ;;
  esac
}
bad=0
while IFS= read -r f; do
  m=$(module_of "$f")
  [ -n "$m" ] || continue
  ok=" $(allowed "$m") "
  while IFS= read -r inc; do
    dep=${inc#eq/}; dep=$(module_of_header "${dep%.h}")
    if [[ "$ok" != *" $dep "* ]]; then
      echo "check_deps: $f includes <$inc>, but module '$m' may only use:$ok"
      bad=1
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\(eq\/[a-z_]*\.h\)[>"].*/\1/p' "$f")
done < <(find common delta bootloader manifest agent gen -name '*.[ch]' 2>/dev/null | sort)
# A module's private headers must not be reached from another module.
while IFS= read -r f; do
  m=$(module_of "$f")
  [ -n "$m" ] || continue
  if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"\.\./' "$f"; then
    echo "check_deps: $f reaches into another folder with a relative include"
    bad=1
  fi
done < <(find common delta bootloader manifest agent gen -name '*.[ch]' 2>/dev/null | sort)
[ $bad -eq 0 ] && echo "check_deps: all includes follow the module graph"
exit $bad
