# eqota A/B boot script for qemuarm64 (Debian 12 u-boot-qemu, qemu_arm64).
# build-image.sh compiles it: mkimage -A arm64 -O linux -T script -C none.
# U-Boot's distro boot finds it as boot.scr on partition 1.
#
# The boot-control variables (BOOT_ORDER, BOOT_A_LEFT, BOOT_B_LEFT,
# BOOT_TRIAL) live in partition 4 of virtio disk 0, not in U-Boot's own
# environment, because Linux cannot reach the pflash that holds the latter.
# Partition 4 holds two redundant copies in U-Boot's format, 0x4000 bytes
# each at offsets 0x0 and 0x4000 (fw_env.config says the same for
# libubootenv): CRC32 of the data | flags byte | NAME=value\0...\0\0.
#
# Every boot: read both copies, keep the valid one with the newer flags,
# import only the four variables, then apply eqota's rule
# (docs/bootloader.md): boot the first slot of BOOT_ORDER with attempts
# left, and only when it is BOOT_TRIAL decrement its counter and save
# BEFORE booting; when no slot has attempts left, re-arm the slots of the
# order that are not on trial. A save writes the OTHER copy with flags + 1,
# never the one just read: a power cut during the write leaves that one
# intact and current.
#
# Variables of this script are U-Boot environment variables named eq_*
# (U-Boot's hush looks the environment up before its own locals, so loop
# variables get names that are never set with setenv). Addresses, sizes,
# block numbers and the flags are hex, as U-Boot's commands read and print
# them; counters are single digits, the same in hex and decimal.

setenv eq_envpart 4
# One copy: 0x4000 bytes = 0x20 blocks; 0x3ffb data bytes after CRC and
# flags; 0x3fff bytes of CRC + data, the layout env import/export -c use.
setenv eq_copy 4000
setenv eq_copy_blks 20
setenv eq_data 3ffb
setenv eq_crcdata 3fff
setenv eq_good 3
setenv eq_vars "BOOT_ORDER BOOT_A_LEFT BOOT_B_LEFT BOOT_TRIAL"
# Scratch RAM, clear of the kernel (0x40400000), the initramfs (0x44000000)
# and U-Boot itself (relocated near the top of 512 MiB).
setenv eq_buf 50000000
setenv eq_scr 50100000
setenv eq_exp 50200000
setenv eq_new 50300000

# eq_pick: eq_slot = the first slot of eq_order with attempts left, or empty.
setenv eq_pick 'setenv eq_slot; for eq_p in ${eq_order}; do if test -z "${eq_slot}"; then if test ${eq_p} = A && test ${eq_a} -gt 0; then setenv eq_slot A; fi; if test ${eq_p} = B && test ${eq_b} -gt 0; then setenv eq_slot B; fi; fi; done'

# ---- read the two copies ----------------------------------------------------
for eq_v in ${eq_vars}; do setenv ${eq_v}; done
setenv eq_cur none
setenv eq_blk
setenv eq_ok0 0
setenv eq_ok1 0
setenv eq_flags0 0
setenv eq_flags1 0
if part start virtio 0 ${eq_envpart} eq_blk && part size virtio 0 ${eq_envpart} eq_nblk && itest ${eq_nblk} >= 40 && virtio read ${eq_buf} ${eq_blk} 40; then
	for eq_i in 0 1; do
		# CRC + data without the flags byte is what env import -c checks.
		setexpr eq_c ${eq_i} * ${eq_copy}
		setexpr eq_c ${eq_c} + ${eq_buf}
		setexpr eq_s ${eq_i} * 10000
		setexpr eq_s ${eq_s} + ${eq_scr}
		cp.b ${eq_c} ${eq_s} 4
		setexpr eq_t ${eq_c} + 5
		setexpr eq_u ${eq_s} + 4
		cp.b ${eq_t} ${eq_u} ${eq_data}
		setexpr eq_t ${eq_c} + 4
		setexpr.b eq_flags${eq_i} *${eq_t}
		if env import -c ${eq_s} ${eq_crcdata} ${eq_vars}; then
			setenv eq_ok${eq_i} 1
		fi
	done
