#!/usr/bin/env bash
# Builds a bootable qemuarm64 disk image, without root or loop devices: a
# sparse file, the GPT of layout.sfdisk, then each partition made as a
# separate file (mkfs.vfat -C + mcopy, mke2fs -d, mkenvimage) and copied in
# at its offset with dd conv=notrunc.
#
# Usage: build-image.sh --out DISK --rootfs-a DIR [--rootfs-b DIR] [--data DIR]
#                       [--kernel] [--env FILE]
#                       [--boot-mib N] [--slot-mib N] [--data-mib N]
#   --rootfs-a/-b  the slots' contents; each /boot must hold vmlinuz and
#                  initrd.img, unless --kernel adds them. Without --rootfs-b
#                  slot B is an empty file system and out of BOOT_ORDER.
#   --data         contents of the data partition (default: empty)
#   --kernel       add Debian's arm64 kernel (fetched into .cache by
#                  scripts/fetch-board-debs.sh when missing) and an initramfs
#                  made by mkinitramfs.sh to each slot's /boot
#   --env FILE     the boot-control variables, NAME=value lines; default
#                  BOOT_ORDER=A B, 3 attempts each (A only with no --rootfs-b)
#   --*-mib        partition sizes, default from board.conf
# Both environment copies get the same variables: copy 0 flags 1, copy 1
# flags 0, so copy 0 is current and either copy alone is valid.
set -euo pipefail
bdir=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$bdir/../.." && pwd)
# shellcheck source=/dev/null
. "$bdir/board.conf"

usage() {
	sed -n '/^# Usage:/,/^# Both/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}
out='' rootfs_a='' rootfs_b='' data='' kernel=0 envfile='' kr=''
boot_mib=$EQ_BOARD_BOOT_MIB slot_mib=$EQ_BOARD_SLOT_MIB data_mib=$EQ_BOARD_DATA_MIB
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=${2:?}; shift 2 ;;
	--rootfs-a) rootfs_a=${2:?}; shift 2 ;;
	--rootfs-b) rootfs_b=${2:?}; shift 2 ;;
	--data) data=${2:?}; shift 2 ;;
	--kernel) kernel=1; shift ;;
	--env) envfile=${2:?}; shift 2 ;;
	--boot-mib) boot_mib=${2:?}; shift 2 ;;
	--slot-mib) slot_mib=${2:?}; shift 2 ;;
	--data-mib) data_mib=${2:?}; shift 2 ;;
	*) usage ;;
	esac
done
[ -n "$out" ] && [ -n "$rootfs_a" ] || usage
die() { echo "build-image: $*" >&2; exit 1; }
for n in "$boot_mib" "$slot_mib" "$data_mib"; do
	[[ "$n" =~ ^[1-9][0-9]*$ ]] || die "partition size '$n' is not a number of MiB"
done
for d in "$rootfs_a" ${rootfs_b:+"$rootfs_b"} ${data:+"$data"}; do
	[ -d "$d" ] || die "no directory $d"
done
for d in "$rootfs_a" ${rootfs_b:+"$rootfs_b"}; do
	for f in vmlinuz initrd.img; do
		if [ $kernel = 1 ]; then
			[ ! -e "$d/boot/$f" ] || die "$d/boot/$f exists and --kernel would add another one"
		else
			[ -f "$d/boot/$f" ] || die "$d/boot/$f missing (pass --kernel to add the board's)"
		fi
	done
done
[ -z "$envfile" ] || [ -f "$envfile" ] || die "no environment file $envfile"

w=$(mktemp -d "${TMPDIR:-/tmp}/eq-arm64-image.XXXXXX")
trap 'rm -rf "$w" "$out.tmp"' EXIT

if [ $kernel = 1 ]; then
	cache=${EQ_CACHE_DIR:-$top/.cache}/boards/qemuarm64
	kr=$(cat "$cache/kernel-release" 2>/dev/null || true)
	if [ -z "$kr" ] || [ ! -f "$cache/root/boot/vmlinuz-$kr" ] || [ ! -f "$cache/root/bin/busybox" ]; then
		"$top/scripts/fetch-board-debs.sh" qemuarm64 "$cache" >&2
		kr=$(cat "$cache/kernel-release")
	fi
	"$bdir/mkinitramfs.sh" --modules "$cache/root/lib/modules/$kr" --busybox "$cache/root/bin/busybox" \
		--out "$w/initrd.img"
	cp "$cache/root/boot/vmlinuz-$kr" "$w/vmlinuz"
fi

