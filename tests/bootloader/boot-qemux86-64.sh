#!/usr/bin/env bash
# bootloader.qemux86-64.boot: the boot logic of boards/qemux86-64 (OVMF,
# GRUB EFI running the board's grub.cfg) under QEMU. Builds one small image
# (each slot: Debian's cloud kernel in /boot), then per case: a copy of it
# with seeded boot-control environment copies on the ESP, one boot that is
# stopped as soon as the kernel prints its command line (or GRUB gives up),
# and checks of the slot chosen and of both copies left behind, read with
# GRUB's own reader (grub-editenv FILE list) and with eqota's grub backend
# (eq-blctl).
#
# Usage: boot-qemux86-64.sh SOURCE_DIR WORK_DIR
#   EQ_BLCTL  eq-blctl: seeds and reads the environment through eqota's grub
#             backend (the writer the agent uses); without it the copies are
#             seeded with envtool.sh mkcopy and only grub-editenv reads them
#   EQ_CASES  only these cases (space-separated names), for debugging
# Serial logs, images and environments stay in WORK_DIR/cases.
set -euo pipefail
trap 'echo "FATAL: unexpected error at line $LINENO" >&2' ERR
# shellcheck source=tests/bootloader/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bl_start qemux86-64 "$@"
envtool=$board/envtool.sh
need_tools qemu-system-x86_64 grub-mkimage grub-editenv sfdisk partx mke2fs debugfs mkfs.vfat mcopy mdir

# ---- the image, built once -----------------------------------------------------
build_base_image
rm -rf "$work/base.env"
"$envtool" extract "$work/base.img" "$work/base.env"

# listing FILE: what GRUB's own reader makes of one copy, on one line.
listing() { grub-editenv "$1" list 2>&1 | tr '\n' ' ' | sed 's/ $//'; }

blctl=
if [ -n "${EQ_BLCTL:-}" ]; then
	[ -x "$EQ_BLCTL" ] || die "EQ_BLCTL=$EQ_BLCTL is not built"
	blctl=$EQ_BLCTL
else
	echo "NOTE: no EQ_BLCTL, seeding with envtool.sh mkcopy"
fi

# ---- the factory environment -------------------------------------------------------
# Both copies as build-image.sh writes them: the same state, copy 1 newer.
if [ "$(listing "$work/base.env/grubenv")" = "EQ_SEQ=1 BOOT_ORDER=A B BOOT_A_LEFT=3 BOOT_B_LEFT=3 BOOT_TRIAL= EQ_SEQ2=1" ] &&
	[ "$(listing "$work/base.env/grubenv.2")" = "EQ_SEQ=0 BOOT_ORDER=A B BOOT_A_LEFT=3 BOOT_B_LEFT=3 BOOT_TRIAL= EQ_SEQ2=0" ]; then
	pass "factory: grub-editenv reads both copies (sequence 1 and 0, order A B, 3 and 3, no trial)"
else
	fail "factory: grub-editenv reads '$(listing "$work/base.env/grubenv")' and '$(listing "$work/base.env/grubenv.2")'"
fi
if [ -n "$blctl" ]; then
	got=$("$blctl" --backend grub --path "$work/base.env/grubenv" get 2>&1 | tr '\n' ' ') || true
	if [ "$got" = "order=A B a_left=3 b_left=3 trial= pick=A " ]; then
		pass "factory: eq-blctl reads order=A B a_left=3 b_left=3 trial=, no complaint"
	else
		fail "factory: eq-blctl reads '$got'"
	fi
	# The generator and eqota's writer lay a block out byte for byte alike:
	# eqota's first write goes to copy 2 with sequence 2.
	rm -rf "$work/gen"
	cp -r "$work/base.env" "$work/gen"
	"$blctl" --backend grub --path "$work/gen/grubenv" set "B A" 3 1 B
	"$envtool" mkcopy "$work/gen/expected" 2 "BOOT_ORDER=B A" BOOT_A_LEFT=3 BOOT_B_LEFT=1 BOOT_TRIAL=B
	if cmp -s "$work/gen/expected" "$work/gen/grubenv.2" && cmp -s "$work/base.env/grubenv" "$work/gen/grubenv"; then
		pass "factory: eqota's first write is copy 2, sequence 2, identical to envtool.sh mkcopy's block"
	else
		fail "factory: eqota's first write differs from envtool.sh mkcopy 2 (see $work/gen)"
	fi
