/*
 * The release-wide path table (gen_conflict.c): shared paths that are
 * allowed (directories, identical entries) and refused (different content,
 * file vs symlink, hard links), the owner rules (parsing, applying to a
 * payload builder, the trimmed taskhash, rules that name nothing or the
 * wrong owner), and eq_payload_builder_remove() with hard links.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/gen_conflict.h>

#include "eq_test.h"
#include "../../gen/gen_priv.h"

/* Collected notes of one check. */
struct notes {
	size_t errors, warnings;
	char last_error[4096], last_warning[4096];
};

static void note(void *ctx, bool error, const char *msg)
{
	struct notes *n = ctx;
	if (error) {
		n->errors++;
		snprintf(n->last_error, sizeof(n->last_error), "%s", msg);
	} else {
		n->warnings++;
		snprintf(n->last_warning, sizeof(n->last_warning), "%s", msg);
	}
}

static struct eq_path_table *table(const char *const *owners, size_t n)
{
	struct eq_path_table *t = NULL;
	struct eq_error e;
	eq_err r = eq_path_table_new(owners, n, NULL, &t, &e);
	if (r)
		fail_msg("eq_path_table_new: %s", eq_error_msg(&e));
	return t;
}

static const uint8_t SHA_A[EQ_SHA256_LEN] = {1};
static const uint8_t SHA_B[EQ_SHA256_LEN] = {2};

static void add(struct eq_path_table *t, const char *pkg, const struct eq_payload_entry *e, const uint8_t *sha)
{
	struct eq_error err;
	char file[300];
	snprintf(file, sizeof(file), "/pool/%s_1.0_amd64.deb", pkg);
	eq_err r = eq_path_table_add_entry(t, pkg, file, e, sha, &err);
	if (r)
		fail_msg("add_entry: %s", eq_error_msg(&err));
}

static const struct eq_payload_entry DIR_BIN = {.path = "bin", .type = EQ_ENTRY_DIR, .mode = 0755};
static const struct eq_payload_entry FILE_BB = {.path = "bin/busybox", .type = EQ_ENTRY_FILE, .mode = 0755, .size = 10};

/* Checks a release of base (a merged /usr and the symlinks below) and one
 * more package shipping the file @path: refused when @landing is not NULL,
 * naming where the path lands (@want_landing). */
static void landing(const char *path, const char *want_landing)
{
	static const struct eq_payload_entry base[] = {
		{.path = "abs", .type = EQ_ENTRY_SYMLINK, .mode = 0777, .link = "/usr/lib/eqota"},
		{.path = "lib", .type = EQ_ENTRY_SYMLINK, .mode = 0777, .link = "usr/lib"},
		{.path = "loop", .type = EQ_ENTRY_SYMLINK, .mode = 0777, .link = "loop/x"},
		{.path = "up", .type = EQ_ENTRY_SYMLINK, .mode = 0777, .link = "usr/share/../../../usr/lib"},
		{.path = "usr", .type = EQ_ENTRY_DIR, .mode = 0755},
		{.path = "usr/lib", .type = EQ_ENTRY_DIR, .mode = 0755},
		{.path = "usr/share", .type = EQ_ENTRY_DIR, .mode = 0755},
	};
	struct eq_path_table *t = table(NULL, 0);
	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		add(t, "base", &base[i], NULL);
	struct eq_payload_entry e = {.path = path, .type = EQ_ENTRY_FILE, .mode = 0644, .size = 1};
	add(t, "evil", &e, SHA_B);
	struct notes n = {0};
	struct eq_error err;
	eq_err r = eq_path_table_check(t, note, &n, &err);
	if (!want_landing) {
		if (r)
			fail_msg("'%s' refused: %s", path, eq_error_msg(&err));
	} else {
		char want[512];
		snprintf(want, sizeof(want), "package evil (evil_1.0_amd64.deb): entry '%s'", path);
		if (r != EQ_ERR_UNSAFE || !strstr(err.msg, want) || !strstr(err.msg, want_landing))
			fail_msg("'%s': got %s: %s", path, eq_err_str(r), eq_error_msg(&err));
		assert_int_equal(n.errors, 1);
	}
	eq_path_table_free(t);
}

/* Issue 29, finding 2: a path is judged where it lands after the symlinks
 * of every package of the release, not as one package spells it. */
