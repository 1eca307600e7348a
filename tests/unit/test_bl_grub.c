/*
 * Unit tests of the grub bootloader backend (bootloader/bl_grub.c) on real
 * files: the two copies and their layout, alternation, kept variables and
 * GRUB's escapes, power cuts at every write step, bad copies, and a
 * cross-check with grub-editenv (Debian's grub-common): the cases that use
 * it skip (after their other checks) where it is not in PATH, and run as
 * the test unit.test_bl_grub.editenv. Needs the test hooks (EQ_TEST_HOOKS).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <eq/bootloader.h>

#include "../../bootloader/bl_priv.h"

#define BLK 1024
#define SIG "# GRUB Environment Block\n"

static char tmpdir[64];
static char p1[128]; /* copy 1 */
static char p2[140]; /* copy 2 */

static int setup_tmp(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/eq-test-grub-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(p1, sizeof(p1), "%s/grubenv", tmpdir);
	snprintf(p2, sizeof(p2), "%s.2", p1);
	eq_bl_grub_crash_at = 0;
	return 0;
}

static int teardown_tmp(void **state)
{
	(void)state;
	struct eq_error e;
	eq_bl_grub_crash_at = 0;
	return eq_rm_rf(tmpdir, &e) == EQ_OK ? 0 : -1;
}

/* ---- files ------------------------------------------------------------- */

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Bytes of @path into @buf (up to @size); -1 when missing. */
static long read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, size, f);
	fclose(f);
	return (long)n;
}

/*
 * A block laid out as eqota writes it: @first after the signature, '#' up to
 * a '\n' at byte 511, @second at byte 512, '#' to the end.
 */
static void make_block(char blk[BLK], const char *first, const char *second)
{
	memset(blk, '#', BLK);
	size_t n = strlen(SIG), f = strlen(first), s = strlen(second);
	assert_true(n + f <= 510 && s <= 511);
	memcpy(blk, SIG, n);
	memcpy(blk + n, first, f);
	blk[511] = '\n';
	memcpy(blk + 512, second, s);
}

/* A block as grub-editenv writes it: @text after the signature, '#' to the end. */
static void make_plain(char blk[BLK], const char *text)
{
	memset(blk, '#', BLK);
	size_t n = strlen(SIG), t = strlen(text);
	assert_true(n + t <= BLK);
	memcpy(blk, SIG, n);
	memcpy(blk + n, text, t);
}

static void put_block(const char *path, const char *first, const char *second)
{
	char blk[BLK];
	make_block(blk, first, second);
	write_file(path, blk, BLK);
}

/* ---- the backend ----------------------------------------------------------- */

static struct eq_bl *open_bl(void)
{
	struct eq_bl *bl;
	struct eq_error e;
	struct eq_bl_config cfg = {.backend = "grub", .path = p1, .try_attempts = 1};
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_OK);
	return bl;
}

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

/* The state as a string, "none" without an environment; fails on errors. */
static const char *state_of(struct eq_bl *bl)
{
	struct eq_bl_state st;
	struct eq_error e;
	eq_err r = eq_bl_get_state(bl, &st, &e);
	if (r == EQ_ERR_NOTFOUND)
		return "none";
	if (r)
		fail_msg("get_state: %s", e.msg);
	return fmt_state(&st);
}

static struct eq_bl_grub_info inspect(struct eq_bl *bl)
{
	struct eq_bl_grub_info info;
	struct eq_error e;
	assert_int_equal(eq_bl_grub_inspect(bl, &info, &e), EQ_OK);
	return info;
}

/* get_state: @code with every substring of @subs in the message and, when
 * @want is set, that state. */
static void expect_get(struct eq_bl *bl, eq_err code, const char *const *subs, const char *want)
{
	struct eq_bl_state st;
	struct eq_error e;
	eq_error_clear(&e);
	eq_bl_state_init(&st);
	eq_err r = eq_bl_get_state(bl, &st, &e);
	if (r != code)
		fail_msg("got %s '%s', expected %s", eq_err_str(r), e.msg, eq_err_str(code));
	for (; subs && *subs; subs++)
		if (!strstr(e.msg, *subs))
			fail_msg("message '%s' lacks '%s'", e.msg, *subs);
	if (want && strcmp(fmt_state(&st), want))
		fail_msg("'%s': state %s, expected %s", e.msg, fmt_state(&st), want);
}

#define SUBS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- grub-editenv --------------------------------------------------------------- */

static const char *editenv(void)
{
	static char path[512];
	static int found = -1;
	if (found < 0) {
		found = 0;
		/* PATH only, so that a PATH without it shows the skip */
		const char *env = secure_getenv("PATH");
		char dirs[2048];
		snprintf(dirs, sizeof(dirs), "%s", env ? env : "");
		for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
			snprintf(path, sizeof(path), "%s/grub-editenv", d);
			found = access(path, X_OK) == 0;
		}
	}
	return found ? path : NULL;
}

