#!/usr/bin/env bash
# Builds the initramfs each slot carries as /boot/initrd.img: a static
# busybox, the modules named in board.conf (EQ_BOARD_INITRAMFS_MODULES, in
# that load order) and initramfs-init as /init. A gzip'd newc cpio, made
# without root: cpio -R 0:0 makes every entry root-owned, and /dev/console
# is not needed because the init mounts devtmpfs first.
#
# Usage: mkinitramfs.sh --modules DIR --busybox FILE --out FILE
#   --modules  the kernel's module tree, e.g. ROOT/lib/modules/6.1.0-NN-arm64
#   --busybox  an arm64 busybox-static binary
set -euo pipefail
bdir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$bdir/board.conf"

usage() { echo "usage: mkinitramfs.sh --modules DIR --busybox FILE --out FILE" >&2; exit 2; }
moddir='' busybox='' out=''
while [ $# -gt 0 ]; do
	case "$1" in
	--modules) moddir=${2:?}; shift 2 ;;
	--busybox) busybox=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	*) usage ;;
	esac
done
[ -n "$moddir" ] && [ -n "$busybox" ] && [ -n "$out" ] || usage
[ -d "$moddir" ] || { echo "mkinitramfs: no module tree $moddir" >&2; exit 1; }
[ -f "$busybox" ] || { echo "mkinitramfs: no busybox at $busybox" >&2; exit 1; }

w=$(mktemp -d "${TMPDIR:-/tmp}/eq-initramfs.XXXXXX")
trap 'rm -rf "$w"' EXIT
mkdir -p "$w/bin" "$w/dev" "$w/proc" "$w/sys" "$w/newroot" "$w/lib/modules"
install -m 0755 "$busybox" "$w/bin/busybox"
# Only the applets /init calls; the host cannot run an arm64 busybox to
# ask it for the whole list.
for a in sh mount umount insmod sleep reboot cat switch_root readlink; do
	ln -s busybox "$w/bin/$a"
done
install -m 0755 "$bdir/initramfs-init" "$w/init"

: > "$w/lib/modules/load-order"
for m in $EQ_BOARD_INITRAMFS_MODULES; do
	f=$(find "$moddir" -name "$m.ko" -print -quit)
	[ -n "$f" ] || { echo "mkinitramfs: module $m.ko not found under $moddir" >&2; exit 1; }
	install -m 0644 "$f" "$w/lib/modules/$m.ko"
	echo "$m" >> "$w/lib/modules/load-order"
done

mkdir -p "$(dirname "$out")"
# Sorted names, fixed mtimes and --reproducible (no inode or device
# numbers) make the archive the same on every build.
find "$w" -exec touch -h -d @0 {} +
(cd "$w" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --reproducible --quiet) | gzip -9 -n > "$out.tmp"
mv "$out.tmp" "$out"
