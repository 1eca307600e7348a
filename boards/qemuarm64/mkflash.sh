#!/usr/bin/env bash
# Makes the second pflash bank of the QEMU virt machine (64 MiB) holding
# U-Boot's own environment: qemu_arm64 U-Boot reads it from offset 0 of that
# bank (0x4000000 in the address space), 0x40000 bytes, CRC32 + data. The
# variables are U-Boot's built-in default environment, taken from u-boot.bin
# itself, with two changes:
#   bootdelay=0          no 2 s countdown
#   boot_targets=virtio0 distro boot goes straight to the disk (no qfw, USB
#                        or SCSI scan first) and, when boot.scr finds nothing
#                        bootable, stops at the U-Boot prompt instead of
#                        trying the network
# About 2.5 s less per boot. The boot-control variables are not here: Linux
# cannot reach this flash with Debian's kernel (no CFI/physmap driver), so
# they live in partition 4 of the disk (see README.md).
#
# Usage: mkflash.sh OUT [U-BOOT.BIN]
set -euo pipefail
bdir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$bdir/board.conf"
out=${1:?usage: mkflash.sh OUT [U-BOOT.BIN]}
uboot=${2:-$EQ_BOARD_UBOOT}
[ -f "$uboot" ] || { echo "mkflash: no U-Boot at $uboot (package u-boot-qemu)" >&2; exit 1; }

w=$(mktemp -d "${TMPDIR:-/tmp}/eq-flash.XXXXXX")
trap 'rm -rf "$w"' EXIT
# The default environment is one block of NAME=value\0 records ended by an
# empty record; find the run of such records that holds bootcmd and
# boot_targets.
# (awk reads to the end: an early exit would kill tr with SIGPIPE.)
tr '\0' '\n' < "$uboot" | LC_ALL=C awk '
	found { next }
	/^[A-Za-z0-9_.]+=/ { blk = blk $0 "\n"; next }
	{ if (index("\n" blk, "\nbootcmd=") && index("\n" blk, "\nboot_targets=")) { printf "%s", blk; found = 1 }
	  blk = "" }
	END { exit !found }' > "$w/default.txt" ||
	{ echo "mkflash: no default environment found in $uboot" >&2; exit 1; }
grep -q '^bootdelay=' "$w/default.txt" && grep -q '^boot_targets=' "$w/default.txt" ||
	{ echo "mkflash: $uboot: default environment without bootdelay or boot_targets" >&2; exit 1; }
sed -e 's/^bootdelay=.*/bootdelay=0/' -e 's/^boot_targets=.*/boot_targets=virtio0/' "$w/default.txt" > "$w/env.txt"
mkenvimage -s 0x40000 -o "$w/env.bin" "$w/env.txt"
truncate -s 64M "$w/env.bin"
mkdir -p "$(dirname "$out")"
chmod 0644 "$w/env.bin"
mv "$w/env.bin" "$out"
