/*
 * Equivalence store: bitbake-hashserv report/get semantics, the published
 * table, and two processes writing one store file at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <eq/gen_store.h>

#define M "eqota-payload-v1"

struct fx {
	char dir[64];
	char db[96];
	struct eq_store *s;
};

/* A distinct, valid 64-hex hash per (kind, n). */
static const char *h(char kind, int n, char out[65])
{
	char in[32];
	uint8_t d[32];
	snprintf(in, sizeof(in), "%c%d", kind, n);
	eq_sha256(in, strlen(in), d);
	eq_hex_encode(d, 32, out);
	return out;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/eqgenstore.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->db, sizeof(f->db), "%s/equiv.db", f->dir);
	struct eq_error e;
	if (eq_store_open(f->db, &f->s, &e) != EQ_OK) {
		fprintf(stderr, "%s\n", e.msg);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	eq_store_close(f->s);
	if (eq_rm_rf(f->dir, NULL) != EQ_OK)
		fprintf(stderr, "cannot remove %s\n", f->dir);
	free(f);
	return 0;
}

static void report_ok(struct eq_store *s, const char *method, const char *t, const char *o, const char *expect,
		      unsigned expect_flags)
{
	char u[65];
	unsigned flags = 99;
	struct eq_error e;
	eq_error_clear(&e);
	eq_err r = eq_store_report(s, method, t, o, NULL, "pkg", "1.0", u, &flags, &e);
	if (r != EQ_OK)
		fail_msg("report: %s", e.msg);
	assert_string_equal(u, expect);
	assert_int_equal(flags, expect_flags);
}

