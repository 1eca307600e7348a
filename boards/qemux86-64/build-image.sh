#!/usr/bin/env bash
# Builds a bootable qemux86-64 disk image, without root or loop devices: a
# sparse file, the GPT of layout.sfdisk, then each partition made as a
# separate file (mkfs.vfat -C + mmd/mcopy, mke2fs -d + debugfs) and copied
# in at its offset with dd conv=notrunc.
#
# Usage: build-image.sh --out DISK --rootfs-a DIR [--rootfs-b DIR] [--data DIR]
#                       [--kernel] [--env FILE]
#                       [--esp-mib N] [--slot-mib N] [--data-mib N]
#   --rootfs-a/-b  the slots' contents; each /boot must hold vmlinuz, unless
#                  --kernel adds it. Without --rootfs-b slot B is an empty
#                  file system and out of BOOT_ORDER.
#   --data         contents of the data partition (default: empty)
#   --kernel       add Debian's cloud kernel (fetched into .cache by
#                  scripts/fetch-board-debs.sh when missing) to each slot's
#                  /boot, and its FAT modules (board.conf EQ_BOARD_MODULES)
#                  with a modules.dep to /lib/modules/RELEASE
#   --env FILE     the boot-control variables, NAME=value lines; default
#                  BOOT_ORDER=A B, 3 attempts each, BOOT_TRIAL empty (order A
#                  and BOOT_B_LEFT=0 with no --rootfs-b)
#   --*-mib        partition sizes, default from board.conf
# Both environment copies get the same variables, written by envtool.sh
# mkcopy in eqota's layout: copy 1 with sequence 1, copy 2 with sequence 0,
# so copy 1 is current, either copy alone is valid, and eqota's first write
# goes to copy 2 (sequence 2).
set -euo pipefail
bdir=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$bdir/../.." && pwd)
# shellcheck source=/dev/null
. "$bdir/board.conf"
export MTOOLS_SKIP_CHECK=1

usage() {
	sed -n '/^# Usage:/,/^# Both/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}
out='' rootfs_a='' rootfs_b='' data='' kernel=0 envfile='' kr=''
esp_mib=$EQ_BOARD_ESP_MIB slot_mib=$EQ_BOARD_SLOT_MIB data_mib=$EQ_BOARD_DATA_MIB
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=${2:?}; shift 2 ;;
	--rootfs-a) rootfs_a=${2:?}; shift 2 ;;
	--rootfs-b) rootfs_b=${2:?}; shift 2 ;;
	--data) data=${2:?}; shift 2 ;;
	--kernel) kernel=1; shift ;;
	--env) envfile=${2:?}; shift 2 ;;
	--esp-mib) esp_mib=${2:?}; shift 2 ;;
	--slot-mib) slot_mib=${2:?}; shift 2 ;;
	--data-mib) data_mib=${2:?}; shift 2 ;;
	*) usage ;;
	esac
done
[ -n "$out" ] && [ -n "$rootfs_a" ] || usage
die() { echo "build-image: $*" >&2; exit 1; }
for n in "$esp_mib" "$slot_mib" "$data_mib"; do
	[[ "$n" =~ ^[1-9][0-9]*$ ]] || die "partition size '$n' is not a number of MiB"
done
for d in "$rootfs_a" ${rootfs_b:+"$rootfs_b"} ${data:+"$data"}; do
	[ -d "$d" ] || die "no directory $d"
done
rootfs_a=$(cd "$rootfs_a" && pwd)
[ -z "$rootfs_b" ] || rootfs_b=$(cd "$rootfs_b" && pwd)
for d in "$rootfs_a" ${rootfs_b:+"$rootfs_b"}; do
	if [ $kernel = 1 ]; then
		[ ! -e "$d/boot/vmlinuz" ] || die "$d/boot/vmlinuz exists and --kernel would add another one"
	else
		[ -f "$d/boot/vmlinuz" ] || die "$d/boot/vmlinuz missing (pass --kernel to add the board's)"
	fi
