/*
 * Allocation-failure loops for the code the device runs on every update:
 * the payload reader and safe extract, the payload builder and (with the
 * host tools) the package reader that the publisher runs for every
 * package, delta creation and application
 * (both methods), the slot records and the state file. Each operation runs
 * with its 1st, 2nd, ... allocation failing until one run needs no more
 * than were made: every run before must fail with EQ_ERR_NOMEM (and a
 * message: "out of memory", "cannot grow buffer ..."), leak nothing (the ASan build checks) and leave nothing behind
 * that stops the next run. Needs the allocation-failure hook
 * (EQ_TEST_HOOKS). Allocations inside zstd and libc are not counted: they
 * do not go through eq_malloc().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "eq_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/agent.h>
#include <eq/delta.h>

#include "../../agent/records.h"
#include "../../agent/state.h"
#ifdef EQ_HAVE_GEN
#include <eq/gen_package.h>
#include <eq/gen_publish.h>
#endif

#ifdef EQ_TEST_HOOKS

static char dir[64];

static const char *at(const char *name)
{
	static char p[4][128];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", dir, name);
	return p[k];
}

static void put(const char *path, const void *d, size_t n)
{
	struct eq_error e;
	if (eq_file_replace_atomic(path, d, n, 0644, &e) != EQ_OK)
		fail_msg("%s", e.msg);
}

static void rm(const char *path)
{
	struct eq_error e;
	eq_err r = eq_rm_rf(path, &e);
	if (r && r != EQ_ERR_NOTFOUND)
		fail_msg("%s", e.msg);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/eq-test-allocfail-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	struct eq_error e;
	(void)eq_alloc_fail_at(0);
	return eq_rm_rf(dir, &e) == EQ_OK ? 0 : -1;
}

/* One operation under test: EQ_OK, or an error in @err. @ctx is the test's. */
typedef eq_err (*op_fn)(void *ctx, struct eq_error *err);

/* Runs @op with allocation 1, 2, ... failing until a run succeeds; every
 * failing run must be EQ_ERR_NOMEM. Returns how many allocations the
 * successful run made. */
static unsigned long fail_each(const char *what, op_fn op, void *ctx)
{
	struct eq_error e;
	unsigned long n;
	for (n = 1; n < 100000; n++) {
		eq_error_clear(&e);
		(void)eq_alloc_fail_at(n);
		eq_err r = op(ctx, &e);
		unsigned long made = eq_alloc_fail_at(0);
		if (r == EQ_OK) {
			if (made >= n)
				fail_msg("%s: allocation %lu failed, yet it succeeded", what, n);
			return n - 1;
		}
		if (r != EQ_ERR_NOMEM || !e.msg[0])
			fail_msg("%s: allocation %lu of the run failed, got %s '%s', want EQ_ERR_NOMEM with a message",
				 what, n, eq_err_str(r), e.msg);
	}
	fail_msg("%s: still failing after %lu allocations", what, n);
	return 0;
}

/* ---- payload -------------------------------------------------------------- */

struct mem {
	const uint8_t *d;
	size_t len, pos;
};

static eq_err mem_read(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	(void)err;
	struct mem *m = ctx;
	size_t n = m->len - m->pos < len ? m->len - m->pos : len;
	memcpy(buf, m->d + m->pos, n);
	m->pos += n;
	*ret_n = n;
	return EQ_OK;
}

static eq_err buf_sink(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	return eq_buf_append(ctx, data, len, err);
}

