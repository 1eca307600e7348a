#!/usr/bin/env bash
# The boot-control environment of a qemuarm64 disk image, from the host:
# partition 4 holds two redundant U-Boot environment copies of
# EQ_BOARD_ENV_COPY_SIZE bytes at offsets 0 and that size. Each copy is
#   CRC32 (4 bytes, little endian, over the data) | flags (1 byte) |
#   data: NAME=value\0 ... \0\0, padded to the copy size.
# The current copy is the valid one, or of two valid ones the one with the
# higher flags, except that 0 follows 255 (U-Boot's env_import_redund and
# libubootenv agree on this); a writer writes the other copy with flags + 1.
#
# Usage: envpart.sh extract DISK FILE   partition 4 of DISK into FILE
#        envpart.sh write DISK FILE     FILE into partition 4 of DISK
#        envpart.sh config FILE         prints an fw_env.config for FILE (the
#                                       two copies), for fw_printenv -c and
#                                       eqota's uboot backend
#        envpart.sh mkcopy TEXT FLAGS OUT  one copy from NAME=value lines,
#                                       with flags byte FLAGS (0..255)
#        envpart.sh info FILE           "flags0 ok0 flags1 ok1 current" of an
#                                       extracted partition (ok: 1 valid CRC,
#                                       current: 0, 1 or - for none)
set -euo pipefail
bdir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$bdir/board.conf"
copy_size=$((EQ_BOARD_ENV_COPY_SIZE))
envpart=4

usage() { sed -n '/^# Usage:/,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
die() { echo "envpart: $*" >&2; exit 1; }

geometry() { # geometry DISK: "START_BYTES SIZE_BYTES" of the env partition
	local start sectors
	read -r start sectors < <(partx -g -o START,SECTORS -n "$envpart" "$1") ||
		die "$1: no partition $envpart"
	echo $((start * 512)) $((sectors * 512))
}

# copy_field FILE COPY: prints "flags ok" of copy 0 or 1.
copy_field() {
	local off=$(($2 * copy_size)) stored computed flags
	stored=$(od -An -tx1 -j "$off" -N 4 "$1" | tr -d ' \n')
	flags=$(od -An -tu1 -j $((off + 4)) -N 1 "$1" | tr -d ' \n')
	# gzip's trailer is the CRC32 of its input, little endian like U-Boot's.
	computed=$(dd if="$1" bs=4096 iflag=skip_bytes,count_bytes skip=$((off + 5)) count=$((copy_size - 5)) \
		status=none | gzip -c | tail -c 8 | od -An -tx1 | tr -d ' \n' | cut -c 1-8)
	if [ "$stored" = "$computed" ]; then echo "$flags 1"; else echo "$flags 0"; fi
}

cmd=${1:-}
case "$cmd" in
extract)
	[ $# -eq 3 ] || usage
	read -r off size < <(geometry "$2")
	dd if="$2" of="$3" bs=4096 iflag=skip_bytes,count_bytes skip="$off" count="$size" status=none
	;;
write)
	[ $# -eq 3 ] || usage
	read -r off size < <(geometry "$2")
	[ "$(stat -c %s "$3")" -le "$size" ] || die "$3 is larger than partition $envpart ($size bytes)"
	dd if="$3" of="$2" bs=4096 oflag=seek_bytes seek="$off" conv=notrunc status=none
	;;
config)
	[ $# -eq 2 ] || usage
	printf '# fw_env.config for %s (written by envpart.sh)\n' "$2"
	printf '%s 0x0 0x%x\n%s 0x%x 0x%x\n' "$2" "$copy_size" "$2" "$copy_size" "$copy_size"
	;;
mkcopy)
	[ $# -eq 4 ] || usage
	[[ "$3" =~ ^[0-9]+$ ]] && [ "$3" -le 255 ] || die "flags '$3' is not 0..255"
	mkenvimage -r -p 0 -s "$copy_size" -o "$4" "$2"
	# The flags byte is not covered by the CRC.
	printf '%b' "\\x$(printf %02x "$3")" | dd of="$4" bs=1 seek=4 conv=notrunc status=none
	;;
info)
	[ $# -eq 2 ] || usage
	read -r f0 ok0 < <(copy_field "$2" 0)
	read -r f1 ok1 < <(copy_field "$2" 1)
	cur=-
	if [ "$ok0" = 1 ] && [ "$ok1" = 1 ]; then
		if [ "$f0" = 255 ] && [ "$f1" = 0 ]; then cur=1
		elif [ "$f1" = 255 ] && [ "$f0" = 0 ]; then cur=0
		elif [ "$f1" -gt "$f0" ]; then cur=1
		else cur=0
		fi
	elif [ "$ok0" = 1 ]; then cur=0
	elif [ "$ok1" = 1 ]; then cur=1
	fi
	echo "$f0 $ok0 $f1 $ok1 $cur"
	;;
*) usage ;;
esac
