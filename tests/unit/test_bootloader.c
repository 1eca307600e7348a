/*
 * Unit tests of eq_bootloader: the transitions, the file backend's format
 * and atomic writes, garbled inputs and the bad-input corpus
 * (tests/data/bad/bootloader/<case>.env + .expect).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/bootloader.h>

static char tmpdir[64];
static char env_path[128];

static int setup_tmp(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/eq-test-bl-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(env_path, sizeof(env_path), "%s/bootenv", tmpdir);
	return 0;
}

static int teardown_tmp(void **state)
{
	(void)state;
	struct eq_error e;
	return eq_rm_rf(tmpdir, &e) == EQ_OK ? 0 : -1;
}

static void write_env(const void *data, size_t len)
{
	FILE *f = fopen(env_path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void write_env_str(const char *s)
{
	write_env(s, strlen(s));
}

/* The env file's text; caller frees. */
static char *read_env(void)
{
	uint8_t *d;
	size_t n;
	struct eq_error e;
	assert_int_equal(eq_file_read_all(env_path, 1u << 21, &d, &n, &e), EQ_OK);
	return (char *)d;
}

static struct eq_bl *open_bl(void)
{
	struct eq_bl *bl;
	struct eq_error e;
	struct eq_bl_config cfg = {.backend = "file", .path = env_path, .try_attempts = 1};
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_OK);
	return bl;
}

/* "order=A B A=3 B=0 trial=-": a state in one comparable line. */
static const char *fmt_state(const struct eq_bl_state *st)
{
	static char buf[64];
	char order[8] = "";
	for (size_t i = 0; i < st->n_order; i++)
		snprintf(order + strlen(order), sizeof(order) - strlen(order), "%s%s", i ? " " : "",
			 eq_bl_slot_name(st->order[i]));
	snprintf(buf, sizeof(buf), "order=%s A=%u B=%u trial=%s", order, st->left[0], st->left[1],
		 st->trial < 0 ? "-" : eq_bl_slot_name((unsigned)st->trial));
	return buf;
}

static const char *state_of(struct eq_bl *bl)
{
	struct eq_bl_state st;
	struct eq_error e;
	eq_err r = eq_bl_get_state(bl, &st, &e);
	if (r)
		fail_msg("get_state: %s", e.msg);
	return fmt_state(&st);
}

/* What eq-simboot does, in process: decrement the trial slot it picks. */
static int script_boot(struct eq_bl *bl)
{
	struct eq_bl_state st;
	struct eq_error e;
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_OK);
	int s = eq_bl_state_pick(&st);
	if (s < 0 && eq_bl_state_recover(&st, 0)) {
		assert_int_equal(eq_bl_set_state(bl, &st, &e), EQ_OK);
		s = eq_bl_state_pick(&st);
	}
	if (s >= 0 && s == st.trial) {
		st.left[s]--;
		assert_int_equal(eq_bl_set_state(bl, &st, &e), EQ_OK);
	}
	return s;
}

/* ---- names and open ---------------------------------------------------- */

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(eq_bl_slot_name(0), "A");
	assert_string_equal(eq_bl_slot_name(1), "B");
	assert_string_equal(eq_bl_slot_name(2), "?");
	assert_int_equal(eq_bl_slot_index("A"), 0);
	assert_int_equal(eq_bl_slot_index("B"), 1);
	assert_int_equal(eq_bl_slot_index("a"), -1);
	assert_int_equal(eq_bl_slot_index("AB"), -1);
	assert_int_equal(eq_bl_slot_index(""), -1);
	assert_int_equal(eq_bl_slot_index(NULL), -1);
}