fi

# ---- seeding ---------------------------------------------------------------------
# seed_state CASE ORDER ALEFT BLEFT TRIAL ("-": none): the factory copies,
# then that state written by eqota's writer (into copy 2, sequence 2), or by
# the generator in the same layout.
seed_state() {
	local in=$cases/$1.env-in
	rm -rf "$in"
	cp -r "$work/base.env" "$in"
	if [ -n "$blctl" ]; then
		"$blctl" --backend grub --path "$in/grubenv" set "$2" "$3" "$4" "$5"
	else
		local trial=$5
		[ "$trial" != "-" ] || trial=
		"$envtool" mkcopy "$in/grubenv.2" 2 "BOOT_ORDER=$2" "BOOT_A_LEFT=$3" "BOOT_B_LEFT=$4" "BOOT_TRIAL=$trial"
	fi
}
# seed_copies CASE COPY1 COPY2: both copies made byte by byte. COPYn is
# "SEQ;NAME=value;..." (envtool.sh mkcopy: SEQ N, N:M torn, - none),
# "missing" (no file) or "garbage" (1024 bytes without GRUB's signature).
seed_copies() {
	local in=$cases/$1.env-in i spec f
	rm -rf "$in"
	mkdir -p "$in"
	for i in 1 2; do
		spec=$2
		[ $i = 1 ] || spec=$3
		f=$in/grubenv
		[ $i = 1 ] || f=$in/grubenv.2
		case "$spec" in
		missing) ;;
		garbage) head -c 1024 /dev/zero | tr '\0' 'x' > "$f" ;;
		*)
			local -a parts
			IFS=';' read -r -a parts <<<"$spec"
			"$envtool" mkcopy "$f" "${parts[@]}"
			;;
		esac
	done
}

# ---- one boot (boot in lib.sh) ---------------------------------------------------
# GRUB prints no line of its own on starting a kernel: the script's is the
# sign of a boot attempt.
loader=GRUB
kernel_line='Command line:'
booted='eqota: booting'
prompt='grub>'
run_args=(--timeout 60)
put_env() { "$envtool" inject "$1" "$2"; }
get_env() { rm -rf "$2"; "$envtool" extract "$1" "$2"; }

# ---- checks (the shared ones in lib.sh) ----------------------------------------------
# expect_copy CASE 1|2 LISTING: grub-editenv's listing of that copy after
# the boot ("missing" when the file is gone).
expect_copy() {
	local f=$cases/$1.env-out/grubenv got
	[ "$2" = 1 ] || f=$f.2
	if [ -f "$f" ]; then got=$(listing "$f"); else got=missing; fi
	if [ "$got" = "$3" ]; then
		pass "$1: grub-editenv reads copy $2: $3"
	else
		fail "$1: grub-editenv reads copy $2: '$got', expected '$3'"
	fi
}
# expect_blctl CASE STATE: eqota's grub backend reads STATE ("order=A B
# a_left=3 b_left=3 trial=") after the boot, without complaint.
expect_blctl() {
	[ -n "$blctl" ] || return 0
	local got rc=0
	got=$("$blctl" --backend grub --path "$cases/$1.env-out/grubenv" get 2>"$cases/$1.blctl.err" | sed -n 1p) || rc=$?
	if [ "$got" = "$2" ] && [ $rc = 0 ]; then
		pass "$1: eq-blctl reads $2"
	else
		fail "$1: eq-blctl reads '$got' (exit $rc: $(cat "$cases/$1.blctl.err")), expected '$2'"
	fi
}
# expect_saved CASE N: the boot wrote copy N (the one it read) and left the
# other one as it was.
expect_saved() {
	local o=$((3 - $2)) f=grubenv fo=grubenv
	[ "$2" = 1 ] || f=grubenv.2
	[ "$o" = 1 ] || fo=grubenv.2
	if ! cmp -s "$cases/$1.env-in/$f" "$cases/$1.env-out/$f" &&
		cmp -s "$cases/$1.env-in/$fo" "$cases/$1.env-out/$fo"; then
		pass "$1: saved into copy $2, copy $o untouched"
	else
		fail "$1: expected a save into copy $2 only"
	fi
}

