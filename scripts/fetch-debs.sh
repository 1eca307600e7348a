#!/usr/bin/env bash
# Downloads the device package set (tests/data/device-packages.list) from
# Debian's archive into the git-ignored cache and lays out two releases:
#   .cache/debs/pool/            every downloaded .deb
#   .cache/debs/release1/        links: the set, changed packages at their oldest version
#   .cache/debs/release2/        links: the set, changed packages at their newest version
#   .cache/debs/release{1,2}.index   build indexes "PACKAGE TASKHASH": release 2
#       gives every package a new taskhash, as a rebuild after a libc update does
# Usage: scripts/fetch-debs.sh [CACHE_DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/apt-wait.sh"
cache=${1:-$top/.cache/debs}
pool=$cache/pool
mkdir -p "$pool"

list() { grep -v '^#' "$1" | tr -s ' \n' '\n' | sed '/^$/d'; }
mapfile -t pkgs < <(list "$top/tests/data/device-packages.list")
mapfile -t changes < <(list "$top/tests/data/device-changes.list")

if ! apt-cache show libc6 >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  eq_apt_get update -q
fi

# One apt-cache call for the whole set; dpkg orders the few packages that
# have more than one version. Prints "PACKAGE OLDEST NEWEST".
resolve() {
  apt-cache madison "$@" | python3 -c '
import sys, subprocess, functools
vers = {}
for line in sys.stdin:
    f = [x.strip() for x in line.split("|")]
    if len(f) >= 3 and f[2]:
        vers.setdefault(f[0], set()).add(f[1])
def cmp(a, b):
    return -1 if subprocess.run(["dpkg", "--compare-versions", a, "lt", b]).returncode == 0 else 1
for name in sys.argv[1:]:
    vs = sorted(vers.get(name, ()), key=functools.cmp_to_key(cmp))
    if vs:
        print(name, vs[0], vs[-1])
' "$@"
}

is_change() { local p; for p in "${changes[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }

declare -A v1 v2
want=()
while read -r p oldest newest; do
  v2[$p]=$newest
  if is_change "$p"; then v1[$p]=$oldest; else v1[$p]=$newest; fi
  want+=("$p=${v1[$p]}")
  [ "${v1[$p]}" = "$newest" ] || want+=("$p=$newest")
done < <(resolve "${pkgs[@]}")
for p in "${pkgs[@]}"; do
  [ -n "${v2[$p]:-}" ] || { echo "fetch-debs: no version of '$p' in the apt lists" >&2; exit 1; }
done

# apt-get download names files NAME_VERSION_ARCH.deb with ':' escaped as %3a.
fname() { local p=$1 v=${2//:/%3a} f; for f in "$pool/${p}_${v}_"*.deb; do [ -e "$f" ] && echo "$f"; return 0; done; }
todo=()
for pv in "${want[@]}"; do
  [ -n "$(fname "${pv%%=*}" "${pv#*=}")" ] || todo+=("$pv")
done
if [ ${#todo[@]} -gt 0 ]; then
  echo "fetch-debs: downloading ${#todo[@]} packages into $pool"
  (cd "$pool" && apt-get download -q "${todo[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
fi

for r in 1 2; do
  dir=$cache/release$r
  rm -rf "$dir"; mkdir -p "$dir"
  : > "$cache/release$r.index"
  for p in "${pkgs[@]}"; do
    if [ $r = 1 ]; then v=${v1[$p]}; else v=${v2[$p]}; fi
    f=$(fname "$p" "$v")
    if [ -z "$f" ]; then echo "fetch-debs: download of $p=$v failed" >&2; exit 1; fi
    ln -s "$f" "$dir/"
    th=$(printf 'demo-build-%s/%s/%s' "$r" "$p" "$v" | sha256sum | cut -d' ' -f1)
    echo "$p $th" >> "$cache/release$r.index"
  done
done
n1=$(ls "$cache/release1" | wc -l)
changed=$(for p in "${pkgs[@]}"; do [ "${v1[$p]}" = "${v2[$p]}" ] || echo "$p ${v1[$p]} -> ${v2[$p]}"; done)
echo "fetch-debs: $n1 packages per release; changed between releases:"
echo "$changed" | sed 's/^/  /'
