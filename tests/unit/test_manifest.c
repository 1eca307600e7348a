/*
 * Unit tests for eq_manifest: model, JSON round trip, strict parsing, keys,
 * signatures, trust, the verified load and allocation failures.
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

#include <cJSON.h>

#include <eq/manifest.h>

#define T_ISSUED INT64_C(1796284800)  /* 2026-12-03T08:00:00Z */
#define T_EXPIRES INT64_C(1798876800) /* 2027-01-02T08:00:00Z */

/* ---- fixtures ----------------------------------------------------------- */

struct fx {
	char dir[64];
	char prefix_a[128], prefix_b[128], prefix_c[128];
	char pub_a[140], pub_b[140], pub_c[140];
	struct eq_manifest_key *a, *b, *c;
};

static void hash_of(const char *s, char out[EQ_SHA256_HEX_LEN + 1])
{
	uint8_t d[EQ_SHA256_LEN];
	eq_sha256(s, strlen(s), d);
	eq_hex_encode(d, sizeof(d), out);
}

static void expect_err(eq_err got, const struct eq_error *e, eq_err want, const char *substr)
{
	if (got != want || (substr && !strstr(e->msg, substr)))
		fail_msg("got %s '%s', want %s containing '%s'", eq_err_str(got), e->msg, eq_err_str(want),
			 substr ? substr : "");
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct eq_error e;
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/eqm-test-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->prefix_a, sizeof(f->prefix_a), "%s/a", f->dir);
	snprintf(f->prefix_b, sizeof(f->prefix_b), "%s/b", f->dir);
	snprintf(f->prefix_c, sizeof(f->prefix_c), "%s/c", f->dir);
	snprintf(f->pub_a, sizeof(f->pub_a), "%s.pub", f->prefix_a);
	snprintf(f->pub_b, sizeof(f->pub_b), "%s.pub", f->prefix_b);
	snprintf(f->pub_c, sizeof(f->pub_c), "%s.pub", f->prefix_c);
	const char *pre[3] = {f->prefix_a, f->prefix_b, f->prefix_c};
	struct eq_manifest_key **k[3] = {&f->a, &f->b, &f->c};
	for (int i = 0; i < 3; i++) {
		char path[160];
		snprintf(path, sizeof(path), "%s.key", pre[i]);
		if (eq_manifest_key_generate(pre[i], NULL, &e) || eq_manifest_key_load(path, k[i], &e)) {
			fprintf(stderr, "setup: %s\n", e.msg);
			return -1;
		}
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	eq_manifest_key_free(f->a);
	eq_manifest_key_free(f->b);
	eq_manifest_key_free(f->c);
	if (eq_rm_rf(f->dir, NULL) != EQ_OK)
		fprintf(stderr, "cannot remove %s\n", f->dir);
	free(f);
	return 0;
}

/* A valid package called @name with @n_deltas deltas. */
static void make_package(const char *name, size_t n_deltas, struct eq_manifest_package *p,
			 struct eq_manifest_delta *deltas)
{
	char seed[64];
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->version = "1.2.3-r0+git~1:x";
	p->arch = "x86_64";
	snprintf(seed, sizeof(seed), "task-%s", name);
	hash_of(seed, p->taskhash);
	snprintf(seed, sizeof(seed), "uni-%s", name);
	hash_of(seed, p->unihash);
	snprintf(seed, sizeof(seed), "payload-%s", name);
	hash_of(seed, p->payload.sha256);
	p->payload.size = 12345678;
	snprintf(seed, sizeof(seed), "object-%s", name);
	hash_of(seed, p->object.sha256);
	snprintf(p->object.path, sizeof(p->object.path), "objects/%s", p->object.sha256);
	p->object.size = 3456789;
	for (size_t i = 0; i < n_deltas; i++) {
		struct eq_manifest_delta *d = &deltas[i];
		memset(d, 0, sizeof(*d));
		snprintf(seed, sizeof(seed), "old-%s-%zu", name, i);
		hash_of(seed, d->from);
		snprintf(seed, sizeof(seed), "delta-%s-%zu", name, i);
		hash_of(seed, d->sha256);
		/* Through a copy: d->from and d->path are parts of one object,
		 * which snprintf's restrict forbids. */
		char from[sizeof(d->from)];
		memcpy(from, d->from, sizeof(from));
		assert_true(snprintf(d->path, sizeof(d->path), "deltas/%s-%s", from, p->payload.sha256) <
			    (int)sizeof(d->path));
		d->size = 23456 + i;
	}
	p->deltas = n_deltas ? deltas : NULL;
	p->n_deltas = n_deltas;
}

static struct eq_manifest *make_manifest(size_t n_pkgs, const char *board)
{
	struct eq_manifest *m = NULL;
	struct eq_error e;
	struct eq_manifest_header h = {.board = board,
				       .channel = "stable",
				       .release = "2026.12.1",
				       .number = 2,
				       .issued = T_ISSUED,
				       .expires = T_EXPIRES};
	assert_int_equal(eq_manifest_new(&m, &e), EQ_OK);
	assert_int_equal(eq_manifest_set_header(m, &h, &e), EQ_OK);
	/* added in reverse order: the model keeps them sorted */
	for (size_t i = n_pkgs; i-- > 0;) {
		char name[32];
		struct eq_manifest_package p;
		struct eq_manifest_delta d[3];
		snprintf(name, sizeof(name), "pkg%03zu", i);
		make_package(name, i % 4, &p, d);
		assert_int_equal(eq_manifest_add_package(m, &p, &e), EQ_OK);
	}
	return m;
}

static void to_json(const struct eq_manifest *m, uint8_t **data, size_t *len)
{
	struct eq_error e;
	eq_err r = eq_manifest_to_json(m, data, len, &e);
	if (r)
		fail_msg("to_json: %s", e.msg);
}

/* Signed manifest bytes and signature file for @keys. */
static void make_signed(size_t n_pkgs, const char *board, const struct eq_manifest_key *const *keys, size_t n_keys,
			uint8_t **data, size_t *len, uint8_t **sig, size_t *sig_len)
{
	struct eq_error e;
	struct eq_manifest *m = make_manifest(n_pkgs, board);
	to_json(m, data, len);
	eq_manifest_free(m);
	if (eq_manifest_sign(*data, *len, keys, n_keys, sig, sig_len, &e))
		fail_msg("sign: %s", e.msg);
}

static struct eq_manifest_trust *trust_of(const char *const *pubs, size_t n, unsigned threshold)
{
	struct eq_manifest_trust *t = NULL;
	struct eq_error e;
	if (eq_manifest_trust_from_pubkeys(pubs, n, threshold, &t, &e))
		fail_msg("trust: %s", e.msg);
	return t;
}

