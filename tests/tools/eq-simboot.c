/*
 * eq-simboot: the boot script of a simulated device (dir slots, "file"
 * bootloader backend), test-only and never installed.
 *
 *   eq-simboot --env FILE --cmdline OUT [--good-attempts N]
 *
 * Does what a board's boot script does: picks the first slot of BOOT_ORDER
 * with attempts left; when that slot is BOOT_TRIAL, decrements its counter
 * and saves the environment (atomically) BEFORE "booting", so a hang or a
 * power cut during the boot has used the attempt up. Then writes OUT with
 * "eqota.slot=<S>" (what the kernel command line would hold) and prints S.
 * A garbled environment is read as a boot script reads it (a warning on
 * stderr) and is not repaired: boot scripts only ever save a decrement.
 * --good-attempts N: the counter a missing BOOT_x_LEFT stands for (RAUC
 * scripts default it), 3 by default.
 *
 * When no slot of the order has attempts left it re-arms as every eqota
 * boot script does (eq_bl_state_recover(): committed slots of the order get
 * their attempts back, the trial slot does not), saves, and boots.
 *
 * Exit 0 booted; 1 nothing bootable (an empty order, or only the trial slot
 * in it: the device stays off, as a real board halts in its boot loader) or
 * no environment; 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <eq/bootloader.h>

static int usage(void)
{
	fprintf(stderr, "usage: eq-simboot --env FILE --cmdline OUT [--good-attempts N]\n");
	return 2;
}

static void describe(const struct eq_bl_state *st, char *buf, size_t size)
{
	char order[8] = "";
	for (size_t i = 0; i < st->n_order && i < EQ_BL_SLOTS; i++)
		snprintf(order + strlen(order), sizeof(order) - strlen(order), "%s%s", i ? " " : "",
			 eq_bl_slot_name(st->order[i]));
	snprintf(buf, size, "BOOT_ORDER='%s', A %u attempts left, B %u attempts left", order, st->left[0], st->left[1]);
}

int main(int argc, char **argv)
{
	const char *env = NULL, *cmdline = NULL;
	unsigned good = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--env") && i + 1 < argc) {
			env = argv[++i];
		} else if (!strcmp(argv[i], "--cmdline") && i + 1 < argc) {
			cmdline = argv[++i];
		} else if (!strcmp(argv[i], "--good-attempts") && i + 1 < argc) {
			char *end;
			unsigned long v = strtoul(argv[++i], &end, 10);
			if (*end || v < 1 || v > EQ_BL_MAX_ATTEMPTS) {
				fprintf(stderr, "eq-simboot: --good-attempts must be 1..%u\n", EQ_BL_MAX_ATTEMPTS);
				return 2;
			}
			good = (unsigned)v;
		} else {
			return usage();
		}
	}
	if (!env || !cmdline)
		return usage();

	struct eq_error e;
	struct eq_bl *bl;
	struct eq_bl_config cfg = {.backend = "file", .path = env, .good_attempts = good};
	if (eq_bl_open(&cfg, &bl, &e)) {
		fprintf(stderr, "eq-simboot: %s\n", eq_error_msg(&e));
		return 2;
	}
	int rc = 1;
	struct eq_bl_state st;
	eq_err r = eq_bl_get_state(bl, &st, &e);
	if (r == EQ_ERR_PARSE || r == EQ_ERR_LIMIT) {
		fprintf(stderr, "eq-simboot: warning: %s, continuing as a boot script reads it\n", eq_error_msg(&e));
	} else if (r) {
		fprintf(stderr, "eq-simboot: no boot environment: %s; the device stays off\n", eq_error_msg(&e));
		goto out;
	}
	char desc[128];
	describe(&st, desc, sizeof(desc));
	int slot = eq_bl_state_pick(&st);
	if (slot < 0 && eq_bl_state_recover(&st, good)) {
		fprintf(stderr, "eq-simboot: no slot has attempts left (%s), re-arming\n", desc);
		if (eq_bl_set_state(bl, &st, &e))
			/* Booting without the saved re-arm is still right: the
			 * next boot re-arms again. */
			fprintf(stderr, "eq-simboot: cannot save the re-arm: %s\n", eq_error_msg(&e));
		slot = eq_bl_state_pick(&st);
	}
	if (slot >= 0 && slot == st.trial) {
		st.left[slot]--;
		if (eq_bl_set_state(bl, &st, &e)) {
			/* An attempt that cannot be recorded could repeat forever:
			 * boot the fallback instead, as a committed slot needs no
			 * write. */
			fprintf(stderr, "eq-simboot: cannot save the attempt of trial slot %s: %s; skipping it\n",
				eq_bl_slot_name((unsigned)slot), eq_error_msg(&e));
			st.left[slot] = 0;
			slot = eq_bl_state_pick(&st);
		}
	}
	if (slot < 0) {
		fprintf(stderr, "eq-simboot: no bootable slot in %s (%s): nothing to re-arm, the device stays off\n",
			env, desc);
		goto out;
	}
	char line[32];
	int n = snprintf(line, sizeof(line), "eqota.slot=%s\n", eq_bl_slot_name((unsigned)slot));
	if (eq_file_replace_atomic(cmdline, line, (size_t)n, 0644, &e)) {
		fprintf(stderr, "eq-simboot: %s\n", eq_error_msg(&e));
		goto out;
	}
	printf("%s\n", eq_bl_slot_name((unsigned)slot));
	rc = 0;
out:
	eq_bl_close(bl);
	return rc;
}