# ---- the cases -----------------------------------------------------------------------
# 0. The factory image as built.
if want_case factory; then
	rm -rf "$cases/factory.env-in"
	cp -r "$work/base.env" "$cases/factory.env-in"
	boot factory
	expect_line factory "eqota: env copy 1 valid 1 seq 1, copy 2 valid 1 seq 0: using 1"
	expect_slot factory A
	expect_unchanged factory
fi

# 1. Normal boot of a committed slot: nothing is written.
if want_case normal; then
	seed_state normal "A B" 3 3 -
	boot normal
	expect_line normal "eqota: env copy 1 valid 1 seq 1, copy 2 valid 1 seq 2: using 2"
	expect_slot normal A
	expect_line normal "eqota: booting slot A (3 left)"
	expect_unchanged normal
	expect_blctl normal "order=A B a_left=3 b_left=3 trial="
fi
# A committed slot with fewer attempts is booted, and not decremented either.
if want_case committed-b; then
	seed_state committed-b "B A" 3 1 -
	boot committed-b
	expect_slot committed-b B
	expect_line committed-b "eqota: booting slot B (1 left)"
	expect_unchanged committed-b
fi

# 2. Try B once: the script spends the attempt and saves before booting.
# One trial attempt (not eqota's default 2), so case 3 sees it spent.
if want_case try-b; then
	# The seed is copy 2 with sequence 2, so try-once writes copy 1 with 3.
	seed_state try-b "A B" 3 3 -
	if [ -n "$blctl" ]; then
		"$blctl" --backend grub --path "$cases/try-b.env-in/grubenv" --try-attempts 1 try-once B
	else
		"$envtool" mkcopy "$cases/try-b.env-in/grubenv" 3 "BOOT_ORDER=B A" BOOT_A_LEFT=3 BOOT_B_LEFT=1 BOOT_TRIAL=B
	fi
	boot try-b
	expect_slot try-b B
	expect_line try-b "eqota: booting slot B (trial, 0 left)"
	expect_saved try-b 1
	expect_copy try-b 1 "EQ_SEQ=3 BOOT_ORDER=B A BOOT_A_LEFT=3 BOOT_B_LEFT=0 BOOT_TRIAL=B EQ_SEQ2=3"
	expect_blctl try-b "order=B A a_left=3 b_left=0 trial=B"
fi

