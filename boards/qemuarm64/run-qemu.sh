#!/usr/bin/env bash
# Boots a qemuarm64 disk image: QEMU's virt machine with a Cortex-A57 under
# TCG (KVM is not usable on the machines this was written on, and -cpu max
# makes TCG about 3x slower through pointer authentication), Debian's
# qemu_arm64 U-Boot as firmware, the disk on virtio-blk, the serial console
# into a log file, no network, no display. -no-reboot: a reboot of the guest
# ends QEMU, so every boot is one QEMU process.
#
# Usage: run-qemu.sh --disk DISK --log LOG [--timeout SEC] [--flash FILE | --no-flash]
#                    [--readonly] [-- QEMU ARGS...]
#   --timeout  QEMU is killed after SEC seconds (default 600); exit 124 then
#   --flash    the pflash bank with U-Boot's own environment (mkflash.sh);
#              default: made once into .cache/boards/qemuarm64/uboot-flash.img
#   --no-flash U-Boot's built-in environment (2 s boot delay, scans
#              qfw/USB/SCSI before virtio)
#   --readonly the disk is read-only (tests of a failing save)
# EQ_QEMU_ACCEL=kvm uses KVM (an arm64 host whose KVM works), default tcg; the
# arguments are board.conf's EQ_BOARD_ACCEL_KVM or EQ_BOARD_ACCEL_TCG, and
# EQ_QEMU_KVM_ARGS replaces the KVM ones.
# The script execs timeout, so its PID is the one to kill to stop QEMU.
set -euo pipefail
bdir=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$bdir/../.." && pwd)
# shellcheck source=/dev/null
. "$bdir/board.conf"

usage() { sed -n '/^# Usage:/,/^# The script/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
disk='' log='' secs=600 flash='' noflash=0 ro=''
while [ $# -gt 0 ]; do
	case "$1" in
	--disk) disk=${2:?}; shift 2 ;;
	--log) log=${2:?}; shift 2 ;;
	--timeout) secs=${2:?}; shift 2 ;;
	--flash) flash=${2:?}; shift 2 ;;
	--no-flash) noflash=1; shift ;;
	--readonly) ro=,readonly=on; shift ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
[ -n "$disk" ] && [ -n "$log" ] || usage
[ -f "$disk" ] || { echo "run-qemu: no disk image $disk" >&2; exit 1; }
[ -f "$EQ_BOARD_UBOOT" ] || { echo "run-qemu: no U-Boot at $EQ_BOARD_UBOOT (package u-boot-qemu)" >&2; exit 1; }

flashargs=()
if [ $noflash = 0 ]; then
	if [ -z "$flash" ]; then
		flash=${EQ_CACHE_DIR:-$top/.cache}/boards/qemuarm64/uboot-flash.img
		if [ ! -f "$flash" ] || [ "$EQ_BOARD_UBOOT" -nt "$flash" ] || [ "$bdir/mkflash.sh" -nt "$flash" ]; then
			"$bdir/mkflash.sh" "$flash.$$"
			mv "$flash.$$" "$flash"
		fi
	fi
	# Read-only: U-Boot only reads it, and parallel boots can share it.
	flashargs=(-drive "if=pflash,unit=1,format=raw,readonly=on,file=$flash")
fi

case "${EQ_QEMU_ACCEL:-tcg}" in
tcg) accel=$EQ_BOARD_ACCEL_TCG ;;
kvm) accel=${EQ_QEMU_KVM_ARGS:-$EQ_BOARD_ACCEL_KVM} ;;
*) echo "run-qemu: EQ_QEMU_ACCEL must be kvm or tcg" >&2; exit 2 ;;
esac
# cache=unsafe: a power cut is a SIGKILL of QEMU, which keeps every write
# that reached the image file in any cache mode; the host's flushes would
# only add stalls on a loaded host (qemux86-64's run-qemu.sh).
# shellcheck disable=SC2086
exec timeout "$secs" $EQ_BOARD_QEMU $accel -bios "$EQ_BOARD_UBOOT" "${flashargs[@]}" \
	-drive "if=none,id=disk0,format=raw,cache=unsafe$ro,file=$disk" -device virtio-blk-pci,drive=disk0 \
	-serial "file:$log" -display none -monitor none -nic none -no-reboot "$@"