/* Runs @argv, its stdout into @out; the exit status, -1 if it did not exit. */
static int run(char *const argv[], char *out, size_t size)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	size_t n = 0;
	ssize_t k;
	while (n + 1 < size && ((k = read(fds[0], out + n, size - 1 - n)) > 0 || (k < 0 && errno == EINTR)))
		if (k > 0)
			n += (size_t)k;
	out[n] = '\0';
	close(fds[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `grub-editenv PATH ARGS...` (up to 3 ARGS, NULL-terminated): its exit
 * status, stdout into @out. */
static int editenv_run(char *out, size_t size, const char *path, ...)
{
	char buf[5][1024];
	char *argv[6] = {NULL};
	int n = 0;
	snprintf(buf[n], sizeof(buf[n]), "%s", editenv());
	argv[n] = buf[n];
	n++;
	snprintf(buf[n], sizeof(buf[n]), "%s", path);
	argv[n] = buf[n];
	n++;
	va_list ap;
	va_start(ap, path);
	for (const char *a; n < 5 && (a = va_arg(ap, const char *)); n++) {
		snprintf(buf[n], sizeof(buf[n]), "%s", a);
		argv[n] = buf[n];
	}
	va_end(ap);
	return run(argv, out, size);
}

/* `grub-editenv @path list` into @out. */
static void editenv_list(const char *path, char *out, size_t size)
{
	int rc = editenv_run(out, size, path, "list", (char *)NULL);
	if (rc != 0)
		fail_msg("grub-editenv %s list: exit %d", path, rc);
}

static void editenv_do(const char *path, const char *cmd, const char *a1, const char *a2)
{
	char out[256];
	int rc = editenv_run(out, sizeof(out), path, cmd, a1, a2, (char *)NULL);
	if (rc != 0)
		fail_msg("grub-editenv %s %s %s: exit %d", path, cmd, a1 ? a1 : "", rc);
}

/* Skips the case (a case calls it after its other checks) without
 * grub-editenv. */
static void need_editenv(void)
{
	if (!editenv())
		EQ_SKIP("grub-editenv not found in PATH (apt-get install grub-common): no cross-check with GRUB's "
			"own tool");
}

/* ---- open ---------------------------------------------------------------------- */

static void test_open(void **state)
{
	(void)state;
	struct eq_bl *bl;
	struct eq_error e;
	struct eq_bl_config cfg = {.backend = "grub"};
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_OK);
	assert_string_equal(eq_bl_backend_name(bl), "grub");
	assert_string_equal(bl->path, "/boot/efi/EFI/eqota/grubenv");
	eq_bl_close(bl);
	cfg.backend = "grub2";
	assert_int_equal(eq_bl_open(&cfg, &bl, &e), EQ_ERR_INVAL);
	assert_non_null(strstr(e.msg, "known: file, grub"));
}

/* ---- creation and layout ------------------------------------------------------- */

static void test_create_layout(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	expect_get(bl, EQ_ERR_NOTFOUND, SUBS(p1, "neither"), NULL);
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(eq_bl_mark_bad(bl, 1, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(eq_bl_rearm(bl, 0, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(access(p1, F_OK), -1);
	assert_int_equal(access(p2, F_OK), -1);

	/* From nothing: copy 2 with sequence 1, then copy 1 with 2. */
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=A A=3 B=0 trial=-");
	char want[BLK], got[BLK + 1];
	make_block(want, "EQ_SEQ=2\nBOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\nBOOT_TRIAL=\n", "EQ_SEQ2=2\n");
	assert_int_equal(read_file(p1, got, sizeof(got)), BLK);
	assert_memory_equal(got, want, BLK);
	assert_int_equal(got[511], '\n');
	assert_memory_equal(got + 512, "EQ_SEQ2=2\n#", 11);
	assert_int_equal(got[BLK - 1], '#');
	make_block(want, "EQ_SEQ=1\nBOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\nBOOT_TRIAL=\n", "EQ_SEQ2=1\n");
	assert_int_equal(read_file(p2, got, sizeof(got)), BLK);
	assert_memory_equal(got, want, BLK);
	struct eq_bl_grub_info in = inspect(bl);
	assert_int_equal(in.winner, 1);
	assert_int_equal(in.status[0], EQ_OK);
	assert_int_equal(in.status[1], EQ_OK);
	assert_int_equal(in.seq[0], 2);
	assert_int_equal(in.seq[1], 1);
	struct stat sb;
	assert_int_equal(stat(p2, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0644);
	/* nothing else in the directory */
	DIR *d = opendir(tmpdir);
	assert_non_null(d);
	int n = 0;
	for (struct dirent *de; (de = readdir(d));)
		n += de->d_name[0] != '.';
	closedir(d);
	assert_int_equal(n, 2);
	eq_bl_close(bl);
}

/* ---- alternation ---------------------------------------------------------------- */

struct snap {
	long len[2];
	char data[2][BLK + 1];
};

static void snap_take(struct snap *s)
{
	memset(s, 0, sizeof(*s));
	s->len[0] = read_file(p1, s->data[0], sizeof(s->data[0]));
	s->len[1] = read_file(p2, s->data[1], sizeof(s->data[1]));
}

static void snap_restore(const struct snap *s)
{
	const char *paths[2] = {p1, p2};
	for (int i = 0; i < 2; i++) {
		if (s->len[i] < 0)
			(void)unlink(paths[i]);
		else
			write_file(paths[i], s->data[i], (size_t)s->len[i]);
	}
	/* temporary files a cut left behind */
	DIR *d = opendir(tmpdir);
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d));) {
		if (strstr(de->d_name, ".tmp.")) {
			char path[400];
			snprintf(path, sizeof(path), "%s/%s", tmpdir, de->d_name);
			assert_int_equal(unlink(path), 0);
		}
	}
	closedir(d);
}

static void test_alternation(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	assert_int_equal(eq_bl_init_default(bl, 0, &e), EQ_OK);
	struct {
		int op; /* 0 try, 1 good, 2 bad, 3 rearm */
		unsigned slot;
		const char *want;
	} steps[] = {
		{0, 1, "order=B A A=3 B=1 trial=B"}, {1, 1, "order=B A A=3 B=3 trial=-"},
		{0, 0, "order=A B A=1 B=3 trial=A"}, {2, 0, "order=B A=0 B=3 trial=-"},
		{1, 0, "order=A B A=3 B=3 trial=-"}, {0, 1, "order=B A A=3 B=1 trial=B"},
	};
	ino_t ino[2];
	struct stat sb;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct eq_bl_grub_info before = inspect(bl);
		int w = before.winner - 1, l = 1 - w;
		const char *paths[2] = {p1, p2};
		for (int c = 0; c < 2; c++) {
			assert_int_equal(stat(paths[c], &sb), 0);
			ino[c] = sb.st_ino;
		}
		struct snap s0, s1;
		snap_take(&s0);
		eq_err r = steps[i].op == 0   ? eq_bl_try_once(bl, steps[i].slot, &e)
			   : steps[i].op == 1 ? eq_bl_mark_good(bl, steps[i].slot, &e)
			   : steps[i].op == 2 ? eq_bl_mark_bad(bl, steps[i].slot, &e)
					      : eq_bl_rearm(bl, steps[i].slot, &e);
		if (r)
			fail_msg("step %zu: %s", i, e.msg);
		assert_string_equal(state_of(bl), steps[i].want);
		struct eq_bl_grub_info after = inspect(bl);
		/* the other copy now, one higher, written in place; the old
		 * current copy untouched */
		assert_int_equal(after.winner, l + 1);
		assert_int_equal(after.seq[l], before.seq[w] + 1);
		assert_int_equal(after.seq[w], before.seq[w]);
		snap_take(&s1);
		assert_memory_equal(s1.data[w], s0.data[w], BLK);
		for (int c = 0; c < 2; c++) {
			assert_int_equal(stat(paths[c], &sb), 0);
			assert_int_equal(sb.st_ino, ino[c]);
			assert_int_equal(sb.st_size, BLK);
		}
	}
	/* no change, no write */
	struct snap a, b;
	snap_take(&a);
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	snap_take(&b);
	assert_memory_equal(&a, &b, sizeof(a));
	eq_bl_close(bl);
}

/* ---- other variables and GRUB's escapes ---------------------------------------- */

static void test_other_vars(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	/* as grub-editenv writes it: no sequence, values with '\' and a
	 * newline escaped, a comment whose escaped newline hides a line */
	char blk[BLK];
	make_plain(blk, "saved_entry=Debian GNU/Linux\nBOOT_ORDER=A B\nweird=a\\\\b\\\nc\\=d\nBOOT_A_LEFT=3\n"
			"#x\\\nBOOT_TRIAL=A\nk=v=w\nBOOT_B_LEFT=3\n");
	write_file(p1, blk, BLK);
	assert_string_equal(state_of(bl), "order=A B A=3 B=3 trial=-");
	struct eq_bl_grub_info in = inspect(bl);
	assert_int_equal(in.winner, 1);
	assert_int_equal(in.seq[0], 0);
	assert_int_equal(in.status[1], EQ_ERR_NOTFOUND);

	/* the first write creates copy 2 (sequence 1); copy 1 stays */
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	char got[BLK + 1], want[BLK];
	make_block(want,
		   "EQ_SEQ=1\nBOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=1\nBOOT_TRIAL=B\n"
		   "saved_entry=Debian GNU/Linux\nweird=a\\\\b\\\nc=d\nk=v=w\n",
		   "EQ_SEQ2=1\n");
	assert_int_equal(read_file(p2, got, sizeof(got)), BLK);
	assert_memory_equal(got, want, BLK);
	assert_int_equal(read_file(p1, got, sizeof(got)), BLK);
	assert_memory_equal(got, blk, BLK);
	in = inspect(bl);
	assert_int_equal(in.winner, 2);

	/* the next one overwrites copy 1 in place, sequence 2 */
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	make_block(want,
		   "EQ_SEQ=2\nBOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nBOOT_TRIAL=\nsaved_entry=Debian GNU/Linux\n"
		   "weird=a\\\\b\\\nc=d\nk=v=w\n",
		   "EQ_SEQ2=2\n");
	assert_int_equal(read_file(p1, got, sizeof(got)), BLK);
	assert_memory_equal(got, want, BLK);
	eq_bl_close(bl);
	need_editenv();
	char list[2048];
	editenv_list(p1, list, sizeof(list));
	assert_string_equal(list, "EQ_SEQ=2\nBOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nBOOT_TRIAL=\n"
				  "saved_entry=Debian GNU/Linux\nweird=a\\b\nc=d\nk=v=w\nEQ_SEQ2=2\n");
	editenv_list(p2, list, sizeof(list));
	assert_string_equal(list, "EQ_SEQ=1\nBOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=1\nBOOT_TRIAL=B\n"
				  "saved_entry=Debian GNU/Linux\nweird=a\\b\nc=d\nk=v=w\nEQ_SEQ2=1\n");
}

/* ---- grub-editenv both ways, and GRUB-style saves ------------------------------- */

static void test_editenv_cross(void **state)
{
	(void)state;
	need_editenv();
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	/* what grub-editenv writes, eqota reads (a sequence-0 copy) */
	editenv_do(p1, "create", NULL, NULL);
	editenv_do(p1, "set", "BOOT_ORDER=B A", NULL);
	expect_get(bl, EQ_ERR_PARSE, SUBS("BOOT_A_LEFT is missing"), "order=B A A=3 B=3 trial=-");
	editenv_do(p1, "set", "BOOT_A_LEFT=3", "BOOT_B_LEFT=2");
	editenv_do(p1, "set", "note=back\\slash\nnewline", NULL);
	assert_string_equal(state_of(bl), "order=B A A=3 B=2 trial=-");
	struct eq_bl_grub_info in = inspect(bl);
	assert_int_equal(in.winner, 1);
	assert_int_equal(in.seq[0], 0);

	/* what eqota writes, grub-editenv reads, both copies */
	assert_int_equal(eq_bl_try_once(bl, 0, &e), EQ_OK);
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	char list[2048];
	editenv_list(p1, list, sizeof(list));
	assert_string_equal(list, "EQ_SEQ=2\nBOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=2\nBOOT_TRIAL=\n"
				  "note=back\\slash\nnewline\nEQ_SEQ2=2\n");
	editenv_list(p2, list, sizeof(list));
	assert_string_equal(list, "EQ_SEQ=1\nBOOT_ORDER=A B\nBOOT_A_LEFT=1\nBOOT_B_LEFT=2\nBOOT_TRIAL=A\n"
				  "note=back\\slash\nnewline\nEQ_SEQ2=1\n");

	/* A grub.cfg decrementing in the chosen copy (save_env rewrites it in
	 * place; grub-editenv edits the block the same way): same length,
	 * the layout stays. */
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK); /* copy 2, sequence 3 */
	assert_int_equal(inspect(bl).winner, 2);
	editenv_do(p2, "set", "BOOT_B_LEFT=0", NULL);
	char got[BLK + 1];
	assert_int_equal(read_file(p2, got, sizeof(got)), BLK);
	assert_memory_equal(got + 512, "EQ_SEQ2=3\n", 10);
	assert_string_equal(state_of(bl), "order=B A A=3 B=0 trial=B");
	in = inspect(bl);
	assert_int_equal(in.winner, 2);
	assert_int_equal(in.seq[1], 3);
	/* A shorter value (the re-arm clears BOOT_TRIAL) shifts the rest:
	 * still valid, as validity does not depend on positions. */
	editenv_do(p2, "set", "BOOT_TRIAL=", "BOOT_A_LEFT=3");
	assert_int_equal(read_file(p2, got, sizeof(got)), BLK);
	assert_memory_equal(got + 511, "EQ_SEQ2=3\n", 10);
	assert_string_equal(state_of(bl), "order=B A A=3 B=0 trial=-");
	assert_int_equal(inspect(bl).winner, 2);
	/* eqota's next write goes to copy 1, laid out again */
	assert_int_equal(eq_bl_mark_bad(bl, 1, &e), EQ_OK);
	in = inspect(bl);
	assert_int_equal(in.winner, 1);
	assert_int_equal(in.seq[0], 4);
	editenv_list(p1, list, sizeof(list));
	assert_string_equal(list, "EQ_SEQ=4\nBOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\nBOOT_TRIAL=\n"
				  "note=back\\slash\nnewline\nEQ_SEQ2=4\n");
	eq_bl_close(bl);
}

/* ---- power cuts at every write step ------------------------------------------- */

enum wop { W_INIT, W_TRY, W_GOOD, W_BAD, W_SET };

struct wstep {
	enum wop op;
	unsigned slot;
	const char *set; /* W_SET: "ORDER|A|B|TRIAL" with '-' for no trial */
	unsigned cuts;   /* write steps this write has (cut points) */
};

static eq_err do_write(struct eq_bl *bl, const struct wstep *w, struct eq_error *e)
{
	switch (w->op) {
	case W_INIT: return eq_bl_init_default(bl, w->slot, e);
	case W_TRY: return eq_bl_try_once(bl, w->slot, e);
	case W_GOOD: return eq_bl_mark_good(bl, w->slot, e);
	case W_BAD: return eq_bl_mark_bad(bl, w->slot, e);
	case W_SET: {
		struct eq_bl_state st;
		eq_bl_state_init(&st);
		const char *s = w->set;
		for (; *s != '|'; s++)
			if (*s == 'A' || *s == 'B')
				st.order[st.n_order++] = (unsigned)(*s - 'A');
		st.left[0] = (unsigned)(s[1] - '0');
		st.left[1] = (unsigned)(s[3] - '0');
		st.trial = s[5] == '-' ? -1 : s[5] - 'A';
		return eq_bl_set_state(bl, &st, e);
	}
	}
	return EQ_ERR_INVAL;
}

/*
 * What a boot script sees: the state, and grub-editenv's listing of the copy
 * it picks ("" without grub-editenv or without a valid copy), whose EQ_SEQ
 * and EQ_SEQ2 must agree and are then left out: copy 2 of a new environment
 * holds the same state as copy 1 under another sequence number.
 */
static void boot_view(struct eq_bl *bl, char *st, size_t st_size, char *list, size_t list_size)
{
	snprintf(st, st_size, "%s", state_of(bl));
	list[0] = '\0';
	struct eq_bl_grub_info in = inspect(bl);
	if (!in.winner || !editenv())
		return;
	char raw[2048], seq[2][32] = {"", ""};
	editenv_list(in.winner == 1 ? p1 : p2, raw, sizeof(raw));
	size_t n = 0;
	for (char *line = raw, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = '\0';
		if (!strncmp(line, "EQ_SEQ=", 7))
			snprintf(seq[0], sizeof(seq[0]), "%s", line + 7);
		else if (!strncmp(line, "EQ_SEQ2=", 8))
			snprintf(seq[1], sizeof(seq[1]), "%s", line + 8);
		else
			n += (size_t)snprintf(list + n, list_size - n, "%s\n", line);
		assert_true(n < list_size);
	}
	assert_string_equal(seq[0], seq[1]);
	assert_true(seq[0][0] || in.seq[in.winner - 1] == 0);
}

static void cut_sequence(struct eq_bl *bl, const struct wstep *steps, size_t n)
{
	struct eq_error e;
	for (size_t i = 0; i < n; i++) {
		const struct wstep *w = &steps[i];
		struct snap before;
		snap_take(&before);
		struct eq_bl_grub_info in0 = inspect(bl);
		char old_st[64], new_st[64], old_list[2048], new_list[2048];
		boot_view(bl, old_st, sizeof(old_st), old_list, sizeof(old_list));
		assert_int_equal(do_write(bl, w, &e), EQ_OK);
		boot_view(bl, new_st, sizeof(new_st), new_list, sizeof(new_list));
		unsigned seen_old = 0, seen_new = 0, cuts = 0;
		for (unsigned long at = 1;; at++) {
			snap_restore(&before);
			eq_bl_grub_crash_at = at;
			eq_err r = do_write(bl, w, &e);
			eq_bl_grub_crash_at = 0;
			if (r == EQ_OK)
				break;
			if (r != EQ_ERR_IO || !strstr(e.msg, "simulated power cut"))
				fail_msg("write %zu, cut %lu: %s", i, at, e.msg);
			cuts++;
			char st[64], list[2048];
			boot_view(bl, st, sizeof(st), list, sizeof(list));
			bool is_old = !strcmp(st, old_st) && !strcmp(list, old_list);
			bool is_new = !strcmp(st, new_st) && !strcmp(list, new_list);
			if (!is_old && !is_new)
				fail_msg("write %zu, cut after step %lu: '%s' / '%s', expected '%s' or '%s'", i, at, st,
					 list, old_st, new_st);
			seen_old += is_old;
			seen_new += is_new && !is_old;
			/* the current copy was never touched */
			struct snap now;
			snap_take(&now);
			if (in0.winner)
				assert_memory_equal(now.data[in0.winner - 1], before.data[in0.winner - 1], BLK);
			/* and the next write after the cut completes it */
			assert_int_equal(do_write(bl, w, &e), EQ_OK);
			assert_string_equal(state_of(bl), new_st);
		}
		if (cuts != w->cuts)
			fail_msg("write %zu: %u cut points, expected %u", i, cuts, w->cuts);
		if (w->cuts) {
			assert_true(seen_old > 0);
			assert_true(seen_new > 0);
		}
		/* go on from the uninterrupted write */
		snap_restore(&before);
		assert_int_equal(do_write(bl, w, &e), EQ_OK);
		assert_string_equal(state_of(bl), new_st);
	}
}

static void test_power_cuts(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	/* In place: after open, only sector 2 landed, only sector 1, all
	 * unsynced, synced. Creating a copy: temp file, written, synced,
	 * renamed, directory synced. */
	const struct wstep from_nothing[] = {
		{W_INIT, 0, NULL, 10},      {W_TRY, 1, NULL, 5},
		{W_SET, 0, "B A|3|0|B", 5}, /* the boot script's decrement */
		{W_GOOD, 1, NULL, 5},       {W_TRY, 0, NULL, 5},
		{W_BAD, 0, NULL, 5},        {W_GOOD, 1, NULL, 0}, /* no change: nothing written */
		{W_TRY, 0, NULL, 5},        {W_GOOD, 0, NULL, 5},
	};
	cut_sequence(bl, from_nothing, sizeof(from_nothing) / sizeof(from_nothing[0]));

	/* from a single copy as a board image ships it (sequence 0): the first
	 * write creates copy 2 */
	assert_int_equal(unlink(p2), 0);
	char blk[BLK];
	make_plain(blk, "BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nBOOT_TRIAL=\nsaved_entry=0\n");
	write_file(p1, blk, BLK);
	const struct wstep from_image[] = {
		{W_TRY, 1, NULL, 5},        {W_SET, 0, "B A|3|0|B", 5}, {W_BAD, 1, NULL, 5},
		{W_SET, 0, "A B|3|3|-", 5}, {W_TRY, 1, NULL, 5},
	};
	cut_sequence(bl, from_image, sizeof(from_image) / sizeof(from_image[0]));
	eq_bl_close(bl);
	/* boot_view() compared grub-editenv's listings too only with it */
	need_editenv();
}

/* ---- bad copies ---------------------------------------------------------------- */

static const char *good4_first = "EQ_SEQ=4\nBOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nBOOT_TRIAL=\n";

static void expect_winner(struct eq_bl *bl, int winner, int bad_copy, const char *why)
{
	struct eq_bl_grub_info in = inspect(bl);
	assert_int_equal(in.winner, winner);
	if (bad_copy && !strstr(in.why[bad_copy - 1], why))
		fail_msg("copy %d: '%s' lacks '%s'", bad_copy, in.why[bad_copy - 1], why);
}

/* Copy 1 bad as @blk (len bytes) next to a valid copy 2, then alone. */
static void bad_copy1(const void *blk, size_t len, const char *why)
{
	struct eq_bl *bl = open_bl();
	write_file(p1, blk, len);
	put_block(p2, good4_first, "EQ_SEQ2=4\n");
	assert_string_equal(state_of(bl), "order=B A A=3 B=3 trial=-");
	expect_winner(bl, 2, 1, why);
	assert_non_null(strstr(inspect(bl).why[0], p1));
	assert_int_equal(unlink(p2), 0);
	expect_get(bl, EQ_ERR_PARSE, SUBS(p1, why, "no valid copy"), "order=A B A=3 B=3 trial=-");
	eq_bl_close(bl);
}

static void test_bad_copies(void **state)
{
	(void)state;
	char blk[BLK + 8];
	/* not a GRUB environment block at all */
	memset(blk, 'x', sizeof(blk));
	bad_copy1(blk, 1000, "1000 bytes, a GRUB environment block has exactly 1024");
	bad_copy1(blk, BLK, "byte 0: no GRUB environment block signature");
	bad_copy1("", 0, "0 bytes");
	/* binary junk after the signature */
	srand(7);
	for (size_t i = 0; i < BLK; i++)
		blk[i] = (char)(rand() & 0xff);
	memcpy(blk, SIG, strlen(SIG));
	bad_copy1(blk, BLK, "line ");
	/* torn and garbled sequence numbers */
	make_block(blk, "EQ_SEQ=5\nBOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n", "EQ_SEQ2=4\n");
	bad_copy1(blk, BLK, "line 7 (byte 512): EQ_SEQ=5 but EQ_SEQ2=4: a write was cut");
	make_block(blk, "EQ_SEQ=5\nBOOT_ORDER=A\n", "#\n");
	bad_copy1(blk, BLK, "EQ_SEQ='5' without EQ_SEQ2");
	make_block(blk, "BOOT_ORDER=A\n", "EQ_SEQ2=5\n");
	bad_copy1(blk, BLK, "EQ_SEQ2='5' without EQ_SEQ");
	make_block(blk, "EQ_SEQ=1x\n", "EQ_SEQ2=1x\n");
	bad_copy1(blk, BLK, "EQ_SEQ='1x' is not a decimal number");
	make_block(blk, "EQ_SEQ=010\n", "EQ_SEQ2=010\n"); /* octal to GRUB's test */
	bad_copy1(blk, BLK, "EQ_SEQ='010' is not a decimal number");
	make_block(blk, "EQ_SEQ=1234567890\n", "EQ_SEQ2=1234567890\n");
	bad_copy1(blk, BLK, "not a decimal number 0..999999999");
	make_block(blk, "EQ_SEQ=-1\n", "EQ_SEQ2=-1\n");
	bad_copy1(blk, BLK, "EQ_SEQ='-1'");
	/* lines GRUB would stop at or misread */
	make_block(blk, "EQ_SEQ=3\nBOOT_ORDER=A\ngarbage\nBOOT_A_LEFT=3\n", "EQ_SEQ2=3\n");
	bad_copy1(blk, BLK, "line 4 (byte 47): a line without '='");
	make_block(blk, "EQ_SEQ=3\n\nBOOT_ORDER=A\n", "EQ_SEQ2=3\n");
	bad_copy1(blk, BLK, "line 3 (byte 34): a line without '='");
	make_block(blk, "EQ_SEQ=3\n=A\n", "EQ_SEQ2=3\n");
	bad_copy1(blk, BLK, "a variable without a name");
	make_block(blk, "EQ_SEQ=3\nBOOT_A_LEFT=3\nBOOT_A_LEFT=1\n", "EQ_SEQ2=3\n");
	bad_copy1(blk, BLK, "line 4 (byte 48): BOOT_A_LEFT set again (first on line 3)");
	make_block(blk, "EQ_SEQ=3\nX=a\n", "EQ_SEQ2=3\n");
	blk[36] = '\0';
	bad_copy1(blk, BLK, "a NUL byte in the value of X");
	make_plain(blk, "EQ_SEQ=3\nEQ_SEQ2=3\nnoequals");
	memset(blk + BLK - 8, 'y', 8);
	bad_copy1(blk, BLK, "no '=' before the end of the block");
	make_plain(blk, "EQ_SEQ=3\nEQ_SEQ2=3\nX=");
	memset(blk + 100, 'y', BLK - 100);
	bad_copy1(blk, BLK, "the value runs to the end of the block without a newline");
	make_plain(blk, "EQ_SEQ=3\nEQ_SEQ2=3\nX=ab\\");
	memset(blk + 56, 'y', BLK - 56);
	blk[BLK - 1] = '\\'; /* an escape past the end */
	bad_copy1(blk, BLK, "without a newline");
}

static void test_bad_writes(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	struct snap a, b;
	/* a directory as copy 2: readable next to copy 1, never written */
	put_block(p1, good4_first, "EQ_SEQ2=4\n");
	assert_int_equal(mkdir(p2, 0755), 0);
	assert_string_equal(state_of(bl), "order=B A A=3 B=3 trial=-");
	expect_winner(bl, 1, 2, "is a directory, not a GRUB environment block");
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, p2));
	assert_non_null(strstr(e.msg, "is a directory"));
	assert_non_null(strstr(e.msg, "refusing to overwrite"));
	assert_int_equal(rmdir(p2), 0);
	/* a file that is no GRUB block (a mistyped path): never overwritten */
	write_file(p2, "menuentry 'x' {\n}\n", 18);
	snap_take(&a);
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "18 bytes"));
	snap_take(&b);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(unlink(p2), 0);

	/* both copies invalid: read as defaults, PARSE naming both; the
	 * next transition rewrites copy 1 with a sequence above anything
	 * either copy claims */
	put_block(p1, "EQ_SEQ=9\nBOOT_ORDER=B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n", "EQ_SEQ2=8\n");
	put_block(p2, "EQ_SEQ=7\nBOOT_ORDER=B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nnoequals\n", "EQ_SEQ2=7\n");
	expect_get(bl, EQ_ERR_PARSE, SUBS(p1, p2, "EQ_SEQ=9 but EQ_SEQ2=8", "line 6 (byte 75): a line without '='"),
		   "order=A B A=3 B=3 trial=-");
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	struct eq_bl_grub_info in = inspect(bl);
	assert_int_equal(in.winner, 1);
	assert_int_equal(in.seq[0], 8);
	assert_int_equal(in.status[1], EQ_ERR_PARSE);
	assert_string_equal(state_of(bl), "order=B A A=3 B=3 trial=-");
	/* and the one after that repairs copy 2 */
	assert_int_equal(eq_bl_try_once(bl, 0, &e), EQ_OK);
	in = inspect(bl);
	assert_int_equal(in.winner, 2);
	assert_int_equal(in.seq[1], 9);
	assert_int_equal(in.status[0], EQ_OK);

	/* a torn copy: the write after it goes over it, one above the other */
	put_block(p1, good4_first, "EQ_SEQ2=4\n");
	put_block(p2, "EQ_SEQ=6\nBOOT_ORDER=A\nBOOT_A_LEFT=1\nBOOT_B_LEFT=3\n", "EQ_SEQ2=2\n");
	assert_string_equal(state_of(bl), "order=B A A=3 B=3 trial=-");
	expect_winner(bl, 1, 2, "EQ_SEQ=6 but EQ_SEQ2=2");
	assert_int_equal(eq_bl_try_once(bl, 0, &e), EQ_OK);
	in = inspect(bl);
	assert_int_equal(in.winner, 2);
	assert_int_equal(in.seq[1], 5);

	/* the sequence cannot go past 999999999 (GRUB's test compares ints) */
	put_block(p1, "EQ_SEQ=999999999\nBOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n", "EQ_SEQ2=999999999\n");
	assert_int_equal(unlink(p2), 0);
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_ERR_LIMIT);
	assert_non_null(strstr(e.msg, "no higher sequence number"));
	assert_int_equal(access(p2, F_OK), -1);

	/* tie: copy 1 wins */
	put_block(p1, "EQ_SEQ=3\nBOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n", "EQ_SEQ2=3\n");
	put_block(p2, "EQ_SEQ=3\nBOOT_ORDER=B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n", "EQ_SEQ2=3\n");
	assert_string_equal(state_of(bl), "order=A A=3 B=3 trial=-");
	expect_winner(bl, 1, 0, NULL);
	eq_bl_close(bl);
}