# 3. B never confirms (each boot of B dies before the agent marks it good):
# with 2 trial attempts B boots twice, then A boots and nothing changes.
if want_case b-fails; then
	seed_state b-fails-1 "A B" 3 3 -
	if [ -n "$blctl" ]; then
		"$blctl" --backend grub --path "$cases/b-fails-1.env-in/grubenv" --try-attempts 2 try-once B
	else
		"$envtool" mkcopy "$cases/b-fails-1.env-in/grubenv" 3 "BOOT_ORDER=B A" BOOT_A_LEFT=3 BOOT_B_LEFT=2 BOOT_TRIAL=B
	fi
	boot b-fails-1
	expect_slot b-fails-1 B
	expect_line b-fails-1 "eqota: booting slot B (trial, 1 left)"
	expect_saved b-fails-1 1
	cp -r "$cases/b-fails-1.env-out" "$cases/b-fails-2.env-in"
	boot b-fails-2
	expect_slot b-fails-2 B
	expect_line b-fails-2 "eqota: booting slot B (trial, 0 left)"
	expect_saved b-fails-2 1
	cp -r "$cases/b-fails-2.env-out" "$cases/b-fails-3.env-in"
	boot b-fails-3
	expect_slot b-fails-3 A
	expect_line b-fails-3 "eqota: booting slot A (3 left)"
	expect_unchanged b-fails-3
	expect_copy b-fails-3 1 "EQ_SEQ=3 BOOT_ORDER=B A BOOT_A_LEFT=3 BOOT_B_LEFT=0 BOOT_TRIAL=B EQ_SEQ2=3"
	expect_blctl b-fails-3 "order=B A a_left=3 b_left=0 trial=B"
fi

# 4. Both exhausted: re-arm the committed slot A, never the trial slot B.
if want_case exhausted; then
	seed_state exhausted "B A" 0 0 B
	boot exhausted
	expect_line exhausted "eqota: no slot has attempts left, re-arming"
	expect_slot exhausted A
	expect_saved exhausted 2
	expect_copy exhausted 2 "EQ_SEQ=2 BOOT_ORDER=B A BOOT_A_LEFT=3 BOOT_B_LEFT=0 BOOT_TRIAL= EQ_SEQ2=2"
	expect_blctl exhausted "order=B A a_left=3 b_left=0 trial="
fi
# ...and with only the trial slot in the order nothing can be re-armed: A
# has attempts but is out of the order, so it is not booted either.
if want_case nothing; then
	seed_state nothing "B" 3 0 B
	boot nothing
	expect_line nothing "eqota: no slot has attempts left, re-arming"
	expect_noboot nothing
	expect_unchanged nothing
fi
# An empty order (every slot rejected) is no order at all, not a missing one
# (which would mean "A B").
if want_case empty-order; then
	seed_state empty-order "" 3 3 -
	boot empty-order
	expect_line empty-order "eqota: order [], A 3 left, B 3 left, trial []"
	expect_noboot empty-order
	expect_unchanged empty-order
fi

# 5. The two copies. A torn copy (EQ_SEQ != EQ_SEQ2) is ignored even when it
# is newer, in either position.
if want_case torn1; then
	seed_copies torn1 "7:6;BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=3;BOOT_TRIAL=" \
		"6;BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3;BOOT_TRIAL="
	boot torn1
	expect_line torn1 "eqota: env copy 1 valid 0 seq 0, copy 2 valid 1 seq 6: using 2"
	expect_slot torn1 A
	expect_unchanged torn1
	expect_blctl torn1 "order=A B a_left=3 b_left=3 trial="
fi
if want_case torn2; then
	seed_copies torn2 "4;BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=3;BOOT_TRIAL=" \
		"5:4;BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3;BOOT_TRIAL="
	boot torn2
	expect_line torn2 "eqota: env copy 1 valid 1 seq 4, copy 2 valid 0 seq 0: using 1"
	expect_slot torn2 B
	expect_unchanged torn2
	expect_blctl torn2 "order=B A a_left=3 b_left=3 trial="
fi
# Both valid: the higher sequence wins as a number (10 after 9)...
if want_case newer2; then
	seed_copies newer2 "9;BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3;BOOT_TRIAL=" \
		"10;BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=1;BOOT_TRIAL=B"
	boot newer2
	expect_slot newer2 B
	expect_saved newer2 2
	expect_copy newer2 2 "EQ_SEQ=10 BOOT_ORDER=B A BOOT_A_LEFT=3 BOOT_B_LEFT=0 BOOT_TRIAL=B EQ_SEQ2=10"
	expect_blctl newer2 "order=B A a_left=3 b_left=0 trial=B"
