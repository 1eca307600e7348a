#!/usr/bin/env bash
# bootloader.qemuarm64.boot: the boot logic of boards/qemuarm64 (Debian's
# qemu_arm64 U-Boot running the board's boot.scr) under QEMU. Builds one
# small image (each slot: Debian's arm64 kernel and the board's initramfs in
# /boot), then per case: a copy of it with a seeded boot-control environment
# in partition 4, one boot that is stopped as soon as the kernel prints its
# command line (or U-Boot gives up), and checks of the slot chosen and of the
# environment left behind, read with libubootenv (fw_printenv) and with
# eqota's uboot backend (eq-blctl).
#
# Usage: boot-qemuarm64.sh SOURCE_DIR WORK_DIR
#   EQ_BLCTL  eq-blctl: seeds and reads the environment through eqota's uboot
#             backend (the writer the agent uses); fw_setenv seeds without it
#   EQ_CASES  only these cases (space-separated names), for debugging
# Serial logs, images and environments stay in WORK_DIR/cases.
set -euo pipefail
trap 'echo "FATAL: unexpected error at line $LINENO" >&2' ERR
# shellcheck source=tests/bootloader/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bl_start qemuarm64 "$@"
envpart=$board/envpart.sh
need_tools qemu-system-aarch64 mkimage mkenvimage fw_printenv fw_setenv sfdisk partx mke2fs debugfs mkfs.vfat mcopy cpio

# ---- the image, built once -----------------------------------------------------
build_base_image
"$envpart" extract "$work/base.img" "$work/base.env"
env_size=$(stat -c %s "$work/base.env")

cfg() { # cfg ENVFILE: an fw_env.config for it (the two copies)
	"$envpart" config "$1" > "$1.cfg"
	echo "$1.cfg"
}

blctl=
if [ -n "${EQ_BLCTL:-}" ]; then
	[ -x "$EQ_BLCTL" ] || die "EQ_BLCTL=$EQ_BLCTL is not built"
	if "$EQ_BLCTL" --backend uboot --path "$(cfg "$work/base.env")" get >/dev/null 2>"$work/blctl.err"; then
		blctl=$EQ_BLCTL
	elif grep -q "unknown" "$work/blctl.err"; then
		echo "NOTE: eq-blctl has no uboot backend yet, seeding with fw_setenv"
	else
		die "eq-blctl cannot read the image's environment: $(cat "$work/blctl.err")"
	fi
else
	echo "NOTE: no EQ_BLCTL, seeding with fw_setenv"
fi

# ---- seeding ---------------------------------------------------------------------
# seed_state CASE ORDER ALEFT BLEFT TRIAL ("-": none): the image's env, then
# that state written by eqota's writer (or fw_setenv).
seed_state() {
	local in=$cases/$1.env-in
	cp "$work/base.env" "$in"
	if [ -n "$blctl" ]; then
		"$blctl" --backend uboot --path "$(cfg "$in")" set "$2" "$3" "$4" "$5"
	else
		local trial=$5
		[ "$trial" != "-" ] || trial=
		printf 'BOOT_ORDER=%s\nBOOT_A_LEFT=%s\nBOOT_B_LEFT=%s\nBOOT_TRIAL=%s\n' "$2" "$3" "$4" "$trial" > "$in.txt"
		fw_setenv -c "$(cfg "$in")" -s "$in.txt"
	fi
}
# seed_raw CASE NAME=value...: the image's env with these values written by
# libubootenv as they are (garbled ones included); "NAME=" deletes NAME.
seed_raw() {
	local in=$cases/$1.env-in
	shift
	cp "$work/base.env" "$in"
	printf '%s\n' "$@" > "$in.txt"
	fw_setenv -c "$(cfg "$in")" -s "$in.txt"
}
# seed_copies CASE TEXT0 FLAGS0 TEXT1 FLAGS1 [bad0|bad1]: both copies made
# byte by byte (TEXTn: NAME=value lines separated by ';'); badN breaks the
# CRC of copy N.
seed_copies() {
	local in=$cases/$1.env-in i
	for i in 0 1; do
		local text=$2 flags=$3
		[ $i = 0 ] || { text=$4; flags=$5; }
		tr ';' '\n' <<<"$text" > "$in.$i.txt"
		"$envpart" mkcopy "$in.$i.txt" "$flags" "$in.$i"
	done
	case "${6:-}" in
	bad0) printf '\xde\xad' | dd of="$in.0" bs=1 seek=0 conv=notrunc status=none ;;
	bad1) printf '\xde\xad' | dd of="$in.1" bs=1 seek=0 conv=notrunc status=none ;;
	esac
	cat "$in.0" "$in.1" > "$in"
	truncate -s "$env_size" "$in"
}

# ---- one boot (boot in lib.sh) ---------------------------------------------------
loader=U-Boot
kernel_line='Kernel command line:'
booted='Starting kernel'
prompt='^=> '
run_args=(--timeout 120)
put_env() { "$envpart" write "$1" "$2"; }
get_env() { "$envpart" extract "$1" "$2"; }

