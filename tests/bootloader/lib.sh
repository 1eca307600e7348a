# shellcheck shell=bash disable=SC2154 # the caller sets loader, kernel_line, ...
# lib.sh: what the bootloader boot tests (boot-<board>.sh) share: the work
# folder, the check counters, the image every case boots a copy of, one
# boot of a case stopped as soon as its outcome is in the serial log, the
# checks of that log, the cases every board passes alike, and the summary.
# Sourced by boot-<board>.sh under set -euo pipefail; the board-specific
# parts (the environment's layout, seeding and its own checks) stay there.
#
# bl_start BOARD SOURCE_DIR WORK_DIR sets src, work, board (the board's
# folder), cases (WORK_DIR/cases, emptied) and fails, and reads the board's
# board.conf. Before boot, the expect_* below and bl_finish the caller sets:
#   loader       the firmware's name in the summary ("U-Boot")
#   kernel_line  grep pattern of the kernel printing its command line
#   booted       grep pattern of a line that only a boot attempt prints
#                (with kernel_line: what expect_noboot must not find)
#   prompt       grep pattern of the loader's prompt, where it ends up after
#                "eqota: no bootable slot"
#   run_args     array: run-qemu.sh options every boot gets (--timeout)
# and defines
#   put_env IMG ENV   writes the case's environment ENV into the image IMG
#   get_env IMG ENV   reads the environment back from IMG into ENV
#   seed_state CASE ORDER ALEFT BLEFT TRIAL   (for the shared cases below)

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
die() { echo "FATAL: $*" >&2; exit 1; }

bl_start() { # bl_start BOARD SOURCE_DIR WORK_DIR
	local name=$1
	# Shifted first, so that a missing SOURCE_DIR is still reported as "1: usage: ...".
	shift
	src=$(cd "${1:?usage: ${0##*/} SOURCE_DIR WORK_DIR}" && pwd)
	work=${2:?usage: ${0##*/} SOURCE_DIR WORK_DIR}
	board=$src/boards/$name
	# shellcheck source=/dev/null
	. "$board/board.conf"
	mkdir -p "$work"
	work=$(cd "$work" && pwd)
	cases=$work/cases
	rm -rf "$cases" "$work/times.txt"
	mkdir -p "$cases"
	fails=0
}

need_tools() { # need_tools TOOL...
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || die "$t not installed (scripts/setup.sh)"
	done
}

# build_base_image: WORK/base.img, each slot holding the kernel and an
# /etc/eqota-slot that names the slot, so a log can be matched to a slot.
build_base_image() {
	local s
	for s in a b; do
		mkdir -p "$work/rootfs-$s/etc"
		echo "${s^^}" > "$work/rootfs-$s/etc/eqota-slot"
	done
	"$board/build-image.sh" --out "$work/base.img" --rootfs-a "$work/rootfs-a" --rootfs-b "$work/rootfs-b" \
		--kernel --slot-mib 64 --data-mib 8
}

# boot CASE [--readonly]: boots a copy of the image holding CASE.env-in and
# stops QEMU once the kernel command line is out, or once the loader is back
# at its prompt after "no bootable slot": what follows cannot change the
# outcome and only costs time. Leaves CASE.log and CASE.env-out.
boot() {
	local name=$1 img=$cases/$1.img log=$cases/$1.log
	shift
	cp --sparse=always "$work/base.img" "$img"
	put_env "$img" "$cases/$name.env-in"
	# IMG.vars is where run-qemu.sh keeps a UEFI firmware's variable store
	# (qemux86-64): a fresh one per boot, so no case sees another's.
	rm -f "$log" "$img.vars"
	local t0 t1 pid
	t0=$(date +%s%N)
	"$board/run-qemu.sh" --disk "$img" --log "$log" "${run_args[@]}" "$@" 2>"$log.stderr" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if grep -aq "$kernel_line" "$log" 2>/dev/null; then break; fi
		if grep -aq 'eqota: no bootable slot' "$log" 2>/dev/null && grep -aq "$prompt" "$log"; then break; fi
		sleep 0.1
	done
	t1=$(date +%s%N)
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	get_env "$img" "$cases/$name.env-out"
	rm -f "$img" "$img.vars"
	printf '%-16s %5d ms\n' "$name" $(((t1 - t0) / 1000000)) >> "$work/times.txt"
}

expect_slot() { # expect_slot CASE SLOT
	local log=$cases/$1.log
	# (grep without -q: an early exit would fail tr with SIGPIPE under pipefail.)
	if tr -d '\r' < "$log" | grep -a "$kernel_line.* eqota\.slot=$2\( \|$\)" >/dev/null &&
		grep -aq "eqota: booting slot $2 " "$log"; then
		pass "$1: boots slot $2"
	else
		fail "$1: expected slot $2; log: $log"
		# A log with no such line is a FAIL like the others, not an abort.
		tr '\r' '\n' < "$log" | { grep -a "eqota:\|$kernel_line" || true; } | sed 's/^/    /'
	fi
}
expect_noboot() { # expect_noboot CASE
	local log=$cases/$1.log
	if grep -aq 'eqota: no bootable slot' "$log" && ! grep -aq "$booted\|$kernel_line" "$log"; then
		pass "$1: no bootable slot, nothing booted"
	else
		fail "$1: expected 'eqota: no bootable slot' and no kernel; log: $log"
	fi
}
expect_line() { # expect_line CASE TEXT: the serial log has TEXT
	if grep -aqF "$2" "$cases/$1.log"; then pass "$1: log says '$2'"; else fail "$1: no '$2' in $cases/$1.log"; fi
}
# expect_unchanged CASE: the boot wrote nothing. diff -r: an environment is
# one file on some boards and a folder of copies on others.
expect_unchanged() {
	if diff -r "$cases/$1.env-in" "$cases/$1.env-out" >/dev/null; then
		pass "$1: environment unchanged"
	else
		fail "$1: the boot changed the environment"
	fi
}
want_case() { [ -z "${EQ_CASES:-}" ] || [[ " $EQ_CASES " == *" $1 "* ]]; }

# ---- cases every board passes alike -------------------------------------------------
# case_readonly: a trial attempt that cannot be saved (read-only disk) is
# not taken: the fallback boots instead, so an unrecorded attempt cannot
# repeat forever.
case_readonly() {
	seed_state readonly "B A" 3 1 B
	boot readonly --readonly
	expect_line readonly "eqota: cannot save the boot-control environment"
	expect_slot readonly A
	expect_unchanged readonly
}

bl_finish() { # bl_finish: the boot times, then the verdict as the exit status
	echo "boot times (until the kernel command line, or $loader's prompt):"
	cat "$work/times.txt" 2>/dev/null && rm -f "$work/times.txt"
	[ "$fails" -eq 0 ] || { echo "$fails checks failed (logs in $cases)"; exit 1; }
	echo "all passed"
}
