#!/usr/bin/env bash
# How long a systemd slot image takes to boot on each QEMU board. For each
# BOARD (default: qemux86-64 qemuarm64):
#   - builds its slot images, or reuses them (tests/tools/mkimages.sh CACHE
#     board BOARD: Debian 12, systemd as PID 1, eqota from this checkout);
#   - unpacks r1, adds one bench unit (below), and makes the board's disk
#     with boards/BOARD/build-image.sh --rootfs-a;
#   - boots it once with boards/BOARD/run-qemu.sh (TCG unless EQ_QEMU_ACCEL
#     says kvm), timing each serial line as it arrives (tests/qemu/lib/
#     stamps.py).
# The bench unit waits until the boot has finished (systemctl
# is-system-running), prints systemd-analyze, the state of eqota.service
# and eqota-confirm.service and their journal to the console, then powers
# off: QEMU ends with the guest. It exists only in the bench's copy of the
# image.
# Prints one table row per board: seconds from QEMU's start to the kernel's
# first line, to systemd's first line, to multi-user.target; systemd-analyze's
# total; eqota.service's state; the image's size and build time. The serial
# logs stay in CACHE/bench-qemu-boot/BOARD.log.
# Usage: bench/qemu-boot.sh [BOARD...]      (run as root; CACHE: EQ_CACHE_DIR
#        or .cache of the checkout)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cache=$(mkdir -p "${EQ_CACHE_DIR:-$src/.cache}" && cd "${EQ_CACHE_DIR:-$src/.cache}" && pwd)
export EQ_CACHE_DIR=$cache
[ "$(id -u)" -eq 0 ] || { echo "qemu-boot: run as root (mmdebstrap, and the image's owners)" >&2; exit 1; }
boards=("$@")
[ ${#boards[@]} -gt 0 ] || boards=(qemux86-64 qemuarm64)
accel=${EQ_QEMU_ACCEL:-tcg}
logs=$cache/bench-qemu-boot
mkdir -p "$logs"
w=$(mktemp -d "${TMPDIR:-/tmp}/eq-bench-boot.XXXXXX")
trap 'rm -rf "$w"' EXIT

# The bench unit's program, run in the guest.
report_sh='#!/bin/sh
# bench/qemu-boot.sh: reports the finished boot on the console, powers off.
n=0
while :; do
	s=$(systemctl is-system-running 2>/dev/null)
	case "$s" in running | degraded) break ;; esac
	n=$((n + 1))
	[ $n -lt 900 ] || { echo "EQBENCH boot not finished after 900 s: $s"; break; }
	sleep 1
done
echo "EQBENCH state $s"
echo "EQBENCH analyze $(systemd-analyze time | head -1)"
systemd-analyze blame --no-pager | head -8 | sed "s/^/EQBENCH blame /"
systemctl --failed --no-legend --plain | sed "s/^/EQBENCH failed /"
for u in eqota.service eqota-confirm.service; do
	v() { systemctl show -p "$1" --value "$u"; }
	echo "EQBENCH unit $u $(v ActiveState)/$(v SubState), result $(v Result), restarts $(v NRestarts), status: $(v StatusText)"
done
systemctl status --no-pager -n0 eqota.service eqota-confirm.service | sed "s/^/EQBENCH status /"
journalctl -b --no-pager -o short-monotonic -u eqota.service -u eqota-confirm.service | tail -n 40 | sed "s/^/EQBENCH journal /"
echo "EQBENCH done"
systemctl poweroff
'
report_unit='[Unit]
Description=eqota bench: report the finished boot and power off
After=multi-user.target

[Service]
# simple: the unit must not hold up the end of the boot it waits for.
Type=simple
ExecStart=/usr/local/sbin/eqota-bench-report
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
'

# at REGEX: the seconds of the first stamped serial line matching REGEX
at() { awk -v r="$1" '$0 ~ r { print $1; exit }' "$w/stamps"; }
# field LINE_PREFIX: the rest of the first serial line starting with it
field() { sed -n "s/^.*$1 //p" "$w/serial.log" | tr -d '\r' | head -1; }

rows=()
for b in "${boards[@]}"; do
	[ -f "$src/boards/$b/board.conf" ] || { echo "qemu-boot: no board $b" >&2; exit 2; }
	imgs=$cache/images-$b
	t0=$(date +%s)
	"$src/tests/tools/mkimages.sh" "$cache" board "$b" >"$w/mkimages.log" 2>&1 ||
		{ cat "$w/mkimages.log" >&2; echo "qemu-boot: building the images of $b failed" >&2; exit 1; }
	built=$(sed -n 's/^r1\.tar: .* built in \([0-9]*\) s$/\1/p' "$imgs/README")
	built="$built s"
	grep -q 'are up to date' "$w/mkimages.log" && built="$built (cached: $(($(date +%s) - t0)) s now)"

	root=$w/root-$b
	rm -rf "$root"; mkdir -p "$root"
	tar -C "$root" --numeric-owner -xf "$imgs/r1.tar"
	printf '%s' "$report_sh" >"$root/usr/local/sbin/eqota-bench-report"
	chmod 0755 "$root/usr/local/sbin/eqota-bench-report"
	printf '%s' "$report_unit" >"$root/etc/systemd/system/eqota-bench-report.service"
	mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
	ln -s ../eqota-bench-report.service "$root/etc/systemd/system/multi-user.target.wants/"
	used=$(du -sm "$root" | cut -f1)
	# Room for the journal and eqota's work, in whole 64 MiB.
	slot=$(((used * 13 / 10 + 32 + 63) / 64 * 64))
	"$src/boards/$b/build-image.sh" --out "$w/disk.img" --rootfs-a "$root" --slot-mib "$slot" >/dev/null
	rm -rf "$root"

	rm -f "$w/serial.log" "$w/stamps" "$w/stamps.stop"
	: >"$w/serial.log"
	python3 "$src/tests/qemu/lib/stamps.py" "$w/serial.log" "$w/stamps" &
	spid=$!
	rc=0
	EQ_QEMU_ACCEL=$accel nice "$src/boards/$b/run-qemu.sh" --disk "$w/disk.img" --log "$w/serial.log" \
		--timeout 1500 || rc=$?
	sleep 1
	touch "$w/stamps.stop"
	wait "$spid" || true
	cp "$w/serial.log" "$logs/$b.log"
	cp "$w/stamps" "$logs/$b.stamps"
	rm -f "$w/disk.img" "$w/disk.img.vars"
	[ "$rc" = 0 ] || echo "qemu-boot: QEMU for $b ended with $rc (124: timeout); see $logs/$b.log" >&2

	kernel=$(at 'Linux version')
	sysd=$(at 'running in system mode')
	multi=$(at 'Reached target.*[Mm]ulti-[Uu]ser')
	analyze=$(field 'EQBENCH analyze' | sed -n 's/.*= *\(.*\)$/\1/p')
	unit=$(field 'EQBENCH unit eqota.service')
	state=${unit:-}
	size="r1.tar $(($(stat -c %s "$imgs/r1.tar") / 1048576)) MiB, ${used} MiB unpacked, slot ${slot} MiB"
	rows+=("| $b | $accel | ${kernel:--} | ${sysd:--} | ${multi:--} | ${analyze:--} | ${state:--} | $size | ${built:--} |")
done

echo "| board | accel | kernel (s) | systemd (s) | multi-user.target (s) | systemd-analyze | eqota.service | image | build |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