# ---- checks (the shared ones in lib.sh) ----------------------------------------------
# expect_env CASE NAME=value...: what libubootenv reads after the boot (all
# variables, sorted; nothing when no copy is valid). An empty value is left
# out: U-Boot's import deletes such a variable, so it means unset.
expect_env() {
	local name=$1 got want
	shift
	got=$(fw_printenv -c "$(cfg "$cases/$name.env-out")" 2>&1 | grep -v '^[^=]*=$' | LC_ALL=C sort || true)
	want=$(printf '%s\n' "$@" | sed '/^$/d' | LC_ALL=C sort)
	if [ "$got" = "$want" ]; then
		pass "$name: fw_printenv reads $(echo "$want" | tr '\n' ' ')"
	else
		fail "$name: fw_printenv reads '$(echo "$got" | tr '\n' ' ')', expected '$(echo "$want" | tr '\n' ' ')'"
	fi
}
# expect_blctl CASE STATE: eqota's uboot backend reads STATE ("order=A B
# a_left=3 b_left=3 trial=") after the boot.
expect_blctl() {
	[ -n "$blctl" ] || return 0
	local got
	got=$("$blctl" --backend uboot --path "$(cfg "$cases/$1.env-out")" get 2>/dev/null | sed -n 1p || true)
	if [ "$got" = "$2" ]; then pass "$1: eq-blctl reads $2"; else fail "$1: eq-blctl reads '$got', expected '$2'"; fi
}
# expect_saved CASE: the boot wrote the copy that was not current, with the
# current copy's flags + 1 (mod 256), left the current copy as it was, and
# the written copy is now the current one.
expect_saved() {
	local in=$cases/$1.env-in out=$cases/$1.env-out f0 ok0 f1 ok1 cur of0 ook0 of1 ook1 ocur
	read -r f0 ok0 f1 ok1 cur < <("$envpart" info "$in") || true
	read -r of0 ook0 of1 ook1 ocur < <("$envpart" info "$out") || true
	[ -n "$cur" ] && [ -n "$ocur" ] || { fail "$1: envpart.sh info failed"; return; }
	[ "$cur" != - ] || { fail "$1: the seeded environment has no valid copy"; return; }
	local other=$((1 - cur)) fcur want
	fcur=$([ "$cur" = 0 ] && echo "$f0" || echo "$f1")
	want=$(((fcur + 1) % 256))
	local got_flags got_ok
	got_flags=$([ $other = 0 ] && echo "$of0" || echo "$of1")
	got_ok=$([ $other = 0 ] && echo "$ook0" || echo "$ook1")
	local sz=$((EQ_BOARD_ENV_COPY_SIZE))
	if [ "$ocur" = "$other" ] && [ "$got_ok" = 1 ] && [ "$got_flags" = "$want" ] &&
		cmp -s -i $((cur * sz)) -n $sz "$in" "$out"; then
		pass "$1: saved into copy $other with flags $want, copy $cur untouched"
	else
		fail "$1: save: before '$f0 $ok0 $f1 $ok1 cur $cur', after '$of0 $ook0 $of1 $ook1 cur $ocur' (flags0 ok0 flags1 ok1), expected copy $other with flags $want"
	fi
}

# ---- the cases -----------------------------------------------------------------------
# 1. Normal boot of a committed slot: nothing is written.
if want_case normal; then
	seed_state normal "A B" 3 3 -
	boot normal
	expect_slot normal A
	expect_unchanged normal
	expect_env normal BOOT_ORDER="A B" BOOT_A_LEFT=3 BOOT_B_LEFT=3
	expect_blctl normal "order=A B a_left=3 b_left=3 trial="
fi

# 2. Try B once: the script spends the attempt and saves before booting.
# One trial attempt (not eqota's default 2), so case 3 sees it spent.
if want_case try-b; then
	if [ -n "$blctl" ]; then
		seed_state try-b "A B" 3 3 -
		"$blctl" --backend uboot --path "$(cfg "$cases/try-b.env-in")" --try-attempts 1 try-once B
	else
		seed_state try-b "B A" 3 1 B
	fi
	boot try-b
	expect_slot try-b B
	expect_line try-b "eqota: booting slot B (trial, 0 left)"
	expect_saved try-b
	expect_env try-b BOOT_ORDER="B A" BOOT_A_LEFT=3 BOOT_B_LEFT=0 BOOT_TRIAL=B
	expect_blctl try-b "order=B A a_left=3 b_left=0 trial=B"
fi

# 3. B never confirmed: the next boot (case 2's environment) falls back to A.
if want_case b-unconfirmed && [ -f "$cases/try-b.env-out" ]; then
	cp "$cases/try-b.env-out" "$cases/b-unconfirmed.env-in"
	boot b-unconfirmed
	expect_slot b-unconfirmed A
	expect_unchanged b-unconfirmed
	expect_blctl b-unconfirmed "order=B A a_left=3 b_left=0 trial=B"
fi