static void test_landing_through_symlinks(void **state)
{
	(void)state;
	landing("lib/eqota/slot/packages/base.files",
		"resolves to 'usr/lib/eqota/slot/packages/base.files' through symlink 'lib' -> 'usr/lib' of package "
		"base: inside eqota's own folder");
	landing("abs/slot/manifest.json", "resolves to 'usr/lib/eqota/slot/manifest.json'");
	landing("up/eqota/slot", "resolves to 'usr/lib/eqota/slot' through symlink 'up'");
	landing("lib/eqota", "a folder on the way to eqota's own folder, as a non-directory");
	/* Through the symlinks anywhere else is what a merged /usr is for. */
	landing("lib/libc.so", NULL);
	landing("lib/eqota/other", NULL);
	landing("abs/slot2", NULL);
	/* A loop is left to the device's kernel (ELOOP there). */
	landing("loop/file", NULL);
}

static void test_identical_allowed(void **state)
{
	(void)state;
	struct eq_path_table *t = table(NULL, 0);
	struct eq_payload_entry ln = {.path = "bin/sh", .type = EQ_ENTRY_SYMLINK, .mode = 0777, .link = "busybox"};
	add(t, "busybox", &DIR_BIN, NULL);
	add(t, "busybox", &FILE_BB, SHA_A);
	add(t, "busybox", &ln, NULL);
	add(t, "busybox-static", &DIR_BIN, NULL);
	add(t, "busybox-static", &FILE_BB, SHA_A);
	add(t, "busybox-static", &ln, NULL);
	struct notes n = {0};
	struct eq_error e;
	assert_int_equal(eq_path_table_check(t, note, &n, &e), EQ_OK);
	assert_int_equal(n.errors, 0);
	assert_int_equal(n.warnings, 0);
	eq_path_table_free(t);
}

static void test_content_differs(void **state)
{
	(void)state;
	struct eq_path_table *t = table(NULL, 0);
	add(t, "busybox", &FILE_BB, SHA_A);
	add(t, "busybox-static", &FILE_BB, SHA_B);
	struct notes n = {0};
	struct eq_error e;
	assert_int_equal(eq_path_table_check(t, note, &n, &e), EQ_ERR_STATE);
	assert_int_equal(n.errors, 1);
	assert_string_equal(eq_error_msg(&e),
			    "bin/busybox is shipped by busybox (busybox_1.0_amd64.deb) and busybox-static "
			    "(busybox-static_1.0_amd64.deb) (content differs); a release may ship a path once (see "
			    "--path-owner)");
	eq_path_table_free(t);

	/* Same content, other mode or owner: refused too. */
	t = table(NULL, 0);
	struct eq_payload_entry other = FILE_BB;
	other.mode = 04755;
	add(t, "a", &FILE_BB, SHA_A);
	add(t, "b", &other, SHA_A);
	assert_int_equal(eq_path_table_check(t, NULL, NULL, &e), EQ_ERR_STATE);
	assert_non_null(strstr(eq_error_msg(&e), "mode 0755 vs 4755"));
	eq_path_table_free(t);

	/* Different xattrs. */
	t = table(NULL, 0);
	struct eq_xattr x = {.name = "security.capability", .value = (uint8_t *)"\1\2", .len = 2};
	other = FILE_BB;
	other.xattrs = &x;
	other.n_xattrs = 1;
	add(t, "a", &FILE_BB, SHA_A);
	add(t, "b", &other, SHA_A);
	assert_int_equal(eq_path_table_check(t, NULL, NULL, &e), EQ_ERR_STATE);
	assert_non_null(strstr(eq_error_msg(&e), "xattrs differ"));
	eq_path_table_free(t);
}