static void test_garbled_values(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	put_block(p1, "EQ_SEQ=2\nBOOT_ORDER=A,B\nBOOT_A_LEFT=x\nBOOT_B_LEFT=3\nBOOT_TRIAL=\n", "EQ_SEQ2=2\n");
	expect_get(bl, EQ_ERR_PARSE, SUBS(p1, "BOOT_ORDER='A,B'", "and 1 more problems"), "order= A=0 B=3 trial=-");
	put_block(p1, "EQ_SEQ=2\nBOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=10\nBOOT_TRIAL=C\n", "EQ_SEQ2=2\n");
	expect_get(bl, EQ_ERR_PARSE, SUBS("BOOT_B_LEFT='10' is not a number"), "order=B A A=3 B=0 trial=-");
	/* a transition repairs it from what a boot script reads */
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=A A=3 B=0 trial=-");
	assert_int_equal(inspect(bl).winner, 2);
	eq_bl_close(bl);
}

static void test_sector_limit(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	/* fits a block, but not eqota's first sector once the variables are added */
	char text[700], blk[BLK];
	int n = snprintf(text, sizeof(text), "BOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nbig=");
	memset(text + n, 'v', 420);
	snprintf(text + n + 420, sizeof(text) - (size_t)n - 420, "\n");
	make_plain(blk, text);
	write_file(p1, blk, BLK);
	assert_string_equal(state_of(bl), "order=A A=3 B=3 trial=-");
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_ERR_LIMIT);
	assert_non_null(strstr(e.msg, p1));
	assert_non_null(strstr(e.msg, "first 512-byte sector"));
	assert_non_null(strstr(e.msg, "nothing written"));
	assert_int_equal(access(p2, F_OK), -1);
	char got[BLK + 1];
	assert_int_equal(read_file(p1, got, sizeof(got)), BLK);
	assert_memory_equal(got, blk, BLK);
	/* 4 bytes less and it fits exactly: 510 bytes, then "#\n" */
	text[n + 416] = '\n';
	text[n + 417] = '\0';
	make_plain(blk, text);
	write_file(p1, blk, BLK);
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	assert_int_equal(read_file(p2, got, sizeof(got)), BLK);
	assert_memory_equal(got + 508, "v\n#\nEQ_SEQ2=1\n", 14);
	assert_string_equal(state_of(bl), "order=B A A=3 B=3 trial=-");
	eq_bl_close(bl);
}