# 4. Both exhausted: re-arm the committed slot A, never the trial slot B.
if want_case exhausted; then
	seed_state exhausted "B A" 0 0 B
	boot exhausted
	expect_line exhausted "eqota: no slot has attempts left, re-arming"
	expect_slot exhausted A
	expect_saved exhausted
	expect_env exhausted BOOT_ORDER="B A" BOOT_A_LEFT=3 BOOT_B_LEFT=0
	expect_blctl exhausted "order=B A a_left=3 b_left=0 trial="
fi
# ...and with only the trial slot in the order nothing can be re-armed: A
# has attempts but is out of the order, so it is not booted either.
if want_case nothing; then
	seed_state nothing "B" 3 0 B
	boot nothing
	expect_noboot nothing
	expect_unchanged nothing
fi

# 5. Redundant copies. A copy with a bad CRC is ignored even when its flags
# are newer, in either position.
# bad_crc CASE FLAGS0 FLAGS1 bad0|bad1 SLOT: copy 0 holds the order "A B",
# copy 1 "B A"; the broken copy's order must not be the one that boots.
bad_crc() {
	local order="A B"
	[ "$5" = A ] || order="B A"
	seed_copies "$1" "BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3" "$2" "BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=3" "$3" "$4"
	boot "$1"
	expect_slot "$1" "$5"
	expect_unchanged "$1"
	expect_env "$1" BOOT_ORDER="$order" BOOT_A_LEFT=3 BOOT_B_LEFT=3
}
if want_case bad-crc1; then bad_crc bad-crc1 5 6 bad1 A; fi
if want_case bad-crc0; then bad_crc bad-crc0 9 2 bad0 B; fi
# Both valid: the higher flags win, copy 0 as well as copy 1...
if want_case newer0; then
	seed_copies newer0 "BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=3" 7 "BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3" 6
	boot newer0
	expect_slot newer0 B
	expect_unchanged newer0
	expect_blctl newer0 "order=B A a_left=3 b_left=3 trial="
fi
# ...except that 0 follows 255.
if want_case wrap; then
	seed_copies wrap "BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3" 255 "BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=3" 0
	boot wrap
	expect_slot wrap B
	expect_unchanged wrap
	expect_blctl wrap "order=B A a_left=3 b_left=3 trial="
fi
# A save from copy 1 with flags 255 goes to copy 0 with flags 0, which both
# U-Boot and libubootenv then take as the newer one.
if want_case wrap-save; then
	seed_copies wrap-save "BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3" 254 \
		"BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=1;BOOT_TRIAL=B" 255
	boot wrap-save
	expect_slot wrap-save B
	expect_saved wrap-save
	expect_env wrap-save BOOT_ORDER="B A" BOOT_A_LEFT=3 BOOT_B_LEFT=0 BOOT_TRIAL=B
	expect_blctl wrap-save "order=B A a_left=3 b_left=0 trial=B"
fi

# 6. Garbled values, read the shared way. "C A" is the order "A"; the counter
# "x" is 0, so nothing has attempts left: A is re-armed and boots.
if want_case garbled; then
	seed_raw garbled "BOOT_ORDER=C A" "BOOT_A_LEFT=x" "BOOT_B_LEFT=3" "BOOT_TRIAL="
	boot garbled
	expect_line garbled "eqota: order [A], A 0 left, B 3 left, trial []"
	expect_slot garbled A
	expect_saved garbled
	expect_env garbled BOOT_ORDER=A BOOT_A_LEFT=3 BOOT_B_LEFT=3
	expect_blctl garbled "order=A a_left=3 b_left=3 trial="
fi
# A slot listed twice counts once, "10" is no counter, "C" is no trial:
# order "B A", B 0, so the committed A boots and nothing is written.
if want_case garbled2; then
	seed_raw garbled2 "BOOT_ORDER=B B A" "BOOT_A_LEFT=2" "BOOT_B_LEFT=10" "BOOT_TRIAL=C"
	boot garbled2
	expect_line garbled2 "eqota: order [B A], A 2 left, B 0 left, trial []"
	expect_slot garbled2 A
	expect_unchanged garbled2
fi
# Missing variables: order "A B", 3 attempts each.
if want_case missing; then
	seed_raw missing "BOOT_ORDER=" "BOOT_A_LEFT=" "BOOT_B_LEFT=" "BOOT_TRIAL=" "unrelated=1"
	boot missing
	expect_line missing "eqota: order [A B], A 3 left, B 3 left, trial []"
	expect_slot missing A
	expect_unchanged missing
fi
# No valid copy at all (a blank partition): the same defaults.
if want_case blank; then
	head -c "$env_size" /dev/zero > "$cases/blank.env-in"
	boot blank
	expect_line blank "eqota: no valid copy of the boot-control environment, using the defaults"
	expect_slot blank A
	expect_unchanged blank
fi
# A trial attempt that cannot be saved (read-only disk): case_readonly in lib.sh.
if want_case readonly; then case_readonly; fi

bl_finish