static void test_file_vs_symlink(void **state)
{
	(void)state;
	struct eq_path_table *t = table(NULL, 0);
	struct eq_payload_entry sh_dash = {.path = "bin/sh", .type = EQ_ENTRY_SYMLINK, .mode = 0777, .link = "dash"};
	struct eq_payload_entry sh_file = {.path = "bin/sh", .type = EQ_ENTRY_FILE, .mode = 0755, .size = 10};
	struct eq_payload_entry sh_bb = {.path = "bin/sh", .type = EQ_ENTRY_SYMLINK, .mode = 0777, .link = "busybox"};
	add(t, "dash", &sh_dash, NULL);
	add(t, "shell", &sh_file, SHA_A);
	add(t, "bb", &sh_bb, NULL);
	struct notes n = {0};
	struct eq_error e;
	assert_int_equal(eq_path_table_check(t, note, &n, &e), EQ_ERR_STATE);
	assert_int_equal(n.errors, 1);
	/* All three named, in the order they were added. */
	assert_non_null(strstr(eq_error_msg(&e), "bin/sh is shipped by dash (dash_1.0_amd64.deb), shell "
						 "(shell_1.0_amd64.deb) and bb (bb_1.0_amd64.deb) (symlink vs file)"));
	eq_path_table_free(t);

	/* Two symlinks to different targets. */
	t = table(NULL, 0);
	add(t, "dash", &sh_dash, NULL);
	add(t, "bb", &sh_bb, NULL);
	assert_int_equal(eq_path_table_check(t, NULL, NULL, &e), EQ_ERR_STATE);
	assert_non_null(strstr(eq_error_msg(&e), "link 'dash' vs 'busybox'"));
	eq_path_table_free(t);

	/* A directory and a symlink (merged /usr's "bin -> usr/bin"). */
	t = table(NULL, 0);
	struct eq_payload_entry bin_ln = {.path = "bin", .type = EQ_ENTRY_SYMLINK, .mode = 0777, .link = "usr/bin"};
	add(t, "usrmerge", &bin_ln, NULL);
	add(t, "bb", &DIR_BIN, NULL);
	assert_int_equal(eq_path_table_check(t, NULL, NULL, &e), EQ_ERR_STATE);
	assert_non_null(strstr(eq_error_msg(&e), "(symlink vs directory)"));
	eq_path_table_free(t);
}

static void test_directory_modes(void **state)
{
	(void)state;
	struct eq_path_table *t = table(NULL, 0);
	struct eq_payload_entry d700 = {.path = "var/lib/x", .type = EQ_ENTRY_DIR, .mode = 0700};
	struct eq_payload_entry d755 = {.path = "var/lib/x", .type = EQ_ENTRY_DIR, .mode = 0755};
	add(t, "zeta", &d700, NULL);
	add(t, "alpha", &d755, NULL);
	add(t, "mid", &d755, NULL);
	struct notes n = {0};
	struct eq_error e;
	assert_int_equal(eq_path_table_check(t, note, &n, &e), EQ_OK);
	assert_int_equal(n.errors, 0);
	assert_int_equal(n.warnings, 1);
	/* The device installs in name order: the last name's mode stays. */
	assert_non_null(strstr(n.last_warning, "directory var/lib/x is shipped by zeta"));
	assert_non_null(strstr(n.last_warning, "(mode 0700 vs 0755): devices get zeta's and download the others"));
	eq_path_table_free(t);

	/* Owners differ: a warning too. */
	t = table(NULL, 0);
	struct eq_payload_entry dg = d755;
	dg.gid = 50;
	add(t, "a", &d755, NULL);
	add(t, "b", &dg, NULL);
	memset(&n, 0, sizeof(n));
	assert_int_equal(eq_path_table_check(t, note, &n, &e), EQ_OK);
	assert_int_equal(n.warnings, 1);
	assert_non_null(strstr(n.last_warning, "owner 0:0 vs 0:50"));
	eq_path_table_free(t);
}

static void test_identical_hard_link(void **state)
{
	(void)state;
	/* Both ship bin/busybox identically, but one package also hard-links
	 * bin/ash to it: installing the other replaces the inode. */
	struct eq_path_table *t = table(NULL, 0);
	struct eq_payload_entry ash = {.path = "bin/ash", .type = EQ_ENTRY_HARDLINK, .link = "bin/busybox"};
	add(t, "a", &ash, NULL);
	add(t, "a", &FILE_BB, SHA_A);
	add(t, "b", &FILE_BB, SHA_A);
	struct eq_error e;
	assert_int_equal(eq_path_table_check(t, NULL, NULL, &e), EQ_ERR_STATE);
	assert_non_null(strstr(eq_error_msg(&e), "bin/busybox is shipped by a (a_1.0_amd64.deb) and b "
						 "(b_1.0_amd64.deb) (identical, but a hard link"));
	eq_path_table_free(t);
}

