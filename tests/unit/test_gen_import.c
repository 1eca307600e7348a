/*
 * The repository walker and equiv import (gen_import.c): the order of the
 * walk (issue time, then board, channel, number), filters, signatures,
 * misuse, and the import's counts, conflicts and idempotence.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <eq/delta.h>
#include <eq/gen_import.h>
#include <eq/gen_store.h>

#include "eq_test.h"

#define M EQ_PAYLOAD_METHOD

struct fx {
	char dir[64];
	char repo[96];
	char key_prefix[96], other_prefix[96];
	struct eq_manifest_key *key;
	struct eq_manifest_trust *trust, *other;
};

static void hash_of(const char *seed, char out[EQ_SHA256_HEX_LEN + 1])
{
	uint8_t d[EQ_SHA256_LEN];
	eq_sha256(seed, strlen(seed), d);
	eq_hex_encode(d, EQ_SHA256_LEN, out);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct eq_error e;
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/eq-import-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->repo, sizeof(f->repo), "%s/repo", f->dir);
	snprintf(f->key_prefix, sizeof(f->key_prefix), "%s/rel", f->dir);
	snprintf(f->other_prefix, sizeof(f->other_prefix), "%s/other", f->dir);
	char kp[128], pub[128], opub[128];
	snprintf(kp, sizeof(kp), "%s.key", f->key_prefix);
	snprintf(pub, sizeof(pub), "%s.pub", f->key_prefix);
	snprintf(opub, sizeof(opub), "%s.pub", f->other_prefix);
	const char *p1[] = {pub}, *p2[] = {opub};
	if (eq_manifest_key_generate(f->key_prefix, NULL, &e) || eq_manifest_key_generate(f->other_prefix, NULL, &e) ||
	    eq_manifest_key_load(kp, &f->key, &e) || eq_manifest_trust_from_pubkeys(p1, 1, 1, &f->trust, &e) ||
	    eq_manifest_trust_from_pubkeys(p2, 1, 1, &f->other, &e)) {
		fprintf(stderr, "setup: %s\n", e.msg);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	eq_manifest_key_free(f->key);
	eq_manifest_trust_free(f->trust);
	eq_manifest_trust_free(f->other);
	if (eq_rm_rf(f->dir, &e))
		fprintf(stderr, "teardown: %s\n", e.msg);
	free(f);
	return 0;
}

/* One package: hashes derived from the seeds (unihash seed NULL: the taskhash). */
struct pk {
	const char *name, *task, *uni, *payload;
};

/* Writes boards/<b>/<c>/releases/<number>/manifest.json (+ .sig signed by
 * the fixture's key). */
static void write_release(struct fx *f, const char *board, const char *channel, uint64_t number, int64_t issued,
			  const struct pk *pkgs, size_t n)
{
	struct eq_error e;
	struct eq_manifest *m = NULL;
	char rel[32];
	snprintf(rel, sizeof(rel), "r%" PRIu64, number);
	struct eq_manifest_header h = {.board = board,
				       .channel = channel,
				       .release = rel,
				       .number = number,
				       .issued = issued,
				       .expires = issued + 86400};
	assert_int_equal(eq_manifest_new(&m, &e), EQ_OK);
	assert_int_equal(eq_manifest_set_header(m, &h, &e), EQ_OK);
	for (size_t i = 0; i < n; i++) {
		struct eq_manifest_package p = {.name = pkgs[i].name, .version = "1", .arch = "all"};
		hash_of(pkgs[i].task, p.taskhash);
		hash_of(pkgs[i].uni ? pkgs[i].uni : pkgs[i].task, p.unihash);
		hash_of(pkgs[i].payload, p.payload.sha256);
		p.payload.size = 100;
		char seed[64];
		snprintf(seed, sizeof(seed), "obj-%s", pkgs[i].payload);
		hash_of(seed, p.object.sha256);
		snprintf(p.object.path, sizeof(p.object.path), "objects/%s", p.object.sha256);
		p.object.size = 50;
		assert_int_equal(eq_manifest_add_package(m, &p, &e), EQ_OK);
	}
	uint8_t *data = NULL, *sig = NULL;
	size_t len = 0, sig_len = 0;
	assert_int_equal(eq_manifest_to_json(m, &data, &len, &e), EQ_OK);
	const struct eq_manifest_key *keys[] = {f->key};
	assert_int_equal(eq_manifest_sign(data, len, keys, 1, &sig, &sig_len, &e), EQ_OK);
	char dir[256], path[300];
	snprintf(dir, sizeof(dir), "%s/boards/%s/%s/releases/%" PRIu64, f->repo, board, channel, number);
	assert_int_equal(eq_mkdir_p(dir, 0755, &e), EQ_OK);
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	assert_int_equal(eq_signed_file_write(path, data, len, sig, sig_len, &e), EQ_OK);
	eq_free(data);
	eq_free(sig);
	eq_manifest_free(m);
}

