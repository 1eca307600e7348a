/*
 * eq_bootloader: one interface to the boot-selection state of an A/B device,
 * with backends chosen once by name: "file" (a plain file, for simulated
 * devices and tests), later "uboot" (libubootenv) and "grub" (grubenv).
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
 * Uses eq_base only.
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
	const char *backend;     /* "file" (others later) */
	const char *path;        /* env file (file, grub), fw_env.config (uboot); NULL: backend default */
	unsigned good_attempts;  /* attempts of a committed slot, default 3 */
	unsigned try_attempts;   /* attempts of a slot on trial, default 1 */
};

/* The boot-selection state, as read or to be written. */
struct eq_bl_state {
	unsigned order[EQ_BL_SLOTS]; /* slot indexes in boot order */
	size_t n_order;              /* 0..2: a slot out of the order is never booted */
	unsigned left[EQ_BL_SLOTS];  /* attempts left, 0..EQ_BL_MAX_ATTEMPTS */
	int trial;                   /* slot on trial, -1 for none */
};

struct eq_bl;

/*
 * Opens the backend named in @cfg. EQ_ERR_INVAL for an unknown backend name
 * (the message lists the known ones). Free with eq_bl_close().
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
 */
EQ_API eq_err eq_bl_get_state(struct eq_bl *bl, struct eq_bl_state *ret_state, struct eq_error *err) EQ_MUST_CHECK;

/* Writes the whole state so that a power cut leaves either the old or the new one. */
EQ_API eq_err eq_bl_set_state(struct eq_bl *bl, const struct eq_bl_state *state, struct eq_error *err) EQ_MUST_CHECK;

/* Try @slot once: first in the order, try_attempts left, BOOT_TRIAL = slot. */
EQ_API eq_err eq_bl_try_once(struct eq_bl *bl, unsigned slot, struct eq_error *err) EQ_MUST_CHECK;
/* Commit @slot: first in the order, good_attempts left, no trial. The other
 * slot stays in the order behind it when it has attempts left. */
EQ_API eq_err eq_bl_mark_good(struct eq_bl *bl, unsigned slot, struct eq_error *err) EQ_MUST_CHECK;
/* Reject @slot: out of the order, 0 attempts, trial cleared if it was @slot. */
EQ_API eq_err eq_bl_mark_bad(struct eq_bl *bl, unsigned slot, struct eq_error *err) EQ_MUST_CHECK;
/* The slot a boot script would pick now, or -1 when none is bootable. */
EQ_API int eq_bl_state_pick(const struct eq_bl_state *state);

#ifdef __cplusplus
}
#endif
#endif
