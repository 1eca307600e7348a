#!/usr/bin/env bash
# Boots a qemux86-64 disk image: QEMU's q35 machine, under TCG by default
# (KVM is not usable on the machines this was written on: OVMF dies with
# "KVM internal error"), OVMF as firmware with its own copy of the variable store, the
# disk on NVMe, the serial console into a log file, no network, no display.
# -no-reboot: a reboot of the guest ends QEMU, so every boot is one QEMU
# process.
#
# Usage: run-qemu.sh --disk DISK --log LOG [--timeout SEC] [--vars FILE]
#                    [--readonly] [-- QEMU ARGS...]
#   --log      the serial console; - for stdio (interactive)
#   --timeout  QEMU is killed after SEC seconds (default 600); exit 124 then
#   --vars     OVMF's variable store for this image, copied from
#              board.conf's EQ_BOARD_OVMF_VARS when missing (default
#              DISK.vars): the firmware writes to it, so images never share one
#   --readonly the disk is read-only (tests of a failing save)
# EQ_QEMU_ACCEL=kvm uses KVM (an x86-64 host whose KVM works), default tcg; the
# arguments are board.conf's EQ_BOARD_ACCEL_KVM or EQ_BOARD_ACCEL_TCG, and
# EQ_QEMU_KVM_ARGS replaces the KVM ones.
# The script execs timeout, so its PID is the one to kill to stop QEMU.
set -euo pipefail
bdir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$bdir/board.conf"

usage() { sed -n '/^# Usage:/,/^# The script/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
disk='' log='' secs=600 vars='' ro=''
while [ $# -gt 0 ]; do
	case "$1" in
	--disk) disk=${2:?}; shift 2 ;;
	--log) log=${2:?}; shift 2 ;;
	--timeout) secs=${2:?}; shift 2 ;;
	--vars) vars=${2:?}; shift 2 ;;
	--readonly) ro=,readonly=on; shift ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
[ -n "$disk" ] && [ -n "$log" ] || usage
[ -f "$disk" ] || { echo "run-qemu: no disk image $disk" >&2; exit 1; }
for f in "$EQ_BOARD_OVMF_CODE" "$EQ_BOARD_OVMF_VARS"; do
	[ -f "$f" ] || { echo "run-qemu: no OVMF at $f (package ovmf)" >&2; exit 1; }
done
vars=${vars:-$disk.vars}
[ -f "$vars" ] || cp "$EQ_BOARD_OVMF_VARS" "$vars"

case "${EQ_QEMU_ACCEL:-tcg}" in
tcg) accel=$EQ_BOARD_ACCEL_TCG ;;
kvm) accel=${EQ_QEMU_KVM_ARGS:-$EQ_BOARD_ACCEL_KVM} ;;
*) echo "run-qemu: EQ_QEMU_ACCEL must be kvm or tcg" >&2; exit 2 ;;
esac
serial=stdio
[ "$log" = - ] || serial=file:$log
# cache=unsafe: QEMU ignores the guest's flushes. A power cut here is a
# SIGKILL of QEMU, which keeps every write that reached the image file
# whatever the cache mode, so the host's fdatasync adds nothing to what the
# tests show. It only adds stalls: on a loaded host one flush took longer
# than Linux's 30 s NVMe timeout, and the controller reset failed the root
# file system's reads mid-update (CI, qemu.qemux86-64.happy).
# shellcheck disable=SC2086
exec timeout "$secs" $EQ_BOARD_QEMU $accel \
	-drive "if=pflash,unit=0,format=raw,readonly=on,file=$EQ_BOARD_OVMF_CODE" \
	-drive "if=pflash,unit=1,format=raw,file=$vars" \
	-drive "if=none,id=disk0,format=raw,cache=unsafe$ro,file=$disk" -device nvme,drive=disk0,serial=eqota0 \
	-serial "$serial" -display none -monitor none -nic none -no-reboot "$@"
