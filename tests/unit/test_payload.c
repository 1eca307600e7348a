/*
 * Unit tests of the canonical payload: writer, reader, safe extract, GNU tar
 * interoperability and the bad-input corpus in tests/data/bad/payload/.
 * Needs root (owners, device nodes, security.* xattrs) like the device.
 *
 * "test_payload --generate DIR" rewrites the corpus files into DIR.
 * The extraction path for kernels without openat2 is reached through the
 * test hooks (EQ_TEST_HOOKS); those cases run as unit.test_payload.hooks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <eq/delta.h>

/* A valid vfs_cap_data v2 blob: cap_net_raw permitted and effective. */
static const uint8_t CAP_V2[20] = {0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

/* ---- helpers -------------------------------------------------------------- */

struct fx {
	char dir[64];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/eq-test-payload.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	int rc = eq_rm_rf(f->dir, &e) ? -1 : 0;
	free(f);
	return rc;
}

static char *P(const struct fx *f, const char *rel)
{
	char *p = eq_asprintf("%s/%s", f->dir, rel);
	assert_non_null(p);
	return p;
}

static void mkdir_at(const struct fx *f, const char *rel, mode_t mode)
{
	EQ_AUTOFREE char *p = P(f, rel);
	assert_int_equal(mkdir(p, mode), 0);
	assert_int_equal(chmod(p, mode), 0);
}

static void write_at(const struct fx *f, const char *rel, const char *content, mode_t mode)
{
	EQ_AUTOFREE char *p = P(f, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	assert_int_equal(close(fd), 0);
	assert_int_equal(chmod(p, mode), 0);
}

static void set_mtime(const struct fx *f, const char *rel, time_t t)
{
	EQ_AUTOFREE char *p = P(f, rel);
	struct timespec ts[2] = {{t, 0}, {t, 0}};
	assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static eq_err mem_sink(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	return eq_buf_append(ctx, data, len, err);
}

struct mem_src {
	const uint8_t *d;
	size_t len, pos;
	size_t chunk; /* short reads, to exercise the loops */
};

static eq_err mem_read(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	(void)err;
	struct mem_src *m = ctx;
	size_t n = m->len - m->pos;
	if (n > len)
		n = len;
	if (m->chunk && n > m->chunk)
		n = m->chunk;
	memcpy(buf, m->d + m->pos, n);
	m->pos += n;
	*ret_n = n;
	return EQ_OK;
}

/* Payload of the tree at @dir into @out (initialised here). */
static eq_err payload_of(const char *dir, struct eq_buf *out, uint8_t sha[32], struct eq_error *e)
{
	struct eq_payload_builder *b = NULL;
	uint8_t s[32];
	uint64_t size = 0;
	eq_buf_init(out, 256u << 20);
	eq_err r = eq_payload_builder_new(NULL, &b, e);
	if (!r)
		r = eq_payload_builder_add_tree(b, dir, e);
	if (!r)
		r = eq_payload_builder_write(b, mem_sink, out, sha ? sha : s, &size, e);
	eq_payload_builder_free(b);
	if (!r)
		assert_int_equal(size, out->len);
	return r;
}

static void payload_ok(const char *dir, struct eq_buf *out, uint8_t sha[32])
{
	struct eq_error e;
	eq_error_clear(&e);
	eq_err r = payload_of(dir, out, sha, &e);
	if (r)
		fail_msg("payload of %s: %s", dir, eq_error_msg(&e));
}

/* SHA-256 of the payload of @dir: a snapshot of everything the payload
 * keeps, used to show a failed extraction left a root as it was. */
static void snapshot(const char *dir, uint8_t sha[32])
{
	struct eq_buf b;
	payload_ok(dir, &b, sha);
	eq_buf_done(&b);
}

static eq_err extract_mem(const uint8_t *d, size_t len, const char *root, const struct eq_payload_limits *lim,
			  uint8_t sha[32], struct eq_error *e)
{
	struct mem_src m = {d, len, 0, 1000};
	return eq_payload_extract(mem_read, &m, root, lim, EQ_EXTRACT_OWNERS, sha, e);
}

static int run(const char *const argv[])
{
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, STDOUT_FILENO);
		execvp(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The reference tree: every kind of entry and attribute the payload keeps. */
static void make_rich_tree(const struct fx *f, const char *top)
{
	char rel[600];
	mkdir_at(f, top, 0755);
#define R(...) (snprintf(rel, sizeof(rel), __VA_ARGS__), rel)
	mkdir_at(f, R("%s/usr", top), 0755);
	mkdir_at(f, R("%s/usr/bin", top), 0755);
	mkdir_at(f, R("%s/tmp", top), 01777);
	write_at(f, R("%s/usr/bin/ping", top), "ELF-ish", 0755);
	{
		EQ_AUTOFREE char *p = P(f, R("%s/usr/bin/ping", top));
		assert_int_equal(chown(p, 1234, 5678), 0);
		assert_int_equal(chmod(p, 04755), 0); /* after chown, which clears setuid */
		assert_int_equal(setxattr(p, "security.capability", CAP_V2, sizeof(CAP_V2), 0), 0);
		assert_int_equal(setxattr(p, "user.origin", "test\0bin\n=", 10, 0), 0);
	}
	EQ_AUTOFREE char *p1 = P(f, R("%s/usr/bin/ping", top));
	EQ_AUTOFREE char *p2 = P(f, R("%s/usr/bin/ping6", top));
	assert_int_equal(link(p1, p2), 0);
	EQ_AUTOFREE char *s = P(f, R("%s/usr/bin/sh", top));
	assert_int_equal(symlink("ping", s), 0);
	mkdir_at(f, R("%s/dev", top), 0755);
	EQ_AUTOFREE char *n = P(f, R("%s/dev/null", top));
	assert_int_equal(mknod(n, S_IFCHR | 0666, makedev(1, 3)), 0);
	assert_int_equal(chmod(n, 0666), 0);
	EQ_AUTOFREE char *fi = P(f, R("%s/dev/fifo", top));
	assert_int_equal(mkfifo(fi, 0640), 0);
	assert_int_equal(chmod(fi, 0640), 0);
	/* >100 bytes (pax path) and >255 bytes (beyond ustar name+prefix). */
	char a[130], b[200];
	memset(a, 'a', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memset(b, 'b', sizeof(b) - 1);
	b[sizeof(b) - 1] = '\0';
	mkdir_at(f, R("%s/%s", top, a), 0700);
	mkdir_at(f, R("%s/%s/%s", top, a, b), 0755);
	write_at(f, R("%s/%s/%s/file", top, a, b), "deep", 0644);
	char target[400];
	snprintf(target, sizeof(target), "%s/%s/file", a, b);
	EQ_AUTOFREE char *ls = P(f, R("%s/longlink", top));
	assert_int_equal(symlink(target, ls), 0);
#undef R
}

/* ---- writer --------------------------------------------------------------- */

static void test_determinism(void **state)
{
	struct fx *f = *state;
	const char *names[] = {"a", "a-b", "b", "c/x", "c/y", "z", "hl1", "hl2"};
	for (int t = 0; t < 2; t++) {
		char top[16], rel[64];
		snprintf(top, sizeof(top), "t%d", t);
		mkdir_at(f, top, 0755);
		for (int i = 0; t == 1 && i < 20; i++) {
			snprintf(rel, sizeof(rel), "%s/junk%d", top, i);
			write_at(f, rel, "x", 0644);
		}
		snprintf(rel, sizeof(rel), "%s/c", top);
		mkdir_at(f, rel, 0750);
		for (int k = 0; k < 6; k++) {
			int i = t ? 5 - k : k;
			snprintf(rel, sizeof(rel), "%s/%s", top, names[i]);
			write_at(f, rel, names[i], 0644);
			set_mtime(f, rel, 1000000 * (t + 1) + k);
		}
		for (int i = 0; t == 1 && i < 20; i++) {
			snprintf(rel, sizeof(rel), "%s/junk%d", top, i);
			EQ_AUTOFREE char *p = P(f, rel);
			assert_int_equal(unlink(p), 0);
		}
		/* A hard link pair, made from opposite ends. */
		snprintf(rel, sizeof(rel), "%s/%s", top, names[t ? 7 : 6]);
		write_at(f, rel, "linked", 0600);
		EQ_AUTOFREE char *src = P(f, rel);
		snprintf(rel, sizeof(rel), "%s/%s", top, names[t ? 6 : 7]);
		EQ_AUTOFREE char *dst = P(f, rel);
		assert_int_equal(link(src, dst), 0);
		snprintf(rel, sizeof(rel), "%s/c", top);
		set_mtime(f, rel, 42 + t);
	}
	EQ_AUTOFREE char *t0 = P(f, "t0");
	EQ_AUTOFREE char *t1 = P(f, "t1");
	struct eq_buf b0, b1;
	uint8_t s0[32], s1[32], check[32];
	payload_ok(t0, &b0, s0);
	payload_ok(t1, &b1, s1);
	assert_int_equal(b0.len, b1.len);
	assert_memory_equal(b0.data, b1.data, b0.len);
	assert_memory_equal(s0, s1, 32);
	eq_sha256(b0.data, b0.len, check);
	assert_memory_equal(s0, check, 32);
	assert_int_equal(b0.len % 512, 0);

	/* Sorted bytewise; the first name of the link pair is the file. */
	struct mem_src m = {b0.data, b0.len, 0, 0};
	struct eq_payload_reader *r = NULL;
	struct eq_error e;
	assert_int_equal(eq_payload_reader_new(mem_read, &m, NULL, &r, &e), EQ_OK);
	const char *want[] = {"a", "a-b", "b", "c", "c/x", "c/y", "hl1", "hl2", "z"};
	for (size_t i = 0; i < 9; i++) {
		const struct eq_payload_entry *ent;
		assert_int_equal(eq_payload_reader_next(r, &ent, &e), EQ_OK);
		assert_non_null(ent);
		assert_string_equal(ent->path, want[i]);
		if (!strcmp(want[i], "hl2")) {
			assert_int_equal(ent->type, EQ_ENTRY_HARDLINK);
			assert_string_equal(ent->link, "hl1");
		}
		if (!strcmp(want[i], "c"))
			assert_int_equal(ent->mode, 0750);
	}
	const struct eq_payload_entry *end;
	assert_int_equal(eq_payload_reader_next(r, &end, &e), EQ_OK);
	assert_null(end);
	assert_int_equal(eq_payload_reader_next(r, &end, &e), EQ_OK);
	assert_null(end);
	eq_payload_reader_free(r);
	eq_buf_done(&b0);
	eq_buf_done(&b1);
}

static const struct eq_payload_entry *find_ent(struct eq_payload_reader *r, const char *path)
{
	const struct eq_payload_entry *ent;
	struct eq_error e;
	while (eq_payload_reader_next(r, &ent, &e) == EQ_OK && ent)
		if (!strcmp(ent->path, path))
			return ent;
	return NULL;
}

static void test_metadata_roundtrip(void **state)
{
	struct fx *f = *state;
	make_rich_tree(f, "src");
	EQ_AUTOFREE char *src = P(f, "src");
	EQ_AUTOFREE char *dst = P(f, "dst");
	assert_int_equal(mkdir(dst, 0755), 0);
	struct eq_buf b1, b2;
	uint8_t s1[32], s2[32], xs[32];
	payload_ok(src, &b1, s1);

	/* What the reader sees. */
	struct mem_src m = {b1.data, b1.len, 0, 7};
	struct eq_payload_reader *r = NULL;
	struct eq_error e;
	assert_int_equal(eq_payload_reader_new(mem_read, &m, NULL, &r, &e), EQ_OK);
	const struct eq_payload_entry *ent = find_ent(r, "dev/fifo");
	assert_non_null(ent);
	assert_int_equal(ent->type, EQ_ENTRY_FIFO);
	assert_int_equal(ent->mode, 0640);
	ent = find_ent(r, "dev/null");
	assert_non_null(ent);
	assert_int_equal(ent->type, EQ_ENTRY_CHR);
	assert_int_equal(ent->devmajor, 1);
	assert_int_equal(ent->devminor, 3);
	ent = find_ent(r, "longlink");
	assert_non_null(ent);
	assert_int_equal(ent->type, EQ_ENTRY_SYMLINK);
	assert_true(strlen(ent->link) > 300);
	ent = find_ent(r, "tmp");
	assert_non_null(ent);
	assert_int_equal(ent->mode, 01777);
	ent = find_ent(r, "usr/bin/ping");
	assert_non_null(ent);
	assert_int_equal(ent->type, EQ_ENTRY_FILE);
	assert_int_equal(ent->mode, 04755);
	assert_int_equal(ent->uid, 1234);
	assert_int_equal(ent->gid, 5678);
	assert_int_equal(ent->size, 7);
	assert_int_equal(ent->n_xattrs, 2);
	assert_string_equal(ent->xattrs[0].name, "security.capability");
	assert_int_equal(ent->xattrs[0].len, 20);
	assert_memory_equal(ent->xattrs[0].value, CAP_V2, 20);
	assert_string_equal(ent->xattrs[1].name, "user.origin");
	assert_memory_equal(ent->xattrs[1].value, "test\0bin\n=", 10);
	char data[16];
	size_t n = 0;
	assert_int_equal(eq_payload_reader_read(r, data, 3, &n, &e), EQ_OK);
	assert_int_equal(n, 3);
	assert_memory_equal(data, "ELF", 3);
	ent = find_ent(r, "usr/bin/ping6"); /* the rest of ping's data is skipped */
	assert_non_null(ent);
	assert_int_equal(ent->type, EQ_ENTRY_HARDLINK);
	assert_string_equal(ent->link, "usr/bin/ping");
	assert_int_equal(eq_payload_reader_read(r, data, sizeof(data), &n, &e), EQ_OK);
	assert_int_equal(n, 0);
	ent = find_ent(r, "usr/bin/sh");
	assert_non_null(ent);
	assert_string_equal(ent->link, "ping");
	eq_payload_reader_free(r);

	/* Extract and build again: identical bytes, and the metadata is real. */
	eq_error_clear(&e);
	eq_err rc = extract_mem(b1.data, b1.len, dst, NULL, xs, &e);
	if (rc)
		fail_msg("extract: %s", eq_error_msg(&e));
	assert_memory_equal(xs, s1, 32);
	payload_ok(dst, &b2, s2);
	assert_int_equal(b1.len, b2.len);
	assert_memory_equal(b1.data, b2.data, b1.len);
	EQ_AUTOFREE char *ping = P(f, "dst/usr/bin/ping");
	EQ_AUTOFREE char *ping6 = P(f, "dst/usr/bin/ping6");
	struct stat st, st6;
	assert_int_equal(lstat(ping, &st), 0);
	assert_int_equal(lstat(ping6, &st6), 0);
	assert_int_equal(st.st_mode & 07777, 04755);
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_ino, st6.st_ino);
	uint8_t cap[32];
	assert_int_equal(getxattr(ping, "security.capability", cap, sizeof(cap)), 20);
	assert_memory_equal(cap, CAP_V2, 20);
	EQ_AUTOFREE char *null = P(f, "dst/dev/null");
	assert_int_equal(lstat(null, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, makedev(1, 3));

	/* Extracting over the same tree again is fine and changes nothing. */
	assert_int_equal(extract_mem(b1.data, b1.len, dst, NULL, NULL, &e), EQ_OK);
	uint8_t s3[32];
	snapshot(dst, s3);
	assert_memory_equal(s3, s1, 32);
	eq_buf_done(&b1);
	eq_buf_done(&b2);
}

static void test_gnu_tar(void **state)
{
	struct fx *f = *state;
	make_rich_tree(f, "src");
	EQ_AUTOFREE char *src = P(f, "src");
	EQ_AUTOFREE char *file = P(f, "p.tar");
	EQ_AUTOFREE char *gx = P(f, "gx");
	assert_int_equal(mkdir(gx, 0755), 0);
	struct eq_buf b1;
	uint8_t s1[32], s2[32];
	struct eq_error e;
	payload_ok(src, &b1, s1);
	assert_int_equal(eq_file_replace_atomic(file, b1.data, b1.len, 0644, &e), EQ_OK);
	const char *list[] = {"tar", "-tvf", file, NULL};
	assert_int_equal(run(list), 0);
	const char *x[] = {"tar", "--xattrs", "--xattrs-include=*", "-xpf", file, "-C", gx, NULL};
	assert_int_equal(run(x), 0);
	snapshot(gx, s2);
	assert_memory_equal(s1, s2, 32);
	EQ_AUTOFREE char *ping = P(f, "gx/usr/bin/ping");
	uint8_t cap[32];
	assert_int_equal(getxattr(ping, "security.capability", cap, sizeof(cap)), 20);
	eq_buf_done(&b1);

	/* The other direction: archives GNU tar writes itself (pax with
	 * mtimes and its own header names; GNU long names) read and extract
	 * to the same content. */
	EQ_AUTOFREE char *pax = P(f, "gnu-pax.tar");
	EQ_AUTOFREE char *gnu = P(f, "gnu-gnu.tar");
	EQ_AUTOFREE char *px = P(f, "px");
	assert_int_equal(mkdir(px, 0755), 0);
	const char *cp[] = {"tar", "--format=posix", "--xattrs", "--xattrs-include=*", "-cpf", pax, "-C", src, ".",
			    NULL};
	assert_int_equal(run(cp), 0);
	const char *cg[] = {"tar", "--format=gnu", "-cpf", gnu, "-C", src, ".", NULL};
	assert_int_equal(run(cg), 0);
	int fd = open(pax, O_RDONLY);
	assert_true(fd >= 0);
	eq_err rc = eq_payload_extract(eq_fd_read, &fd, px, NULL, EQ_EXTRACT_OWNERS, NULL, &e);
	close(fd);
	if (rc)
		fail_msg("extract GNU pax: %s", eq_error_msg(&e));
	snapshot(px, s2);
	assert_memory_equal(s1, s2, 32);
	fd = open(gnu, O_RDONLY);
	assert_true(fd >= 0);
	struct eq_payload_reader *r = NULL;
	assert_int_equal(eq_payload_reader_new(eq_fd_read, &fd, NULL, &r, &e), EQ_OK);
	const struct eq_payload_entry *ent;
	size_t count = 0, long_names = 0;
	while ((rc = eq_payload_reader_next(r, &ent, &e)) == EQ_OK && ent) {
		count++;
		long_names += strlen(ent->path) > 255 || (ent->link && strlen(ent->link) > 255);
	}
	assert_int_equal(rc, EQ_OK);
	assert_int_equal(count, 13);
	assert_int_equal(long_names, 3);
	eq_payload_reader_free(r);
	close(fd);
}

static void test_builder_add(void **state)
{
	struct fx *f = *state;
	struct eq_payload_builder *b = NULL;
	struct eq_error e;
	assert_int_equal(eq_payload_builder_new(NULL, &b, &e), EQ_OK);
	struct eq_payload_entry d = {.path = "dir", .type = EQ_ENTRY_DIR, .mode = 0755};
	const char *bad[] = {"/abs", "../x", "a/../b", "a//b", "a/./b", "", "a/", "."};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		d.path = bad[i];
		assert_int_equal(eq_payload_builder_add(b, &d, -1, 0, &e), EQ_ERR_INVAL);
	}
	d.path = "./dir";
	assert_int_equal(eq_payload_builder_add(b, &d, -1, 0, &e), EQ_OK);
	d.path = "dir";
	assert_int_equal(eq_payload_builder_add(b, &d, -1, 0, &e), EQ_ERR_INVAL);
	assert_non_null(strstr(e.msg, "added twice"));
	d.path = "modebits";
	d.mode = 010755;
	assert_int_equal(eq_payload_builder_add(b, &d, -1, 0, &e), EQ_ERR_INVAL);

	/* File data from a caller fd at an offset; big ids go to pax. */
	EQ_AUTOFREE char *dp = P(f, "data");
	int fd = open(dp, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "xxxxhello", 9), 9);
	struct eq_payload_entry fe = {
		.path = "dir/z", .type = EQ_ENTRY_FILE, .mode = 0600, .uid = 3000000, .gid = 4000000000u, .size = 5};
	assert_int_equal(eq_payload_builder_add(b, &fe, fd, 4, &e), EQ_OK);
	/* An explicit hard link sorting before its target becomes the file. */
	struct eq_payload_entry hl = {.path = "dir/a", .type = EQ_ENTRY_HARDLINK, .link = "dir/z"};
	assert_int_equal(eq_payload_builder_add(b, &hl, -1, 0, &e), EQ_OK);
	assert_int_equal(eq_payload_builder_count(b), 3);
	struct eq_buf out;
	eq_buf_init(&out, 1 << 20);
	uint8_t sha[32];
	uint64_t size;
	assert_int_equal(eq_payload_builder_write(b, mem_sink, &out, sha, &size, &e), EQ_OK);
	struct mem_src m = {out.data, out.len, 0, 0};
	struct eq_payload_reader *r = NULL;
	assert_int_equal(eq_payload_reader_new(mem_read, &m, NULL, &r, &e), EQ_OK);
	const struct eq_payload_entry *ent = find_ent(r, "dir/a");
	assert_non_null(ent);
	assert_int_equal(ent->type, EQ_ENTRY_FILE);
	assert_int_equal(ent->uid, 3000000);
	assert_int_equal(ent->gid, 4000000000u);
	char buf[8];
	size_t n;
	assert_int_equal(eq_payload_reader_read(r, buf, sizeof(buf), &n, &e), EQ_OK);
	assert_int_equal(n, 5);
	assert_memory_equal(buf, "hello", 5);
	ent = find_ent(r, "dir/z");
	assert_non_null(ent);
	assert_int_equal(ent->type, EQ_ENTRY_HARDLINK);
	assert_string_equal(ent->link, "dir/a");
	eq_payload_reader_free(r);
	eq_buf_done(&out);

	/* A file that shrank since it was added. */
	assert_int_equal(ftruncate(fd, 6), 0);
	eq_buf_init(&out, 1 << 20);
	assert_int_equal(eq_payload_builder_write(b, mem_sink, &out, sha, &size, &e), EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "shrank"));
	eq_buf_done(&out);
	close(fd);

	/* A hard link to a path that is not in the payload. */
	struct eq_payload_entry hl2 = {.path = "h", .type = EQ_ENTRY_HARDLINK, .link = "nothere"};
	assert_int_equal(eq_payload_builder_add(b, &hl2, -1, 0, &e), EQ_OK);
	eq_buf_init(&out, 1 << 20);
	assert_int_equal(eq_payload_builder_write(b, mem_sink, &out, sha, &size, &e), EQ_ERR_INVAL);
	assert_non_null(strstr(e.msg, "'nothere', which is not in the payload"));
	eq_buf_done(&out);
	eq_payload_builder_free(b);

	/* Limits in the builder too. */
	struct eq_payload_limits lim = {.max_entries = 1, .max_xattr_size = 4};
	assert_int_equal(eq_payload_builder_new(&lim, &b, &e), EQ_OK);
	struct eq_xattr xa = {.name = "user.big", .value = (uint8_t *)"12345", .len = 5};
	struct eq_payload_entry xe = {.path = "x", .type = EQ_ENTRY_DIR, .mode = 0755, .xattrs = &xa, .n_xattrs = 1};
	assert_int_equal(eq_payload_builder_add(b, &xe, -1, 0, &e), EQ_ERR_LIMIT);
	assert_non_null(strstr(e.msg, "exceeds the limit"));
	xe.n_xattrs = 0;
	assert_int_equal(eq_payload_builder_add(b, &xe, -1, 0, &e), EQ_OK);
	xe.path = "y";
	assert_int_equal(eq_payload_builder_add(b, &xe, -1, 0, &e), EQ_ERR_LIMIT);
	eq_payload_builder_free(b);
	eq_payload_builder_free(NULL);
}

static void test_add_paths(void **state)
{
	struct fx *f = *state;
	make_rich_tree(f, "src");
	EQ_AUTOFREE char *src = P(f, "src");
	char a[130], bb[200];
	memset(a, 'a', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memset(bb, 'b', sizeof(bb) - 1);
	bb[sizeof(bb) - 1] = '\0';
	char l1[140], l2[340], l3[350];
	snprintf(l1, sizeof(l1), "./%s", a);
	snprintf(l2, sizeof(l2), "%s/%s", a, bb);
	snprintf(l3, sizeof(l3), "%s/%s/file", a, bb);
	const char *paths[] = {"usr/bin/sh",
			       "usr/bin/ping6",
			       "usr",
			       "usr/bin",
			       "usr/bin/ping",
			       "dev",
			       "dev/null",
			       "dev/fifo",
			       "tmp",
			       l1,
			       l2,
			       l3,
			       "longlink"};
	struct eq_payload_builder *b = NULL;
	struct eq_error e;
	struct eq_buf list, tree;
	uint8_t s1[32], s2[32];
	uint64_t size;
	assert_int_equal(eq_payload_builder_new(NULL, &b, &e), EQ_OK);
	assert_int_equal(eq_payload_builder_add_paths(b, src, paths, sizeof(paths) / sizeof(paths[0]), &e), EQ_OK);
	eq_buf_init(&list, 1 << 20);
	assert_int_equal(eq_payload_builder_write(b, mem_sink, &list, s1, &size, &e), EQ_OK);
	eq_payload_builder_free(b);
	payload_ok(src, &tree, s2);
	assert_memory_equal(s1, s2, 32);

	/* Without ping6 in the list, ping is a plain file: links outside the
	 * package do not show. */
	assert_int_equal(eq_payload_builder_new(NULL, &b, &e), EQ_OK);
	const char *one[] = {"usr/bin/ping"};
	assert_int_equal(eq_payload_builder_add_paths(b, src, one, 1, &e), EQ_OK);
	const char *missing[] = {"usr/bin/nope"};
	assert_int_equal(eq_payload_builder_add_paths(b, src, missing, 1, &e), EQ_ERR_NOTFOUND);
	assert_non_null(strstr(e.msg, "'usr/bin/nope'"));
	const char *evil[] = {"../etc/passwd"};
	assert_int_equal(eq_payload_builder_add_paths(b, src, evil, 1, &e), EQ_ERR_INVAL);
	eq_payload_builder_free(b);

	/* Issue 12: a symlink in the slot ("etc2 -> /<outside>") never makes a
	 * rebuilt payload hold a file from outside the slot: parents resolve
	 * inside the root (or, without openat2, not through symlinks). */
	EQ_AUTOFREE char *outside = P(f, "outside");
	mkdir_at(f, "outside", 0755);
	write_at(f, "outside/shadow", "root:secret", 0600);
	EQ_AUTOFREE char *lnk = eq_asprintf("%s/etc2", src);
	assert_int_equal(symlink(outside, lnk), 0);
	const char *through[] = {"etc2/shadow"};
	assert_int_equal(eq_payload_builder_new(NULL, &b, &e), EQ_OK);
	eq_err rc = eq_payload_builder_add_paths(b, src, through, 1, &e);
	if (rc != EQ_ERR_NOTFOUND && rc != EQ_ERR_UNSAFE)
		fail_msg("add_paths through a symlink out of the root: %d '%s'", rc, rc ? e.msg : "added");
	eq_payload_builder_free(b);
	assert_int_equal(unlink(lnk), 0);
	eq_buf_done(&list);
	eq_buf_done(&tree);
}

/* ---- bad inputs ----------------------------------------------------------- */

/* Raw tar building, independent of the library's writer. */
struct raw {
	uint8_t d[64 * 1024];
	size_t len;
};

static void raw_octal(uint8_t *f, size_t w, uint64_t v)
{
	f[w - 1] = 0;
	for (size_t i = w - 1; i > 0; i--, v >>= 3)
		f[i - 1] = (uint8_t)('0' + (v & 7));
}

static uint8_t *raw_hdr(struct raw *r, const char *name, char type, uint64_t size, const char *link)
{
	uint8_t *h = r->d + r->len;
	memset(h, 0, 512);
	memcpy(h, name, strlen(name) < 100 ? strlen(name) : 100);
	raw_octal(h + 100, 8, type == '5' ? 0755 : 0644);
	raw_octal(h + 108, 8, 0);
	raw_octal(h + 116, 8, 0);
	raw_octal(h + 124, 12, size);
	raw_octal(h + 136, 12, 0);
	h[156] = (uint8_t)type;
	if (link)
		memcpy(h + 157, link, strlen(link) < 100 ? strlen(link) : 100);
	memcpy(h + 257,
	       "ustar\0"
	       "00",
	       8);
	raw_octal(h + 329, 8, 0);
	raw_octal(h + 337, 8, 0);
	r->len += 512;
	return h;
}

static void raw_sum(uint8_t *h)
{
	unsigned s = 0;
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		s += h[i];
	raw_octal(h + 148, 7, s);
	h[155] = ' ';
}

static void raw_data(struct raw *r, const void *d, size_t n)
{
	memcpy(r->d + r->len, d, n);
	r->len += n;
	while (r->len % 512)
		r->d[r->len++] = 0;
}

static void raw_entry(struct raw *r, const char *name, char type, const char *data, const char *link)
{
	size_t n = data ? strlen(data) : 0;
	raw_sum(raw_hdr(r, name, type, n, link));
	if (n)
		raw_data(r, data, n);
}

static void raw_pax(struct raw *r, const char *records, size_t len)
{
	raw_sum(raw_hdr(r, "PaxHeader", 'x', len, NULL));
	raw_data(r, records, len);
}

static void raw_end(struct raw *r)
{
	memset(r->d + r->len, 0, 1024);
	r->len += 1024;
}

struct bad_case {
	const char *name;
	eq_err code;
	const char *msg;
	void (*gen)(struct raw *r);
};

static void gen_absolute(struct raw *r)
{
	raw_entry(r, "/tmp/eq-payload-evil", '0', "x", NULL);
	raw_end(r);
}
static void gen_dotdot(struct raw *r)
{
	raw_entry(r, "../x", '0', "x", NULL);
	raw_end(r);
}
static void gen_dotdot_mid(struct raw *r)
{
	raw_entry(r, "a/", '5', NULL, NULL);
	raw_entry(r, "a/f", '0', "ok", NULL);
	raw_entry(r, "a/../../x", '0', "x", NULL);
	raw_end(r);
}
static void gen_symlink_abs(struct raw *r)
{
	raw_entry(r, "l", '2', NULL, "/tmp");
	raw_entry(r, "l/eq-payload-evil", '0', "x", NULL);
	raw_end(r);
}
static void gen_symlink_rel(struct raw *r)
{
	raw_entry(r, "l", '2', NULL, "../../..");
	raw_entry(r, "l/x", '0', "x", NULL);
	raw_end(r);
}
static void gen_hardlink_missing(struct raw *r)
{
	raw_entry(r, "f", '0', "x", NULL);
	raw_entry(r, "h", '1', NULL, "keep");
	raw_end(r);
}
static void gen_hardlink_passwd(struct raw *r)
{
	raw_entry(r, "h", '1', NULL, "/etc/passwd");
	raw_end(r);
}
static void gen_bad_checksum(struct raw *r)
{
	raw_entry(r, "f", '0', "x", NULL);
	r->d[0] = 'g';
	raw_end(r);
}
static void gen_truncated_header(struct raw *r)
{
	raw_entry(r, "f", '0', "x", NULL);
	raw_entry(r, "g", '0', "x", NULL);
	r->len -= 512 + 200;
}
static void gen_truncated_data(struct raw *r)
{
	raw_sum(raw_hdr(r, "f", '0', 1000, NULL));
	memset(r->d + r->len, 'd', 100);
	r->len += 100;
}
static void gen_size_not_octal(struct raw *r)
{
	uint8_t *h = raw_hdr(r, "usr/bin/x", '0', 0, NULL);
	memcpy(h + 124, "0000000012x", 12);
	raw_sum(h);
	raw_end(r);
}
static void gen_size_over_limit(struct raw *r)
{
	raw_sum(raw_hdr(r, "big", '0', 2u << 20, NULL));
	raw_end(r);
}
static void gen_too_many(struct raw *r)
{
	char name[16];
	for (int i = 0; i < 17; i++) {
		snprintf(name, sizeof(name), "fifo%02d", i);
		raw_entry(r, name, '6', NULL, NULL);
	}
	raw_end(r);
}
static void gen_path_too_long(struct raw *r)
{
	char rec[1200];
	char path[1100];
	memset(path, 'p', 1099);
	path[1099] = '\0';
	int n = snprintf(rec, sizeof(rec), "1110 path=%s\n", path);
	assert_int_equal(n, 1110);
	raw_pax(r, rec, (size_t)n);
	raw_entry(r, "p", '0', NULL, NULL);
	raw_end(r);
}
static void gen_pax_bad_length(struct raw *r)
{
	raw_pax(r, "99 path=x\n", 10);
	raw_entry(r, "x", '0', NULL, NULL);
	raw_end(r);
}
/* Issue 30: pax numbers follow the one decimal rule (no producer pads them). */
static void gen_pax_size_zeros(struct raw *r)
{
	raw_pax(r, "12 size=007\n", 12);
	raw_entry(r, "x", '0', "1234567", NULL);
	raw_end(r);
}
static void gen_xattr_too_big(struct raw *r)
{
	char rec[2100];
	char val[2001];
	memset(val, 'v', 2000);
	val[2000] = '\0';
	int n = snprintf(rec, sizeof(rec), "2026 SCHILY.xattr.user.x=%s\n", val);
	assert_int_equal(n, 2026);
	raw_pax(r, rec, (size_t)n);
	raw_entry(r, "x", '0', NULL, NULL);
	raw_end(r);
}
static void gen_no_end(struct raw *r)
{
	raw_entry(r, "f", '0', "x", NULL);
}

/* Issue 12: entries in eqota's own folder of a slot, where the agent
 * writes its records (a symlink there once made it write outside). */
static void gen_reserved_symlink(struct raw *r)
{
	raw_entry(r, "usr/lib/eqota/slot/packages/zeta.files.tmp", '2', NULL, "/tmp/eq-payload-evil");
	raw_end(r);
}
static void gen_reserved_dir(struct raw *r)
{
	raw_entry(r, "usr/", '5', NULL, NULL);
	raw_entry(r, "usr/lib/eqota/slot/", '5', NULL, NULL);
	raw_end(r);
}
static void gen_reserved_parent_symlink(struct raw *r)
{
	raw_entry(r, "usr/", '5', NULL, NULL);
	raw_entry(r, "usr/lib/eqota", '2', NULL, "/tmp");
	raw_end(r);
}
/* A component longer than NAME_MAX (255) fails on every device. */
static void gen_long_component(struct raw *r)
{
	char rec[400], name[257];
	memset(name, 'n', 256);
	name[256] = '\0';
	int n = snprintf(rec, sizeof(rec), "268 path=d/%s\n", name);
	assert_int_equal(n, 268);
	raw_entry(r, "d/", '5', NULL, NULL);
	raw_pax(r, rec, (size_t)n);
	raw_entry(r, "x", '0', "x", NULL);
	raw_end(r);
}
static void gen_through_own_file(struct raw *r)
{
	raw_entry(r, "f1", '0', "x", NULL);
	raw_entry(r, "f1/b", '0', "y", NULL);
	raw_end(r);
}

static const struct bad_case BAD[] = {
	{"reserved-symlink", EQ_ERR_UNSAFE,
	 "entry 'usr/lib/eqota/slot/packages/zeta.files.tmp' at byte 0: 'usr/lib/eqota/slot' is eqota's own folder",
	 gen_reserved_symlink},
	{"reserved-dir", EQ_ERR_UNSAFE,
	 "entry 'usr/lib/eqota/slot' at byte 512: 'usr/lib/eqota/slot' is eqota's own folder", gen_reserved_dir},
	{"reserved-parent-symlink", EQ_ERR_UNSAFE,
	 "entry 'usr/lib/eqota' at byte 512: a non-directory on the way to eqota's reserved folder",
	 gen_reserved_parent_symlink},
	{"long-component", EQ_ERR_LIMIT, "is 256 bytes long, the limit is 255", gen_long_component},
	{"through-own-file", EQ_ERR_UNSAFE, "entry 'f1/b' at byte 1024: path goes through 'f1', a non-directory",
	 gen_through_own_file},
	{"absolute-path", EQ_ERR_UNSAFE, "absolute path", gen_absolute},
	{"dotdot", EQ_ERR_UNSAFE, "'..' path component", gen_dotdot},
	{"dotdot-middle", EQ_ERR_UNSAFE, "entry 'a/../../x' at byte 1536: '..' path component", gen_dotdot_mid},
	{"symlink-escape-abs", EQ_ERR_UNSAFE, "goes through symlink 'l' of this payload", gen_symlink_abs},
	{"symlink-escape-rel", EQ_ERR_UNSAFE, "goes through symlink 'l' of this payload", gen_symlink_rel},
	{"hardlink-outside", EQ_ERR_UNSAFE, "hard link to 'keep', which is not an earlier file", gen_hardlink_missing},
	{"hardlink-passwd", EQ_ERR_UNSAFE, "hard link target '/etc/passwd': absolute path", gen_hardlink_passwd},
	{"bad-checksum", EQ_ERR_PARSE, "entry 'g' at byte 0: header checksum", gen_bad_checksum},
	{"truncated-header", EQ_ERR_PARSE, "at byte 1024: truncated header", gen_truncated_header},
	{"truncated-data", EQ_ERR_PARSE, "entry 'f' at byte 0: truncated data", gen_truncated_data},
	{"size-not-octal", EQ_ERR_PARSE, "entry 'usr/bin/x' at byte 0: size field is not octal", gen_size_not_octal},
	{"size-over-limit", EQ_ERR_LIMIT, "size 2097152 exceeds the limit of 1048576", gen_size_over_limit},
	{"too-many-entries", EQ_ERR_LIMIT, "entry 'fifo16' at byte 8192: more than 16 entries", gen_too_many},
	{"path-too-long", EQ_ERR_LIMIT, "pax path is longer than 1024 bytes", gen_path_too_long},
	{"pax-bad-length", EQ_ERR_PARSE, "pax record at offset 0 has a bad length", gen_pax_bad_length},
	{"pax-size-zeros", EQ_ERR_PARSE, "pax size is not a decimal number", gen_pax_size_zeros},
	{"xattr-too-big", EQ_ERR_LIMIT, "xattr 'user.x' of 2000 bytes exceeds the limit of 1024", gen_xattr_too_big},
	{"no-end-marker", EQ_ERR_PARSE, "no end-of-archive marker", gen_no_end},
};

/* The limits every corpus file is checked under (also in the corpus README). */
static const struct eq_payload_limits CORPUS_LIMITS = {
	.max_entries = 16,
	.max_path = 1024,
	.max_file_size = 1u << 20,
	.max_total = 8u << 20,
	.max_xattr_size = 1024,
	.max_xattrs = 8,
};

static const char *const ERR_NAMES[] = {
	"EQ_OK",         "EQ_ERR_NOMEM", "EQ_ERR_IO",    "EQ_ERR_PARSE",    "EQ_ERR_VERIFY",      "EQ_ERR_NETWORK",
	"EQ_ERR_LIMIT",  "EQ_ERR_STATE", "EQ_ERR_INVAL", "EQ_ERR_NOTFOUND", "EQ_ERR_UNSUPPORTED", "EQ_ERR_EXPIRED",
	"EQ_ERR_UNSAFE",
};

/* A root with some content, which a failed extraction must leave alone. */
static void make_victim_root(const struct fx *f, const char *top)
{
	char rel[64];
	mkdir_at(f, top, 0755);
	snprintf(rel, sizeof(rel), "%s/keep", top);
	write_at(f, rel, "keep me", 0600);
	snprintf(rel, sizeof(rel), "%s/a", top);
	mkdir_at(f, rel, 0700);
}

static void check_bad(const struct fx *f, const char *label, const uint8_t *d, size_t len, eq_err code, const char *msg)
{
	EQ_AUTOFREE char *root = P(f, "root");
	uint8_t before[32], after[32], etc_before[32], etc_after[32];
	struct eq_error e;
	snapshot(root, before);
	assert_int_equal(eq_sha256_file("/etc/passwd", etc_before, NULL, &e), EQ_OK);
	eq_error_clear(&e);
	eq_err r = extract_mem(d, len, root, &CORPUS_LIMITS, NULL, &e);
	if (r != code || !strstr(e.msg, msg))
		fail_msg("%s: got %s '%s', want %s '%s'", label, ERR_NAMES[r], e.msg, ERR_NAMES[code], msg);
	snapshot(root, after);
	if (memcmp(before, after, 32))
		fail_msg("%s: the root changed", label);
	assert_int_equal(eq_sha256_file("/etc/passwd", etc_after, NULL, &e), EQ_OK);
	assert_memory_equal(etc_before, etc_after, 32);
	struct stat st;
	assert_int_equal(lstat("/tmp/eq-payload-evil", &st), -1);
}

static void test_bad_generated(void **state)
{
	struct fx *f = *state;
	make_victim_root(f, "root");
	static struct raw r;
	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		r.len = 0;
		BAD[i].gen(&r);
		check_bad(f, BAD[i].name, r.d, r.len, BAD[i].code, BAD[i].msg);
	}
}

static void test_bad_corpus(void **state)
{
	struct fx *f = *state;
	const char *data = getenv("EQ_TEST_DATA");
	if (!data)
		EQ_SKIP("EQ_TEST_DATA is not set (ctest sets it to tests/data)");
	make_victim_root(f, "root");
	EQ_AUTOFREE char *dir = eq_asprintf("%s/bad/payload", data);
	DIR *d = opendir(dir);
	assert_non_null(d);
	size_t count = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		if (nl < 5 || strcmp(de->d_name + nl - 4, ".tar"))
			continue;
		EQ_AUTOFREE char *tar = eq_asprintf("%s/%s", dir, de->d_name);
		EQ_AUTOFREE char *exp = eq_asprintf("%s/%.*s.expect", dir, (int)(nl - 4), de->d_name);
		uint8_t *tb = NULL, *eb = NULL;
		size_t tl, el;
		struct eq_error e;
		assert_int_equal(eq_file_read_all(tar, 1 << 20, &tb, &tl, &e), EQ_OK);
		assert_int_equal(eq_file_read_all(exp, 4096, &eb, &el, &e), EQ_OK);
		char *nl1 = strchr((char *)eb, '\n');
		assert_non_null(nl1);
		*nl1 = '\0';
		char *msg = nl1 + 1;
		msg[strcspn(msg, "\n")] = '\0';
		size_t code = 0;
		while (code < sizeof(ERR_NAMES) / sizeof(ERR_NAMES[0]) && strcmp(ERR_NAMES[code], (char *)eb))
			code++;
		if (code == sizeof(ERR_NAMES) / sizeof(ERR_NAMES[0]))
			fail_msg("%s: unknown code '%s'", exp, (char *)eb);
		check_bad(f, de->d_name, tb, tl, (eq_err)code, msg);
		eq_free(tb);
		eq_free(eb);
		count++;
	}
	closedir(d);
	assert_true(count >= sizeof(BAD) / sizeof(BAD[0]));
}

/* ---- extraction specifics -------------------------------------------------- */

static void existing_symlink(struct fx *f)
{
	/* A symlink already in the root ("etc -> /") is followed inside the
	 * root, as a chroot would: etc/passwd lands in root/passwd. */
	make_victim_root(f, "root");
	EQ_AUTOFREE char *etc = P(f, "root/etc");
	assert_int_equal(symlink("/", etc), 0);
	static struct raw r;
	r.len = 0;
	raw_entry(&r, "etc/passwd", '0', "root::0:0::/:/bin/sh\n", NULL);
	raw_end(&r);
	uint8_t before[32], after[32];
	struct eq_error e;
	EQ_AUTOFREE char *root = P(f, "root");
	assert_int_equal(eq_sha256_file("/etc/passwd", before, NULL, &e), EQ_OK);
	eq_error_clear(&e);
	eq_err rc = extract_mem(r.d, r.len, root, NULL, NULL, &e);
	if (rc)
		fail_msg("extract: %s", eq_error_msg(&e));
	assert_int_equal(eq_sha256_file("/etc/passwd", after, NULL, &e), EQ_OK);
	assert_memory_equal(before, after, 32);
	EQ_AUTOFREE char *landed = P(f, "root/passwd");
	struct stat st;
	assert_int_equal(lstat(landed, &st), 0);
	assert_int_equal(st.st_size, 21);

#ifdef EQ_TEST_HOOKS
	/* Without openat2 no symlink is followed: the same payload is refused. */
	assert_int_equal(unlink(landed), 0);
	setenv("EQ_TEST_NO_OPENAT2", "1", 1);
	rc = extract_mem(r.d, r.len, root, NULL, NULL, &e);
	unsetenv("EQ_TEST_NO_OPENAT2");
	assert_int_equal(rc, EQ_ERR_UNSAFE);
	assert_non_null(strstr(e.msg, "through a symlink"));
	assert_int_equal(lstat(landed, &st), -1);
#endif
}

static void test_extract_existing_symlink(void **state)
{
	existing_symlink(*state);
#ifndef EQ_TEST_HOOKS
	EQ_SKIP("the half without openat2 needs the test hooks (configure with -DEQ_TEST_HOOKS=ON)");
#endif
}

#ifdef EQ_TEST_HOOKS
/* Without openat2 a slot's symlinked parent is refused as unsafe when a
 * payload is rebuilt from the slot, as extraction refuses it (it was
 * "Not a directory", an I/O error, before eq_open_beneath). */
static void test_add_paths_fallback_symlink(void **state)
{
	struct fx *f = *state;
	mkdir_at(f, "src", 0755);
	mkdir_at(f, "outside", 0755);
	write_at(f, "outside/shadow", "root:secret", 0600);
	EQ_AUTOFREE char *src = P(f, "src");
	EQ_AUTOFREE char *outside = P(f, "outside");
	EQ_AUTOFREE char *lnk = P(f, "src/etc2");
	assert_int_equal(symlink(outside, lnk), 0);
	const char *through[] = {"etc2/shadow"};
	struct eq_payload_builder *b = NULL;
	struct eq_error e;
	assert_int_equal(eq_payload_builder_new(NULL, &b, &e), EQ_OK);
	setenv("EQ_TEST_NO_OPENAT2", "1", 1);
	eq_err rc = eq_payload_builder_add_paths(b, src, through, 1, &e);
	unsetenv("EQ_TEST_NO_OPENAT2");
	eq_payload_builder_free(b);
	if (rc != EQ_ERR_UNSAFE)
		fail_msg("add_paths through a symlink without openat2: %d '%s'", rc, rc ? e.msg : "added");
}
#else
EQ_HOOKS_MISSING(test_add_paths_fallback_symlink)
#endif

#ifdef EQ_TEST_HOOKS
static void test_extract_fallback_roundtrip(void **state)
{
	struct fx *f = *state;
	make_rich_tree(f, "src");
	EQ_AUTOFREE char *dst = P(f, "dst");
	assert_int_equal(mkdir(dst, 0755), 0);
	struct eq_buf b;
	uint8_t s1[32], s2[32];
	EQ_AUTOFREE char *src = P(f, "src");
	payload_ok(src, &b, s1);
	struct eq_error e;
	setenv("EQ_TEST_NO_OPENAT2", "1", 1);
	eq_err rc = extract_mem(b.data, b.len, dst, NULL, NULL, &e);
	unsetenv("EQ_TEST_NO_OPENAT2");
	if (rc)
		fail_msg("extract: %s", eq_error_msg(&e));
	snapshot(dst, s2);
	assert_memory_equal(s1, s2, 32);
	eq_buf_done(&b);
}
#else
EQ_HOOKS_MISSING(test_extract_fallback_roundtrip)
#endif

static void test_extract_missing_parents(void **state)
{
	struct fx *f = *state;
	make_victim_root(f, "root");
	static struct raw r;
	r.len = 0;
	raw_entry(&r, "x/y/z", '0', "deep", NULL);
	raw_entry(&r, "x/y/z2", '1', NULL, "x/y/z");
	raw_end(&r);
	struct eq_error e;
	EQ_AUTOFREE char *root = P(f, "root");
	assert_int_equal(extract_mem(r.d, r.len, root, NULL, NULL, &e), EQ_OK);
	EQ_AUTOFREE char *z = P(f, "root/x/y/z2");
	struct stat st;
	assert_int_equal(lstat(z, &st), 0);
	assert_int_equal(st.st_nlink, 2);

	/* Created parents are removed again when a later entry fails. */
	uint8_t before[32], after[32];
	snapshot(root, before);
	r.len = 0;
	raw_entry(&r, "n/e/w", '0', "deep", NULL);
	raw_entry(&r, "n/e/w", '0', "again", NULL);
	raw_end(&r);
	assert_int_equal(extract_mem(r.d, r.len, root, NULL, NULL, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "duplicate entry"));
	snapshot(root, after);
	assert_memory_equal(before, after, 32);
}

/*
 * Issue 29, finding 2: a merged /usr's "lib -> usr/lib" (another package's
 * symlink, already in the slot) leads "lib/eqota/slot/..." into eqota's own
 * folder. The path rules see only the literal path; extract judges where
 * the entry lands, by inode, and refuses it, whatever the spelling.
 */
static void extract_through(const struct fx *f, const char *root, const char *name, char type, const char *data,
			    const char *link, eq_err want, const char *msg)
{
	(void)f;
	static struct raw r;
	r.len = 0;
	raw_entry(&r, name, type, data, link);
	raw_end(&r);
	struct eq_error e;
	eq_error_clear(&e);
	eq_err rc = extract_mem(r.d, r.len, root, NULL, NULL, &e);
	if (rc != want)
		fail_msg("'%s': got %s (%s), want %s", name, eq_err_str(rc), eq_error_msg(&e), eq_err_str(want));
	if (msg && !strstr(e.msg, msg))
		fail_msg("'%s': message '%s' lacks '%s'", name, e.msg, msg);
}

static void test_extract_reserved_through_symlink(void **state)
{
	struct fx *f = *state;
	mkdir_at(f, "root", 0755);
	mkdir_at(f, "root/usr", 0755);
	mkdir_at(f, "root/usr/lib", 0755);
	mkdir_at(f, "root/usr/lib/eqota", 0755);
	mkdir_at(f, "root/usr/lib/eqota/slot", 0755);
	mkdir_at(f, "root/usr/lib/eqota/slot/packages", 0755);
	write_at(f, "root/usr/lib/eqota/slot/packages/base.files", "eqota-files 1\n", 0644);
	write_at(f, "root/usr/lib/libc.so", "libc", 0644);
	EQ_AUTOFREE char *lib = P(f, "root/lib");
	EQ_AUTOFREE char *up = P(f, "root/up");
	EQ_AUTOFREE char *abs = P(f, "root/abs");
	assert_int_equal(symlink("usr/lib", lib), 0);
	assert_int_equal(symlink("usr/lib/eqota/../eqota", up), 0);
	assert_int_equal(symlink("/usr/lib/eqota/slot", abs), 0);
	EQ_AUTOFREE char *root = P(f, "root");
	uint8_t before[32], after[32];
	snapshot(root, before);

	const char *into = "resolves into eqota's own folder";
	extract_through(f, root, "lib/eqota/slot/packages/base.files", '0', "forged", NULL, EQ_ERR_UNSAFE, into);
	extract_through(f, root, "lib/eqota/slot/packages/new.files", '0', "forged", NULL, EQ_ERR_UNSAFE, into);
	extract_through(f, root, "lib/eqota/slot/packages", '5', NULL, NULL, EQ_ERR_UNSAFE, into);
	extract_through(f, root, "lib/eqota/slot/packages/x", '2', NULL, "/etc", EQ_ERR_UNSAFE, into);
	extract_through(f, root, "up/slot/manifest.json", '0', "{}", NULL, EQ_ERR_UNSAFE, into);
	extract_through(f, root, "abs/manifest.json", '0', "{}", NULL, EQ_ERR_UNSAFE, into);
	/* The folder itself, and a non-directory where a folder on the way is. */
	extract_through(f, root, "lib/eqota/slot", '5', NULL, NULL, EQ_ERR_UNSAFE, "eqota's own folder");
	extract_through(f, root, "lib/eqota", '2', NULL, "/tmp", EQ_ERR_UNSAFE, "on the way to eqota's own one");
	/* Missing folders below it are not made either (and nothing stays). */
	extract_through(f, root, "lib/eqota/slot/new/deep/file", '0', "x", NULL, EQ_ERR_UNSAFE, into);
	snapshot(root, after);
	assert_memory_equal(before, after, 32);

	/* Writing through the symlink anywhere else is what a merged /usr is for. */
	extract_through(f, root, "lib/libd.so", '0', "libd", NULL, EQ_OK, NULL);
	EQ_AUTOFREE char *landed = P(f, "root/usr/lib/libd.so");
	struct stat st;
	assert_int_equal(lstat(landed, &st), 0);
	extract_through(f, root, "lib/eqota/other", '0', "ok", NULL, EQ_OK, NULL);

	/* In one payload: the folders its first entries land in are known to
	 * be outside eqota's own one (a set the walk up stops at), and a later
	 * entry through the symlink is still refused, the payload undone. */
	static struct raw r;
	r.len = 0;
	raw_entry(&r, "lib/libe.so", '0', "libe", NULL);
	raw_entry(&r, "lib/eqota/other2", '0', "ok", NULL);
	raw_entry(&r, "usr/lib/eqota/slot2/x", '0', "ok", NULL);
	raw_entry(&r, "lib/eqota/slot/packages/new2.files", '0', "forged", NULL);
	raw_end(&r);
	struct eq_error e;
	eq_error_clear(&e);
	snapshot(root, before);
	assert_int_equal(extract_mem(r.d, r.len, root, NULL, NULL, &e), EQ_ERR_UNSAFE);
	assert_non_null(strstr(e.msg, into));
	snapshot(root, after);
	assert_memory_equal(before, after, 32);
}

/* ---- the path rules as the publisher runs them ------------------------------ */

/* eq_payload_check(): the device's rules over a whole payload, with the
 * setuid/setgid files and device nodes listed for the publisher. */
static void test_payload_check(void **state)
{
	(void)state;
	struct eq_payload_builder *b = NULL;
	struct eq_error e;
	uint8_t sha[32];
	uint64_t size;
	const struct eq_payload_entry ents[] = {
		{.path = "usr/bin/su", .type = EQ_ENTRY_FILE, .mode = 04755},
		{.path = "usr/bin/wall", .type = EQ_ENTRY_FILE, .mode = 02755},
		{.path = "usr/bin/plain", .type = EQ_ENTRY_FILE, .mode = 0755},
		{.path = "dev/sda", .type = EQ_ENTRY_BLK, .mode = 0660, .devmajor = 8},
		{.path = "dev/null", .type = EQ_ENTRY_CHR, .mode = 0666, .devmajor = 1, .devminor = 3},
		{.path = "dev/fifo", .type = EQ_ENTRY_FIFO, .mode = 0600},
	};
	assert_int_equal(eq_payload_builder_new(NULL, &b, &e), EQ_OK);
	for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++)
		assert_int_equal(eq_payload_builder_add(b, &ents[i], -1, 0, &e), EQ_OK);
	struct eq_buf out;
	eq_buf_init(&out, 1 << 20);
	assert_int_equal(eq_payload_builder_write(b, mem_sink, &out, sha, &size, &e), EQ_OK);
	eq_payload_builder_free(b);
	struct mem_src m = {out.data, out.len, 0, 100};
	struct eq_payload_findings fi;
	assert_int_equal(eq_payload_check(mem_read, &m, NULL, &fi, &e), EQ_OK);
	assert_int_equal(fi.entries, 6);
	assert_int_equal(fi.n_special, 4);
	/* Payload order: sorted by path. */
	assert_string_equal(fi.special[0], "dev/null (character device)");
	assert_string_equal(fi.special[1], "dev/sda (block device)");
	assert_string_equal(fi.special[2], "usr/bin/su (setuid)");
	assert_string_equal(fi.special[3], "usr/bin/wall (setgid)");
	eq_payload_findings_done(&fi);
	eq_buf_done(&out);

	/* A refused entry is named with its byte offset, as on a device. */
	static struct raw r;
	r.len = 0;
	gen_reserved_symlink(&r);
	struct mem_src m2 = {r.d, r.len, 0, 0};
	assert_int_equal(eq_payload_check(mem_read, &m2, NULL, NULL, &e), EQ_ERR_UNSAFE);
	assert_non_null(strstr(e.msg, "payload: entry 'usr/lib/eqota/slot/packages/zeta.files.tmp' at byte 0: "));
}

