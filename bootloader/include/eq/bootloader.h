/*
 * eq_bootloader: one interface to the boot-selection state of an A/B device,
 * with backends chosen once by name: "uboot" (a U-Boot environment through
 * libubootenv), "grub" (two copies of a grubenv block) and "file" (a plain
 * file, for simulated devices and tests).
 *
 * The state is the RAUC-compatible set of variables
 *   BOOT_ORDER   slots in boot order, e.g. "A B"
 *   BOOT_A_LEFT  attempts left for slot A
 *   BOOT_B_LEFT  attempts left for slot B
 * plus eqota's
 *   BOOT_TRIAL   the slot on trial ("try once"), empty when none
 * The board's boot script boots the first slot of BOOT_ORDER with attempts
 * left and decrements that slot's counter only when it is BOOT_TRIAL (so
 * power cuts of a committed slot never use up its attempts).
 *
 * The names are configurable (struct eq_bl_config) for boot scripts that
 * call them otherwise.
 *
 * Who writes what, and the behaviour at every power-cut point:
 * docs/bootloader.md. Every write replaces the whole state at once: the
 * file backend through eq_file_replace_atomic(), uboot and grub by writing
 * the copy that is not in use.
 *
 * None of these functions logs above debug; errors come back in
 * struct eq_error. An eq_bl is not shared between threads.
 *
 * Uses eq_base (and, privately, libubootenv).
 */
#ifndef EQ_BOOTLOADER_H
#define EQ_BOOTLOADER_H

#include <eq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EQ_BL_SLOTS 2
#define EQ_BL_MAX_ATTEMPTS 9u

/* Slot names are "A" and "B"; index 0 and 1. */
EQ_API const char *eq_bl_slot_name(unsigned slot);
/* 0 or 1 for "A"/"B", -1 for anything else. */
EQ_API int eq_bl_slot_index(const char *name);

struct eq_bl_config {
	const char *backend; /* "uboot", "grub" or "file"; see docs/bootloader.md */
	const char *path;    /* env file (file), first grubenv copy (grub), fw_env.config (uboot); NULL: backend default
				  * (uboot: /etc/fw_env.config, grub: /boot/efi/EFI/eqota/grubenv; file: none, NULL is
				  * EQ_ERR_INVAL there) */
	unsigned good_attempts; /* attempts of a committed slot, 1..9, 0 means the default 3; also
				  * the value a boot script assumes for a missing BOOT_x_LEFT */
	unsigned try_attempts;  /* attempts of a slot on trial, 1..9, 0 means the default 2 */
	/* The variables' names, for boot scripts that call them otherwise;
	 * NULL: RAUC's BOOT_ORDER, BOOT_A_LEFT, BOOT_B_LEFT and eqota's
	 * BOOT_TRIAL. Up to 64 of A-Z a-z 0-9 _, all four distinct. */
	const char *var_order;
	const char *var_a_left;
	const char *var_b_left;
	const char *var_trial;
};

/* The boot-selection state, as read or to be written. */
struct eq_bl_state {
	unsigned order[EQ_BL_SLOTS]; /* slot indexes in boot order */
	size_t n_order;              /* 0..2: a slot out of the order is never booted */
	unsigned left[EQ_BL_SLOTS];  /* attempts left, 0..EQ_BL_MAX_ATTEMPTS */
	int trial;                   /* slot on trial, -1 for none */
};

/* Fills @state with the empty state: no slot in the order, 0 attempts, no
 * trial (nothing bootable). Cannot fail. */
EQ_API void eq_bl_state_init(struct eq_bl_state *state);

struct eq_bl;

/*
 * Opens the backend named in @cfg. EQ_ERR_INVAL for an unknown backend name
 * (the message lists the known ones), for attempts out of 0..9 and for a
 * missing path where the backend has no default. Nothing is read yet: a
 * missing environment shows at the first get/set. Free with eq_bl_close().
 * @cfg's strings are copied.
 */
