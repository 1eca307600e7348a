/*
 * The release history summary (gen_history.c): the payload order it keeps
 * is the order publish used to get by walking every old manifest, it
 * survives a write and a read, and any summary that does not describe the
 * release folders and the newest manifest exactly is rebuilt from the
 * manifests instead of being believed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/manifest.h>

#include "eq_test.h"
#include "../../gen/gen_priv.h"

#define T0 INT64_C(1780000000)
#define N_REL 60
#define N_PKG 12

static char topdir[64] = "/tmp/eq-gen-history-XXXXXX";
static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static const char *path_of(const char *rel)
{
	static char buf[8][256];
	static int i;
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/repo/boards/b/c/%s", topdir, rel);
	return buf[i];
}

static const char *repo(void)
{
	static char buf[128];
	snprintf(buf, sizeof(buf), "%s/repo", topdir);
	return buf;
}

/* A payload hash that is a function of (package, version). */
static void hash_of(unsigned pkg, unsigned ver, char out[EQ_SHA256_HEX_LEN + 1])
{
	char in[32];
	uint8_t h[EQ_SHA256_LEN];
	snprintf(in, sizeof(in), "%u/%u", pkg, ver);
	eq_sha256(in, strlen(in), h);
	eq_hex_encode(h, sizeof(h), out);
}

/* The versions of each package in each release: packages change, change
 * back to an older payload, disappear and come back. */
static unsigned ver[N_REL + 1][N_PKG];

static struct eq_manifest *make_release(unsigned n)
{
	struct eq_manifest *m = NULL;
	struct eq_error e;
	assert_int_equal(eq_manifest_new(&m, &e), EQ_OK);
	char name[16];
	snprintf(name, sizeof(name), "rel-%u", n);
	struct eq_manifest_header h = {"b", "c", name, n, T0, T0 + 86400};
	assert_int_equal(eq_manifest_set_header(m, &h, &e), EQ_OK);
	for (unsigned k = 0; k < N_PKG; k++) {
		if (!ver[n][k])
			continue;
		struct eq_manifest_package p = {0};
		char pname[16];
		snprintf(pname, sizeof(pname), "pkg%02u", k);
		p.name = pname;
		p.version = "1";
		p.arch = "all";
		hash_of(k + 200, ver[n][k], p.taskhash);
		hash_of(k + 300, ver[n][k], p.unihash);
		hash_of(k, ver[n][k], p.payload.sha256);
		p.payload.size = 1000 + ver[n][k];
		hash_of(k + 100, ver[n][k], p.object.sha256);
		snprintf(p.object.path, sizeof(p.object.path), "objects/%s", p.object.sha256);
		p.object.size = 500 + ver[n][k];
		assert_int_equal(eq_manifest_add_package(m, &p, &e), EQ_OK);
	}
	return m;
}

static void write_release(unsigned n)
{
	struct eq_manifest *m = make_release(n);
	uint8_t *json = NULL;
	size_t len = 0;
	struct eq_error e;
	assert_int_equal(eq_manifest_to_json(m, &json, &len, &e), EQ_OK);
	char rel[64];
	snprintf(rel, sizeof(rel), "releases/%u", n);
	assert_int_equal(eq_mkdir_p(path_of(rel), 0755, &e), EQ_OK);
	snprintf(rel, sizeof(rel), "releases/%u/manifest.json", n);
	assert_int_equal(eq_file_replace_atomic(path_of(rel), json, len, 0644, &e), EQ_OK);
	eq_free(json);
	eq_manifest_free(m);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(topdir))
		return -1;
	for (unsigned k = 0; k < N_PKG; k++)
		ver[1][k] = 1;
	for (unsigned n = 2; n <= N_REL; n++)
		for (unsigned k = 0; k < N_PKG; k++) {
			unsigned r = rnd() % 10;
			/* pkg00 never changes; the others: same, new, an older one, gone */
			ver[n][k] = k == 0 || r < 5 ? ver[n - 1][k] : r < 8 ? n : r < 9 ? 1 + rnd() % n : 0;
		}
	for (unsigned n = 1; n <= N_REL; n++)
		write_release(n);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", topdir);
	return system(cmd);
}

/* Publish's old walk over every manifest: package @k's payloads, newest
 * first, each once, at most EQG_HISTORY_DEPTH. */
