#!/usr/bin/env bash
# Reads and writes the boot-control environment of a qemux86-64 disk image
# from the host, without root or loop devices: the two GRUB environment
# blocks on the EFI system partition (partition 1), copy 1 at
# EQ_BOARD_ENV_PATH (/EFI/eqota/grubenv) and copy 2 beside it with ".2",
# reached with mtools at the partition's byte offset (mcopy -i DISK@@OFFSET).
# The extracted copies are plain files: read them with grub-editenv FILE list
# or eq-blctl --backend grub --path DIR/grubenv get (which reads both).
#
# Each copy is a 1024-byte GRUB environment block in eqota's layout
# (docs/bootloader.md, "The grub backend"):
#   "# GRUB Environment Block\n" "EQ_SEQ=<n>\n" NAME=value lines, '#' up to
#   a '\n' at byte 511; at byte 512 "EQ_SEQ2=<n>\n", '#' up to byte 1023.
# A copy is valid when EQ_SEQ = EQ_SEQ2 (or neither is set: sequence 0);
# grub.cfg and eqota read the valid copy with the higher sequence, copy 1 on
# a tie.
#
# Usage: envtool.sh extract DISK DIR    both copies into DIR/grubenv and
#                                       DIR/grubenv.2 (a copy missing on the
#                                       ESP is missing in DIR)
#        envtool.sh inject DISK DIR     DIR/grubenv and DIR/grubenv.2 onto the
#                                       ESP; a copy missing in DIR is deleted
#                                       from the ESP
#        envtool.sh mkcopy OUT SEQ [NAME=value...]
#                                       one block in eqota's layout, the
#                                       variables in the order given; SEQ is
#                                       N (0..999999999), N:M (EQ_SEQ=N but
#                                       EQ_SEQ2=M: a torn write) or - (no
#                                       sequence numbers, as grub-editenv
#                                       writes: sequence 0)
#        envtool.sh offset DISK         byte offset of the ESP in DISK
set -euo pipefail
bdir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$bdir/board.conf"
esp=1
# mtools would otherwise reject a FAT whose size is no whole number of
# "tracks", which is the geometry mkfs.vfat -C gives small images.
export MTOOLS_SKIP_CHECK=1
export LC_ALL=C

usage() { sed -n '/^# Usage:/,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
die() { echo "envtool: $*" >&2; exit 1; }

offset() { # offset DISK: byte offset of the ESP
	local start
	start=$(partx -g -o START -n "$esp" "$1" 2>/dev/null) || die "$1: no partition $esp"
	echo $((start * 512))
}

# pad N: N '#' characters.
pad() { [ "$1" -le 0 ] || head -c "$1" /dev/zero | tr '\0' '#'; }

mkcopy() { # mkcopy OUT SEQ NAME=value...
	local out=$1 seq=$2 s1 s2 head line name value
	shift 2
	case "$seq" in
	-) s1='' s2='' ;;
	*:*) s1=${seq%%:*} s2=${seq#*:} ;;
	*) s1=$seq s2=$seq ;;
	esac
	# No leading zeros: GRUB's test reads 010 as octal.
	for n in ${s1:+"$s1"} ${s2:+"$s2"}; do
		[[ "$n" =~ ^(0|[1-9][0-9]{0,8})$ ]] || die "sequence number '$n' is not 0..999999999"
	done
	head="# GRUB Environment Block"$'\n'
	[ -z "$s1" ] || head+="EQ_SEQ=$s1"$'\n'
	for line in "$@"; do
		name=${line%%=*}
		[ "$name" != "$line" ] && [[ "$name" =~ ^[A-Za-z0-9_]+$ ]] || die "'$line' is not NAME=value"
		value=${line#*=}
		[[ "$value" != *$'\n'* ]] || die "$name: a value with a newline"
		# GRUB's escape: a backslash before a backslash.
		head+="$name=${value//\\/\\\\}"$'\n'
	done
	# The first sector ends with at least "#\n": a bare newline would be an
	# empty line, which GRUB reads as the start of the next variable's name.
	[ ${#head} -le 510 ] || die "the variables take ${#head} bytes, more than the 510 of the first sector"
	{
		printf '%s' "$head"
		pad $((511 - ${#head}))
		printf '\n'
		line=''
		[ -z "$s2" ] || line="EQ_SEQ2=$s2"$'\n'
		printf '%s' "$line"
		pad $((512 - ${#line}))
	} > "$out.tmp"
	[ "$(stat -c %s "$out.tmp")" = 1024 ] || die "internal error: $out.tmp is not 1024 bytes"
	mv "$out.tmp" "$out"
}

cmd=${1:-}
case "$cmd" in
extract)
	[ $# -eq 3 ] || usage
	off=$(offset "$2")
	mkdir -p "$3"
	for c in "" .2; do
		rm -f "$3/grubenv$c"
		if mdir -i "$2@@$off" "::$EQ_BOARD_ENV_PATH$c" >/dev/null 2>&1; then
			mcopy -n -i "$2@@$off" "::$EQ_BOARD_ENV_PATH$c" "$3/grubenv$c"
		fi
	done
	;;
inject)
	[ $# -eq 3 ] || usage
	off=$(offset "$2")
	mmd -i "$2@@$off" "::${EQ_BOARD_ENV_PATH%/*}" 2>/dev/null || true
	for c in "" .2; do
		if [ -f "$3/grubenv$c" ]; then
			mcopy -o -i "$2@@$off" "$3/grubenv$c" "::$EQ_BOARD_ENV_PATH$c"
		else
			mdel -i "$2@@$off" "::$EQ_BOARD_ENV_PATH$c" 2>/dev/null || true
		fi
	done
	;;
mkcopy)
	[ $# -ge 3 ] || usage
	shift
	mkcopy "$@"
	;;
offset)
	[ $# -eq 2 ] || usage
	offset "$2"
	;;
*) usage ;;
esac