EQ_API eq_err eq_bl_open(const struct eq_bl_config *cfg, struct eq_bl **ret, struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_bl_close(struct eq_bl *bl);
EQ_API const char *eq_bl_backend_name(const struct eq_bl *bl);

/*
 * Reads the state. A garbled variable (order naming an unknown slot or a
 * slot twice, a counter that is not a number 0..9) is EQ_ERR_PARSE naming
 * the variable and its value; @ret_state then holds what a boot script would
 * do with it (unknown entries skipped, bad counters as 0) so that the caller
 * can still pick a bootable slot.
 *
 * Refinements: a missing BOOT_ORDER or BOOT_x_LEFT is EQ_ERR_PARSE too, read
 * as RAUC's boot scripts default them ("A B", good_attempts); a missing
 * BOOT_TRIAL is no trial and no error (RAUC-written environments lack it).
 * A line of the file backend that is not NAME=value (binary junk included)
 * is EQ_ERR_PARSE naming the line; the other lines still count. A file
 * larger than the backend's cap (64 KiB for "file") is EQ_ERR_LIMIT and
 * @ret_state is filled as if every variable were missing. Only the first
 * problem is in the message, with a count of the others.
 * EQ_ERR_NOTFOUND when there is no environment yet (see eq_bl_mark_good()
 * and eq_bl_init_default()); EQ_ERR_IO; @ret_state untouched then.
 */
EQ_API eq_err eq_bl_get_state(struct eq_bl *bl, struct eq_bl_state *ret_state, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Writes the whole state so that a power cut leaves either the old or the new
 * one. Variables that are not eqota's (and comments) are kept as they are.
 * Creates the environment when missing. EQ_ERR_INVAL for a state out of range
 * (a slot index > 1 or twice in the order, a counter > 9); EQ_ERR_PARSE when
 * the file holds lines that are not NAME=value (it may not be a boot
 * environment at all, so it is not overwritten); EQ_ERR_LIMIT for a file
 * over the cap, for the same reason; EQ_ERR_IO.
 */
EQ_API eq_err eq_bl_set_state(struct eq_bl *bl, const struct eq_bl_state *state, struct eq_error *err) EQ_MUST_CHECK;

/*
 * The transitions below read the state, change it and write it back in one
 * atomic write (nothing is written when nothing changes). A garbled state
 * (EQ_ERR_PARSE from eq_bl_get_state()) is the starting point as a boot
 * script reads it, and the write repairs it; an environment over the size cap
 * is never overwritten (EQ_ERR_LIMIT). EQ_ERR_INVAL for @slot > 1.
 */

/*
 * Try @slot once: first in the order, try_attempts left, BOOT_TRIAL = slot.
 * The other slot stays behind it as the fallback, with its counter, when it
 * is in the order with attempts left. EQ_ERR_STATE, nothing written, when
 * the other slot is itself on trial or is no fallback (out of the order or
 * 0 attempts): a failed try would then leave nothing to boot. Call it after
 * the slot is completely installed and verified. EQ_ERR_NOTFOUND without an
 * environment.
 */
EQ_API eq_err eq_bl_try_once(struct eq_bl *bl, unsigned slot, struct eq_error *err) EQ_MUST_CHECK;
/* Commit @slot: first in the order, good_attempts left, no trial. The other
 * slot stays in the order behind it when it has attempts left (and was in
 * the order), with its counter. Creates a missing environment (that is how a
 * freshly provisioned device gets its first one). */
EQ_API eq_err eq_bl_mark_good(struct eq_bl *bl, unsigned slot, struct eq_error *err) EQ_MUST_CHECK;
/* Reject @slot: out of the order, 0 attempts, trial cleared if it was @slot.
 * Rejecting the last bootable slot is allowed (pick then gives -1).
 * EQ_ERR_NOTFOUND without an environment. */
EQ_API eq_err eq_bl_mark_bad(struct eq_bl *bl, unsigned slot, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Re-arm committed @slot: good_attempts left, order and trial unchanged.
 * Boot scripts written for RAUC decrement the counter of every slot at every
 * boot; the agent calls this after each good boot so a committed slot never
 * runs out. Writes only when the counter changes (flash wear). EQ_ERR_STATE
 * when @slot is not committed (on trial, or out of the order: re-arming would
 * make a rejected slot bootable again); EQ_ERR_NOTFOUND without an
 * environment.
 */
EQ_API eq_err eq_bl_rearm(struct eq_bl *bl, unsigned slot, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Writes a fresh state for a device whose slot @slot_good holds a good
 * system: order "<slot_good>", good_attempts for it, 0 for the other slot
 * (empty, or not verified: out of the order), no trial. Whatever eqota
 * state was there is replaced, other variables are kept. For factory images
 * and for tests; eq_bl_mark_good() is the everyday way.
 */
EQ_API eq_err eq_bl_init_default(struct eq_bl *bl, unsigned slot_good, struct eq_error *err) EQ_MUST_CHECK;

/* The slot a boot script would pick now, or -1 when none is bootable. */
EQ_API int eq_bl_state_pick(const struct eq_bl_state *state);

/*
 * What every eqota boot script does when no slot of the order has attempts
 * left ("both exhausted", reachable only through RAUC-style scripts that
 * decrement committed slots, or a hand-edited environment): every slot of
 * the order except the trial slot gets @good_attempts (0: the default 3)
 * back and the trial is cleared, so a committed slot is never lost to its
 * counter while a slot on trial, or one outside the order, is never booted
 * this way. Returns true when it changed @state (the script then saves it
 * and boots eq_bl_state_pick()); false when something was bootable already,
 * or when nothing can be re-armed (an empty order, or one holding only the
 * trial slot): the board then stays in its boot loader.
 */
EQ_API bool eq_bl_state_recover(struct eq_bl_state *state, unsigned good_attempts);

#ifdef __cplusplus
}
#endif
#endif