# The disk: 1 MiB for the GPT and alignment, the partitions (the env
# partition still takes a whole MiB because sfdisk aligns the next one),
# 1 MiB for the backup GPT.
env_kib=$EQ_BOARD_ENV_KIB
disk_mib=$((1 + boot_mib + 2 * slot_mib + (env_kib + 1023) / 1024 + data_mib + 1))
rm -f "$out.tmp"
truncate -s "${disk_mib}M" "$out.tmp"
sed -e "s/@BOOT_SIZE@/${boot_mib}MiB/" -e "s/@SLOT_SIZE@/${slot_mib}MiB/g" \
	-e "s/@ENV_SIZE@/${env_kib}KiB/" -e "s/@DATA_SIZE@/${data_mib}MiB/" \
	"$bdir/layout.sfdisk" | sfdisk -q "$out.tmp"

put() { # put PARTNO FILE: FILE into partition PARTNO, which it must fit
	local start sectors
	read -r start sectors < <(partx -g -o START,SECTORS -n "$1" "$out.tmp")
	[ "$(stat -c %s "$2")" -le $((sectors * 512)) ] || die "partition $1: $2 is larger than $((sectors * 512)) bytes"
	dd if="$2" of="$out.tmp" bs=1M oflag=seek_bytes seek=$((start * 512)) conv=notrunc,sparse status=none
}

# 1: boot.scr on FAT.
mkimage -A arm64 -O linux -T script -C none -n "eqota qemuarm64 boot" -d "$bdir/boot.cmd" "$w/boot.scr" >/dev/null
mkfs.vfat -C -n BOOT "$w/boot.img" $((boot_mib * 1024)) >/dev/null
mcopy -i "$w/boot.img" "$w/boot.scr" ::boot.scr
put 1 "$w/boot.img"

slotfs() { # slotfs LABEL DIR|'' FILE
	rm -f "$3"; truncate -s "${slot_mib}M" "$3"
	mke2fs -q -F -t ext4 -L "$1" -E root_owner=0:0 ${2:+-d "$2"} "$3"
	if [ $kernel = 1 ] && [ -n "$2" ]; then
		# debugfs adds the kernel without copying the whole tree or needing root.
		debugfs -w -f - "$3" >/dev/null 2>"$w/debugfs.log" <<-EOF
			mkdir boot
			write $w/vmlinuz boot/vmlinuz
			write $w/initrd.img boot/initrd.img
			sif boot/vmlinuz uid 0
			sif boot/vmlinuz gid 0
			sif boot/initrd.img uid 0
			sif boot/initrd.img gid 0
		EOF
		# Besides its banner, debugfs only complains; mkdir fails harmlessly
		# when the tree has a /boot already.
		grep -v -e '^debugfs [0-9]' -e 'mkdir: .*File exists' "$w/debugfs.log" > "$w/debugfs.err" || true
		[ ! -s "$w/debugfs.err" ] || die "adding the kernel to $1: $(cat "$w/debugfs.err")"
	fi
}
slotfs rootfs-a "$rootfs_a" "$w/slot.img"
put 2 "$w/slot.img"
slotfs rootfs-b "$rootfs_b" "$w/slot.img"
put 3 "$w/slot.img"
rm -f "$w/slot.img"

# 4: the boot-control environment, both redundant copies.
if [ -z "$envfile" ]; then
	envfile=$w/env.txt
	if [ -n "$rootfs_b" ]; then
		printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=%s\nBOOT_B_LEFT=%s\n' "$EQ_BOARD_GOOD_ATTEMPTS" "$EQ_BOARD_GOOD_ATTEMPTS"
	else
		printf 'BOOT_ORDER=A\nBOOT_A_LEFT=%s\nBOOT_B_LEFT=0\n' "$EQ_BOARD_GOOD_ATTEMPTS"
	fi > "$envfile"
fi
"$bdir/envpart.sh" mkcopy "$envfile" 1 "$w/copy0"
"$bdir/envpart.sh" mkcopy "$envfile" 0 "$w/copy1"
cat "$w/copy0" "$w/copy1" > "$w/env.img"
put 4 "$w/env.img"

# 5: data.
truncate -s "${data_mib}M" "$w/data.img"
mke2fs -q -F -t ext4 -L data -E root_owner=0:0 ${data:+-d "$data"} "$w/data.img"
put 5 "$w/data.img"

mv "$out.tmp" "$out"
echo "build-image: $out (${disk_mib} MiB): slots of ${slot_mib} MiB${kr:+, kernel $kr}"