static void test_many_conflicts(void **state)
{
	(void)state;
	struct eq_path_table *t = table(NULL, 0);
	for (unsigned i = 0; i < EQ_PATH_CONFLICTS_LISTED + 20; i++) {
		char p[32];
		snprintf(p, sizeof(p), "f%03u", i);
		struct eq_payload_entry f = {.path = p, .type = EQ_ENTRY_FILE, .mode = 0644, .size = 1};
		add(t, "a", &f, SHA_A);
		add(t, "b", &f, SHA_B);
	}
	struct notes n = {0};
	struct eq_error e;
	assert_int_equal(eq_path_table_check(t, note, &n, &e), EQ_ERR_STATE);
	assert_int_equal(n.errors, EQ_PATH_CONFLICTS_LISTED);
	assert_non_null(strstr(eq_error_msg(&e), "120 paths are shipped by more than one package"));
	assert_non_null(strstr(eq_error_msg(&e), "f000 is shipped by a"));
	eq_path_table_free(t);
}

/* ---- payloads and rules ---------------------------------------------------- */

struct fx {
	char dir[64];
	int data_fd;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/eqgenconf.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	char p[128];
	snprintf(p, sizeof(p), "%s/data", f->dir);
	f->data_fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (f->data_fd < 0 || write(f->data_fd, "dynamic!!!static!!!!", 20) != 20) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	close(f->data_fd);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* A builder holding bin/, bin/busybox (data at @off) and @extra. */
static struct eq_payload_builder *builder(struct fx *f, uint64_t off, const char *extra)
{
	struct eq_payload_builder *b;
	struct eq_error e;
	assert_int_equal(eq_payload_builder_new(NULL, &b, &e), EQ_OK);
	assert_int_equal(eq_payload_builder_add(b, &DIR_BIN, -1, 0, &e), EQ_OK);
	assert_int_equal(eq_payload_builder_add(b, &FILE_BB, f->data_fd, off, &e), EQ_OK);
	struct eq_payload_entry x = {.path = extra, .type = EQ_ENTRY_FILE, .mode = 0644, .size = 3};
	assert_int_equal(eq_payload_builder_add(b, &x, f->data_fd, 0, &e), EQ_OK);
	return b;
}

/* Writes @b to DIR/NAME.payload and returns that path (static buffer). */
static const char *write_payload(struct fx *f, struct eq_payload_builder *b, const char *name,
				 uint8_t sha[EQ_SHA256_LEN])
{
	static char p[160];
	snprintf(p, sizeof(p), "%s/%s.payload", f->dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	uint64_t size;
	struct eq_error e;
	eq_err r = eq_payload_builder_write(b, eq_fd_write, &fd, sha, &size, &e);
	if (r)
		fail_msg("write: %s", eq_error_msg(&e));
	close(fd);
	return p;
}

static void test_rule_applied(void **state)
{
	struct fx *f = *state;
	const char *owners[] = {"/bin/busybox=busybox-static"};
	struct eq_path_table *t = table(owners, 1);
	assert_int_equal(eq_path_table_rule_count(t), 1);
	struct eq_error e;
	const char *names[] = {"busybox", "busybox-static"};
	const uint64_t offs[] = {0, 10};
	const char *extras[] = {"usr/share/doc/busybox", "usr/share/doc/busybox-static"};
	char taskhash[2][EQ_SHA256_HEX_LEN + 1];
	uint8_t full[EQ_SHA256_LEN], trimmed[EQ_SHA256_LEN];
	for (int i = 0; i < 2; i++) {
		struct eq_payload_builder *b = builder(f, offs[i], extras[i]);
		if (i == 0)
			(void)write_payload(f, b, "full", full);
		size_t removed = 99;
		assert_int_equal(eq_path_table_apply(t, names[i], b, &removed, &e), EQ_OK);
		assert_int_equal(removed, i == 0 ? 1 : 0);
		assert_int_equal(eq_payload_builder_count(b), i == 0 ? 2 : 3);
		uint8_t sha[EQ_SHA256_LEN];
		const char *p = write_payload(f, b, names[i], sha);
		if (i == 0)
			memcpy(trimmed, sha, sizeof(sha));
		assert_int_equal(eq_path_table_add(t, names[i], "/pool/x.deb", p, &e), EQ_OK);
		eq_payload_builder_free(b);
		memset(taskhash[i], 'a', EQ_SHA256_HEX_LEN);
		taskhash[i][EQ_SHA256_HEX_LEN] = '\0';
		assert_int_equal(eq_path_table_taskhash(t, names[i], taskhash[i], &e), EQ_OK);
	}
	assert_memory_not_equal(full, trimmed, EQ_SHA256_LEN);
	/* The trimmed package gets its own taskhash, the owner keeps its. */
	assert_string_not_equal(taskhash[0], taskhash[1]);
	assert_true(eq_is_sha256_hex(taskhash[0]));
	for (int k = 0; k < EQ_SHA256_HEX_LEN; k++)
		assert_int_equal(taskhash[1][k], 'a');
	struct notes n = {0};
	assert_int_equal(eq_path_table_check(t, note, &n, &e), EQ_OK);
	assert_int_equal(n.errors + n.warnings, 0);
	eq_path_table_free(t);

	/* The same trim in another run gives the same taskhash. */
	t = table(owners, 1);
	struct eq_payload_builder *b = builder(f, 0, "x");
	assert_int_equal(eq_path_table_apply(t, "busybox", b, NULL, &e), EQ_OK);
	char again[EQ_SHA256_HEX_LEN + 1];
	memset(again, 'a', EQ_SHA256_HEX_LEN);
	again[EQ_SHA256_HEX_LEN] = '\0';
	assert_int_equal(eq_path_table_taskhash(t, "busybox", again, &e), EQ_OK);
	assert_string_equal(again, taskhash[0]);
	eq_payload_builder_free(b);
	eq_path_table_free(t);
}

static void test_rule_wrong_owner(void **state)
{
	struct fx *f = *state;
	/* The owner ships no bin/busybox, but busybox lost it to the rule. */
	const char *owners[] = {"bin/busybox=nosuch", "etc/gone=busybox"};
	struct eq_path_table *t = table(owners, 2);
	struct eq_error e;
	struct eq_payload_builder *b = builder(f, 0, "x");
	assert_int_equal(eq_path_table_apply(t, "busybox", b, NULL, &e), EQ_OK);
	uint8_t sha[EQ_SHA256_LEN];
	assert_int_equal(eq_path_table_add(t, "busybox", "/pool/b.deb", write_payload(f, b, "b", sha), &e), EQ_OK);
	eq_payload_builder_free(b);
	struct notes n = {0};
	assert_int_equal(eq_path_table_check(t, note, &n, &e), EQ_ERR_STATE);
	assert_int_equal(n.errors, 1);
	assert_int_equal(n.warnings, 1);
	assert_non_null(strstr(eq_error_msg(&e), "--path-owner 'bin/busybox=nosuch': nosuch does not ship bin/busybox, "
						 "which was left out of busybox: no package would install it"));
	assert_string_equal(n.last_warning,
			    "--path-owner 'etc/gone=busybox': no package of the release ships etc/gone, "
			    "ignoring");
	eq_path_table_free(t);
}

static void test_bad_rules(void **state)
{
	struct fx *f = *state;
	static const struct {
		const char *arg, *msg;
	} bad[] = {
		{"bin/busybox", "--path-owner 'bin/busybox': expected PATH=PACKAGE"},
		{"=busybox", "--path-owner '=busybox': expected PATH=PACKAGE"},
		{"bin/busybox=", "--path-owner 'bin/busybox=': expected PATH=PACKAGE"},
		{"/=busybox", "--path-owner '/=busybox': path '/': empty path"},
		{"bin/../etc/passwd=x",
		 "--path-owner 'bin/../etc/passwd=x': path 'bin/../etc/passwd': empty, '.' or '..' component"},
		{"bin//sh=x", "--path-owner 'bin//sh=x': path 'bin//sh': empty, '.' or '..' component"},
		{"bin/sh=two words", "--path-owner 'bin/sh=two words': 'two words' is not a package name"},
	};
	struct eq_error e;
	struct eq_path_table *t = (struct eq_path_table *)(uintptr_t)1;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a[] = {bad[i].arg};
		assert_int_equal(eq_path_table_new(a, 1, NULL, &t, &e), EQ_ERR_INVAL);
		assert_string_equal(eq_error_msg(&e), bad[i].msg);
	}
	/* Two owners for one path; the same owner twice is fine. */
	const char *two[] = {"bin/sh=dash", "/bin/sh/=bash"};
	assert_int_equal(eq_path_table_new(two, 2, NULL, &t, &e), EQ_ERR_INVAL);
	assert_string_equal(eq_error_msg(&e), "--path-owner '/bin/sh/=bash': 'bin/sh' already has the owner 'dash' "
					      "(--path-owner 'bin/sh=dash'); a path has one owner");
	const char *same[] = {"bin/sh=dash", "./bin/sh=dash"};
	assert_int_equal(eq_path_table_new(same, 2, NULL, &t, &e), EQ_OK);
	assert_int_equal(eq_path_table_rule_count(t), 1);
	eq_path_table_free(t);

	/* The file: comments, blank lines, CRLF; errors name FILE:LINE. */
	char p[128];
	snprintf(p, sizeof(p), "%s/owners", f->dir);
	FILE *o = fopen(p, "w");
	assert_non_null(o);
	fputs("# who keeps what\n\n bin/busybox\tbusybox-static\r\nusr/share/man/man1/busybox.1.gz busybox", o);
	fclose(o);
	assert_int_equal(eq_path_table_new(same, 2, p, &t, &e), EQ_OK);
	assert_int_equal(eq_path_table_rule_count(t), 3);
	eq_path_table_free(t);
	static const struct {
		const char *text, *msg;
	} badf[] = {
		{"# x\nbin/busybox\n", "owners:2: expected \"PATH PACKAGE\", found only 'bin/busybox'"},
		{"bin/busybox a b\n", "owners:1: extra field 'b' after \"PATH PACKAGE\""},
		{"\n\n../x a\n", "owners:3: path '../x': empty, '.' or '..' component"},
		{"x a\nx b\n", "owners:2: 'x' already has the owner 'a' (owners:1); a path has one owner"},
	};
	if (chdir(f->dir) != 0)
		fail_msg("chdir");
	for (size_t i = 0; i < sizeof(badf) / sizeof(badf[0]); i++) {
		o = fopen("owners", "w");
		fputs(badf[i].text, o);
		fclose(o);
		assert_int_equal(eq_path_table_new(NULL, 0, "owners", &t, &e), EQ_ERR_PARSE);
		assert_string_equal(eq_error_msg(&e), badf[i].msg);
	}
	assert_int_equal(eq_path_table_new(NULL, 0, "missing-file", &t, &e), EQ_ERR_NOTFOUND);
	assert_non_null(strstr(eq_error_msg(&e), "missing-file"));
	if (chdir("/") != 0)
		fail_msg("chdir");
}

/* eq_payload_builder_remove() of a file that others hard-link to. */
static void test_remove_hard_link_target(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	struct eq_payload_builder *b;
	assert_int_equal(eq_payload_builder_new(NULL, &b, &e), EQ_OK);
	struct eq_payload_entry a = {.path = "a", .type = EQ_ENTRY_FILE, .mode = 0751, .uid = 7, .size = 7};
	struct eq_payload_entry c = {.path = "c", .type = EQ_ENTRY_HARDLINK, .link = "a"};
	struct eq_payload_entry bl = {.path = "b", .type = EQ_ENTRY_HARDLINK, .link = "a"};
	assert_int_equal(eq_payload_builder_add(b, &a, f->data_fd, 0, &e), EQ_OK);
	assert_int_equal(eq_payload_builder_add(b, &c, -1, 0, &e), EQ_OK);
	assert_int_equal(eq_payload_builder_add(b, &bl, -1, 0, &e), EQ_OK);
	bool removed = false;
	assert_int_equal(eq_payload_builder_remove(b, "./a", &removed, &e), EQ_OK);
	assert_true(removed);
	assert_int_equal(eq_payload_builder_remove(b, "nothing", &removed, &e), EQ_OK);
	assert_false(removed);
	uint8_t sha[EQ_SHA256_LEN];
	const char *p = write_payload(f, b, "links", sha);
	eq_payload_builder_free(b);
	/* b became the file (a's data and metadata), c links to it. */
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	struct eq_payload_reader *r;
	assert_int_equal(eq_payload_reader_new(eq_fd_read, &fd, NULL, &r, &e), EQ_OK);
	const struct eq_payload_entry *x;
	assert_int_equal(eq_payload_reader_next(r, &x, &e), EQ_OK);
	assert_string_equal(x->path, "b");
	assert_int_equal(x->type, EQ_ENTRY_FILE);
	assert_int_equal(x->mode, 0751);
	assert_int_equal(x->uid, 7);
	char data[16] = {0};
	size_t n;
	assert_int_equal(eq_payload_reader_read(r, data, sizeof(data), &n, &e), EQ_OK);
	assert_int_equal(n, 7);
	assert_memory_equal(data, "dynamic", 7);
	assert_int_equal(eq_payload_reader_next(r, &x, &e), EQ_OK);
	assert_string_equal(x->path, "c");
	assert_int_equal(x->type, EQ_ENTRY_HARDLINK);
	assert_string_equal(x->link, "b");
	assert_int_equal(eq_payload_reader_next(r, &x, &e), EQ_OK);
	assert_null(x);
	eq_payload_reader_free(r);
	close(fd);
}

/* The input cache's entries: a round trip through the database, and every
 * truncation of a record list refused without a leak (ASan run). */
static void test_input_cache(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	struct eq_payload_builder *b = builder(f, 0, "usr/share/doc/x");
	uint8_t sha[EQ_SHA256_LEN];
	const char *payload = write_payload(f, b, "p", sha);
	eq_payload_builder_free(b);
	struct eqg_input in = {0};
	assert_int_equal(eqg_path_recs_read(payload, &in.recs, &e), EQ_OK);
	assert_int_equal(in.recs->n, 3);
	in.name = eq_strdup("busybox");
	in.version = eq_strdup("1.36");
	in.arch = eq_strdup("arm64");
	memcpy(in.payload_sha256, sha, EQ_SHA256_LEN);
	in.payload_size = 10240;
	assert_int_equal(eqg_strv_add(&in.special, "bin/busybox (setuid)", &e), EQ_OK);
	assert_int_equal(eqg_strv_add(&in.removed, "bin/sh", &e), EQ_OK);

	char db[128];
	snprintf(db, sizeof(db), "%s/inputs.db", f->dir);
	struct eqg_input_cache *c = NULL;
	assert_int_equal(eqg_input_cache_open(db, &c, &e), EQ_OK);
	uint8_t ctx[EQ_SHA256_LEN] = {7}, key[EQ_SHA256_LEN], key2[EQ_SHA256_LEN];
	bool stable;
	assert_int_equal(eqg_input_cache_key(c, payload, ctx, key, &stable, &e), EQ_OK);
	assert_false(stable); /* just written */
	ctx[0] = 8;
	assert_int_equal(eqg_input_cache_key(c, payload, ctx, key2, &stable, &e), EQ_OK);
	assert_memory_not_equal(key, key2, EQ_SHA256_LEN);
	struct eqg_input out;
	bool hit = true;
	assert_int_equal(eqg_input_cache_get(c, key, &out, &hit, &e), EQ_OK);
	assert_false(hit);
	assert_int_equal(eqg_input_cache_put(c, key, &in, &e), EQ_OK);
	assert_int_equal(eqg_input_cache_get(c, key, &out, &hit, &e), EQ_OK);
	assert_true(hit);
	assert_string_equal(out.name, "busybox");
	assert_string_equal(out.version, "1.36");
	assert_string_equal(out.arch, "arm64");
	assert_memory_equal(out.payload_sha256, sha, EQ_SHA256_LEN);
	assert_int_equal(out.payload_size, 10240);
	assert_int_equal(out.special.n, 1);
	assert_string_equal(out.special.v[0], "bin/busybox (setuid)");
	assert_int_equal(out.removed.n, 1);
	assert_int_equal(out.recs->n, 3);

	/* The records as the path table will see them: same bytes packed. */
	struct eq_buf p1, p2;
	eq_buf_init(&p1, 1u << 20);
	eq_buf_init(&p2, 1u << 20);
	assert_int_equal(eqg_path_recs_pack(in.recs, &p1, &e), EQ_OK);
	assert_int_equal(eqg_path_recs_pack(out.recs, &p2, &e), EQ_OK);
	assert_int_equal(p1.len, p2.len);
	assert_memory_equal(p1.data, p2.data, p1.len);
	for (size_t n = 0; n < p1.len; n++) {
		struct eqg_unpack u = {p1.data, n, false, false};
		struct eqg_path_recs *rs = NULL;
		assert_false(eqg_path_recs_unpack(&u, &rs));
		assert_null(rs);
		assert_false(u.nomem); /* the bytes' fault, not memory's */
	}
	/* A byte out of range: an entry type no payload has. */
	p1.data[8] = 99;
	struct eqg_unpack u = {p1.data, p1.len, false, false};
	struct eqg_path_recs *rs = NULL;
	assert_false(eqg_path_recs_unpack(&u, &rs));
	eq_buf_done(&p1);
	eq_buf_done(&p2);
	eqg_input_done(&out);
	eqg_input_done(&in);
	eqg_input_cache_close(c);
}

#ifdef EQ_TEST_HOOKS
/* One run of everything: rules from arguments and a file, apply, write,
 * add, check. */
static eq_err whole_run(struct fx *f, const char *owners_file, struct eq_error *e)
{
	const char *owners[] = {"bin/busybox=busybox-static"};
	struct eq_path_table *t = NULL;
	eq_err r = eq_path_table_new(owners, 1, owners_file, &t, e);
	const char *names[] = {"busybox", "busybox-static"};
	for (int i = 0; i < 2 && !r; i++) {
		struct eq_payload_builder *b = NULL;
		r = eq_payload_builder_new(NULL, &b, e);
		struct eq_payload_entry ents[] = {
			DIR_BIN,
			FILE_BB,
			{.path = "bin/ash", .type = EQ_ENTRY_HARDLINK, .link = "bin/busybox"},
			{.path = "bin/sh", .type = EQ_ENTRY_HARDLINK, .link = "bin/busybox"},
		};
		/* busybox also has hard links to bin/busybox, which it loses. */
		for (size_t k = 0; k < (i ? 2u : 4u) && !r; k++)
			r = eq_payload_builder_add(b, &ents[k], ents[k].type == EQ_ENTRY_FILE ? f->data_fd : -1, 0, e);
		if (!r)
			r = eq_path_table_apply(t, names[i], b, NULL, e);
		char p[160];
		snprintf(p, sizeof(p), "%s/alloc-%d.payload", f->dir, i);
		int fd = r ? -1 : open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		uint8_t sha[EQ_SHA256_LEN];
		uint64_t size;
		if (fd >= 0) {
			r = eq_payload_builder_write(b, eq_fd_write, &fd, sha, &size, e);
			close(fd);
		}
		if (!r)
			r = eq_path_table_add(t, names[i], "/pool/x.deb", p, e);
		char th[EQ_SHA256_HEX_LEN + 1] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
		if (!r)
			r = eq_path_table_taskhash(t, names[i], th, e);
		eq_payload_builder_free(b);
	}
	if (!r)
		r = eq_path_table_check(t, NULL, NULL, e);
	eq_path_table_free(t);
	return r;
}

/* Every allocation fails once, in turn: the result is EQ_OK or
 * EQ_ERR_NOMEM, never a crash, and (under ASan) nothing leaks. */
static void test_alloc_fail(void **state)
{
	struct fx *f = *state;
	char p[128];
	snprintf(p, sizeof(p), "%s/owners", f->dir);
	FILE *o = fopen(p, "w");
	assert_non_null(o);
	fputs("# x\nusr/share/man/man1/busybox.1.gz busybox\netc/none nobody\n", o);
	fclose(o);
	struct eq_error e;
	assert_int_equal(whole_run(f, p, &e), EQ_OK);
	unsigned long n = 1;
	for (;; n++) {
		(void)eq_alloc_fail_at(n);
		eq_err r = whole_run(f, p, &e);
		unsigned long made = eq_alloc_fail_at(0);
		if (r != EQ_OK && r != EQ_ERR_NOMEM)
			fail_msg("allocation %lu failed: %s (%s)", n, eq_error_msg(&e), eq_err_str(r));
		if (made < n) {
			assert_int_equal(r, EQ_OK);
			break;
		}
	}
	assert_true(n > 20);
}
#else
EQ_HOOKS_MISSING(test_alloc_fail)
#endif

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identical_allowed),
		cmocka_unit_test(test_landing_through_symlinks),
		cmocka_unit_test(test_content_differs),
		cmocka_unit_test(test_file_vs_symlink),
		cmocka_unit_test(test_directory_modes),
		cmocka_unit_test(test_identical_hard_link),
		cmocka_unit_test(test_many_conflicts),
		cmocka_unit_test_setup_teardown(test_rule_applied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_input_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rule_wrong_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_hard_link_target, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_fail, setup, teardown),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