static size_t walk(unsigned k, char out[][EQ_SHA256_HEX_LEN + 1])
{
	size_t n = 0;
	for (unsigned r = N_REL; r >= 1 && n < EQG_HISTORY_DEPTH; r--) {
		if (!ver[r][k])
			continue;
		char h[EQ_SHA256_HEX_LEN + 1];
		hash_of(k, ver[r][k], h);
		bool seen = false;
		for (size_t i = 0; i < n && !seen; i++)
			seen = !strcmp(out[i], h);
		if (!seen)
			memcpy(out[n++], h, sizeof(h));
	}
	return n;
}

static void check_against_walk(const struct eqg_history *h)
{
	assert_int_equal(h->n_releases, N_REL);
	for (unsigned n = 1; n <= N_REL; n++) {
		char name[16];
		snprintf(name, sizeof(name), "rel-%u", n);
		assert_int_equal(h->numbers[n - 1], n);
		assert_string_equal(h->names[n - 1], name);
	}
	for (unsigned k = 0; k < N_PKG; k++) {
		char pname[16], want[EQG_HISTORY_DEPTH][EQ_SHA256_HEX_LEN + 1];
		snprintf(pname, sizeof(pname), "pkg%02u", k);
		size_t n = walk(k, want);
		const struct eqg_hist_pkg *p = eqg_history_find(h, pname);
		assert_non_null(p);
		assert_int_equal(p->n, n);
		for (size_t i = 0; i < n; i++)
			assert_string_equal(p->v[i].payload_sha256, want[i]);
	}
	assert_null(eqg_history_find(h, "nonesuch"));
}

static void head_sha(uint8_t out[EQ_SHA256_LEN])
{
	char rel[64];
	snprintf(rel, sizeof(rel), "releases/%d/manifest.json", N_REL);
	struct eq_error e;
	assert_int_equal(eq_sha256_file(path_of(rel), out, NULL, &e), EQ_OK);
}

/* A fresh open rebuilds from the manifests; what it writes reads back as
 * the same history; both give the walk's order. */
static void test_round_trip(void **state)
{
	(void)state;
	struct eqg_history h;
	struct eq_error e;
	(void)unlink(path_of("publisher-history"));
	assert_int_equal(eqg_history_open(repo(), "b", "c", &h, &e), EQ_OK);
	assert_false(h.from_summary);
	check_against_walk(&h);
	uint8_t sha[EQ_SHA256_LEN];
	head_sha(sha);
	assert_int_equal(eqg_history_write(&h, repo(), "b", "c", sha, &e), EQ_OK);
	eqg_history_done(&h);
	assert_int_equal(eqg_history_open(repo(), "b", "c", &h, &e), EQ_OK);
	assert_true(h.from_summary);
	check_against_walk(&h);
	eqg_history_done(&h);
	/* no channel at all: empty */
	assert_int_equal(eqg_history_open(repo(), "b", "nochannel", &h, &e), EQ_OK);
	assert_int_equal(h.n_releases, 0);
	assert_int_equal(h.n_pkgs, 0);
}

/* The summary's bytes, NUL-terminated (caller frees). */
static void summary_text(char **ret, size_t *ret_len)
{
	uint8_t *d = NULL;
	struct eq_error e;
	assert_int_equal(eq_file_read_all(path_of("publisher-history"), 1 << 24, &d, ret_len, &e), EQ_OK);
	*ret = eq_malloc(*ret_len + 1);
	assert_non_null(*ret);
	memcpy(*ret, d, *ret_len);
	(*ret)[*ret_len] = '\0';
	eq_free(d);
}

static void put_summary(const char *text, size_t len)
{
	struct eq_error e;
	assert_int_equal(eq_file_replace_atomic(path_of("publisher-history"), text, len, 0644, &e), EQ_OK);
}

/* Opens and checks the walk's order; @want_summary says whether the
 * summary should have been believed. */
static void open_expect(bool want_summary, const char *what)
{
	struct eqg_history h;
	struct eq_error e;
	assert_int_equal(eqg_history_open(repo(), "b", "c", &h, &e), EQ_OK);
	if (h.from_summary != want_summary)
		fail_msg("%s: summary %s", what, h.from_summary ? "believed" : "not used");
	check_against_walk(&h);
	eqg_history_done(&h);
}