/* Collects "board/channel/number/package" lines. */
struct seen {
	char buf[2048];
	size_t calls, stop_after;
};

static eq_err collect(void *ctx, const struct eq_repo_pkg_ref *ref, struct eq_error *err)
{
	struct seen *s = ctx;
	size_t l = strlen(s->buf);
	snprintf(s->buf + l, sizeof(s->buf) - l, "%s/%s/%" PRIu64 "/%s ", ref->board, ref->channel, ref->number,
		 ref->pkg->name);
	if (++s->calls == s->stop_after)
		return eq_error_set(err, EQ_ERR_STATE, "stop");
	return EQ_OK;
}

static void test_walk_order(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	const struct pk a[] = {{"x", "t1", NULL, "p1"}, {"y", "t2", NULL, "p2"}};
	const struct pk b[] = {{"x", "t3", NULL, "p3"}};
	/* Directory order is not age: zz/stable/1 is the oldest, aa/beta/7
	 * comes after aa/stable/1; at equal issue times board, channel, then
	 * number decide (10 after 2: numbers, not names). */
	write_release(f, "zz", "stable", 1, 50, b, 1);
	write_release(f, "zz", "stable", 2, 300, b, 1);
	write_release(f, "aa", "stable", 10, 300, b, 1);
	write_release(f, "aa", "stable", 2, 300, a, 2);
	write_release(f, "aa", "stable", 1, 200, a, 2);
	write_release(f, "aa", "beta", 7, 250, b, 1);
	write_release(f, "aa", "beta", 8, 300, b, 1);
	struct seen s = {{0}, 0, 0};
	struct eq_repo_walk_opts o = {.trust = f->trust};
	assert_int_equal(eq_repo_walk(f->repo, &o, collect, &s, &e), EQ_OK);
	assert_string_equal(s.buf, "zz/stable/1/x aa/stable/1/x aa/stable/1/y aa/beta/7/x aa/beta/8/x aa/stable/2/x "
				   "aa/stable/2/y aa/stable/10/x zz/stable/2/x ");
	/* the same unverified */
	struct seen s2 = {{0}, 0, 0};
	struct eq_repo_walk_opts ou = {.unverified = true};
	assert_int_equal(eq_repo_walk(f->repo, &ou, collect, &s2, &e), EQ_OK);
	assert_string_equal(s2.buf, s.buf);
	/* filters */
	struct seen s3 = {{0}, 0, 0};
	struct eq_repo_walk_opts of = {.trust = f->trust, .board = "aa", .channel = "stable"};
	assert_int_equal(eq_repo_walk(f->repo, &of, collect, &s3, &e), EQ_OK);
	assert_string_equal(s3.buf, "aa/stable/1/x aa/stable/1/y aa/stable/2/x aa/stable/2/y aa/stable/10/x ");
	/* a callback's error stops the walk and is returned */
	struct seen s4 = {{0}, 0, 3};
	assert_int_equal(eq_repo_walk(f->repo, &o, collect, &s4, &e), EQ_ERR_STATE);
	assert_int_equal(s4.calls, 3);
	assert_string_equal(e.msg, "stop");
}

static void test_walk_refusals(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	struct seen s = {{0}, 0, 0};
	const struct pk a[] = {{"x", "t1", NULL, "p1"}};
	struct eq_repo_walk_opts none = {0}, two = {.trust = f->trust, .unverified = true};
	assert_int_equal(eq_repo_walk(f->repo, &none, collect, &s, &e), EQ_ERR_INVAL);
	assert_int_equal(eq_repo_walk(f->repo, &two, collect, &s, &e), EQ_ERR_INVAL);
	struct eq_repo_walk_opts o = {.trust = f->trust};
	assert_int_equal(eq_repo_walk(f->repo, &o, collect, &s, &e), EQ_ERR_NOTFOUND);
	assert_non_null(strstr(e.msg, "has no boards/ folder"));
	write_release(f, "aa", "stable", 1, 100, a, 1);
	write_release(f, "aa", "stable", 2, 200, a, 1);
	/* another key: refused naming the file, and nothing was visited */
	struct eq_repo_walk_opts oo = {.trust = f->other};
	assert_int_equal(eq_repo_walk(f->repo, &oo, collect, &s, &e), EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, "/boards/aa/stable/releases/1/manifest.json"));
	assert_int_equal(s.calls, 0);
	/* a manifest in another release's folder */
	char from[256], to[256];
	snprintf(from, sizeof(from), "%s/boards/aa/stable/releases/1", f->repo);
	snprintf(to, sizeof(to), "%s/boards/aa/stable/releases/5", f->repo);
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(eq_repo_walk(f->repo, &o, collect, &s, &e), EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "releases/5/manifest.json"));
	struct eq_repo_walk_opts ou = {.unverified = true};
	assert_int_equal(eq_repo_walk(f->repo, &ou, collect, &s, &e), EQ_ERR_STATE);
	assert_non_null(
		strstr(e.msg, "releases/5/manifest.json: the manifest is board 'aa', channel 'stable', number 1"));
	assert_int_equal(s.calls, 0);
}