/* ---- corpus generation ------------------------------------------------------ */

static int generate(const char *dir)
{
	static struct raw r;
	struct eq_error e;
	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		r.len = 0;
		BAD[i].gen(&r);
		EQ_AUTOFREE char *tar = eq_asprintf("%s/%s.tar", dir, BAD[i].name);
		EQ_AUTOFREE char *exp = eq_asprintf("%s/%s.expect", dir, BAD[i].name);
		EQ_AUTOFREE char *txt = eq_asprintf("%s\n%s\n", ERR_NAMES[BAD[i].code], BAD[i].msg);
		if (eq_file_replace_atomic(tar, r.d, r.len, 0644, &e) ||
		    eq_file_replace_atomic(exp, txt, strlen(txt), 0644, &e)) {
			fprintf(stderr, "%s\n", eq_error_msg(&e));
			return 1;
		}
	}
	return 0;
}

/* The digest is kept in the publisher's cache beside the path table: its
 * bytes are pinned (computed apart with Python's hashlib and struct "<Q"). */
static void test_xattr_digest(void **state)
{
	(void)state;
	uint8_t d[EQ_SHA256_LEN], zero[EQ_SHA256_LEN] = {0};
	char hex[2 * EQ_SHA256_LEN + 1];
	memset(d, 0xff, sizeof(d));
	eq_payload_xattr_digest(NULL, 0, d);
	assert_memory_equal(d, zero, sizeof(d));
	uint8_t xy[] = {'x', 'y'};
	struct eq_xattr x[] = {{.name = "user.a", .value = xy, .len = 2},
			       {.name = "security.capability", .value = xy, .len = 0}};
	eq_payload_xattr_digest(x, 2, d);
	eq_hex_encode(d, sizeof(d), hex);
	assert_string_equal(hex, "23cbe7eadf902cd46ed26d70d373d2ed6c976a197a51f6828afbbc46da316be9");
	/* The value's length keeps a value from running into the next name. */
	uint8_t a[] = {'a'}, ab[] = {'a', 'b'};
	struct eq_xattr p1[] = {{.name = "user.a", .value = ab, .len = 2}, {.name = "user.b", .value = a, .len = 1}};
	struct eq_xattr p2[] = {{.name = "user.a", .value = a, .len = 1}, {.name = "user.b", .value = ab, .len = 2}};
	uint8_t d1[EQ_SHA256_LEN], d2[EQ_SHA256_LEN];
	eq_payload_xattr_digest(p1, 2, d1);
	eq_payload_xattr_digest(p2, 2, d2);
	assert_memory_not_equal(d1, d2, sizeof(d1));
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--generate"))
		return generate(argv[2]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_determinism, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_metadata_roundtrip, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_gnu_tar, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_builder_add, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_add_paths, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bad_generated, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bad_corpus, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_extract_existing_symlink, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_extract_fallback_roundtrip, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_add_paths_fallback_symlink, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_extract_missing_parents, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_extract_reserved_through_symlink, fx_setup, fx_teardown),
		cmocka_unit_test(test_payload_check),
		cmocka_unit_test(test_xattr_digest),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