static void test_report_semantics(void **state)
{
	struct fx *f = *state;
	char t1[65], t2[65], t3[65], t4[65], o1[65], o2[65], o3[65], u[65];
	h('t', 1, t1), h('t', 2, t2), h('t', 3, t3), h('t', 4, t4);
	h('o', 1, o1), h('o', 2, o2), h('o', 3, o3);

	/* The first report founds the class: unihash = taskhash. */
	report_ok(f->s, M, t1, o1, t1, EQ_STORE_NEW_OUTHASH | EQ_STORE_NEW_MAPPING);
	/* A later taskhash with the same output inherits it. */
	report_ok(f->s, M, t2, o1, t1, EQ_STORE_NEW_OUTHASH | EQ_STORE_NEW_MAPPING | EQ_STORE_INHERITED);
	/* Identical re-report: no-op. */
	report_ok(f->s, M, t2, o1, t1, 0);
	/* Sticky: t2 with another output keeps its unihash. */
	report_ok(f->s, M, t2, o2, t1, EQ_STORE_NEW_OUTHASH | EQ_STORE_OUTHASH_CHANGED);
	/* Transitive: t3 matches (t2, o2), whose unihash is t1. */
	report_ok(f->s, M, t3, o2, t1, EQ_STORE_NEW_OUTHASH | EQ_STORE_NEW_MAPPING | EQ_STORE_INHERITED);
	/* A new output founds a new class. */
	report_ok(f->s, M, t4, o3, t4, EQ_STORE_NEW_OUTHASH | EQ_STORE_NEW_MAPPING);
	/* Methods are separate namespaces. */
	report_ok(f->s, "other.method", t2, o1, t2, EQ_STORE_NEW_OUTHASH | EQ_STORE_NEW_MAPPING);

	struct eq_error e;
	assert_int_equal(eq_store_get(f->s, M, t3, u, &e), EQ_OK);
	assert_string_equal(u, t1);
	assert_int_equal(eq_store_get(f->s, "other.method", t2, u, &e), EQ_OK);
	assert_string_equal(u, t2);
	char t9[65];
	assert_int_equal(eq_store_get(f->s, M, h('t', 9, t9), u, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(eq_store_get(f->s, "unknown", t1, u, &e), EQ_ERR_NOTFOUND);

	/* A proposed unihash is used when nothing is equivalent. */
	char p[65], o9[65];
	h('p', 1, p);
	assert_int_equal(eq_store_report(f->s, M, t9, h('o', 9, o9), p, NULL, NULL, u, NULL, &e), EQ_OK);
	assert_string_equal(u, p);
}

static void test_report_equiv(void **state)
{
	struct fx *f = *state;
	char t1[65], t5[65], o1[65], u[65], x[65];
	struct eq_error e;
	report_ok(f->s, M, h('t', 1, t1), h('o', 1, o1), t1, EQ_STORE_NEW_OUTHASH | EQ_STORE_NEW_MAPPING);
	assert_int_equal(eq_store_report_equiv(f->s, M, h('t', 5, t5), t1, u, &e), EQ_OK);
	assert_string_equal(u, t1);
	/* Never overrides. */
	assert_int_equal(eq_store_report_equiv(f->s, M, t5, h('x', 1, x), u, &e), EQ_OK);
	assert_string_equal(u, t1);
	assert_int_equal(eq_store_report_equiv(f->s, M, t1, x, u, &e), EQ_OK);
	assert_string_equal(u, t1);
}

static void expect_inval(eq_err r, const struct eq_error *e, const char *field)
{
	assert_int_equal(r, EQ_ERR_INVAL);
	if (!strstr(e->msg, field))
		fail_msg("'%s' does not name '%s'", e->msg, field);
}

static void test_bad_input(void **state)
{
	struct fx *f = *state;
	char t[65], o[65], u[65], upper[65];
	struct eq_error e;
	h('t', 1, t), h('o', 1, o);
	memcpy(upper, t, 65);
	for (int i = 0; i < 64; i++)
		upper[i] = (char)(upper[i] >= 'a' ? upper[i] - 32 : upper[i]);
	expect_inval(eq_store_report(f->s, M, upper, o, NULL, NULL, NULL, u, NULL, &e), &e, "taskhash");
	expect_inval(eq_store_report(f->s, M, t, "abc", NULL, NULL, NULL, u, NULL, &e), &e, "outhash");
	expect_inval(eq_store_report(f->s, M, t, o, "zz", NULL, NULL, u, NULL, &e), &e, "unihash");
	expect_inval(eq_store_report(f->s, "has space", t, o, NULL, NULL, NULL, u, NULL, &e), &e, "method");
	expect_inval(eq_store_report(f->s, "", t, o, NULL, NULL, NULL, u, NULL, &e), &e, "method");
	expect_inval(eq_store_report(f->s, M, t, o, NULL, "a\nb", NULL, u, NULL, &e), &e, "pn");
	expect_inval(eq_store_get(f->s, M, "", u, &e), &e, "taskhash");
	expect_inval(eq_store_report_equiv(f->s, M, t, upper, u, &e), &e, "unihash");
	/* Nothing was stored by the failed calls. */
	assert_int_equal(eq_store_get(f->s, M, t, u, &e), EQ_ERR_NOTFOUND);
}

struct list_acc {
	int n;
	int with_outhash;
};

static eq_err list_cb(void *ctx, const struct eq_store_entry *en, struct eq_error *err)
{
	(void)err;
	struct list_acc *a = ctx;
	a->n++;
	if (en->outhash) {
		a->with_outhash++;
		assert_string_equal(en->pn, "pkg");
		assert_non_null(en->created);
	}
	return EQ_OK;
}

static eq_err list_stop(void *ctx, const struct eq_store_entry *en, struct eq_error *err)
{
	(void)ctx;
	(void)en;
	return eq_error_set(err, EQ_ERR_STATE, "stop");
}

static void test_list(void **state)
{
	struct fx *f = *state;
	char t[65], o[65], u[65];
	struct eq_error e;
	for (int i = 0; i < 5; i++)
		report_ok(f->s, M, h('t', i, t), h('o', i % 2, o), i < 2 ? t : h('t', i % 2, u),
			  EQ_STORE_NEW_OUTHASH | EQ_STORE_NEW_MAPPING | (i < 2 ? 0u : EQ_STORE_INHERITED));
	report_ok(f->s, "m2", h('t', 0, t), h('o', 0, o), t, EQ_STORE_NEW_OUTHASH | EQ_STORE_NEW_MAPPING);
	assert_int_equal(eq_store_report_equiv(f->s, M, h('t', 77, t), h('t', 0, o), u, &e), EQ_OK);
	struct list_acc a = {0};
	assert_int_equal(eq_store_list(f->s, NULL, list_cb, &a, &e), EQ_OK);
	assert_int_equal(a.n, 7);
	assert_int_equal(a.with_outhash, 6);
	memset(&a, 0, sizeof(a));
	assert_int_equal(eq_store_list(f->s, M, list_cb, &a, &e), EQ_OK);
	assert_int_equal(a.n, 6);
	assert_int_equal(eq_store_list(f->s, M, list_stop, NULL, &e), EQ_ERR_STATE);
}

static void test_published(void **state)
{
	struct fx *f = *state;
	char u[65];
	struct eq_store_published a, b, got;
	struct eq_error e;
	bool inserted = false;
	h('u', 1, u);
	h('p', 1, a.payload_sha256), h('q', 1, a.object_sha256);
	a.payload_size = 1000, a.object_size = 300;
	h('p', 2, b.payload_sha256), h('q', 2, b.object_sha256);
	b.payload_size = 2000, b.object_size = 600;
	assert_int_equal(eq_store_get_published(f->s, M, u, &got, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(eq_store_set_published(f->s, M, u, &a, &got, &inserted, &e), EQ_OK);
	assert_true(inserted);
	assert_string_equal(got.payload_sha256, a.payload_sha256);
	assert_string_equal(got.object_sha256, a.object_sha256);
	assert_int_equal(got.payload_size, 1000);
	assert_int_equal(got.object_size, 300);
	/* A non-reproducible rebuild: the first payload stays. */
	assert_int_equal(eq_store_set_published(f->s, M, u, &b, &got, &inserted, &e), EQ_OK);
	assert_false(inserted);
	assert_string_equal(got.payload_sha256, a.payload_sha256);
	assert_int_equal(got.object_size, 300);
	assert_int_equal(eq_store_get_published(f->s, M, u, &got, &e), EQ_OK);
	assert_string_equal(got.object_sha256, a.object_sha256);
	/* Other method, other row. */
	assert_int_equal(eq_store_set_published(f->s, "m2", u, &b, &got, &inserted, &e), EQ_OK);
	assert_true(inserted);
	b.payload_size = UINT64_MAX;
	assert_int_equal(eq_store_set_published(f->s, "m3", u, &b, &got, &inserted, &e), EQ_ERR_INVAL);
	memcpy(b.object_sha256, "nothex", 7);
	expect_inval(eq_store_set_published(f->s, "m3", u, &b, &got, &inserted, &e), &e, "object_sha256");
}

/* eq_store_output_of(): the publisher's guard against serving one package's
 * bytes under another package's name. */
static void test_output_of(void **state)
{
	struct fx *f = *state;
	char t1[65], t2[65], o1[65], u[65];
	struct eq_error e;
	bool found = true;
	h('t', 1, t1), h('t', 2, t2), h('o', 1, o1);
	assert_int_equal(eq_store_output_of(f->s, M, o1, "bash", &found, &e), EQ_OK);
	assert_false(found);
	assert_int_equal(eq_store_report(f->s, M, t1, o1, NULL, "bash", "5.2", u, NULL, &e), EQ_OK);
	assert_int_equal(eq_store_output_of(f->s, M, o1, "bash", &found, &e), EQ_OK);
	assert_true(found);
	assert_int_equal(eq_store_output_of(f->s, M, o1, "curl", &found, &e), EQ_OK);
	assert_false(found);
	assert_int_equal(eq_store_output_of(f->s, "other", o1, "bash", &found, &e), EQ_OK);
	assert_false(found);
	/* A row reported without a name names no package. */
	assert_int_equal(eq_store_report(f->s, M, t2, o1, NULL, NULL, NULL, u, NULL, &e), EQ_OK);
	assert_int_equal(eq_store_output_of(f->s, M, o1, "curl", &found, &e), EQ_OK);
	assert_false(found);
	expect_inval(eq_store_output_of(f->s, M, "xyz", "bash", &found, &e), &e, "outhash");
}

static void test_reopen_and_foreign(void **state)
{
	struct fx *f = *state;
	char t[65], o[65], u[65];
	struct eq_error e;
	report_ok(f->s, M, h('t', 1, t), h('o', 1, o), t, EQ_STORE_NEW_OUTHASH | EQ_STORE_NEW_MAPPING);
	eq_store_close(f->s);
	f->s = NULL;
	assert_int_equal(eq_store_open(f->db, &f->s, &e), EQ_OK);
	assert_int_equal(eq_store_get(f->s, M, t, u, &e), EQ_OK);
	assert_string_equal(u, t);

	/* A garbage file and someone else's SQLite database are refused. */
	char path[128];
	snprintf(path, sizeof(path), "%s/garbage.db", f->dir);
	char junk[4096];
	memset(junk, 'x', sizeof(junk));
	assert_int_equal(eq_file_replace_atomic(path, junk, sizeof(junk), 0644, &e), EQ_OK);
	struct eq_store *s2 = NULL;
	assert_int_equal(eq_store_open(path, &s2, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "garbage.db"));
	snprintf(path, sizeof(path), "%s/foreign.db", f->dir);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE x(a)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(eq_store_open(path, &s2, &e), EQ_ERR_UNSUPPORTED);
	assert_non_null(strstr(e.msg, "not an eqota equivalence store"));
	/* A newer schema is refused. */
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(eq_store_open(f->db, &s2, &e), EQ_ERR_UNSUPPORTED);
	assert_non_null(strstr(e.msg, "newer"));
}

static unsigned mode_of(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return (unsigned)(st.st_mode & 07777);
}

/* The default store on a fresh machine: the folders do not exist yet. */
static void test_default_path(void **state)
{
	(void)state;
	char *p = NULL;
	struct eq_error e;
	char *old_xdg = getenv("XDG_DATA_HOME") ? strdup(getenv("XDG_DATA_HOME")) : NULL;
	char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	char t[64], want[160], dir[160];
	snprintf(t, sizeof(t), "/tmp/eqgendef.XXXXXX");
	assert_non_null(mkdtemp(t));

	snprintf(dir, sizeof(dir), "%s/xdg", t);
	setenv("XDG_DATA_HOME", dir, 1);
	assert_int_equal(eq_store_default_path(&p, &e), EQ_OK);
	snprintf(want, sizeof(want), "%s/xdg/eqota/equiv.db", t);
	assert_string_equal(p, want);
	assert_int_equal(mode_of(dir), 0700);
	snprintf(dir, sizeof(dir), "%s/xdg/eqota", t);
	assert_int_equal(mode_of(dir), 0700);
	struct eq_store *s = NULL;
	assert_int_equal(eq_store_open(p, &s, &e), EQ_OK);
	eq_store_close(s);
	assert_int_equal(access(p, F_OK), 0);
	eq_free(p);

	/* A relative XDG_DATA_HOME is ignored (XDG spec): HOME decides. */
	setenv("XDG_DATA_HOME", "relative", 1);
	snprintf(dir, sizeof(dir), "%s/home", t);
	assert_int_equal(mkdir(dir, 0755), 0);
	setenv("HOME", dir, 1);
	assert_int_equal(eq_store_default_path(&p, &e), EQ_OK);
	snprintf(want, sizeof(want), "%s/home/.local/share/eqota/equiv.db", t);
	assert_string_equal(p, want);
	eq_free(p);
	snprintf(dir, sizeof(dir), "%s/home/.local/share/eqota", t);
	assert_int_equal(mode_of(dir), 0700);
	/* Again, now that it exists: still fine, mode untouched. */
	assert_int_equal(eq_store_default_path(&p, &e), EQ_OK);
	eq_free(p);

	/* A folder the user made with other modes is used as it is... */
	snprintf(dir, sizeof(dir), "%s/xdg2", t);
	assert_int_equal(mkdir(dir, 0755), 0);
	setenv("XDG_DATA_HOME", dir, 1);
	strcat(dir, "/eqota");
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chmod(dir, 0750), 0);
	assert_int_equal(eq_store_default_path(&p, &e), EQ_OK);
	eq_free(p);
	assert_int_equal(mode_of(dir), 0750);
	/* ...unless others may write to it: refused, naming the folder. */
	assert_int_equal(chmod(dir, 0777), 0);
	p = NULL;
	assert_int_equal(eq_store_default_path(&p, &e), EQ_ERR_UNSAFE);
	assert_null(p);
	assert_non_null(strstr(e.msg, dir));
	assert_int_equal(mode_of(dir), 0777);

	/* A regular file where the eqota folder should be. */
	snprintf(dir, sizeof(dir), "%s/xdg3", t);
	assert_int_equal(mkdir(dir, 0755), 0);
	setenv("XDG_DATA_HOME", dir, 1);
	strcat(dir, "/eqota");
	FILE *fp = fopen(dir, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(eq_store_default_path(&p, &e), EQ_ERR_IO);
	assert_null(p);
	assert_non_null(strstr(e.msg, dir));
	assert_non_null(strstr(e.msg, "not a folder"));

	/* A regular file in the parent chain (~/.local). */
	snprintf(dir, sizeof(dir), "%s/home2", t);
	assert_int_equal(mkdir(dir, 0755), 0);
	setenv("HOME", dir, 1);
	unsetenv("XDG_DATA_HOME");
	strcat(dir, "/.local");
	fp = fopen(dir, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(eq_store_default_path(&p, &e), EQ_ERR_IO);
	assert_null(p);
	strcat(dir, "/share/eqota");
	assert_non_null(strstr(e.msg, dir));

	assert_int_equal(eq_rm_rf(t, NULL), EQ_OK);
	if (old_xdg)
		setenv("XDG_DATA_HOME", old_xdg, 1);
	else
		unsetenv("XDG_DATA_HOME");
	if (old_home)
		setenv("HOME", old_home, 1);
	free(old_xdg);
	free(old_home);
}

#define N_CONC 200
#define N_CLASSES 20

/* Child: reports all entries in its own order and writes the unihashes it
 * got, one line per entry index, to @fd. */
static int child_report(const char *db, int reverse, int fd)
{
	struct eq_store *s = NULL;
	struct eq_error e;
	if (eq_store_open(db, &s, &e) != EQ_OK) {
		fprintf(stderr, "child open: %s\n", e.msg);
		return 1;
	}
	for (int k = 0; k < N_CONC; k++) {
		int i = reverse ? N_CONC - 1 - k : k;
		char t[65], o[65], u[65], line[80];
		if (eq_store_report(s, M, h('t', i, t), h('o', i % N_CLASSES, o), NULL, NULL, NULL, u, NULL, &e) !=
		    EQ_OK) {
			fprintf(stderr, "child report: %s\n", e.msg);
			eq_store_close(s);
			return 1;
		}
		int n = snprintf(line, sizeof(line), "%d %s\n", i, u);
		if (eq_write_all(fd, line, (size_t)n, &e) != EQ_OK) {
			eq_store_close(s);
			return 1;
		}
	}
	eq_store_close(s);
	return 0;
}

static void read_results(FILE *in, char res[N_CONC][65])
{
	int i;
	char u[65];
	int n = 0;
	while (fscanf(in, "%d %64s", &i, u) == 2) {
		assert_true(i >= 0 && i < N_CONC);
		memcpy(res[i], u, 65);
		n++;
	}
	assert_int_equal(n, N_CONC);
}

static void test_concurrent_processes(void **state)
{
	struct fx *f = *state;
	eq_store_close(f->s);
	f->s = NULL;
	char pa[128], pb[128];
	snprintf(pa, sizeof(pa), "%s/a.txt", f->dir);
	snprintf(pb, sizeof(pb), "%s/b.txt", f->dir);
	pid_t pid[2];
	for (int c = 0; c < 2; c++) {
		pid[c] = fork();
		assert_true(pid[c] >= 0);
		if (pid[c] == 0) {
			FILE *out = fopen(c ? pb : pa, "w");
			int rc = out ? child_report(f->db, c, fileno(out)) : 1;
			if (out)
				fclose(out);
			_exit(rc);
		}
	}
	for (int c = 0; c < 2; c++) {
		int st = 0;
		assert_int_equal(waitpid(pid[c], &st, 0), pid[c]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	static char ra[N_CONC][65], rb[N_CONC][65];
	FILE *fa = fopen(pa, "r"), *fb = fopen(pb, "r");
	assert_non_null(fa);
	assert_non_null(fb);
	read_results(fa, ra);
	read_results(fb, rb);
	fclose(fa);
	fclose(fb);
	struct eq_error e;
	assert_int_equal(eq_store_open(f->db, &f->s, &e), EQ_OK);
	char cls[N_CLASSES][65] = {{0}};
	for (int i = 0; i < N_CONC; i++) {
		char u[65], t[65];
		/* Both processes saw the same answer, and the store agrees. */
		assert_string_equal(ra[i], rb[i]);
		assert_int_equal(eq_store_get(f->s, M, h('t', i, t), u, &e), EQ_OK);
		assert_string_equal(u, ra[i]);
		/* One founder per output class. */
		int c = i % N_CLASSES;
		if (!cls[c][0])
			memcpy(cls[c], u, 65);
		assert_string_equal(cls[c], u);
	}
	/* The founder is a member of its class. */
	for (int c = 0; c < N_CLASSES; c++) {
		bool member = false;
		for (int i = c; i < N_CONC; i += N_CLASSES) {
			char t[65];
			member = member || strcmp(h('t', i, t), cls[c]) == 0;
		}
		assert_true(member);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_report_semantics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_equiv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_published, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_of, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_and_foreign, setup, teardown),
		cmocka_unit_test(test_default_path),
		cmocka_unit_test_setup_teardown(test_concurrent_processes, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