static const struct eq_manifest_policy policy_ok = {.board = "qemux86-64", .now = T_ISSUED + 60, .check_expiry = true};

/* ---- model and JSON ------------------------------------------------------ */

static void test_roundtrip(void **state)
{
	(void)state;
	struct eq_error e;
	struct eq_manifest *m = make_manifest(7, "qemux86-64"), *m2 = NULL;
	uint8_t *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	to_json(m, &a, &alen);
	assert_int_equal(strlen((char *)a), alen);
	assert_int_equal(eq_manifest_parse_unverified(a, alen, &m2, &e), EQ_OK);
	to_json(m2, &b, &blen);
	assert_int_equal(alen, blen);
	assert_memory_equal(a, b, alen);
	/* layout: fixed key order and two-space indentation */
	assert_non_null(strstr((char *)a,
			       "{\n  \"format\": 1,\n  \"board\": \"qemux86-64\",\n  \"channel\": \"stable\",\n"
			       "  \"release\": \"2026.12.1\",\n  \"number\": 2,\n"
			       "  \"issued\": \"2026-12-03T08:00:00Z\",\n  \"expires\": \"2027-01-02T08:00:00Z\",\n"));

	struct eq_manifest_header h;
	assert_int_equal(eq_manifest_get_header(m2, &h, &e), EQ_OK);
	assert_string_equal(h.board, "qemux86-64");
	assert_int_equal(h.number, 2);
	assert_int_equal(h.issued, T_ISSUED);
	assert_int_equal(h.expires, T_EXPIRES);
	assert_int_equal(eq_manifest_package_count(m2), 7);
	for (size_t i = 0; i < 7; i++) {
		const struct eq_manifest_package *p = eq_manifest_package_at(m2, i);
		char name[32];
		snprintf(name, sizeof(name), "pkg%03zu", i);
		assert_string_equal(p->name, name);
		assert_ptr_equal(eq_manifest_find_package(m2, name), p);
		assert_int_equal(p->n_deltas, i % 4);
	}
	assert_null(eq_manifest_package_at(m2, 7));
	assert_null(eq_manifest_find_package(m2, "pkg007"));
	const struct eq_manifest_package *p3 = eq_manifest_find_package(m2, "pkg003");
	assert_int_equal(p3->deltas[2].size, 23458);
	assert_string_equal(p3->version, "1.2.3-r0+git~1:x");
	eq_free(a);
	eq_free(b);
	eq_manifest_free(m);
	eq_manifest_free(m2);

	/* an empty manifest round-trips too */
	m = make_manifest(0, "qemuarm64");
	to_json(m, &a, &alen);
	assert_int_equal(eq_manifest_parse_unverified(a, alen, &m2, &e), EQ_OK);
	to_json(m2, &b, &blen);
	assert_int_equal(alen, blen);
	assert_memory_equal(a, b, alen);
	assert_non_null(strstr((char *)a, "\"packages\": []\n}\n"));
	eq_free(a);
	eq_free(b);
	eq_manifest_free(m);
	eq_manifest_free(m2);
}

static void test_model_rules(void **state)
{
	(void)state;
	struct eq_error e;
	struct eq_manifest *m = NULL;
	struct eq_manifest_package p;
	struct eq_manifest_delta d[2];
	uint8_t *data;
	size_t len;
	assert_int_equal(eq_manifest_new(&m, &e), EQ_OK);
	expect_err(eq_manifest_to_json(m, &data, &len, &e), &e, EQ_ERR_STATE, "no header");
	struct eq_manifest_header h = {.board = "qemux86-64",
				       .channel = "stable",
				       .release = "r1",
				       .number = 1,
				       .issued = T_ISSUED,
				       .expires = T_ISSUED};
	expect_err(eq_manifest_set_header(m, &h, &e), &e, EQ_ERR_INVAL, "expires: must be after issued");
	h.expires = T_EXPIRES;
	h.release = "a/b";
	expect_err(eq_manifest_set_header(m, &h, &e), &e, EQ_ERR_INVAL, "release: may contain only");
	h.release = "r1";
	h.number = 0;
	expect_err(eq_manifest_set_header(m, &h, &e), &e, EQ_ERR_INVAL, "number");
	h.number = 5;
	assert_int_equal(eq_manifest_set_header(m, &h, &e), EQ_OK);

	make_package("busybox", 2, &p, d);
	assert_int_equal(eq_manifest_add_package(m, &p, &e), EQ_OK);
	expect_err(eq_manifest_add_package(m, &p, &e), &e, EQ_ERR_STATE, "package 'busybox' is listed twice");
	make_package("zlib", 0, &p, d);
	p.unihash[3] = 'A';
	expect_err(eq_manifest_add_package(m, &p, &e), &e, EQ_ERR_INVAL, "package 'zlib'.unihash: expected 64");
	make_package("zlib", 0, &p, d);
	snprintf(p.object.path, sizeof(p.object.path), "objects/../x");
	expect_err(eq_manifest_add_package(m, &p, &e), &e, EQ_ERR_UNSAFE, "object.path: path leaves the repository");
	make_package("zlib", 1, &p, d);
	d[0].path[10] ^= 1;
	expect_err(eq_manifest_add_package(m, &p, &e), &e, EQ_ERR_INVAL, "deltas[0].path: must be");
	make_package("zlib", 0, &p, d);
	p.n_deltas = 17;
	expect_err(eq_manifest_add_package(m, &p, &e), &e, EQ_ERR_LIMIT, "at most 16");
	assert_int_equal(eq_manifest_package_count(m), 1);

	expect_err(eq_manifest_check_newer(m, 5, &e), &e, EQ_ERR_STATE,
		   "release number 5 is not newer than the installed 5");
	assert_int_equal(eq_manifest_check_newer(m, 4, &e), EQ_OK);
	eq_manifest_free(m);
	eq_manifest_free(NULL);
}