fi
# ...copy 1 on a tie, and a block without sequence numbers (grub-editenv's)
# is sequence 0.
if want_case tie; then
	seed_copies tie "-;BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=3" "0;BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3"
	boot tie
	expect_line tie "eqota: env copy 1 valid 1 seq 0, copy 2 valid 1 seq 0: using 1"
	expect_slot tie B
	expect_unchanged tie
fi
# A missing copy 1: copy 2 alone.
if want_case missing1; then
	seed_copies missing1 missing "1;BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=3;BOOT_TRIAL="
	boot missing1
	expect_slot missing1 B
	expect_unchanged missing1
fi

# 6. Garbled values, read the shared way. "C D" is an empty order: nothing
# to boot and nothing to re-arm, so GRUB stops.
if want_case garbled; then
	seed_copies garbled "5;BOOT_ORDER=C D;BOOT_A_LEFT=x;BOOT_B_LEFT=3;BOOT_TRIAL=" missing
	boot garbled
	expect_line garbled "eqota: order [], A 0 left, B 3 left, trial []"
	expect_noboot garbled
	expect_unchanged garbled
fi
# "C A" is the order "A"; the counter "x" is 0, so nothing has attempts
# left: A is re-armed and boots, and the save repairs the values.
if want_case garbled-a; then
	seed_copies garbled-a "5;BOOT_ORDER=C A;BOOT_A_LEFT=x;BOOT_B_LEFT=3;BOOT_TRIAL=" \
		"4;BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3;BOOT_TRIAL="
	boot garbled-a
	expect_line garbled-a "eqota: order [A], A 0 left, B 3 left, trial []"
	expect_slot garbled-a A
	expect_saved garbled-a 1
	expect_copy garbled-a 1 "EQ_SEQ=5 BOOT_ORDER=A BOOT_A_LEFT=3 BOOT_B_LEFT=3 BOOT_TRIAL= EQ_SEQ2=5"
	expect_blctl garbled-a "order=A a_left=3 b_left=3 trial="
fi
# A slot listed twice counts once, "10" is no counter, "C" is no trial:
# order "B A", B 0, so the committed A boots and nothing is written.
if want_case garbled2; then
	seed_copies garbled2 "5;BOOT_ORDER=B B A;BOOT_A_LEFT=2;BOOT_B_LEFT=10;BOOT_TRIAL=C" missing
	boot garbled2
	expect_line garbled2 "eqota: order [B A], A 2 left, B 0 left, trial []"
	expect_slot garbled2 A
	expect_unchanged garbled2
fi
# An empty counter is not a missing one: it counts as 0.
if want_case empty-counter; then
	seed_copies empty-counter "5;BOOT_ORDER=A B;BOOT_A_LEFT=;BOOT_B_LEFT=2;BOOT_TRIAL=" missing
	boot empty-counter
	expect_line empty-counter "eqota: order [A B], A 0 left, B 2 left, trial []"
	expect_slot empty-counter B
	expect_unchanged empty-counter
fi
# Missing variables: order "A B", 3 attempts each.
if want_case missing-vars; then
	seed_copies missing-vars "5;OTHER=1" missing
	boot missing-vars
	expect_line missing-vars "eqota: order [A B], A 3 left, B 3 left, trial []"
	expect_slot missing-vars A
	expect_unchanged missing-vars
fi
# No valid copy at all (one torn, one without GRUB's signature): the
# defaults, and nothing is written, although the torn copy asks for a trial.
if want_case invalid; then
	seed_copies invalid "3:2;BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=1;BOOT_TRIAL=B" garbage
	boot invalid
	expect_line invalid "eqota: no valid copy of the boot-control environment, using the defaults"
	expect_line invalid "eqota: order [A B], A 3 left, B 3 left, trial []"
	expect_slot invalid A
	expect_unchanged invalid
fi
# A trial attempt that cannot be saved (read-only disk): case_readonly in lib.sh.
if want_case readonly; then case_readonly; fi

bl_finish