static void test_alloc_failures(void **state)
{
	(void)state;
	put_block(p1, good4_first, "EQ_SEQ2=4\n");
	for (unsigned long n = 1; n < 200; n++) {
		struct eq_bl *bl = NULL;
		struct eq_error e;
		struct eq_bl_config cfg = {.backend = "grub", .path = p1, .try_attempts = 1};
		(void)eq_alloc_fail_at(n);
		eq_err r = eq_bl_open(&cfg, &bl, &e);
		if (!r) {
			struct eq_bl_state st;
			r = eq_bl_get_state(bl, &st, &e);
			if (!r)
				r = eq_bl_try_once(bl, 0, &e);
			if (!r)
				r = eq_bl_mark_good(bl, 0, &e);
		}
		unsigned long used = eq_alloc_fail_at(0);
		eq_bl_close(bl);
		assert_true(r == EQ_OK || r == EQ_ERR_NOMEM);
		if (r == EQ_OK && used < n)
			break;
	}
	struct eq_bl *bl = open_bl();
	assert_string_equal(state_of(bl), "order=A B A=3 B=3 trial=-");
	eq_bl_close(bl);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_create_layout, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_alternation, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_other_vars, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_editenv_cross, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_power_cuts, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_bad_copies, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_bad_writes, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_garbled_values, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_sector_limit, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_alloc_failures, setup_tmp, teardown_tmp),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