static void test_time(void **state)
{
	(void)state;
	char s[EQ_MANIFEST_TIME_LEN + 1];
	int64_t t;
	assert_true(eq_manifest_parse_time("2026-12-03T08:00:00Z", &t));
	assert_int_equal(t, T_ISSUED);
	eq_manifest_format_time(t, s);
	assert_string_equal(s, "2026-12-03T08:00:00Z");
	assert_true(eq_manifest_parse_time("2024-02-29T23:59:59Z", &t));
	eq_manifest_format_time(t, s);
	assert_string_equal(s, "2024-02-29T23:59:59Z");
	assert_true(eq_manifest_parse_time("1970-01-01T00:00:00Z", &t));
	assert_int_equal(t, 0);
	assert_false(eq_manifest_parse_time("2023-02-29T00:00:00Z", &t));
	assert_false(eq_manifest_parse_time("2026-12-03T24:00:00Z", &t));
	assert_false(eq_manifest_parse_time("2026-12-03 08:00:00Z", &t));
	assert_false(eq_manifest_parse_time("2026-12-03T08:00:00z", &t));
	assert_false(eq_manifest_parse_time("2026-12-03T08:00:00.5Z", &t));
	assert_false(eq_manifest_parse_time("1969-12-31T23:59:59Z", &t));
	assert_true(eq_manifest_parse_time("9999-12-31T23:59:59Z", &t));
	eq_manifest_format_time(t, s);
	assert_string_equal(s, "9999-12-31T23:59:59Z");
}

/* ---- strict parser ------------------------------------------------------- */

static eq_err parse_str(const char *s, struct eq_error *e)
{
	struct eq_manifest *m = NULL;
	eq_err r = eq_manifest_parse_unverified((const uint8_t *)s, strlen(s), &m, e);
	eq_manifest_free(m);
	return r;
}

static void test_parse_errors(void **state)
{
	(void)state;
	struct eq_error e;
	expect_err(parse_str("{\n  \"format\": 1,\n  \"board\" \"x\"\n}", &e), &e, EQ_ERR_PARSE,
		   "line 3 column 11: expected ':' after object key");
	expect_err(parse_str("{\"format\": 3}", &e), &e, EQ_ERR_UNSUPPORTED, "format version 3 is not supported");
	expect_err(parse_str("{\"format\": 1, \"format\": 1}", &e), &e, EQ_ERR_PARSE, "format: duplicate key");
	expect_err(parse_str("{\"format\": 1, \"bogus\": 1}", &e), &e, EQ_ERR_PARSE,
		   "unknown key 'bogus' at the top level");
	expect_err(parse_str("{\"format\": 1, \"bo\\u0001gus\": 1}", &e), &e, EQ_ERR_PARSE, "unknown key 'bo?gus'");
	expect_err(parse_str("{\"a\":[[[[[[[[1]]]]]]]]}", &e), &e, EQ_ERR_LIMIT,
		   "line 1 column 13: JSON nesting deeper than 8");
	assert_int_equal(parse_str("{\"a\":[[[[[[1]]]]]]}", &e), EQ_ERR_PARSE); /* depth 7 is fine for the scanner */

	/* too many packages: caught by the scanner before cJSON allocates */
	size_t n = EQ_MANIFEST_MAX_PACKAGES + 1, cap = 64 + 2 * n;
	char *big = malloc(cap), *q = big;
	assert_non_null(big);
	q += sprintf(q, "{\"format\":1,\"packages\":[");
	for (size_t i = 0; i < n; i++)
		q += sprintf(q, i ? ",0" : "0");
	sprintf(q, "]}");
	expect_err(parse_str(big, &e), &e, EQ_ERR_LIMIT, "array has more than 100000 elements");
	free(big);

	/* the byte cap is checked before anything else */
	struct eq_manifest *m = NULL;
	expect_err(eq_manifest_parse_unverified((const uint8_t *)"{}", EQ_MANIFEST_MAX_BYTES + 1, &m, &e), &e,
		   EQ_ERR_LIMIT, "more than the limit");
	/* embedded NUL */
	expect_err(eq_manifest_parse_unverified((const uint8_t *)"{\"a\":\"x\0\"}", 10, &m, &e), &e, EQ_ERR_PARSE,
		   "line 1 column 8: control character in string");
}

/* Replaces the first @from in @data by @to into a new NUL-terminated string. */
static char *replace_once(const uint8_t *data, size_t len, const char *from, const char *to)
{
	const char *at = strstr((const char *)data, from);
	assert_non_null(at);
	size_t pre = (size_t)(at - (const char *)data), fl = strlen(from), tl = strlen(to);
	char *out = malloc(len - fl + tl + 1);
	assert_non_null(out);
	memcpy(out, data, pre);
	memcpy(out + pre, to, tl);
	memcpy(out + pre + tl, data + pre + fl, len - pre - fl);
	out[len - fl + tl] = '\0';
	return out;
}

/* The packages array is walked without one tree for the whole document:
 * what the tree's schema check said must still be said. */
static void test_parse_packages_walk(void **state)
{
	(void)state;
	struct eq_error e;
	struct eq_manifest *m = make_manifest(7, "qemux86-64"), *back = NULL;
	uint8_t *data, *again;
	size_t len, alen;
	to_json(m, &data, &len);

	/* an escaped key is the same key */
	char *esc = replace_once(data, len, "\"packages\"", "\"pack\\u0061ges\"");
	assert_int_equal(eq_manifest_parse_unverified((const uint8_t *)esc, strlen(esc), &back, &e), EQ_OK);
	assert_int_equal(eq_manifest_package_count(back), 7);
	to_json(back, &again, &alen);
	assert_int_equal(alen, len);
	assert_memory_equal(again, data, len);
	eq_free(again);
	eq_manifest_free(back);
	free(esc);

	/* edits of a valid manifest, each with what must be said */
	static const struct {
		const char *from, *to, *msg;
	} cases[] = {
		/* packages twice, spelled differently, or before the header keys */
		{"\"format\": 1,", "\"format\": 1, \"p\\u0061ckages\": [],", "packages: duplicate key"},
		{"\"format\": 1,", "\"packages\": [], \"format\": 1,", "packages: duplicate key"},
		/* the header is checked before any package, as with one tree */
		{"\"channel\"", "\"chanel\"", "unknown key 'chanel' at the top level"},
		/* a bad package is named by its index, and so is an element that
		 * is not an object */
		{"\"name\": \"pkg002\"", "\"name\": \"pkg002\", \"x\": 1", "packages[2]: unknown key 'x'"},
		{"\"packages\": [", "\"packages\": [7, ", "packages[0]: expected an object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		esc = replace_once(data, len, cases[i].from, cases[i].to);
		expect_err(parse_str(esc, &e), &e, EQ_ERR_PARSE, cases[i].msg);
		free(esc);
	}
	/* packages is not an array, or missing */
	expect_err(parse_str("{\"format\": 1, \"board\": \"b\", \"packages\": {}}", &e), &e, EQ_ERR_PARSE,
		   "packages: expected an array");
	expect_err(parse_str("{\"format\": 1, \"board\": \"b\"}", &e), &e, EQ_ERR_PARSE, "channel: missing");
	eq_free(data);
	eq_manifest_free(m);
}

static eq_err code_by_name(const char *name)
{
	static const struct {
		const char *name;
		eq_err code;
	} map[] = {
		{"EQ_OK", EQ_OK},
		{"EQ_ERR_NOMEM", EQ_ERR_NOMEM},
		{"EQ_ERR_IO", EQ_ERR_IO},
		{"EQ_ERR_PARSE", EQ_ERR_PARSE},
		{"EQ_ERR_VERIFY", EQ_ERR_VERIFY},
		{"EQ_ERR_LIMIT", EQ_ERR_LIMIT},
		{"EQ_ERR_STATE", EQ_ERR_STATE},
		{"EQ_ERR_INVAL", EQ_ERR_INVAL},
		{"EQ_ERR_UNSUPPORTED", EQ_ERR_UNSUPPORTED},
		{"EQ_ERR_EXPIRED", EQ_ERR_EXPIRED},
		{"EQ_ERR_UNSAFE", EQ_ERR_UNSAFE},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].name, name) == 0)
			return map[i].code;
	fail_msg("unknown code name '%s'", name);
	return EQ_ERR__COUNT;
}