else
	echo "eqota: cannot read partition ${eq_envpart} of virtio 0"
fi
# The newer of two valid copies, as U-Boot's env_import_redund and
# libubootenv decide: the higher flags, except that 0 follows 255.
if test ${eq_ok0} = 1 && test ${eq_ok1} = 1; then
	setenv eq_cur 0
	if itest ${eq_flags1} > ${eq_flags0}; then
		setenv eq_cur 1
	fi
	if itest ${eq_flags0} == ff && itest ${eq_flags1} == 0; then
		setenv eq_cur 1
	fi
	if itest ${eq_flags1} == ff && itest ${eq_flags0} == 0; then
		setenv eq_cur 0
	fi
elif test ${eq_ok0} = 1; then
	setenv eq_cur 0
elif test ${eq_ok1} = 1; then
	setenv eq_cur 1
fi
for eq_v in ${eq_vars}; do setenv ${eq_v}; done
if test ${eq_cur} = none; then
	echo "eqota: no valid copy of the boot-control environment, using the defaults"
	setenv eq_fcur 0
	setenv eq_other 0
else
	setexpr eq_s ${eq_cur} * 10000
	setexpr eq_s ${eq_s} + ${eq_scr}
	env import -c ${eq_s} ${eq_crcdata} ${eq_vars}
	if test ${eq_cur} = 0; then
		setenv eq_fcur ${eq_flags0}
		setenv eq_other 1
	else
		setenv eq_fcur ${eq_flags1}
		setenv eq_other 0
	fi
fi
echo "eqota: env copy 0 valid ${eq_ok0} flags ${eq_flags0}, copy 1 valid ${eq_ok1} flags ${eq_flags1}: using ${eq_cur}"

# ---- the variables as every eqota boot script reads them ---------------------
# Missing BOOT_ORDER: "A B"; entries other than A and B skipped, a slot
# listed twice counted once.
if env exists BOOT_ORDER; then
	setenv eq_raw "${BOOT_ORDER}"
else
	setenv eq_raw "A B"
fi
setenv eq_order
setenv eq_hasA 0
setenv eq_hasB 0
for eq_p in ${eq_raw}; do
	setenv eq_add 0
	if test "x${eq_p}" = xA && test ${eq_hasA} = 0; then
		setenv eq_hasA 1
		setenv eq_add 1
	fi
	if test "x${eq_p}" = xB && test ${eq_hasB} = 0; then
		setenv eq_hasB 1
		setenv eq_add 1
	fi
	if test ${eq_add} = 1; then
		if test -n "${eq_order}"; then
			setenv eq_order "${eq_order} ${eq_p}"
		else
			setenv eq_order ${eq_p}
		fi
	fi
done
# A missing counter: the good attempts; anything but one digit 0..9: 0.
setenv eq_a 0
setenv eq_b 0
if env exists BOOT_A_LEFT; then
	for eq_d in 0 1 2 3 4 5 6 7 8 9; do
		if test "x${BOOT_A_LEFT}" = "x${eq_d}"; then
			setenv eq_a ${eq_d}
		fi
	done
else
	setenv eq_a ${eq_good}
fi
if env exists BOOT_B_LEFT; then
	for eq_d in 0 1 2 3 4 5 6 7 8 9; do
		if test "x${BOOT_B_LEFT}" = "x${eq_d}"; then
			setenv eq_b ${eq_d}
		fi
	done
else
	setenv eq_b ${eq_good}
fi
# A trial other than A or B: no trial.
setenv eq_trial
if test "x${BOOT_TRIAL}" = xA || test "x${BOOT_TRIAL}" = xB; then
	setenv eq_trial ${BOOT_TRIAL}
fi
echo "eqota: order [${eq_order}], A ${eq_a} left, B ${eq_b} left, trial [${eq_trial}]"