/* Every way the summary can fail to describe the repository: rebuilt. */
static void test_stale_or_damaged(void **state)
{
	(void)state;
	struct eqg_history h;
	struct eq_error e;
	uint8_t sha[EQ_SHA256_LEN];
	head_sha(sha);
	assert_int_equal(eqg_history_open(repo(), "b", "c", &h, &e), EQ_OK);
	assert_int_equal(eqg_history_write(&h, repo(), "b", "c", sha, &e), EQ_OK);
	eqg_history_done(&h);
	size_t len;
	char *good = NULL;
	summary_text(&good, &len);
	open_expect(true, "as written");

	struct {
		const char *what, *from, *to;
	} edits[] = {
		{"another format", "eqota-history 1", "eqota-history 2"},
		{"another head number", "head 60 ", "head 59 "},
		{"another head hash", "head 60 ", "head 60 0"},
		{"a release missing", "r 7 rel-7\n", ""},
		{"a release renumbered", "r 7 rel-7\n", "r 77 rel-7\n"},
		{"a field too many", "r 7 rel-7\n", "r 7 rel-7 x\n"},
		{"a payload hash cut", "\nv ", "\nv 0"},
		{"a size that is not a number", "\nv ", "\nv zz "},
		{"an unknown line", "\np ", "\nq "},
		{"a package out of order", "p pkg00\n", "p pkg99\n"},
		{"a byte changed", "p pkg03\n", "p pkg04\n"},
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		const char *at = strstr(good, edits[i].from);
		assert_non_null(at);
		size_t pre = (size_t)(at - good), fl = strlen(edits[i].from), tl = strlen(edits[i].to);
		char *bad = eq_malloc(len - fl + tl + 1);
		assert_non_null(bad);
		memcpy(bad, good, pre);
		memcpy(bad + pre, edits[i].to, tl);
		memcpy(bad + pre + tl, at + fl, len - pre - fl);
		put_summary(bad, len - fl + tl);
		open_expect(false, edits[i].what);
		eq_free(bad);
	}
	/* truncated anywhere, at a line end too (whole packages gone): not
	 * believed */
	for (size_t cut = 1; cut < len; cut += 97) {
		put_summary(good, cut);
		struct eqg_history t;
		assert_int_equal(eqg_history_open(repo(), "b", "c", &t, &e), EQ_OK);
		if (t.from_summary)
			fail_msg("summary cut at %zu was believed", cut);
		eqg_history_done(&t);
	}
	/* a NUL inside */
	char *nul = eq_malloc(len);
	assert_non_null(nul);
	memcpy(nul, good, len);
	nul[len / 2] = '\0';
	put_summary(nul, len);
	open_expect(false, "a NUL byte");
	eq_free(nul);

	/* the newest manifest rewritten (same content, one byte less): its
	 * hash no longer matches, so the manifests are read */
	put_summary(good, len);
	char rel[64];
	snprintf(rel, sizeof(rel), "releases/%d/manifest.json", N_REL);
	uint8_t *m = NULL;
	size_t ml = 0;
	assert_int_equal(eq_file_read_all(path_of(rel), 1 << 24, &m, &ml, &e), EQ_OK);
	assert_int_equal(m[ml - 1], '\n');
	assert_int_equal(eq_file_replace_atomic(path_of(rel), m, ml - 1, 0644, &e), EQ_OK);
	open_expect(false, "newest manifest rewritten");
	assert_int_equal(eq_file_replace_atomic(path_of(rel), m, ml, 0644, &e), EQ_OK);
	eq_free(m);
	open_expect(true, "manifest restored");

	struct eqg_history t;
	eq_err r;
	/* a release folder added by another tool (an import that failed
	 * half-way): the summary no longer matches, and the rebuild names the
	 * folder's missing manifest */
	assert_int_equal(eq_mkdir_p(path_of("releases/1000"), 0755, &e), EQ_OK);
	/* folder without a manifest: the rebuild names it */
	r = eqg_history_open(repo(), "b", "c", &t, &e);
	assert_int_not_equal(r, EQ_OK);
	assert_int_equal(rmdir(path_of("releases/1000")), 0);
	open_expect(true, "folder removed again");
	eq_free(good);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_stale_or_damaged),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