/* Walks tests/data/bad/manifest: every <case>.json must fail with the code
 * and message substring in <case>.expect. */
static void test_bad_corpus(void **state)
{
	(void)state;
	const char *data_dir = secure_getenv("EQ_TEST_DATA");
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/bad/manifest", data_dir ? data_dir : "tests/data");
	DIR *d = opendir(dir);
	if (!d)
		fail_msg("cannot open %s", dir);
	struct dirent *de;
	unsigned cases = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		char path[1024], expect_path[1024], code[64] = "", substr[512] = "";
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		snprintf(expect_path, sizeof(expect_path), "%s/%.*s.expect", dir, (int)(l - 5), de->d_name);
		FILE *f = fopen(expect_path, "r");
		if (!f)
			fail_msg("%s: missing .expect", path);
		if (!fgets(code, sizeof(code), f) || !fgets(substr, sizeof(substr), f))
			fail_msg("%s: .expect needs two lines", expect_path);
		fclose(f);
		code[strcspn(code, "\n")] = '\0';
		substr[strcspn(substr, "\n")] = '\0';

		uint8_t *data = NULL;
		size_t len = 0;
		struct eq_error e;
		struct eq_manifest *m = NULL;
		assert_int_equal(eq_file_read_all(path, EQ_MANIFEST_MAX_BYTES, &data, &len, &e), EQ_OK);
		eq_error_clear(&e);
		eq_err r = eq_manifest_parse_unverified(data, len, &m, &e);
		eq_free(data);
		eq_manifest_free(m);
		if (r != code_by_name(code) || !strstr(e.msg, substr))
			fail_msg("%s: got %s '%s', want %s containing '%s'", de->d_name, eq_err_str(r), e.msg, code,
				 substr);
		cases++;
	}
	closedir(d);
	assert_true(cases >= 40);
}


/* ---- format 2: a release that is an image -------------------------------- */

static struct eq_manifest *make_image_manifest(void)
{
	struct eq_manifest *m = make_manifest(3, "qemux86-64");
	struct eq_manifest_package p;
	struct eq_error e;
	const char *names[] = {"eqota-image-skeleton", "eqota-image.etc", "eqota-image.usr"};
	for (size_t i = 0; i < 3; i++) {
		make_package(names[i], i, &p, (struct eq_manifest_delta[3]){0});
		assert_int_equal(eq_manifest_add_package(m, &p, &e), EQ_OK);
	}
	const char *before[] = {"eqota-image-skeleton"};
	const char *after[] = {"eqota-image.usr", "eqota-image.etc"}; /* install order, not sorted */
	const char *replace[] = {"bin", "etc/a \"quoted\" \\ name", "etc/shells", "usr/share/d\xc3\xa9j\xc3\xa0"};
	const char *remove[] = {"usr/share/doc/x", "usr/share/doc/x/copyright"};
	struct eq_manifest_image img = {before, 1, after, 2, replace, 4, remove, 2};
	assert_int_equal(eq_manifest_set_image(m, &img, &e), EQ_OK);
	return m;
}

