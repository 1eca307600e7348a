/*
 * eq-blctl: drives any eq_bootloader backend from shell tests (test-only,
 * never installed), so that board tests seed and check boot environments
 * through the same writer the agent uses.
 *
 *   eq-blctl --backend file|grub|uboot --path P [--good-attempts N]
 *            [--try-attempts N] CMD
 *   CMD: get
 *        init-default S | try-once S | mark-good S | mark-bad S | rearm S
 *        set ORDER ALEFT BLEFT TRIAL
 *
 * get prints "order=A B a_left=3 b_left=0 trial=" and then, on a second
 * line, "pick=A" (or "pick=-"), the slot a boot script would boot now.
 * set writes exactly the state given: ORDER like "B A" (one argument, may
 * be empty), TRIAL "-" for none.
 *
 * Exit 0 ok; 1 error (message on stderr); 2 usage; 3 for get on a garbled
 * environment (message on stderr, the state printed as a boot script reads
 * it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <eq/bootloader.h>

static int usage(void)
{
	fprintf(stderr, "usage: eq-blctl --backend NAME --path P [--good-attempts N] [--try-attempts N] CMD\n"
			"  CMD: get | init-default S | try-once S | mark-good S | mark-bad S | rearm S\n"
			"       | set ORDER ALEFT BLEFT TRIAL   (TRIAL '-' for none)\n");
	return 2;
}

static bool parse_count(const char *s, unsigned *ret)
{
	if (!s[0] || s[1] || s[0] < '0' || s[0] > '9')
		return false;
	*ret = (unsigned)(s[0] - '0');
	return true;
}

static void print_state(const struct eq_bl_state *st)
{
	printf("order=");
	for (size_t i = 0; i < st->n_order && i < EQ_BL_SLOTS; i++)
		printf("%s%s", i ? " " : "", eq_bl_slot_name(st->order[i]));
	printf(" a_left=%u b_left=%u trial=%s\n", st->left[0], st->left[1],
	       st->trial >= 0 ? eq_bl_slot_name((unsigned)st->trial) : "");
	int pick = eq_bl_state_pick(st);
	printf("pick=%s\n", pick >= 0 ? eq_bl_slot_name((unsigned)pick) : "-");
}

/* "B A" -> order; false for anything a state cannot hold. */
static bool parse_order(const char *s, struct eq_bl_state *st)
{
	st->n_order = 0;
	char buf[16];
	if (strlen(s) >= sizeof(buf))
		return false;
	strcpy(buf, s);
	for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		int slot = eq_bl_slot_index(tok);
		if (slot < 0 || st->n_order == EQ_BL_SLOTS)
			return false;
		st->order[st->n_order++] = (unsigned)slot;
	}
	return true;
}

int main(int argc, char **argv)
{
	struct eq_bl_config cfg = {0};
	int i = 1;
	for (; i < argc && !strncmp(argv[i], "--", 2); i += 2) {
		if (i + 1 >= argc)
			return usage();
		unsigned *count = NULL;
		if (!strcmp(argv[i], "--backend"))
			cfg.backend = argv[i + 1];
		else if (!strcmp(argv[i], "--path"))
			cfg.path = argv[i + 1];
		else if (!strcmp(argv[i], "--good-attempts"))
			count = &cfg.good_attempts;
		else if (!strcmp(argv[i], "--try-attempts"))
			count = &cfg.try_attempts;
		else
			return usage();
		if (count && !parse_count(argv[i + 1], count))
			return usage();
	}
	if (!cfg.backend || i >= argc)
		return usage();
	const char *cmd = argv[i++];
	int nargs = argc - i;

	struct eq_error e;
	struct eq_bl *bl;
	if (eq_bl_open(&cfg, &bl, &e)) {
		fprintf(stderr, "eq-blctl: %s\n", eq_error_msg(&e));
		return 1;
	}
	int rc = 0;
	eq_err r = EQ_OK;
	if (!strcmp(cmd, "get") && nargs == 0) {
		struct eq_bl_state st;
		r = eq_bl_get_state(bl, &st, &e);
		if (r == EQ_ERR_PARSE || r == EQ_ERR_LIMIT) {
			fprintf(stderr, "eq-blctl: %s\n", eq_error_msg(&e));
			print_state(&st);
			rc = 3;
			r = EQ_OK;
		} else if (!r) {
			print_state(&st);
		}
	} else if (!strcmp(cmd, "set") && nargs == 4) {
		struct eq_bl_state st;
		eq_bl_state_init(&st);
		bool ok = parse_order(argv[i], &st) && parse_count(argv[i + 1], &st.left[0]) &&
			  parse_count(argv[i + 2], &st.left[1]);
		if (ok && strcmp(argv[i + 3], "-")) {
			st.trial = eq_bl_slot_index(argv[i + 3]);
			ok = st.trial >= 0;
		}
		if (!ok) {
			eq_bl_close(bl);
			return usage();
		}
		r = eq_bl_set_state(bl, &st, &e);
	} else if (nargs == 1) {
		int slot = eq_bl_slot_index(argv[i]);
		if (slot < 0) {
			eq_bl_close(bl);
			return usage();
		}
		unsigned s = (unsigned)slot;
		if (!strcmp(cmd, "init-default"))
			r = eq_bl_init_default(bl, s, &e);
		else if (!strcmp(cmd, "try-once"))
			r = eq_bl_try_once(bl, s, &e);
		else if (!strcmp(cmd, "mark-good"))
			r = eq_bl_mark_good(bl, s, &e);
		else if (!strcmp(cmd, "mark-bad"))
			r = eq_bl_mark_bad(bl, s, &e);
		else if (!strcmp(cmd, "rearm"))
			r = eq_bl_rearm(bl, s, &e);
		else
			rc = usage();
	} else {
		rc = usage();
	}
	if (r) {
		fprintf(stderr, "eq-blctl: %s: %s\n", cmd, eq_error_msg(&e));
		rc = 1;
	}
	eq_bl_close(bl);
	return rc;
}