# ---- the rule ------------------------------------------------------------------
setenv eq_save 0
setenv eq_wastrial 0
run eq_pick
if test -z "${eq_slot}"; then
	echo "eqota: no slot has attempts left, re-arming"
	for eq_p in ${eq_order}; do
		if test "${eq_p}" != "${eq_trial}"; then
			if test ${eq_p} = A; then
				setenv eq_a ${eq_good}
			else
				setenv eq_b ${eq_good}
			fi
			setenv eq_save 1
		fi
	done
	if test ${eq_save} = 1; then
		setenv eq_trial
		run eq_pick
	fi
elif test "${eq_slot}" = "${eq_trial}"; then
	if test ${eq_slot} = A; then
		setexpr eq_a ${eq_a} - 1
	else
		setexpr eq_b ${eq_b} - 1
	fi
	setenv eq_save 1
	setenv eq_wastrial 1
fi

# ---- save: the other copy, flags + 1 -------------------------------------------
if test ${eq_save} = 1; then
	setenv BOOT_ORDER "${eq_order}"
	setenv BOOT_A_LEFT ${eq_a}
	setenv BOOT_B_LEFT ${eq_b}
	# An empty value deletes the variable: no trial.
	setenv BOOT_TRIAL ${eq_trial}
	setexpr eq_nflags ${eq_fcur} + 1
	if itest ${eq_nflags} == 100; then
		setenv eq_nflags 0
	fi
	setexpr eq_tblk ${eq_other} * ${eq_copy_blks}
	setexpr eq_tblk ${eq_tblk} + ${eq_blk}
	setenv eq_saved 0
	mw.b ${eq_exp} 0 ${eq_copy}
	if env export -c -s ${eq_crcdata} ${eq_exp} ${eq_vars}; then
		cp.b ${eq_exp} ${eq_new} 4
		setexpr eq_t ${eq_new} + 4
		mw.b ${eq_t} ${eq_nflags} 1
		setexpr eq_t ${eq_new} + 5
		setexpr eq_u ${eq_exp} + 4
		cp.b ${eq_u} ${eq_t} ${eq_data}
		if test -n "${eq_blk}" && virtio write ${eq_new} ${eq_tblk} ${eq_copy_blks}; then
			setenv eq_saved 1
			echo "eqota: saved to env copy ${eq_other} flags ${eq_nflags}"
		fi
	fi
	if test ${eq_saved} = 0; then
		echo "eqota: cannot save the boot-control environment"
		# An attempt that is not recorded could repeat forever: skip the
		# trial slot this time. A re-arm that was not saved is simply
		# done again at the next boot.
		if test ${eq_wastrial} = 1; then
			echo "eqota: skipping trial slot ${eq_slot}"
			if test ${eq_slot} = A; then
				setenv eq_a 0
			else
				setenv eq_b 0
			fi
			setenv eq_wastrial 0
			run eq_pick
		fi
	fi
fi

# ---- boot ------------------------------------------------------------------------
if test -z "${eq_slot}"; then
	echo "eqota: no bootable slot"
else
	if test ${eq_slot} = A; then
		setenv eq_part 2
		setenv eq_left ${eq_a}
	else
		setenv eq_part 3
		setenv eq_left ${eq_b}
	fi
	if test ${eq_wastrial} = 1; then
		echo "eqota: booting slot ${eq_slot} (trial, ${eq_left} left)"
	else
		echo "eqota: booting slot ${eq_slot} (${eq_left} left)"
	fi
	setenv bootargs "root=/dev/vda${eq_part} rootwait ro console=ttyAMA0 panic=5 eqota.slot=${eq_slot}"
	if load virtio 0:${eq_part} ${kernel_addr_r} /boot/vmlinuz && load virtio 0:${eq_part} ${ramdisk_addr_r} /boot/initrd.img; then
		booti ${kernel_addr_r} ${ramdisk_addr_r}:${filesize} ${fdtcontroladdr}
	fi
	# A trial slot has used its attempt, so the next boot falls back.
	echo "eqota: slot ${eq_slot} did not boot, resetting"
	reset
fi