static void test_image(void **state)
{
	(void)state;
	struct eq_error e;
	struct eq_manifest *m = make_image_manifest(), *back = NULL;
	uint8_t *data = NULL;
	size_t len = 0;
	to_json(m, &data, &len);
	assert_non_null(strstr((char *)data, "\"format\": 2,"));
	assert_non_null(strstr((char *)data, "\"etc/a \\\"quoted\\\" \\\\ name\""));
	assert_int_equal(eq_manifest_parse_unverified(data, len, &back, &e), EQ_OK);
	const struct eq_manifest_image *img = eq_manifest_get_image(back);
	assert_non_null(img);
	assert_int_equal(img->n_before, 1);
	assert_int_equal(img->n_after, 2);
	assert_string_equal(img->after[0], "eqota-image.usr");
	assert_string_equal(img->replace[1], "etc/a \"quoted\" \\ name");
	assert_string_equal(img->replace[3], "usr/share/d\xc3\xa9j\xc3\xa0");
	assert_int_equal(img->n_remove, 2);
	assert_true(eq_manifest_is_component(back, "eqota-image.etc"));
	assert_true(eq_manifest_is_component(back, "eqota-image-skeleton"));
	assert_false(eq_manifest_is_component(back, "pkg001"));
	assert_true(eq_manifest_path_listed(img->replace, img->n_replace, "etc/shells"));
	assert_false(eq_manifest_path_listed(img->replace, img->n_replace, "etc/shell"));
	/* the same model gives the same bytes */
	uint8_t *again = NULL;
	size_t again_len = 0;
	to_json(back, &again, &again_len);
	assert_int_equal(again_len, len);
	assert_memory_equal(again, data, len);
	eq_free(again);
	eq_manifest_free(back);

	/* a format-1 manifest has no image and stays format 1 */
	struct eq_manifest *plain = make_manifest(2, "qemux86-64");
	assert_null(eq_manifest_get_image(plain));
	assert_false(eq_manifest_is_component(plain, "pkg000"));
	uint8_t *pd = NULL;
	size_t pl = 0;
	to_json(plain, &pd, &pl);
	assert_non_null(strstr((char *)pd, "\"format\": 1,"));
	/* "image" in format 1 is an unknown key (so old devices never half-read it) */
	char *f1img = replace_once(data, len, "\"format\": 2,", "\"format\": 1,");
	expect_err(parse_str(f1img, &e), &e, EQ_ERR_PARSE, "unknown key 'image'");
	free(f1img);
	/* format 2 requires it */
	char *f2 = replace_once(pd, pl, "\"format\": 1,", "\"format\": 2,");
	expect_err(parse_str(f2, &e), &e, EQ_ERR_PARSE, "image: missing");
	free(f2);
	eq_free(pd);
	eq_manifest_free(plain);

	static const struct {
		const char *from, *to;
		eq_err code;
		const char *msg;
	} bad[] = {
		{"\"eqota-image-skeleton\"\n    ]", "\"eqota-image-nothere\"\n    ]", EQ_ERR_PARSE,
		 "image.before[0]: 'eqota-image-nothere' is not a package of the manifest"},
		{"\"eqota-image-skeleton\"\n    ]", "\"eqota-image.etc\"\n    ]", EQ_ERR_PARSE,
		 "component 'eqota-image.etc' is named twice"},
		{"\"eqota-image-skeleton\"\n    ]", "\".hidden\"\n    ]", EQ_ERR_PARSE,
		 "image.before[0]: '.hidden' must start with a letter or digit"},
		{"\"etc/shells\"", "\"etc/../shadow\"", EQ_ERR_UNSAFE, "image.replace[2]: 'etc/../shadow' has a '..'"},
		{"\"etc/shells\"", "\"/etc/shells\"", EQ_ERR_UNSAFE, "image.replace[2]: '/etc/shells' absolute"},
		{"\"etc/shells\"", "\"etc//shells\"", EQ_ERR_PARSE, "has an empty component"},
		{"\"etc/shells\"", "\"etc/./shells\"", EQ_ERR_PARSE, "has a '.' component"},
		{"\"etc/shells\"", "\"etc/shells/\"", EQ_ERR_PARSE, "has an empty component"},
		{"\"etc/shells\"", "\"\"", EQ_ERR_PARSE, "image.replace[2]: '' empty"},
		{"\"etc/shells\"", "\"aaa\"", EQ_ERR_PARSE, "image.replace[2]: 'aaa' is not after the path before it"},
		{"\"etc/shells\"", "\"etc/a \\\"quoted\\\" \\\\ name\"", EQ_ERR_PARSE, "is listed twice"},
		{"\"etc/shells\"", "7", EQ_ERR_PARSE, "image.replace[2]: expected a string"},
		{"\"usr/share/doc/x\",", "\"etc/shells\",", EQ_ERR_PARSE,
		 "image.remove[0]: 'etc/shells' is in image.replace too"},
		{"\"remove\": [", "\"removed\": [", EQ_ERR_PARSE, "unknown key 'removed'"},
		{"\"etc/shells\"", "\"etc/\\u0001\"", EQ_ERR_PARSE, "control character"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *doc = replace_once(data, len, bad[i].from, bad[i].to);
		eq_error_clear(&e);
		eq_err r = parse_str(doc, &e);
		if (r != bad[i].code || !strstr(e.msg, bad[i].msg))
			fail_msg("bad[%zu]: got %s '%s', want %s '%s'", i, eq_err_str(r), e.msg,
				 eq_err_str(bad[i].code), bad[i].msg);
		free(doc);
	}
	eq_free(data);

	/* the API refuses what the parser refuses, and leaves the model as it was */
	const char *bad_path[] = {"a/../b"};
	struct eq_manifest_image badimg = {.replace = bad_path, .n_replace = 1};
	assert_int_equal(eq_manifest_set_image(m, &badimg, &e), EQ_ERR_UNSAFE);
	assert_non_null(eq_manifest_get_image(m));
	assert_int_equal(eq_manifest_get_image(m)->n_replace, 4);
	const char *bad_utf8[] = {"a\xff"};
	badimg = (struct eq_manifest_image){.remove = bad_utf8, .n_remove = 1};
	expect_err(eq_manifest_set_image(m, &badimg, &e), &e, EQ_ERR_INVAL, "image.remove[0]: 'a?' is not UTF-8");
	/* a component that is not a package: refused when written */
	const char *ghost[] = {"ghost"};
	struct eq_manifest_image gimg = {.after = ghost, .n_after = 1};
	assert_int_equal(eq_manifest_set_image(m, &gimg, &e), EQ_OK);
	expect_err(eq_manifest_to_json(m, &data, &len, &e), &e, EQ_ERR_STATE,
		   "image.after[0]: 'ghost' is not a package of the manifest");
	eq_manifest_free(m);
}

/* ---- keys ---------------------------------------------------------------- */

static void test_keygen(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	char prefix[160], key[170], pub[170], keyid[EQ_MANIFEST_KEYID_LEN + 1];
	struct stat st;
	snprintf(prefix, sizeof(prefix), "%s/gen", f->dir);
	snprintf(key, sizeof(key), "%s.key", prefix);
	snprintf(pub, sizeof(pub), "%s.pub", prefix);
	mode_t old = umask(077);
	assert_int_equal(eq_manifest_key_generate(prefix, keyid, &e), EQ_OK);
	umask(old);
	assert_true(eq_is_sha256_hex(keyid));
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(pub, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);

	uint8_t *before = NULL, *after = NULL;
	size_t blen = 0, alen = 0;
	assert_int_equal(eq_file_read_all(key, 65536, &before, &blen, &e), EQ_OK);
	assert_non_null(strstr((char *)before, "-----BEGIN EC PRIVATE KEY-----"));
	expect_err(eq_manifest_key_generate(prefix, NULL, &e), &e, EQ_ERR_STATE, "refusing to overwrite");
	assert_int_equal(eq_file_read_all(key, 65536, &after, &alen, &e), EQ_OK);
	assert_int_equal(alen, blen);
	assert_memory_equal(before, after, alen);
	eq_free(before);
	eq_free(after);

	/* only the .pub exists: still refused, and the .pub is kept */
	assert_int_equal(unlink(key), 0);
	expect_err(eq_manifest_key_generate(prefix, NULL, &e), &e, EQ_ERR_STATE, "gen.pub' already exists");
	assert_int_equal(stat(key, &st), -1);
	assert_int_equal(stat(pub, &st), 0);

	/* key ids agree between the generator, the private and the public key */
	struct eq_manifest_key *k = NULL;
	expect_err(eq_manifest_key_load(key, &k, &e), &e, EQ_ERR_NOTFOUND, "gen.key");
	expect_err(eq_manifest_key_load(pub, &k, &e), &e, EQ_ERR_PARSE, "not a PEM private key");
	const char *pubs[1] = {f->pub_a};
	struct eq_manifest_trust *t = trust_of(pubs, 1, 1);
	assert_string_equal(eq_manifest_trust_keyid(t, 0), eq_manifest_key_id(f->a));
	assert_null(eq_manifest_trust_keyid(t, 1));
	eq_manifest_trust_free(t);
	char akey[160];
	snprintf(akey, sizeof(akey), "%s.key", f->prefix_a);
	const char *bad[1] = {akey};
	expect_err(eq_manifest_trust_from_pubkeys(bad, 1, 1, &t, &e), &e, EQ_ERR_PARSE, "not a PEM public key");
	const char *twice[2] = {f->pub_a, f->pub_a};
	expect_err(eq_manifest_trust_from_pubkeys(twice, 2, 1, &t, &e), &e, EQ_ERR_INVAL, "same key as");
}

/* ---- signatures ---------------------------------------------------------- */

static void test_sign_verify(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	uint8_t *data, *sig;
	size_t len, sig_len;
	const struct eq_manifest_key *keys[2] = {f->a, f->b};
	make_signed(3, "qemux86-64", keys, 2, &data, &len, &sig, &sig_len);

	const char *pubs[2] = {f->pub_a, f->pub_b};
	struct eq_manifest_trust *t1 = trust_of(pubs, 2, 1), *t2 = trust_of(pubs, 2, 2);
	struct eq_manifest *m = NULL;
	assert_int_equal(eq_manifest_verify(data, len, sig, sig_len, t1, &e), EQ_OK);
	assert_int_equal(eq_manifest_verify(data, len, sig, sig_len, t2, &e), EQ_OK);
	if (eq_manifest_load_verified(data, len, sig, sig_len, t2, &policy_ok, &m, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(eq_manifest_package_count(m), 3);
	eq_manifest_free(m);

	/* files, with the default .sig name */
	char mpath[160], spath[170];
	snprintf(mpath, sizeof(mpath), "%s/manifest.json", f->dir);
	snprintf(spath, sizeof(spath), "%s.sig", mpath);
	assert_int_equal(eq_file_replace_atomic(mpath, data, len, 0644, &e), EQ_OK);
	assert_int_equal(eq_file_replace_atomic(spath, sig, sig_len, 0644, &e), EQ_OK);
	assert_int_equal(eq_manifest_load_verified_file(mpath, NULL, t2, &policy_ok, &m, &e), EQ_OK);
	eq_manifest_free(m);

	/* sign_append: a then c, signed on "different machines" */
	uint8_t *s1, *s2, *s3;
	size_t s1len, s2len, s3len;
	const struct eq_manifest_key *ka[1] = {f->a};
	assert_int_equal(eq_manifest_sign(data, len, ka, 1, &s1, &s1len, &e), EQ_OK);
	assert_int_equal(eq_manifest_sign_append(data, len, s1, s1len, f->c, &s2, &s2len, &e), EQ_OK);
	expect_err(eq_manifest_sign_append(data, len, s2, s2len, f->c, &s3, &s3len, &e), &e, EQ_ERR_STATE,
		   "already signed");
	const char *pubs_ac[2] = {f->pub_a, f->pub_c};
	struct eq_manifest_trust *tac = trust_of(pubs_ac, 2, 2);
	assert_int_equal(eq_manifest_verify(data, len, s2, s2len, tac, &e), EQ_OK);
	const struct eq_manifest_key *dup[2] = {f->a, f->a};
	expect_err(eq_manifest_sign(data, len, dup, 2, &s3, &s3len, &e), &e, EQ_ERR_INVAL, "given twice");
	eq_manifest_trust_free(tac);
	eq_free(s1);
	eq_free(s2);

	/* trust file round trip */
	uint8_t *tj;
	size_t tjlen;
	struct eq_manifest_trust *t3 = NULL;
	assert_int_equal(eq_manifest_trust_to_json(t2, &tj, &tjlen, &e), EQ_OK);
	if (eq_manifest_trust_parse(tj, tjlen, &t3, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(eq_manifest_trust_threshold(t3), 2);
	assert_int_equal(eq_manifest_trust_key_count(t3), 2);
	assert_int_equal(eq_manifest_verify(data, len, sig, sig_len, t3, &e), EQ_OK);
	eq_manifest_trust_free(t3);
	/* a keyid that does not belong to its pem */
	char *bad = eq_strdup((char *)tj);
	char *id = strstr(bad, eq_manifest_key_id(f->a));
	assert_non_null(id);
	id[0] = id[0] == '0' ? '1' : '0';
	expect_err(eq_manifest_trust_parse((uint8_t *)bad, strlen(bad), &t3, &e), &e, EQ_ERR_VERIFY,
		   "keys[0].keyid: does not match its key");
	eq_free(bad);
	bad = eq_strdup((char *)tj);
	char *th = strstr(bad, "\"threshold\": 2");
	th[13] = '3';
	expect_err(eq_manifest_trust_parse((uint8_t *)bad, strlen(bad), &t3, &e), &e, EQ_ERR_PARSE,
		   "threshold: must be an integer from 1 to 2");
	eq_free(bad);
	expect_err(eq_manifest_trust_parse((const uint8_t *)"{\"format\":2}", 12, &t3, &e), &e, EQ_ERR_UNSUPPORTED,
		   "format version 2");
	eq_free(tj);

	eq_manifest_trust_free(t1);
	eq_manifest_trust_free(t2);
	eq_free(data);
	eq_free(sig);
}

/* Flipping any bit of the signed bytes or of the signature file must fail
 * verification (and never crash). */
static void test_tamper_every_byte(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	uint8_t *data, *sig;
	size_t len, sig_len;
	const struct eq_manifest_key *keys[1] = {f->a};
	make_signed(1, "qemux86-64", keys, 1, &data, &len, &sig, &sig_len);
	const char *pubs[1] = {f->pub_a};
	struct eq_manifest_trust *t = trust_of(pubs, 1, 1);
	struct eq_manifest *m = NULL;
	assert_int_equal(eq_manifest_load_verified(data, len, sig, sig_len, t, &policy_ok, &m, &e), EQ_OK);
	eq_manifest_free(m);
	m = NULL;
	for (size_t i = 0; i < len; i++) {
		uint8_t bit = (uint8_t)(1u << (i % 8));
		data[i] ^= bit;
		eq_err r = eq_manifest_load_verified(data, len, sig, sig_len, t, &policy_ok, &m, &e);
		if (r != EQ_ERR_VERIFY || !strstr(e.msg, "does not verify"))
			fail_msg("manifest byte %zu: got %s '%s'", i, eq_err_str(r), e.msg);
		assert_null(m);
		data[i] ^= bit;
	}
	for (size_t i = 0; i < sig_len; i++) {
		uint8_t bit = (uint8_t)(1u << (i % 8));
		sig[i] ^= bit;
		eq_err r = eq_manifest_load_verified(data, len, sig, sig_len, t, &policy_ok, &m, &e);
		if (r == EQ_OK)
			fail_msg("signature byte %zu: tampering not detected", i);
		assert_null(m);
		sig[i] ^= bit;
	}
	eq_manifest_trust_free(t);
	eq_free(data);
	eq_free(sig);
}

static void test_verify_failures(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	uint8_t *data, *sig;
	size_t len, sig_len;
	struct eq_manifest *m = NULL;
	const struct eq_manifest_key *kb[1] = {f->b};
	make_signed(2, "qemux86-64", kb, 1, &data, &len, &sig, &sig_len);
	const char *pub_a[1] = {f->pub_a}, *pubs_ab[2] = {f->pub_a, f->pub_b};
	struct eq_manifest_trust *ta = trust_of(pub_a, 1, 1), *tab2 = trust_of(pubs_ab, 2, 2);
	char msg[200];

	/* unknown key: signed by b, device trusts a */
	snprintf(msg, sizeof(msg), "signed by unknown key %s", eq_manifest_key_id(f->b));
	expect_err(eq_manifest_load_verified(data, len, sig, sig_len, ta, &policy_ok, &m, &e), &e, EQ_ERR_VERIFY, msg);

	/* wrong key: b's signature presented under a's key id */
	char *forged = eq_strdup((char *)sig);
	memcpy(strstr(forged, eq_manifest_key_id(f->b)), eq_manifest_key_id(f->a), EQ_MANIFEST_KEYID_LEN);
	snprintf(msg, sizeof(msg), "signature by key %s does not verify", eq_manifest_key_id(f->a));
	expect_err(eq_manifest_load_verified(data, len, (uint8_t *)forged, strlen(forged), ta, &policy_ok, &m, &e), &e,
		   EQ_ERR_VERIFY, msg);
	eq_free(forged);

	/* threshold 2, one signature */
	expect_err(eq_manifest_load_verified(data, len, sig, sig_len, tab2, &policy_ok, &m, &e), &e, EQ_ERR_VERIFY,
		   "1 of 2 required signatures");
	/* threshold 2 with b and an unknown c: still 1 of 2, c named */
	uint8_t *sig_bc;
	size_t sig_bc_len;
	assert_int_equal(eq_manifest_sign_append(data, len, sig, sig_len, f->c, &sig_bc, &sig_bc_len, &e), EQ_OK);
	expect_err(eq_manifest_verify(data, len, sig_bc, sig_bc_len, tab2, &e), &e, EQ_ERR_VERIFY,
		   "1 of 2 required signatures (also signed by unknown key");
	/* threshold 1: the unknown extra signature is ignored */
	const char *pub_b[1] = {f->pub_b};
	struct eq_manifest_trust *tb = trust_of(pub_b, 1, 1);
	assert_int_equal(eq_manifest_verify(data, len, sig_bc, sig_bc_len, tb, &e), EQ_OK);
	eq_free(sig_bc);

	/* expired, and accepted with the check off */
	struct eq_manifest_policy late = policy_ok;
	late.now = T_EXPIRES;
	expect_err(eq_manifest_load_verified(data, len, sig, sig_len, tb, &late, &m, &e), &e, EQ_ERR_EXPIRED,
		   "expired at 2027-01-02T08:00:00Z (now 2027-01-02T08:00:00Z)");
	late.check_expiry = false;
	assert_int_equal(eq_manifest_load_verified(data, len, sig, sig_len, tb, &late, &m, &e), EQ_OK);
	eq_manifest_free(m);
	m = NULL;

	/* wrong board */
	struct eq_manifest_policy arm = policy_ok;
	arm.board = "qemuarm64";
	expect_err(eq_manifest_load_verified(data, len, sig, sig_len, tb, &arm, &m, &e), &e, EQ_ERR_STATE,
		   "manifest is for board 'qemux86-64', this device is 'qemuarm64'");

	/* mix-and-match: another channel, or another release than asked for */
	struct eq_manifest_policy other = policy_ok;
	other.channel = "beta";
	expect_err(eq_manifest_load_verified(data, len, sig, sig_len, tb, &other, &m, &e), &e, EQ_ERR_STATE,
		   "manifest is for channel 'stable', this device follows 'beta'");
	other.channel = "stable";
	other.number = 3;
	expect_err(eq_manifest_load_verified(data, len, sig, sig_len, tb, &other, &m, &e), &e, EQ_ERR_STATE,
		   "manifest is release number 2, not the 3 asked for");
	other.number = 2;
	assert_int_equal(eq_manifest_load_verified(data, len, sig, sig_len, tb, &other, &m, &e), EQ_OK);
	eq_manifest_free(m);
	m = NULL;

	/* malformed signature files */
	const char *bad_sigs[][3] = {
		{"{\"signatures\":[]}", "EQ_ERR_VERIFY", "0 of 1 required signatures"},
		{"{\"signatures\":[{\"keyid\":\"ab\",\"sig\":\"AA==\"}]}", "EQ_ERR_PARSE",
		 "signatures[0].keyid: expected 64"},
		{"{\"signatures\":{}}", "EQ_ERR_PARSE", "signatures: expected an array"},
		{"{\"sigs\":[]}", "EQ_ERR_PARSE", "unknown key 'sigs'"},
		{"{\"signatures\":[", "EQ_ERR_PARSE", "signature file: line 1 column 16: unexpected end of input"},
	};
	for (size_t i = 0; i < sizeof(bad_sigs) / sizeof(bad_sigs[0]); i++)
		expect_err(
			eq_manifest_verify(data, len, (const uint8_t *)bad_sigs[i][0], strlen(bad_sigs[i][0]), tb, &e),
			&e, code_by_name(bad_sigs[i][1]), bad_sigs[i][2]);
	expect_err(eq_manifest_verify(data, len, sig, EQ_MANIFEST_SIG_MAX_BYTES + 1, tb, &e), &e, EQ_ERR_LIMIT,
		   "more than the limit");
	/* 17 signatures */
	char *many = malloc(65536), *q = many;
	q += sprintf(q, "{\"signatures\":[");
	for (int i = 0; i < 17; i++) {
		char id[65];
		char seed[8];
		snprintf(seed, sizeof(seed), "%d", i);
		hash_of(seed, id);
		q += sprintf(q, "%s{\"keyid\":\"%s\",\"sig\":\"AAAA\"}", i ? "," : "", id);
	}
	sprintf(q, "]}");
	expect_err(eq_manifest_verify(data, len, (uint8_t *)many, strlen(many), tb, &e), &e, EQ_ERR_LIMIT,
		   "more than 16 signatures");
	free(many);

	eq_manifest_trust_free(ta);
	eq_manifest_trust_free(tab2);
	eq_manifest_trust_free(tb);
	eq_free(data);
	eq_free(sig);
}

/* The verified load reports "unsupported" for a signed newer format. */
static void test_unsupported_signed(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	const char *text = "{\n  \"format\": 3,\n  \"whatever\": true\n}\n";
	uint8_t *sig;
	size_t sig_len;
	const struct eq_manifest_key *ka[1] = {f->a};
	assert_int_equal(eq_manifest_sign((const uint8_t *)text, strlen(text), ka, 1, &sig, &sig_len, &e), EQ_OK);
	const char *pub_a[1] = {f->pub_a};
	struct eq_manifest_trust *t = trust_of(pub_a, 1, 1);
	struct eq_manifest *m = NULL;
	expect_err(eq_manifest_load_verified((const uint8_t *)text, strlen(text), sig, sig_len, t, &policy_ok, &m, &e),
		   &e, EQ_ERR_UNSUPPORTED, "format version 3 is not supported");
	eq_manifest_trust_free(t);
	eq_free(sig);
}

/* ---- allocation failures ------------------------------------------------- */

/* The rule eqota-gen diff and eqota provision --release share. */
static void test_release_match(void **state)
{
	(void)state;
	assert_int_equal(eq_manifest_release_match("2026.12-1", 4, "2026.12-1"), EQ_RELEASE_BY_NAME);
	assert_int_equal(eq_manifest_release_match("2026.12-1", 4, "4"), EQ_RELEASE_BY_NUMBER);
	assert_int_equal(eq_manifest_release_match("2026.12-1", 4, "004"), EQ_RELEASE_BY_NUMBER);
	assert_int_equal(eq_manifest_release_match("2026.12-1", 4, "2026"), EQ_RELEASE_NO_MATCH);
	assert_int_equal(eq_manifest_release_match("2026.12-1", 4, ""), EQ_RELEASE_NO_MATCH);
	assert_int_equal(eq_manifest_release_match("2026.12-1", 4, "4 "), EQ_RELEASE_NO_MATCH);
	assert_int_equal(eq_manifest_release_match("2026.12-1", 4, "+4"), EQ_RELEASE_NO_MATCH);
	/* A digits-only name is a name first: it outranks another release's number. */
	assert_true(eq_manifest_release_match("7", 2, "7") > eq_manifest_release_match("r7", 7, "7"));
	uint64_t n = 99;
	assert_true(eq_manifest_release_number_arg("18446744073709551615", &n));
	assert_true(n == UINT64_MAX);
	n = 99;
	assert_false(eq_manifest_release_number_arg("18446744073709551616", &n));
	assert_false(eq_manifest_release_number_arg("-1", &n));
	assert_false(eq_manifest_release_number_arg("", &n));
	assert_true(n == 99);
}

#ifdef EQ_TEST_HOOKS
static void test_alloc_failures(void **state)
{
	struct fx *f = *state;
	struct eq_error e;
	uint8_t *data, *sig, *tj;
	size_t len, sig_len, tjlen;
	const struct eq_manifest_key *keys[2] = {f->a, f->b};
	make_signed(5, "qemux86-64", keys, 2, &data, &len, &sig, &sig_len);
	const char *pubs[2] = {f->pub_a, f->pub_b};
	struct eq_manifest_trust *t = trust_of(pubs, 2, 2);
	assert_int_equal(eq_manifest_trust_to_json(t, &tj, &tjlen, &e), EQ_OK);

	unsigned long n;
	/* parser */
	for (n = 1;; n++) {
		struct eq_manifest *m = NULL;
		eq_alloc_fail_at(n);
		eq_err r = eq_manifest_parse_unverified(data, len, &m, &e);
		eq_alloc_fail_at(0);
		eq_manifest_free(m);
		if (r == EQ_OK)
			break;
		if (r != EQ_ERR_NOMEM)
			fail_msg("parse, allocation %lu: %s '%s'", n, eq_err_str(r), e.msg);
	}
	assert_true(n > 10);
	/* verified load: signatures, then parser */
	for (n = 1;; n++) {
		struct eq_manifest *m = NULL;
		eq_alloc_fail_at(n);
		eq_err r = eq_manifest_load_verified(data, len, sig, sig_len, t, &policy_ok, &m, &e);
		eq_alloc_fail_at(0);
		eq_manifest_free(m);
		if (r == EQ_OK)
			break;
		if (r != EQ_ERR_NOMEM)
			fail_msg("load_verified, allocation %lu: %s '%s'", n, eq_err_str(r), e.msg);
	}
	/* trust parser */
	for (n = 1;; n++) {
		struct eq_manifest_trust *t2 = NULL;
		eq_alloc_fail_at(n);
		eq_err r = eq_manifest_trust_parse(tj, tjlen, &t2, &e);
		eq_alloc_fail_at(0);
		eq_manifest_trust_free(t2);
		if (r == EQ_OK)
			break;
		if (r != EQ_ERR_NOMEM)
			fail_msg("trust_parse, allocation %lu: %s '%s'", n, eq_err_str(r), e.msg);
	}
	/* writer */
	struct eq_manifest *m = make_manifest(5, "qemux86-64");
	for (n = 1;; n++) {
		uint8_t *out = NULL;
		size_t olen;
		eq_alloc_fail_at(n);
		eq_err r = eq_manifest_to_json(m, &out, &olen, &e);
		eq_alloc_fail_at(0);
		eq_free(out);
		if (r == EQ_OK)
			break;
		assert_int_equal(r, EQ_ERR_NOMEM);
	}
	eq_manifest_free(m);
	eq_manifest_trust_free(t);
	eq_free(tj);
	eq_free(data);
	eq_free(sig);
}
#else
EQ_HOOKS_MISSING(test_alloc_failures)
#endif

int main(int argc, char **argv)
{
	/* Route cJSON through eq_malloc, once at startup (STYLE 20), so the
	 * allocation-failure loop reaches cJSON's allocations too. */
	cJSON_Hooks hooks = {.malloc_fn = eq_malloc, .free_fn = eq_free};
	cJSON_InitHooks(&hooks);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_model_rules),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_packages_walk),
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_image),
		cmocka_unit_test(test_keygen),
		cmocka_unit_test(test_sign_verify),
		cmocka_unit_test(test_tamper_every_byte),
		cmocka_unit_test(test_verify_failures),
		cmocka_unit_test(test_unsupported_signed),
		cmocka_unit_test(test_release_match),
		cmocka_unit_test(test_alloc_failures),
	};
	return eq_test_run(tests, setup, teardown, argc, argv);
}