done
[ -z "$envfile" ] || [ -f "$envfile" ] || die "no environment file $envfile"
for t in grub-mkimage sfdisk partx mke2fs debugfs mkfs.vfat mmd mcopy; do
	command -v "$t" >/dev/null || die "$t not installed (scripts/setup.sh)"
done
[ -d /usr/lib/grub/x86_64-efi ] || die "no GRUB EFI modules in /usr/lib/grub/x86_64-efi (package grub-efi-amd64-bin)"

w=$(mktemp -d "${TMPDIR:-/tmp}/eq-x86-image.XXXXXX")
trap 'rm -rf "$w" "$out.tmp"' EXIT

# The kernel and its FAT modules, staged as the tree they take in a slot.
if [ $kernel = 1 ]; then
	cache=${EQ_CACHE_DIR:-$top/.cache}/boards/qemux86-64
	kr=$(cat "$cache/kernel-release" 2>/dev/null || true)
	if [ -z "$kr" ] || [ ! -f "$cache/root/boot/vmlinuz-$kr" ]; then
		"$top/scripts/fetch-board-debs.sh" qemux86-64 "$cache" >&2
		kr=$(cat "$cache/kernel-release")
	fi
	mdir=$cache/root/lib/modules/$kr
	mkdir -p "$w/kernel/boot" "$w/kernel/lib/modules/$kr"
	cp "$cache/root/boot/vmlinuz-$kr" "$w/kernel/boot/vmlinuz"
	for m in $EQ_BOARD_MODULES; do
		f=$(find "$mdir" -name "$m.ko" -print -quit)
		[ -n "$f" ] || die "module $m.ko not found under $mdir"
		mkdir -p "$w/kernel/lib/modules/$kr/$(dirname "${f#"$mdir"/}")"
		cp "$f" "$w/kernel/lib/modules/$kr/${f#"$mdir"/}"
	done
	for f in modules.builtin modules.builtin.modinfo modules.order; do
		[ ! -f "$mdir/$f" ] || cp "$mdir/$f" "$w/kernel/lib/modules/$kr/"
	done
	# modules.dep lets busybox modprobe load vfat with its dependencies.
	if command -v depmod >/dev/null; then
		depmod -b "$w/kernel" "$kr"
	fi
fi

# The disk: 1 MiB for the GPT and alignment, the partitions, 1 MiB for the
# backup GPT.
disk_mib=$((1 + esp_mib + 2 * slot_mib + data_mib + 1))
rm -f "$out.tmp"
truncate -s "${disk_mib}M" "$out.tmp"
sed -e "s/@ESP_SIZE@/${esp_mib}MiB/" -e "s/@SLOT_SIZE@/${slot_mib}MiB/g" -e "s/@DATA_SIZE@/${data_mib}MiB/" \
	"$bdir/layout.sfdisk" | sfdisk -q "$out.tmp"

put() { # put PARTNO FILE: FILE into partition PARTNO, which it must fit
	local start sectors
	read -r start sectors < <(partx -g -o START,SECTORS -n "$1" "$out.tmp")
	[ "$(stat -c %s "$2")" -le $((sectors * 512)) ] || die "partition $1: $2 is larger than $((sectors * 512)) bytes"
	dd if="$2" of="$out.tmp" bs=1M oflag=seek_bytes seek=$((start * 512)) conv=notrunc,sparse status=none
}

# 1: the ESP: GRUB, grub.cfg, both environment copies.
# shellcheck disable=SC2086
grub-mkimage -O x86_64-efi -p "$EQ_BOARD_GRUB_PREFIX" -o "$w/BOOTX64.EFI" $EQ_BOARD_GRUB_MODULES
if [ -z "$envfile" ]; then
	envfile=$w/env.txt
	if [ -n "$rootfs_b" ]; then
		printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=%s\nBOOT_B_LEFT=%s\nBOOT_TRIAL=\n' "$EQ_BOARD_GOOD_ATTEMPTS" "$EQ_BOARD_GOOD_ATTEMPTS"
	else
		printf 'BOOT_ORDER=A\nBOOT_A_LEFT=%s\nBOOT_B_LEFT=0\nBOOT_TRIAL=\n' "$EQ_BOARD_GOOD_ATTEMPTS"
	fi > "$envfile"
fi
mapfile -t vars < <(sed -e '/^#/d' -e '/^$/d' "$envfile")
"$bdir/envtool.sh" mkcopy "$w/grubenv" 1 "${vars[@]}"
"$bdir/envtool.sh" mkcopy "$w/grubenv.2" 0 "${vars[@]}"
mkfs.vfat -C -n ESP "$w/esp.img" $((esp_mib * 1024)) >/dev/null
envdir=${EQ_BOARD_ENV_PATH%/*}
mmd -i "$w/esp.img" ::/EFI ::/EFI/BOOT "::$envdir"
mcopy -i "$w/esp.img" "$w/BOOTX64.EFI" ::/EFI/BOOT/BOOTX64.EFI
mcopy -i "$w/esp.img" "$bdir/grub.cfg" "::$EQ_BOARD_GRUB_PREFIX/grub.cfg"
mcopy -i "$w/esp.img" "$w/grubenv" "::$EQ_BOARD_ENV_PATH"
mcopy -i "$w/esp.img" "$w/grubenv.2" "::$EQ_BOARD_ENV_PATH.2"
put 1 "$w/esp.img"

slotfs() { # slotfs LABEL DIR|'' FILE
	rm -f "$3"; truncate -s "${slot_mib}M" "$3"
	mke2fs -q -F -t ext4 -L "$1" -E root_owner=0:0 ${2:+-d "$2"} "$3"
	if [ $kernel = 1 ] && [ -n "$2" ]; then
		# debugfs adds the staged tree without copying the slot's tree or
		# needing root. It does not follow symbolic links, so a merged-/usr
		# tree (lib -> usr/lib) gets the modules in usr/lib.
		local lib=lib
		if [ -L "$2/lib" ]; then
			lib=$(readlink "$2/lib")
			lib=${lib#/}
		fi
		(cd "$w/kernel" && find . -mindepth 1 -type d | LC_ALL=C sort | sed 's|^\./||' | while read -r d; do
			t=$d
			[ "${d%%/*}" != lib ] || t=$lib${d#lib}
			[ -d "$2/$t" ] || echo "mkdir $t"
		done
		cd "$w/kernel" && find . -type f | LC_ALL=C sort | sed 's|^\./||' | while read -r f; do
			t=$f
			[ "${f%%/*}" != lib ] || t=$lib${f#lib}
			echo "write $w/kernel/$f $t"
			echo "sif $t uid 0"
			echo "sif $t gid 0"
		done) > "$w/debugfs.cmd"
		debugfs -w -f "$w/debugfs.cmd" "$3" >/dev/null 2>"$w/debugfs.log"
		# Besides its banner, debugfs only complains.
		grep -v -e '^debugfs [0-9]' "$w/debugfs.log" > "$w/debugfs.err" || true
		[ ! -s "$w/debugfs.err" ] || die "adding the kernel to $1: $(cat "$w/debugfs.err")"
	fi
}
slotfs rootfs-a "$rootfs_a" "$w/slot.img"
put 2 "$w/slot.img"
slotfs rootfs-b "$rootfs_b" "$w/slot.img"
put 3 "$w/slot.img"
rm -f "$w/slot.img"

# 4: data.
truncate -s "${data_mib}M" "$w/data.img"
mke2fs -q -F -t ext4 -L data -E root_owner=0:0 ${data:+-d "$data"} "$w/data.img"
put 4 "$w/data.img"

mv "$out.tmp" "$out"
echo "build-image: $out (${disk_mib} MiB): slots of ${slot_mib} MiB${kr:+, kernel $kr}"