static void test_open_errors(void **state)
{
	(void)state;
	struct eq_bl *bl = NULL;
	struct eq_error e;
	struct eq_bl_config cfg = {.backend = "uboot2", .path = env_path};
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_ERR_INVAL);
	assert_non_null(strstr(e.msg, "'uboot2'"));
	assert_non_null(strstr(e.msg, "known: file"));
	cfg.backend = NULL;
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_ERR_INVAL);
	cfg.backend = "file";
	cfg.path = NULL;
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_ERR_INVAL);
	assert_non_null(strstr(e.msg, "needs a path"));
	cfg.path = env_path;
	cfg.good_attempts = 10;
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_ERR_INVAL);
	assert_non_null(strstr(e.msg, "good_attempts"));
	cfg.good_attempts = 0;
	cfg.try_attempts = 12;
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_ERR_INVAL);
	assert_null(bl);
	cfg.try_attempts = 2;
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_OK);
	assert_string_equal(eq_bl_backend_name(bl), "file");
	eq_bl_close(bl);
	eq_bl_close(NULL);
}

/* ---- transitions ------------------------------------------------------- */

static void test_missing_env(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_bl_state st;
	eq_bl_state_init(&st);
	struct eq_error e;
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(eq_bl_mark_bad(bl, 1, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(eq_bl_rearm(bl, 0, &e), EQ_ERR_NOTFOUND);
	assert_non_null(strstr(e.msg, "no boot environment"));
	assert_int_equal(access(env_path, F_OK), -1);
	/* Provisioning: committing a slot creates the environment. */
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=A A=3 B=0 trial=-");
	char *text = read_env();
	assert_string_equal(text, "BOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\nBOOT_TRIAL=\n");
	eq_free(text);
	struct stat sb;
	assert_int_equal(stat(env_path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0644);
	eq_bl_close(bl);
}

static void test_update_cycle(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	assert_int_equal(eq_bl_init_default(bl, 0, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=A A=3 B=0 trial=-");
	assert_int_equal(script_boot(bl), 0);
	assert_int_equal(script_boot(bl), 0);
	assert_string_equal(state_of(bl), "order=A A=3 B=0 trial=-"); /* committed: never decremented */

	/* try-once B from good A */
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=B A A=3 B=1 trial=B");
	assert_int_equal(script_boot(bl), 1);
	assert_string_equal(state_of(bl), "order=B A A=3 B=0 trial=B");
	/* B confirms -> good */
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=B A A=3 B=3 trial=-");
	assert_int_equal(script_boot(bl), 1);
	assert_int_equal(script_boot(bl), 1);
	assert_string_equal(state_of(bl), "order=B A A=3 B=3 trial=-");

	/* the next update goes to A, which fails its checks -> mark bad -> B picked */
	assert_int_equal(eq_bl_try_once(bl, 0, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=A B A=1 B=3 trial=A");
	assert_int_equal(script_boot(bl), 0);
	assert_int_equal(eq_bl_mark_bad(bl, 0, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=B A=0 B=3 trial=-");
	assert_int_equal(script_boot(bl), 1);
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK); /* what the agent adds: no change, no write */
	assert_string_equal(state_of(bl), "order=B A=0 B=3 trial=-");
	eq_bl_close(bl);
}

static void test_trial_runs_out(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	assert_int_equal(script_boot(bl), 1); /* B hangs: nobody confirms */
	assert_int_equal(script_boot(bl), 0); /* out of attempts: A */
	assert_int_equal(script_boot(bl), 0);
	assert_string_equal(state_of(bl), "order=B A A=3 B=0 trial=B");
	/* the agent on A records the failure */
	assert_int_equal(eq_bl_mark_bad(bl, 1, &e), EQ_OK);
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=A A=3 B=0 trial=-");
	eq_bl_close(bl);
}

static void test_refusals(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	assert_int_equal(eq_bl_try_once(bl, 2, &e), EQ_ERR_INVAL);
	assert_int_equal(eq_bl_mark_good(bl, 7, &e), EQ_ERR_INVAL);
	/* A fallback that is itself on trial */
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	assert_int_equal(eq_bl_try_once(bl, 0, &e), EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "slot B is still on trial"));
	assert_int_equal(eq_bl_rearm(bl, 1, &e), EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "on trial"));
	/* trying the same slot again (an interrupted switch repeated) is fine */
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=B A A=3 B=1 trial=B");
	/* no fallback: the only good slot rejected */
	assert_int_equal(eq_bl_mark_bad(bl, 1, &e), EQ_OK);
	assert_int_equal(eq_bl_mark_bad(bl, 0, &e), EQ_OK);
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "slot A is no fallback"));
	assert_int_equal(eq_bl_rearm(bl, 0, &e), EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "not in the boot order"));
	eq_bl_close(bl);
}

static void test_both_exhausted(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	assert_int_equal(eq_bl_mark_bad(bl, 0, &e), EQ_OK); /* A rejected while B is on trial */
	assert_string_equal(state_of(bl), "order=B A=0 B=1 trial=B");
	assert_int_equal(script_boot(bl), 1);
	assert_int_equal(script_boot(bl), -1);
	assert_int_equal(eq_bl_mark_bad(bl, 1, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order= A=0 B=0 trial=-");
	assert_int_equal(script_boot(bl), -1);
	/* picking from hand-made states */
	struct eq_bl_state st;
	eq_bl_state_init(&st);
	assert_int_equal(eq_bl_state_pick(&st), -1);
	st.n_order = 2;
	st.order[0] = 1;
	st.order[1] = 0;
	st.left[0] = 2;
	assert_int_equal(eq_bl_state_pick(&st), 0);
	st.left[1] = 1;
	assert_int_equal(eq_bl_state_pick(&st), 1);
	/* recovery when both are exhausted: committed slots of the order only */
	assert_false(eq_bl_state_recover(&st, 3)); /* B is bootable: nothing to do */
	st.left[0] = st.left[1] = 0;
	st.trial = 1;
	assert_true(eq_bl_state_recover(&st, 2));
	assert_int_equal(st.left[0], 2);
	assert_int_equal(st.left[1], 0);
	assert_int_equal(st.trial, -1);
	assert_int_equal(eq_bl_state_pick(&st), 0);
	st.left[0] = 0;
	st.trial = -1;
	assert_true(eq_bl_state_recover(&st, 0)); /* 0: the default 3, for both */
	assert_int_equal(st.left[0], 3);
	assert_int_equal(st.left[1], 3);
	assert_int_equal(eq_bl_state_pick(&st), 1);
	st.n_order = 1; /* only the trial slot in the order: nothing to re-arm */
	st.order[0] = 1;
	st.left[0] = st.left[1] = 0;
	st.trial = 1;
	assert_false(eq_bl_state_recover(&st, 3));
	assert_int_equal(eq_bl_state_pick(&st), -1);
	st.n_order = 0;
	st.trial = -1;
	assert_false(eq_bl_state_recover(&st, 3));
	eq_bl_close(bl);
}

/* Boot scripts that call the variables otherwise: names from the config. */
static void test_var_names(void **state)
{
	(void)state;
	struct eq_bl *bl;
	struct eq_error e;
	struct eq_bl_config cfg = {.backend = "file",
				   .path = env_path,
				   .var_order = "BOOT_SEQ",
				   .var_a_left = "A_TRIES",
				   .var_b_left = "B_TRIES",
				   .var_trial = "UPGRADE"};
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_OK);
	write_env_str("BOOT_ORDER=B\nBOOT_SEQ=A B\nA_TRIES=3\nB_TRIES=3\n");
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	char *text = read_env();
	/* RAUC's names are another program's variables now: kept as they are.
	 * No try_attempts in the config: the default gives the trial 2. */
	assert_string_equal(text, "BOOT_ORDER=B\nBOOT_SEQ=B A\nA_TRIES=3\nB_TRIES=2\nUPGRADE=B\n");
	eq_free(text);
	write_env_str("BOOT_SEQ=A C\nA_TRIES=3\nB_TRIES=3\n");
	struct eq_bl_state st;
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "BOOT_SEQ='A C': unknown slot 'C'"));
	eq_bl_close(bl);

	static const struct {
		const char *order, *a, *trial, *msg;
	} bad[] = {
		{"BOOT ORDER", NULL, NULL, "var_order='BOOT ORDER': expected 1 to 64 of A-Z a-z 0-9 _"},
		{"", NULL, NULL, "var_order='': expected"},
		{"9LIVES", NULL, NULL, "not starting with a digit"},
		{NULL, "BOOT_B_LEFT", NULL, "var_a_left and var_b_left are both 'BOOT_B_LEFT'"},
		{NULL, NULL, "BOOT_ORDER", "var_order and var_trial are both 'BOOT_ORDER'"},
		{"A1234567890123456789012345678901234567890123456789012345678901234", NULL, NULL, "expected 1 to 64"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct eq_bl_config c = {.backend = "file",
					 .path = env_path,
					 .var_order = bad[i].order,
					 .var_a_left = bad[i].a,
					 .var_trial = bad[i].trial};
		bl = NULL;
		assert_int_equal(eq_bl_open(&c, &bl, &e), EQ_ERR_INVAL);
		assert_null(bl);
		if (!strstr(e.msg, bad[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, bad[i].msg);
	}
}

static void test_rearm(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	/* a RAUC-style script has used two of A's attempts */
	write_env_str("BOOT_ORDER=A B\nBOOT_A_LEFT=1\nBOOT_B_LEFT=2\n");
	assert_int_equal(eq_bl_rearm(bl, 0, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=A B A=3 B=2 trial=-");
	assert_int_equal(eq_bl_rearm(bl, 1, &e), EQ_OK); /* the fallback is committed too */
	assert_string_equal(state_of(bl), "order=A B A=3 B=3 trial=-");
	/* no change, no write: the file keeps its inode */
	struct stat s1, s2;
	assert_int_equal(stat(env_path, &s1), 0);
	assert_int_equal(eq_bl_rearm(bl, 0, &e), EQ_OK);
	assert_int_equal(stat(env_path, &s2), 0);
	assert_int_equal(s1.st_ino, s2.st_ino);
	eq_bl_close(bl);
}

static void test_attempt_config(void **state)
{
	(void)state;
	struct eq_bl *bl;
	struct eq_error e;
	struct eq_bl_config cfg = {.backend = "file", .path = env_path, .good_attempts = 5, .try_attempts = 2};
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_OK);
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=B A=0 B=5 trial=-");
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=A B A=5 B=5 trial=-");
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=B A A=5 B=2 trial=B");
	eq_bl_close(bl);
}

/* ---- the file: unknown lines, mode, atomicity, garbled input -------------- */

static void test_preserve_and_atomic(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	write_env_str("# board env\nbootargs=console=ttyS0 quiet\nBOOT_ORDER=A B\n\nBOOT_A_LEFT=3\n"
		      "BOOT_B_LEFT=3\nX.y-z=1=2\nrootwait=");
	assert_int_equal(chmod(env_path, 0600), 0);
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	char *text = read_env();
	assert_string_equal(text, "# board env\nbootargs=console=ttyS0 quiet\nBOOT_ORDER=B A\n\nBOOT_A_LEFT=3\n"
				  "BOOT_B_LEFT=1\nX.y-z=1=2\nrootwait=\nBOOT_TRIAL=B\n");
	eq_free(text);
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	text = read_env();
	assert_non_null(strstr(text, "bootargs=console=ttyS0 quiet\n"));
	assert_non_null(strstr(text, "X.y-z=1=2\n"));
	assert_non_null(strstr(text, "BOOT_TRIAL=\n"));
	eq_free(text);
	struct stat sb;
	assert_int_equal(stat(env_path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	/* no temporary files left beside it */
	DIR *d = opendir(tmpdir);
	assert_non_null(d);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	assert_int_equal(n, 1);
	/* a symlinked environment: written through, the link stays */
	char real[200];
	snprintf(real, sizeof(real), "%s/real", tmpdir);
	assert_int_equal(rename(env_path, real), 0);
	assert_int_equal(symlink("real", env_path), 0);
	assert_int_equal(eq_bl_mark_bad(bl, 0, &e), EQ_OK);
	assert_int_equal(lstat(env_path, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	assert_string_equal(state_of(bl), "order=B A=0 B=3 trial=-");
	eq_bl_close(bl);
}

/* get_state on @text: @code, a message with @sub, and the state @want. */
static void expect_garbled(const void *text, size_t len, eq_err code, const char *sub, const char *want)
{
	write_env(text, len);
	struct eq_bl *bl = open_bl();
	struct eq_bl_state st;
	struct eq_error e;
	eq_err r = eq_bl_get_state(bl, &st, &e);
	if (r != code || !strstr(e.msg, sub))
		fail_msg("got %s '%s', expected %s '%s'", eq_err_str(r), e.msg, eq_err_str(code), sub);
	if (want && strcmp(fmt_state(&st), want))
		fail_msg("'%s': state %s, expected %s", e.msg, fmt_state(&st), want);
	eq_bl_close(bl);
}

static void test_garbled(void **state)
{
	(void)state;
#define G(text, code, sub, want) expect_garbled(text, sizeof(text) - 1, code, sub, want)
	G("BOOT_ORDER=A A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n", EQ_ERR_PARSE, "BOOT_ORDER='A A': slot A is listed twice",
	  "order=A A=3 B=3 trial=-");
	G("BOOT_ORDER=C\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n", EQ_ERR_PARSE, "BOOT_ORDER='C': unknown slot 'C'",
	  "order= A=3 B=3 trial=-");
	G("BOOT_ORDER=A,B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n", EQ_ERR_PARSE, "separated by spaces",
	  "order= A=3 B=3 trial=-");
	G("BOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=x\nBOOT_TRIAL=B\n", EQ_ERR_PARSE,
	  "BOOT_B_LEFT='x' is not a number 0..9", "order=B A A=3 B=0 trial=B");
	G("BOOT_ORDER=A B\nBOOT_A_LEFT=-1\nBOOT_B_LEFT=3\n", EQ_ERR_PARSE, "BOOT_A_LEFT='-1' is not a number",
	  "order=A B A=0 B=3 trial=-");
	G("BOOT_ORDER=A B\nBOOT_A_LEFT=10\nBOOT_B_LEFT=3\n", EQ_ERR_PARSE, "BOOT_A_LEFT='10'",
	  "order=A B A=0 B=3 trial=-");
	G("BOOT_A_LEFT=3\nBOOT_B_LEFT=0\n", EQ_ERR_PARSE, "BOOT_ORDER is missing", "order=A B A=3 B=0 trial=-");
	G("BOOT_ORDER=B\nBOOT_B_LEFT=1\n", EQ_ERR_PARSE, "BOOT_A_LEFT is missing", "order=B A=3 B=1 trial=-");
	G("", EQ_ERR_PARSE, "BOOT_ORDER is missing (a boot script uses 'A B') (and 2 more problems)",
	  "order=A B A=3 B=3 trial=-");
	G("BOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\nBOOT_TRIAL=AB\n", EQ_ERR_PARSE, "BOOT_TRIAL='AB'",
	  "order=A A=3 B=0 trial=-");
	G("BOOT_ORDER=A\nBOOT_A_LEFT=3\ngarbage here\nBOOT_B_LEFT=0\n", EQ_ERR_PARSE,
	  "line 3: expected NAME=value, got 'garbage here'", "order=A A=3 B=0 trial=-");
	G("BOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\nBOOT_A_LEFT=1\n", EQ_ERR_PARSE,
	  "line 4: BOOT_A_LEFT set again (first on line 2)", "order=A A=1 B=0 trial=-");
	G("BOOT_ORDER=A\nBOOT_A_LEFT=3\r\nBOOT_B_LEFT=0\n", EQ_ERR_PARSE, "line 2: ends in a carriage return",
	  "order=A A=3 B=0 trial=-");
	G("BOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\n\x7f"
	  "ELF\x02\x01\x01\0\0\0\n\xff\xfe\n",
	  EQ_ERR_PARSE, "line 4: binary data (byte 0x7f at column 1) (and 1 more garbled lines)",
	  "order=A A=3 B=0 trial=-");
#undef G
	/* 1 MiB */
	size_t big = 1u << 20;
	char *junk = malloc(big);
	assert_non_null(junk);
	for (size_t i = 0; i < big; i++)
		junk[i] = (i % 64 == 63) ? '\n' : 'x';
	memcpy(junk, "BOOT_ORDER=B\n", 13);
	expect_garbled(junk, big, EQ_ERR_LIMIT, "larger than the limit of 65536 bytes", "order=A B A=3 B=3 trial=-");
	free(junk);
}

static void test_garbled_writes(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	/* garbled values are repaired by the next transition, from what the
	 * boot script reads */
	write_env_str("BOOT_ORDER=A,B\nBOOT_A_LEFT=x\nBOOT_B_LEFT=3\nkeep=me\n");
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	char *text = read_env();
	assert_string_equal(text, "BOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nkeep=me\nBOOT_TRIAL=\n");
	eq_free(text);
	/* a line that is not NAME=value: never overwritten */
	write_env_str("BOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n\x01\x02junk\n");
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "line 4: binary data"));
	assert_non_null(strstr(e.msg, "refusing to overwrite"));
	struct eq_bl_state st;
	eq_bl_state_init(&st);
	assert_int_equal(eq_bl_set_state(bl, &st, &e), EQ_ERR_PARSE);
	text = read_env();
	assert_non_null(strstr(text, "junk"));
	eq_free(text);
	/* nor a file over the cap */
	char *big = calloc(1, 70000);
	assert_non_null(big);
	memset(big, '#', 69999);
	write_env(big, 69999);
	free(big);
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_ERR_LIMIT);
	assert_non_null(strstr(e.msg, "refusing"));
	/* states out of range */
	write_env_str("BOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n");
	st.n_order = 3;
	assert_int_equal(eq_bl_set_state(bl, &st, &e), EQ_ERR_INVAL);
	st.n_order = 2;
	st.order[0] = st.order[1] = 1;
	assert_int_equal(eq_bl_set_state(bl, &st, &e), EQ_ERR_INVAL);
	st.order[0] = 2;
	assert_int_equal(eq_bl_set_state(bl, &st, &e), EQ_ERR_INVAL);
	st.order[0] = 0;
	st.left[1] = 10;
	assert_int_equal(eq_bl_set_state(bl, &st, &e), EQ_ERR_INVAL);
	st.left[1] = 9;
	st.trial = 2;
	assert_int_equal(eq_bl_set_state(bl, &st, &e), EQ_ERR_INVAL);
	st.trial = 1;
	assert_int_equal(eq_bl_set_state(bl, &st, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=A B A=0 B=9 trial=B");
	eq_bl_close(bl);
}

/* ---- allocation failures --------------------------------------------------- */

#ifdef EQ_TEST_HOOKS
static void test_alloc_failures(void **state)
{
	(void)state;
	write_env_str("BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nother=1\n");
	for (unsigned long n = 1; n < 200; n++) {
		struct eq_bl *bl = NULL;
		struct eq_error e;
		struct eq_bl_config cfg = {.backend = "file", .path = env_path, .try_attempts = 1};
		(void)eq_alloc_fail_at(n);
		eq_err r = eq_bl_open(&cfg, &bl, &e);
		if (!r) {
			struct eq_bl_state st;
			r = eq_bl_get_state(bl, &st, &e);
			if (!r)
				r = eq_bl_try_once(bl, 1, &e);
			if (!r)
				r = eq_bl_mark_good(bl, 0, &e);
		}
		unsigned long used = eq_alloc_fail_at(0);
		eq_bl_close(bl);
		assert_true(r == EQ_OK || r == EQ_ERR_NOMEM || r == EQ_ERR_IO);
		if (r == EQ_OK && used < n)
			break;
	}
	/* whatever failed, the file is a complete environment */
	struct eq_bl *bl = open_bl();
	struct eq_bl_state st;
	struct eq_error e;
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_OK);
	eq_bl_close(bl);
}
#else
EQ_HOOKS_MISSING(test_alloc_failures)
#endif

/* ---- bad-input corpus ---------------------------------------------------------- */

static eq_err err_from_name(const char *name)
{
	for (int c = 0; c < EQ_ERR__COUNT; c++) {
		static const char *const names[] = {"EQ_OK",           "EQ_ERR_NOMEM",       "EQ_ERR_IO",
						    "EQ_ERR_PARSE",    "EQ_ERR_VERIFY",      "EQ_ERR_NETWORK",
						    "EQ_ERR_LIMIT",    "EQ_ERR_STATE",       "EQ_ERR_INVAL",
						    "EQ_ERR_NOTFOUND", "EQ_ERR_UNSUPPORTED", "EQ_ERR_EXPIRED",
						    "EQ_ERR_UNSAFE"};
		if ((size_t)c < sizeof(names) / sizeof(names[0]) && strcmp(names[c], name) == 0)
			return (eq_err)c;
	}
	return EQ_ERR__COUNT;
}

/*
 * Each <case>.env is read with get_state; <case>.expect holds the eq_err name,
 * a message substring and, optionally on a third line, the state a boot
 * script derives ("order=A B A=3 B=0 trial=-").
 */
static void test_bad_corpus(void **state)
{
	(void)state;
	const char *data = secure_getenv("EQ_TEST_DATA");
	char dir[1024], path[1400];
	snprintf(dir, sizeof(dir), "%s/bad/bootloader", data ? data : "tests/data");
	DIR *d = opendir(dir);
	assert_non_null(d);
	int cases = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".env") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%.*s.expect", dir, (int)(l - 4), de->d_name);
		uint8_t *x;
		size_t xl;
		struct eq_error e;
		if (eq_file_read_all(path, 4096, &x, &xl, &e))
			fail_msg("%s: %s", de->d_name, e.msg);
		char *lines[3] = {(char *)x, NULL, NULL};
		for (int i = 0; i < 3 && lines[i]; i++) {
			char *nl = strchr(lines[i], '\n');
			if (nl) {
				*nl = '\0';
				if (i < 2 && nl[1])
					lines[i + 1] = nl + 1;
			}
		}
		assert_non_null(lines[1]);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		struct eq_bl *bl;
		struct eq_bl_config cfg = {.backend = "file", .path = path, .try_attempts = 1};
		assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_OK);
		struct eq_bl_state st;
		eq_bl_state_init(&st);
		eq_error_clear(&e);
		eq_err r = eq_bl_get_state(bl, &st, &e);
		eq_bl_close(bl);
		if (r != err_from_name(lines[0]) || !strstr(e.msg, lines[1]))
			fail_msg("%s: got %s '%s', expected %s '%s'", de->d_name, eq_err_str(r), e.msg, lines[0],
				 lines[1]);
		if (lines[2] && strcmp(fmt_state(&st), lines[2]))
			fail_msg("%s: state %s, expected %s", de->d_name, fmt_state(&st), lines[2]);
		cases++;
		eq_free(x);
	}
	closedir(d);
	assert_true(cases >= 10);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test_setup_teardown(test_open_errors, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_missing_env, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_update_cycle, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_trial_runs_out, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_refusals, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_both_exhausted, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_rearm, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_var_names, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_attempt_config, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_preserve_and_atomic, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_garbled, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_garbled_writes, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_alloc_failures, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_bad_corpus),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