/* A tree with every kind of entry a payload carries without privileges. */
static void make_tree(const char *root)
{
	char p[256];
	assert_int_equal(mkdir(root, 0755), 0);
	snprintf(p, sizeof(p), "%s/usr", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/usr/bin", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/usr/bin/tool", root);
	put(p, "#!/bin/sh\necho tool\n", 20);
	char q[256];
	snprintf(q, sizeof(q), "%s/usr/bin/tool-hard", root);
	assert_int_equal(link(p, q), 0);
	snprintf(p, sizeof(p), "%s/usr/bin/tool-link", root);
	assert_int_equal(symlink("tool", p), 0);
	snprintf(p, sizeof(p), "%s/etc", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/etc/motd", root);
	static char big[70000];
	memset(big, 'm', sizeof(big));
	put(p, big, sizeof(big));
}

static void make_payload(const char *root, struct eq_buf *out)
{
	struct eq_payload_builder *b = NULL;
	struct eq_error e;
	uint8_t sha[EQ_SHA256_LEN];
	uint64_t n;
	eq_buf_init(out, 1u << 24);
	if (eq_payload_builder_new(NULL, &b, &e) || eq_payload_builder_add_tree(b, root, &e) ||
	    eq_payload_builder_write(b, buf_sink, out, sha, &n, &e))
		fail_msg("payload: %s", e.msg);
	eq_payload_builder_free(b);
}

static eq_err op_read(void *ctx, struct eq_error *err)
{
	const struct eq_buf *p = ctx;
	struct mem m = {p->data, p->len, 0};
	struct eq_payload_reader *r = NULL;
	eq_err rc = eq_payload_reader_new(mem_read, &m, NULL, &r, err);
	uint8_t buf[4096];
	while (!rc) {
		const struct eq_payload_entry *ent;
		rc = eq_payload_reader_next(r, &ent, err);
		if (rc || !ent)
			break;
		size_t n = 1;
		while (!rc && n)
			rc = eq_payload_reader_read(r, buf, sizeof(buf), &n, err);
	}
	eq_payload_reader_free(r);
	return rc;
}

static eq_err op_extract(void *ctx, struct eq_error *err)
{
	const struct eq_buf *p = ctx;
	struct mem m = {p->data, p->len, 0};
	rm(at("x"));
	assert_int_equal(mkdir(at("x"), 0755), 0);
	return eq_payload_extract(mem_read, &m, at("x"), NULL, 0, NULL, err);
}

static void test_payload(void **state)
{
	(void)state;
	rm(at("tree"));
	make_tree(at("tree"));
	struct eq_buf p;
	make_payload(at("tree"), &p);
	assert_true(fail_each("payload reader", op_read, &p) > 3);
	assert_true(fail_each("payload extract", op_extract, &p) > 3);
	eq_buf_done(&p);
}

/* ---- payload builder (the publisher side) --------------------------------- */

struct build_ctx {
	int how;           /* 0: add_tree, 1: add_paths, 2: add (explicit entries) */
	int data_fd;       /* how 2: the file data */
	struct eq_buf out; /* the last run's payload */
};

/* Entries a directory tree cannot give without privileges: owners, a
 * device, a FIFO, xattrs, and a path and a link target too long for ustar
 * (pax headers). File data comes from @data_fd: 10 bytes at 0, 3 at 10. */
static eq_err add_entries(struct eq_payload_builder *b, int data_fd, struct eq_error *err)
{
	static char long_path[300], long_link[300];
	memset(long_path, 'p', sizeof(long_path) - 1);
	for (size_t i = 50; i < sizeof(long_path) - 1; i += 50)
		long_path[i] = '/';
	memset(long_link, 'l', sizeof(long_link) - 1);
	uint8_t cap[20] = {1, 0, 0, 2, 0x20};
	struct eq_xattr xa[2] = {{"security.capability", cap, sizeof(cap)}, {"user.comment", (uint8_t *)"x", 1}};
	const struct eq_payload_entry es[] = {
		{.path = "dev", .type = EQ_ENTRY_DIR, .mode = 0755},
		{.path = "dev/null", .type = EQ_ENTRY_CHR, .mode = 0666, .devmajor = 1, .devminor = 3},
		{.path = "dev/sda", .type = EQ_ENTRY_BLK, .mode = 0660, .gid = 6, .devmajor = 8},
		{.path = "dev/fifo", .type = EQ_ENTRY_FIFO, .mode = 0600},
		{.path = "bin", .type = EQ_ENTRY_DIR, .mode = 0755},
		{.path = "bin/ping", .type = EQ_ENTRY_FILE, .mode = 04755, .size = 10, .xattrs = xa, .n_xattrs = 2},
		{.path = "bin/ping6", .type = EQ_ENTRY_HARDLINK, .mode = 04755, .link = "bin/ping"},
		{.path = "bin/far", .type = EQ_ENTRY_SYMLINK, .mode = 0777, .link = long_link},
		{.path = "home", .type = EQ_ENTRY_DIR, .mode = 0700, .uid = 4000000000u, .gid = 4000000000u},
		{.path = long_path, .type = EQ_ENTRY_FILE, .mode = 0644, .uid = 1000, .size = 3},
	};
	eq_err r = EQ_OK;
	for (size_t i = 0; i < sizeof(es) / sizeof(es[0]) && !r; i++)
		r = eq_payload_builder_add(b, &es[i], data_fd, es[i].path == long_path ? 10 : 0, err);
	return r;
}

static eq_err op_build(void *ctx, struct eq_error *err)
{
	static const char *const paths[] = {
		"etc", "etc/motd", "usr", "usr/bin", "usr/bin/tool", "usr/bin/tool-hard", "usr/bin/tool-link"};
	struct build_ctx *c = ctx;
	eq_buf_reset(&c->out);
	struct eq_payload_builder *b = NULL;
	uint8_t sha[EQ_SHA256_LEN];
	uint64_t size = 0;
	eq_err r = eq_payload_builder_new(NULL, &b, err);
	if (!r && c->how == 0)
		r = eq_payload_builder_add_tree(b, at("tree"), err);
	else if (!r && c->how == 1)
		r = eq_payload_builder_add_paths(b, at("tree"), paths, sizeof(paths) / sizeof(paths[0]), err);
	else if (!r)
		r = add_entries(b, c->data_fd, err);
	if (!r)
		r = eq_payload_builder_write(b, buf_sink, &c->out, sha, &size, err);
	eq_payload_builder_free(b);
	if (!r && size != c->out.len)
		fail_msg("payload builder: size %llu, wrote %zu bytes", (unsigned long long)size, c->out.len);
	return r;
}

static void test_payload_builder(void **state)
{
	(void)state;
	rm(at("tree"));
	make_tree(at("tree"));
	put(at("data"), "0123456789abc", 13);
	struct build_ctx c = {.data_fd = open(at("data"), O_RDONLY | O_CLOEXEC)};
	assert_true(c.data_fd >= 0);
	eq_buf_init(&c.out, 1u << 24);
	struct eq_buf ref, ref_entries;
	make_payload(at("tree"), &ref);
	/* the entries' payload, built once without failures */
	c.how = 2;
	struct eq_error e;
	if (op_build(&c, &e))
		fail_msg("payload builder: %s", e.msg);
	eq_buf_init(&ref_entries, 1u << 24);
	assert_int_equal(eq_buf_append(&ref_entries, c.out.data, c.out.len, &e), EQ_OK);
	static const char *const what[] = {"payload builder (add_tree)", "payload builder (add_paths)",
					   "payload builder (entries, pax)"};
	for (c.how = 0; c.how < 3; c.how++) {
		assert_true(fail_each(what[c.how], op_build, &c) > 3);
		/* the run that got all its memory wrote the same bytes */
		const struct eq_buf *want = c.how == 2 ? &ref_entries : &ref;
		if (c.out.len != want->len || memcmp(c.out.data, want->data, want->len))
			fail_msg("%s: %zu bytes after the failures, %zu without", what[c.how], c.out.len, want->len);
	}
	close(c.data_fd);
	eq_buf_done(&c.out);
	eq_buf_done(&ref);
	eq_buf_done(&ref_entries);
}

/* ---- package reader (eqota-gen, host tools only) -------------------------- */

#ifdef EQ_HAVE_GEN
/* Appends an ar member (as dpkg-deb writes them) to @f. */
static void ar_member(FILE *f, const char *name, const void *d, size_t n)
{
	char h[61];
	snprintf(h, sizeof(h), "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "0", "0", "0", "100644", n);
	assert_int_equal(fwrite(h, 1, 60, f), 60);
	assert_int_equal(fwrite(d, 1, n, f), n);
	if (n % 2)
		assert_int_equal(fputc('\n', f), '\n');
}

/* hello_1.0_all.deb: a control file and the tree of make_tree(), both tars
 * written by the payload builder (uncompressed, as dpkg-deb -Znone). */
static void make_deb(const char *path_in)
{
	char path[128]; /* at()'s buffers are reused below */
	snprintf(path, sizeof(path), "%s", path_in);
	static const char control[] = "Package: hello\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.org>\n"
				      "Pre-Depends: libc6 (>= 2.36)\nDepends: a | b,\n c\nDescription: t\n";
	put(at("control"), control, sizeof(control) - 1);
	int fd = open(at("control"), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct eq_payload_builder *b = NULL;
	struct eq_error e;
	struct eq_buf ctl, data;
	eq_buf_init(&ctl, 1u << 20);
	uint8_t sha[EQ_SHA256_LEN];
	uint64_t n;
	const struct eq_payload_entry ce = {
		.path = "control", .type = EQ_ENTRY_FILE, .mode = 0644, .size = sizeof(control) - 1};
	if (eq_payload_builder_new(NULL, &b, &e) || eq_payload_builder_add(b, &ce, fd, 0, &e) ||
	    eq_payload_builder_write(b, buf_sink, &ctl, sha, &n, &e))
		fail_msg("control.tar: %s", e.msg);
	eq_payload_builder_free(b);
	close(fd);
	rm(at("tree"));
	make_tree(at("tree"));
	make_payload(at("tree"), &data);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite("!<arch>\n", 1, 8, f), 8);
	ar_member(f, "debian-binary", "2.0\n", 4);
	ar_member(f, "control.tar", ctl.data, ctl.len);
	ar_member(f, "data.tar", data.data, data.len);
	assert_int_equal(fclose(f), 0);
	eq_buf_done(&ctl);
	eq_buf_done(&data);
}

struct pkg_ctx {
	struct eq_buf out;
	char depends[128];
};

static eq_err op_pkg(void *ctx, struct eq_error *err)
{
	struct pkg_ctx *c = ctx;
	eq_buf_reset(&c->out);
	struct eq_pkg *p = NULL;
	eq_err r = eq_pkg_read(at("hello_1.0_all.deb"), NULL, &p, err);
	uint8_t sha[EQ_SHA256_LEN];
	uint64_t size;
	if (!r)
		r = eq_pkg_write_payload(p, buf_sink, &c->out, sha, &size, err);
	if (!r)
		snprintf(c->depends, sizeof(c->depends), "%s", eq_pkg_get_info(p)->depends);
	eq_pkg_free(p);
	return r;
}

static void test_package_reader(void **state)
{
	(void)state;
	make_deb(at("hello_1.0_all.deb"));
	struct pkg_ctx c;
	eq_buf_init(&c.out, 1u << 24);
	assert_true(fail_each("package reader (.deb)", op_pkg, &c) > 3);
	assert_string_equal(c.depends, "libc6 (>= 2.36), a | b, c");
	/* the package's payload is the tree's, byte for byte */
	struct eq_buf ref;
	make_payload(at("tree"), &ref);
	if (c.out.len != ref.len || memcmp(c.out.data, ref.data, ref.len))
		fail_msg("package reader: payload of %zu bytes, the tree's has %zu", c.out.len, ref.len);
	eq_buf_done(&ref);
	eq_buf_done(&c.out);
}

/* A whole publish of two packages into a new repository, on two threads,
 * through a new input cache and then (second phase) from it: a failure in
 * a worker thread is reported as out of memory and frees what it held. */
struct pub_ctx {
	int round;
	bool from_cache;
};

static eq_err op_publish(void *ctx, struct eq_error *err)
{
	struct pub_ctx *c = ctx;
	char repo[160], store[160], key[160], pkgs[160], cache[160], p[180];
	c->round++;
	snprintf(repo, sizeof(repo), "%s/pubrepo%d", dir, c->round);
	snprintf(store, sizeof(store), "%s/pubstore%d.db", dir, c->round);
	snprintf(key, sizeof(key), "%s/rel.key", dir);
	snprintf(pkgs, sizeof(pkgs), "%s/pkgs", dir);
	snprintf(cache, sizeof(cache), "%s/inputs.db", dir);
	if (!c->from_cache) {
		static const char *const ext[] = {"", "-wal", "-shm"};
		for (size_t i = 0; i < 3; i++) {
			snprintf(p, sizeof(p), "%s%s", cache, ext[i]);
			rm(p);
		}
	}
	const char *keys[] = {key};
	struct eq_publish_opts o = {
		.repo = repo,
		.board = "b",
		.channel = "c",
		.release = "r1",
		.packages_dir = pkgs,
		.key_paths = keys,
		.n_keys = 1,
		.store_path = store,
		.deltas_from = 3,
		.level = 3,
		.jobs = 2,
		.cache_path = cache,
	};
	struct eq_publish_report rep;
	eq_err r = eq_gen_publish(&o, &rep, err);
	if (!r) {
		if (c->from_cache && rep.cached != 2)
			fail_msg("publish: %zu packages from the cache, want 2", rep.cached);
		eq_publish_report_done(&rep);
	}
	return r;
}

static void test_publish(void **state)
{
	(void)state;
	make_deb(at("hello_1.0_all.deb"));
	struct eq_error e;
	assert_int_equal(eq_mkdir_p(at("pkgs"), 0755, &e), EQ_OK);
	assert_int_equal(rename(at("hello_1.0_all.deb"), at("pkgs/hello_1.0_all.deb")), 0);
	/* A second package, a tarball, so that two threads have work. */
	assert_int_equal(eq_mkdir_p(at("otree/usr/share/other"), 0755, &e), EQ_OK);
	put(at("otree/usr/share/other/data"), "other data\n", 11);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "tar -C '%s' -cf '%s' usr", at("otree"), at("pkgs/other_1.0.tar"));
	assert_int_equal(system(cmd), 0);
	assert_int_equal(eq_manifest_key_generate(at("rel"), NULL, &e), EQ_OK);
	struct pub_ctx c = {0};
	assert_true(fail_each("publish, cache empty", op_publish, &c) > 10);
	/* The cache stores only files older than two seconds. */
	sleep(3);
	(void)op_publish(&c, &e);
	c.from_cache = true;
	assert_true(fail_each("publish from the cache", op_publish, &c) > 10);
}
#else
static void test_package_reader(void **state)
{
	(void)state;
	EQ_SKIP("the package reader is part of eqota-gen: configure with -DEQ_HOST_TOOLS=ON");
}

static void test_publish(void **state)
{
	(void)state;
	EQ_SKIP("publishing is part of eqota-gen: configure with -DEQ_HOST_TOOLS=ON");
}
#endif

/* ---- delta ---------------------------------------------------------------- */

struct delta_ctx {
	unsigned method;
	struct eq_buf delta;
	uint8_t want[EQ_SHA256_LEN];
};

static eq_err op_create(void *ctx, struct eq_error *err)
{
	struct delta_ctx *d = ctx;
	struct eq_delta_params p;
	eq_delta_params_default(&p);
	p.level = 3;
	p.methods = 1u << d->method;
	eq_buf_reset(&d->delta);
	uint64_t size;
	return eq_delta_create(at("old"), at("new"), &p, buf_sink, &d->delta, &size, err);
}

static eq_err op_apply(void *ctx, struct eq_error *err)
{
	struct delta_ctx *d = ctx;
	struct mem m = {d->delta.data, d->delta.len, 0};
	struct eq_buf out;
	eq_buf_init(&out, 1u << 24);
	eq_err r = eq_delta_apply(at("old"), mem_read, &m, buf_sink, &out, d->want, err);
	eq_buf_done(&out);
	return r;
}

static void test_delta(void **state)
{
	(void)state;
	static uint8_t old[200000], new_[200000];
	for (size_t i = 0; i < sizeof(old); i++)
		old[i] = (uint8_t)((i * 7919u) >> 5);
	memcpy(new_, old, sizeof(new_));
	for (size_t i = 0; i < sizeof(new_); i += 997)
		new_[i] ^= 0x5a;
	put(at("old"), old, sizeof(old));
	put(at("new"), new_, sizeof(new_));
	for (unsigned method = EQ_DELTA_METHOD_ZSTD; method <= EQ_DELTA_METHOD_BSD; method++) {
		struct delta_ctx d = {.method = method};
		eq_sha256(new_, sizeof(new_), d.want);
		eq_buf_init(&d.delta, 1u << 24);
		struct eq_error e;
		eq_err r = op_create(&d, &e);
		if (r == EQ_ERR_UNSUPPORTED)
			continue; /* method 1 creation not built in */
		assert_int_equal(r, EQ_OK);
		char what[64];
		snprintf(what, sizeof(what), "delta apply, method %u", method);
		(void)fail_each(what, op_apply, &d);
		snprintf(what, sizeof(what), "delta create, method %u", method);
		(void)fail_each(what, op_create, &d);
		eq_buf_done(&d.delta);
	}
}

/* ---- slot records --------------------------------------------------------- */

static eq_err op_rec_load(void *ctx, struct eq_error *err)
{
	(void)ctx;
	struct eq_rec_list l;
	eq_rec_list_init(&l);
	eq_err r = eq_rec_load(at("pkg.files"), &l, err);
	if (!r && l.n != 7)
		fail_msg("record: %zu entries, want 7", l.n);
	eq_rec_list_done(&l);
	return r;
}

static eq_err op_rec_from_payload(void *ctx, struct eq_error *err)
{
	const struct eq_buf *p = ctx;
	struct mem m = {p->data, p->len, 0};
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_non_null(out);
	eq_err r = eq_rec_from_payload(mem_read, &m, NULL, out, NULL, err);
	fclose(out);
	free(text);
	return r;
}

static void test_records(void **state)
{
	(void)state;
	static const char rec[] =
		"eqota-files 1\n"
		"d 0755 0 0 0 - etc\n"
		"f 0644 0 0 3 ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad etc/abc\n"
		"d 0755 0 0 0 - usr\n"
		"d 0755 0 0 0 - usr/bin\n"
		"f 0755 0 0 0 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 usr/bin/a%20b\n"
		"h 0755 0 0 0 - usr/bin/c usr/bin/a%20b\n"
		"l 0777 0 0 0 - usr/bin/d a%20b\n";
	put(at("pkg.files"), rec, sizeof(rec) - 1);
	assert_true(fail_each("records load", op_rec_load, NULL) > 7);
	rm(at("tree"));
	make_tree(at("tree"));
	struct eq_buf p;
	make_payload(at("tree"), &p);
	(void)fail_each("records from payload", op_rec_from_payload, &p);
	eq_buf_done(&p);
}

/* ---- state file ----------------------------------------------------------- */

static eq_err op_state(void *ctx, struct eq_error *err)
{
	(void)ctx;
	struct eq_state s;
	eq_state_init(&s);
	eq_err r = eq_state_load(at("state"), &s, err);
	if (!r)
		r = eq_state_save(at("state.new"), &s, err);
	if (!r && (s.phase != EQ_PHASE_TRYING || s.target_slot != 1 || s.target_number != 42))
		fail_msg("state: loaded the wrong state");
	return r;
}

static void test_state(void **state)
{
	(void)state;
	static const char st[] = "phase=trying\ntarget_slot=B\nfrom_slot=A\ntarget_number=42\n"
				 "target_release=2026.12\nfailed_number=0\nfailed_reason=\nchanged_at=1764860000\n";
	put(at("state"), st, sizeof(st) - 1);
	assert_true(fail_each("state load and save", op_state, NULL) >= 1);
}

#else
EQ_HOOKS_MISSING(test_payload)
EQ_HOOKS_MISSING(test_payload_builder)
EQ_HOOKS_MISSING(test_package_reader)
EQ_HOOKS_MISSING(test_delta)
EQ_HOOKS_MISSING(test_records)
EQ_HOOKS_MISSING(test_state)
static int setup(void **state)
{
	(void)state;
	return 0;
}
static int teardown(void **state)
{
	(void)state;
	return 0;
}
#endif

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_payload),        cmocka_unit_test(test_payload_builder),
		cmocka_unit_test(test_package_reader), cmocka_unit_test(test_delta),
		cmocka_unit_test(test_records),        cmocka_unit_test(test_state),
		cmocka_unit_test(test_publish),
	};
	return eq_test_run(tests, setup, teardown, argc, argv);
}
