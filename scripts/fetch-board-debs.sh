#!/usr/bin/env bash
# Downloads the Debian packages a board's test image is made of into the
# git-ignored cache and unpacks them (dpkg -x, no root needed):
#   .cache/boards/BOARD/debs/*.deb    the packages, for the board's architecture
#   .cache/boards/BOARD/root/         all of them unpacked into one tree
#   .cache/boards/BOARD/kernel-release   e.g. 6.1.0-57-cloud-amd64
# The board folder says what: boards/BOARD/board.conf sets EQ_BOARD_ARCH
# (amd64, arm64) and EQ_BOARD_KERNEL_META (a metapackage such as
# linux-image-cloud-amd64; the versioned kernel it depends on is resolved here
# because its ABI number changes with every security upload), and
# boards/BOARD/packages.list names the other packages, one or more a line,
# '#' comments. A foreign architecture is added to dpkg (and apt-get update
# run) the first time it is needed. Safe to run again: only missing packages
# are downloaded, and the tree is unpacked again only when a package changed.
# Usage: scripts/fetch-board-debs.sh BOARD [CACHE_DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/apt-wait.sh"
board=${1:?usage: fetch-board-debs.sh BOARD [CACHE_DIR]}
bdir=$top/boards/$board
[ -f "$bdir/board.conf" ] || { echo "fetch-board-debs: no board '$board' ($bdir/board.conf missing)" >&2; exit 1; }
# shellcheck source=/dev/null
. "$bdir/board.conf"
: "${EQ_BOARD_ARCH:?board.conf must set EQ_BOARD_ARCH}" "${EQ_BOARD_KERNEL_META:?board.conf must set EQ_BOARD_KERNEL_META}"
cache=${2:-$top/.cache/boards/$board}
mkdir -p "$cache/debs"
# One at a time per cache: the QEMU board test and image mode's
# integration test build the qemux86-64 kernel package at once, and one's
# unpack would pull the tree from under the other (seen in CI: "rm: cannot
# remove .../root/lib/modules/...: Directory not empty").
exec 9>"$cache/.lock"
flock 9

sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
native=$(dpkg --print-architecture)
if [ "$EQ_BOARD_ARCH" != "$native" ] && ! dpkg --print-foreign-architectures | grep -qx "$EQ_BOARD_ARCH"; then
  echo "fetch-board-debs: adding architecture $EQ_BOARD_ARCH to dpkg"
  $sudo dpkg --add-architecture "$EQ_BOARD_ARCH"
  eq_apt_get update -q
elif ! apt-cache show "$EQ_BOARD_KERNEL_META:$EQ_BOARD_ARCH" >/dev/null 2>&1; then
  eq_apt_get update -q
fi

kpkg=$(apt-cache depends "$EQ_BOARD_KERNEL_META:$EQ_BOARD_ARCH" | awk '/Depends: linux-image-/ {print $2; exit}')
kpkg=${kpkg%%:*}
[ -n "$kpkg" ] || { echo "fetch-board-debs: cannot resolve the kernel of $EQ_BOARD_KERNEL_META:$EQ_BOARD_ARCH" >&2; exit 1; }

mapfile -t pkgs < <(grep -v '^#' "$bdir/packages.list" 2>/dev/null | tr -s ' \n' '\n' | sed '/^$/d')
pkgs+=("$kpkg")

todo=()
for p in "${pkgs[@]}"; do
  v=$(apt-cache policy "$p:$EQ_BOARD_ARCH" | awk '/Candidate:/ {print $2}')
  [ -n "$v" ] && [ "$v" != "(none)" ] || { echo "fetch-board-debs: no package '$p' for $EQ_BOARD_ARCH in the apt lists" >&2; exit 1; }
  f=$cache/debs/${p}_${v//:/%3a}_
  compgen -G "$f*.deb" >/dev/null || todo+=("$p:$EQ_BOARD_ARCH=$v")
done
if [ ${#todo[@]} -gt 0 ]; then
  echo "fetch-board-debs: downloading ${#todo[@]} packages for $board into $cache/debs"
  (cd "$cache/debs" && apt-get download -q "${todo[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  for pv in "${todo[@]}"; do
    p=${pv%%:*}; v=${pv#*=}
    compgen -G "$cache/debs/${p}_${v//:/%3a}_*.deb" >/dev/null || { echo "fetch-board-debs: download of $pv failed" >&2; exit 1; }
  done
fi

# Unpack again only when the set of .debs changed.
stamp=$(ls "$cache/debs" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$cache/root.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$cache/root"; mkdir -p "$cache/root"
  for d in "$cache"/debs/*.deb; do dpkg -x "$d" "$cache/root"; done
  echo "$stamp" > "$cache/root.stamp"
fi
echo "${kpkg#linux-image-}" > "$cache/kernel-release"
echo "fetch-board-debs: $board ($EQ_BOARD_ARCH): kernel ${kpkg#linux-image-}, ${#pkgs[@]} packages in $cache"