static void on_conflict(void *ctx, const struct eq_repo_pkg_ref *ref, const char *what)
{
	struct seen *s = ctx;
	size_t l = strlen(s->buf);
	/* the first word says which kind: "taskhash" or "unihash" */
	snprintf(s->buf + l, sizeof(s->buf) - l, "%s@%" PRIu64 ": %.*s|", ref->pkg->name, ref->number,
		 (int)strcspn(what, " "), what);
	s->calls++;
}

static void test_import(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	/* r1: x founds U1; r2: x rebuilt (t2) inherits U1, y new. */
	const struct pk r1[] = {{"x", "t1", NULL, "p1"}};
	const struct pk r2[] = {{"x", "t2", "t1", "p1"}, {"y", "t3", NULL, "p3"}};
	write_release(f, "aa", "stable", 1, 100, r1, 1);
	write_release(f, "aa", "stable", 2, 200, r2, 2);
	char db[128];
	snprintf(db, sizeof(db), "%s/s.db", f->dir);
	struct eq_store *s = NULL;
	assert_int_equal(eq_store_open(db, &s, &e), EQ_OK);
	struct eq_repo_walk_opts o = {.trust = f->trust};
	struct eq_import_report rep;
	struct seen c = {{0}, 0, 0};
	assert_int_equal(eq_gen_equiv_import(s, NULL, f->repo, &o, on_conflict, &c, &rep, &e), EQ_OK);
	assert_int_equal(rep.manifests, 2);
	assert_int_equal(rep.packages, 3);
	assert_int_equal(rep.added, 3);
	assert_int_equal(rep.present, 0);
	assert_int_equal(rep.conflicts, 0);
	assert_int_equal(rep.outhashes_added, 3);
	assert_int_equal(rep.published_added, 2);
	/* a new build (t9) of x's payload inherits the imported unihash */
	char t9[65], p1[65], t1[65], uni[65];
	hash_of("t9", t9);
	hash_of("p1", p1);
	hash_of("t1", t1);
	unsigned flags = 0;
	assert_int_equal(eq_store_report(s, M, t9, p1, NULL, "x", "2", uni, &flags, &e), EQ_OK);
	assert_string_equal(uni, t1);
	assert_true(flags & EQ_STORE_INHERITED);
	/* again: nothing added */
	assert_int_equal(eq_gen_equiv_import(s, NULL, f->repo, &o, on_conflict, &c, &rep, &e), EQ_OK);
	assert_int_equal(rep.added, 0);
	assert_int_equal(rep.present, 3);
	assert_int_equal(rep.outhashes_added, 0);
	assert_int_equal(rep.published_added, 0);
	assert_int_equal(c.calls, 0);
	/* r3: t3 claims another unihash, and z reuses U1 with other bytes */
	const struct pk r3[] = {{"y", "t3", "other", "p3"}, {"z", "t4", "t1", "p4"}};
	write_release(f, "aa", "stable", 3, 300, r3, 2);
	assert_int_equal(eq_gen_equiv_import(s, NULL, f->repo, &o, on_conflict, &c, &rep, &e), EQ_OK);
	assert_int_equal(rep.conflicts, 2);
	assert_int_equal(rep.added, 1); /* t4 -> U1 itself is new */
	assert_string_equal(c.buf, "y@3: taskhash|z@3: unihash|");
	char t3[65];
	hash_of("t3", t3);
	assert_int_equal(eq_store_get(s, M, t3, uni, &e), EQ_OK);
	assert_string_equal(uni, t3); /* the store's kept */
	struct eq_store_published pub;
	assert_int_equal(eq_store_get_published(s, M, t1, &pub, &e), EQ_OK);
	assert_string_equal(pub.payload_sha256, p1);
	eq_store_close(s);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_walk_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import, setup, teardown),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
