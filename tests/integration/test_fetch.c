/*
 * Integration test of eq_fetcher (agent/fetch.c) against real servers on
 * 127.0.0.1, started by test_fetch.sh: lighttpd for normal behaviour
 * (conditional GET, Range) and badhttp.py for faults. The ports and the
 * served directory come from the environment (EQ_HTTPD: HTTPD_PORT,
 * HTTPD_ACCESS_LOG; EQ_BAD_<MODE>_PORT; EQ_WWW; EQ_WORK; EQ_LOG_DIR).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/agent.h>

#include "../../agent/fetch.h"

static unsigned test_no;

static const char *env(const char *name)
{
	const char *v = secure_getenv(name);
	if (!v || !*v)
		fail_msg("%s is not set: run this through test_fetch.sh", name);
	return v;
}

static void write_file(const char *path, const void *data, size_t len)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	struct eq_error e;
	assert_int_equal(eq_mkdir_p(dir, 0755, &e), EQ_OK);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Deterministic pseudo-random content, so failures reproduce. */
static uint8_t *make_data(size_t len, uint32_t seed)
{
	uint8_t *d = malloc(len ? len : 1);
	assert_non_null(d);
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1664525u + 1013904223u;
		d[i] = (uint8_t)(seed >> 24);
	}
	return d;
}

static void sha_hex(const void *d, size_t len, char out[EQ_SHA256_HEX_LEN + 1])
{
	uint8_t h[EQ_SHA256_LEN];
	eq_sha256(d, len, h);
	eq_hex_encode(h, sizeof(h), out);
}

/* Publishes @len bytes as objects/<sha> in the served tree. */
static uint8_t *publish_object(size_t len, uint32_t seed, char sha[EQ_SHA256_HEX_LEN + 1], char rel[128])
{
	uint8_t *d = make_data(len, seed);
	char path[1024];
	sha_hex(d, len, sha);
	snprintf(rel, 128, "objects/%s", sha);
	snprintf(path, sizeof(path), "%s/%s", env("EQ_WWW"), rel);
	write_file(path, d, len);
	return d;
}

struct fx {
	struct eq_config cfg;
	char url[512];
	char dl[512];
	struct eq_fetcher *f;
};

/* A fetcher for the server on the port in @port_env, with its own download
 * directory. */
static struct fx *fx_new(const char *port_env, unsigned retries, const char *board)
{
	struct fx *x = calloc(1, sizeof(*x));
	assert_non_null(x);
	snprintf(x->url, sizeof(x->url), "http://127.0.0.1:%s/", env(port_env));
	snprintf(x->dl, sizeof(x->dl), "%s/dl-%u", env("EQ_WORK"), ++test_no);
	x->cfg.url = x->url;
	x->cfg.board = (char *)(uintptr_t)board;
	x->cfg.channel = (char *)(uintptr_t) "stable";
	x->cfg.connect_timeout_s = 5;
	x->cfg.low_speed_time_s = 2;
	x->cfg.retries = retries;
	x->cfg.retry_delay_ms = 10;
	struct eq_error e;
	if (eq_fetcher_new(&x->cfg, x->dl, &x->f, &e) != EQ_OK)
		fail_msg("eq_fetcher_new: %s", e.msg);
	return x;
}

static void fx_free(struct fx *x)
{
	eq_fetcher_free(x->f);
	free(x);
}

static struct eq_fetch_stats stats(const struct fx *x)
{
	struct eq_fetch_stats s;
	eq_fetcher_stats(x->f, &s);
	return s;
}

/* Waits until @log has a
 * line containing @needle; returns how many such lines there are. */
static unsigned log_count(const char *log, const char *needle, unsigned at_least)
{
	unsigned n = 0;
	/* lighttpd buffers its access log for up to 4 s; SIGHUP flushes it
	 * (see httpd_log_flush in lib/httpd.sh) */
	if (strcmp(log, env("HTTPD_ACCESS_LOG")) == 0)
		assert_int_equal(kill((pid_t)atol(env("HTTPD_PID")), SIGHUP), 0);
	for (int tries = 0; tries < 60; tries++) {
		n = 0;
		FILE *f = fopen(log, "r");
		char line[4096];
		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, needle))
				n++;
		if (f)
			fclose(f);
		if (n >= at_least)
			break;
		usleep(100 * 1000);
	}
	return n;
}

static void expect_err(eq_err got, const struct eq_error *e, eq_err want, const char *substr)
{
	if (got != want || (substr && !strstr(e->msg, substr)))
		fail_msg("got %s '%s', want %s containing '%s'", eq_err_str(got), e->msg, eq_err_str(want),
			 substr ? substr : "");
}

/* ---- manifest ----------------------------------------------------------- */

static void test_manifest_conditional(void **state)
{
	(void)state;
	const char *m = "{\"format\":1}\n", *sig = "signature bytes";
	char path[1024];
	snprintf(path, sizeof(path), "%s/boards/cond/stable/manifest.json", env("EQ_WWW"));
	write_file(path, m, strlen(m));
	snprintf(path, sizeof(path), "%s/boards/cond/stable/manifest.json.sig", env("EQ_WWW"));
	write_file(path, sig, strlen(sig));

	struct fx *x = fx_new("HTTPD_PORT", 0, "cond");
	struct eq_error e;
	bool nm = true;
	uint8_t *mb = NULL, *sb = NULL;
	size_t ml = 0, sl = 0;
	/* 1: full GET */
	assert_int_equal(eq_fetch_manifest(x->f, &nm, &mb, &ml, &sb, &sl, &e), EQ_OK);
	assert_false(nm);
	assert_int_equal(ml, strlen(m));
	assert_memory_equal(mb, m, ml);
	assert_int_equal(sl, strlen(sig));
	assert_memory_equal(sb, sig, sl);
	eq_free(mb);
	eq_free(sb);
	/* 2: not committed, so still a full GET */
	assert_int_equal(eq_fetch_manifest(x->f, &nm, &mb, &ml, &sb, &sl, &e), EQ_OK);
	assert_false(nm);
	eq_free(mb);
	eq_free(sb);
	assert_int_equal(eq_fetch_manifest_commit(x->f, &e), EQ_OK);
	snprintf(path, sizeof(path), "%s/manifest.validators", x->dl);
	assert_true(exists(path));
	/* 3: conditional, 304, no .sig request */
	assert_int_equal(eq_fetch_manifest(x->f, &nm, &mb, &ml, &sb, &sl, &e), EQ_OK);
	assert_true(nm);
	assert_null(mb);
	assert_null(sb);
	assert_int_equal(stats(x).not_modified, 1);
	assert_int_equal(stats(x).requests, 5);
	/* a new fetcher (a restarted agent) reads the validators file */
	fx_free(x);
	x = fx_new("HTTPD_PORT", 0, "cond");
	snprintf(x->dl, sizeof(x->dl), "%s/dl-%u", env("EQ_WORK"), test_no - 1);
	eq_fetcher_free(x->f);
	assert_int_equal(eq_fetcher_new(&x->cfg, x->dl, &x->f, &e), EQ_OK);
	assert_int_equal(eq_fetch_manifest(x->f, &nm, &mb, &ml, &sb, &sl, &e), EQ_OK);
	assert_true(nm);
	/* 4: forget: a full GET again */
	eq_fetch_manifest_forget(x->f);
	assert_false(exists(path));
	assert_int_equal(eq_fetch_manifest(x->f, &nm, &mb, &ml, &sb, &sl, &e), EQ_OK);
	assert_false(nm);
	eq_free(mb);
	eq_free(sb);
	assert_int_equal(stats(x).requests, 3);
	fx_free(x);

	const char *log = env("HTTPD_ACCESS_LOG");
	assert_int_equal(log_count(log, "GET /boards/cond/stable/manifest.json 304 ", 2), 2);
	assert_int_equal(log_count(log, "GET /boards/cond/stable/manifest.json 200 ", 3), 3);
	assert_int_equal(log_count(log, "GET /boards/cond/stable/manifest.json.sig 200 ", 3), 3);
}

static void test_manifest_too_large(void **state)
{
	(void)state;
	char path[1024];
	size_t len = EQ_MANIFEST_MAX_BYTES + 1;
	uint8_t *big = make_data(len, 7);
	snprintf(path, sizeof(path), "%s/boards/big/stable/manifest.json", env("EQ_WWW"));
	write_file(path, big, len);
	free(big);
	struct fx *x = fx_new("HTTPD_PORT", 3, "big");
	struct eq_error e;
	bool nm = true;
	uint8_t *mb = NULL, *sb = NULL;
	size_t ml = 0, sl = 0;
	expect_err(eq_fetch_manifest(x->f, &nm, &mb, &ml, &sb, &sl, &e), &e, EQ_ERR_LIMIT,
		   "more than the limit of 16777216 bytes for boards/big/stable/manifest.json");
	assert_int_equal(stats(x).requests, 1); /* a limit is not retried */
	assert_true(stats(x).bytes < len);      /* refused on Content-Length */
	fx_free(x);

	/* a missing manifest: not found, not retried */
	x = fx_new("HTTPD_PORT", 3, "none");
	expect_err(eq_fetch_manifest(x->f, &nm, &mb, &ml, &sb, &sl, &e), &e, EQ_ERR_NOTFOUND,
		   "/boards/none/stable/manifest.json: HTTP 404");
	assert_int_equal(stats(x).requests, 1);
	fx_free(x);
}

/* ---- objects ------------------------------------------------------------ */

struct prog {
	unsigned calls;
	uint64_t last_done, total;
};

static void on_progress(const struct eq_progress *p, void *ctx)
{
	struct prog *pr = ctx;
	pr->calls++;
	pr->last_done = p->bytes_done;
	pr->total = p->bytes_total;
}

static void test_object_ok_and_cached(void **state)
{
	(void)state;
	char sha[EQ_SHA256_HEX_LEN + 1], rel[128], part[1024];
	size_t len = 300 * 1024;
	uint8_t *d = publish_object(len, 1, sha, rel);
	struct fx *x = fx_new("HTTPD_PORT", 0, "b");
	struct prog pr = {0};
	eq_fetcher_set_progress(x->f, on_progress, &pr);
	struct eq_error e;
	char *out = NULL;
	assert_int_equal(eq_fetch_object(x->f, rel, sha, len, &out, &e), EQ_OK);
	uint8_t *got = NULL;
	size_t glen = 0;
	assert_int_equal(eq_file_read_all(out, len + 1, &got, &glen, &e), EQ_OK);
	assert_int_equal(glen, len);
	assert_memory_equal(got, d, len);
	eq_free(got);
	snprintf(part, sizeof(part), "%s.part", out);
	assert_false(exists(part));
	assert_true(pr.calls >= 1);
	assert_int_equal(pr.last_done, len);
	assert_int_equal(pr.total, len);
	assert_int_equal(stats(x).requests, 1);
	assert_int_equal(stats(x).bytes, len);
	eq_free(out);
	/* already complete: no request at all */
	assert_int_equal(eq_fetch_object(x->f, rel, sha, len, &out, &e), EQ_OK);
	assert_int_equal(stats(x).requests, 1);
	eq_free(out);
	fx_free(x);
	free(d);
}

static void test_object_corrupt(void **state)
{
	(void)state;
	char sha[EQ_SHA256_HEX_LEN + 1], rel[128], path[1024];
	size_t len = 4096;
	uint8_t *d = publish_object(len, 2, sha, rel);
	/* the server's copy is damaged in one byte */
	d[100] ^= 1;
	snprintf(path, sizeof(path), "%s/%s", env("EQ_WWW"), rel);
	write_file(path, d, len);
	struct fx *x = fx_new("HTTPD_PORT", 2, "b");
	struct eq_error e;
	char *out = NULL;
	expect_err(eq_fetch_object(x->f, rel, sha, len, &out, &e), &e, EQ_ERR_VERIFY, "SHA-256 is");
	snprintf(path, sizeof(path), "%s/%s", x->dl, sha);
	assert_false(exists(path));
	snprintf(path, sizeof(path), "%s/%s.part", x->dl, sha);
	assert_false(exists(path));
	assert_int_equal(stats(x).requests, 1);
	fx_free(x);
	free(d);
}

static void test_object_404(void **state)
{
	(void)state;
	char sha[EQ_SHA256_HEX_LEN + 1], rel[128], path[1024];
	sha_hex("nothing", 7, sha);
	snprintf(rel, sizeof(rel), "objects/%s", sha);
	struct fx *x = fx_new("HTTPD_PORT", 5, "b");
	struct eq_error e;
	char *out = NULL;
	expect_err(eq_fetch_object(x->f, rel, sha, 10, &out, &e), &e, EQ_ERR_NOTFOUND, "HTTP 404");
	assert_non_null(strstr(e.msg, rel));
	assert_int_equal(stats(x).requests, 1);
	snprintf(path, sizeof(path), "%s/%s.part", x->dl, sha);
	assert_false(exists(path));
	fx_free(x);
}

/* A .part from an earlier run is continued with a Range request (lighttpd). */
static void test_object_resume_part(void **state)
{
	(void)state;
	char sha[EQ_SHA256_HEX_LEN + 1], rel[128], path[1024], needle[256];
	size_t len = 100000;
	uint8_t *d = publish_object(len, 3, sha, rel);
	struct fx *x = fx_new("HTTPD_PORT", 0, "b");
	snprintf(path, sizeof(path), "%s/%s.part", x->dl, sha);
	write_file(path, d, 40000);
	struct eq_error e;
	char *out = NULL;
	assert_int_equal(eq_fetch_object(x->f, rel, sha, len, &out, &e), EQ_OK);
	eq_free(out);
	assert_int_equal(stats(x).resumed, 1);
	assert_int_equal(stats(x).bytes, len - 40000);
	snprintf(needle, sizeof(needle), "GET /%s 206 60000 bytes=40000-", rel);
	assert_int_equal(log_count(env("HTTPD_ACCESS_LOG"), needle, 1), 1);
	fx_free(x);
	free(d);
}

static void test_object_truncated_then_resumed(void **state)
{
	(void)state;
	char sha[EQ_SHA256_HEX_LEN + 1], rel[128], needle[256], log[1024];
	size_t len = 64 * 1024;
	uint8_t *d = publish_object(len, 4, sha, rel);
	struct fx *x = fx_new("EQ_BAD_TRUNCATE_PORT", 2, "b");
	struct eq_error e;
	char *out = NULL;
	assert_int_equal(eq_fetch_object(x->f, rel, sha, len, &out, &e), EQ_OK);
	eq_free(out);
	assert_int_equal(stats(x).requests, 2);
	assert_int_equal(stats(x).resumed, 1);
	assert_int_equal(stats(x).bytes, len);
	snprintf(log, sizeof(log), "%s/bad-truncate.log", env("EQ_LOG_DIR"));
	snprintf(needle, sizeof(needle), "GET /%s 206 %zu bytes=%zu-", rel, len - len / 2, len / 2);
	assert_int_equal(log_count(log, needle, 1), 1);
	fx_free(x);
	free(d);
}

static void test_object_more(void **state)
{
	(void)state;
	char sha[EQ_SHA256_HEX_LEN + 1], rel[128], path[1024], want[256];
	size_t len = 1234;
	uint8_t *d = publish_object(len, 5, sha, rel);
	struct fx *x = fx_new("EQ_BAD_MORE_PORT", 3, "b");
	struct eq_error e;
	char *out = NULL;
	snprintf(want, sizeof(want), "server sent more than the 1234 bytes the manifest declares for %s", rel);
	expect_err(eq_fetch_object(x->f, rel, sha, len, &out, &e), &e, EQ_ERR_LIMIT, want);
	assert_int_equal(stats(x).requests, 1);
	snprintf(path, sizeof(path), "%s/%s.part", x->dl, sha);
	assert_false(exists(path));
	fx_free(x);
	free(d);
}

static void test_object_flaky(void **state)
{
	(void)state;
	char sha[EQ_SHA256_HEX_LEN + 1], rel[128];
	size_t len = 5000;
	uint8_t *d = publish_object(len, 6, sha, rel);
	struct fx *x = fx_new("EQ_BAD_FLAKY_PORT", 2, "b");
	struct eq_error e;
	char *out = NULL;
	assert_int_equal(eq_fetch_object(x->f, rel, sha, len, &out, &e), EQ_OK);
	eq_free(out);
	assert_int_equal(stats(x).requests, 2);
	fx_free(x);

	/* with no retries the 503 is the answer */
	free(d);
	d = publish_object(len, 16, sha, rel);
	x = fx_new("EQ_BAD_FLAKY_PORT", 0, "b");
	expect_err(eq_fetch_object(x->f, rel, sha, len, &out, &e), &e, EQ_ERR_NETWORK, "HTTP 503");
	fx_free(x);
	free(d);
}

static void test_object_slow(void **state)
{
	(void)state;
	char sha[EQ_SHA256_HEX_LEN + 1], rel[128];
	size_t len = 1000;
	uint8_t *d = publish_object(len, 8, sha, rel);
	struct fx *x = fx_new("EQ_BAD_SLOW_PORT", 0, "b");
	struct eq_error e;
	char *out = NULL;
	double t0 = eq_now_s();
	expect_err(eq_fetch_object(x->f, rel, sha, len, &out, &e), &e, EQ_ERR_NETWORK, "too slow");
	double took = eq_now_s() - t0;
	assert_true(took >= 1.5 && took < 10);
	fx_free(x);
	free(d);
}

static void test_object_ignore_range(void **state)
{
	(void)state;
	char sha[EQ_SHA256_HEX_LEN + 1], rel[128], path[1024];
	size_t len = 50000;
	uint8_t *d = publish_object(len, 9, sha, rel);
	struct fx *x = fx_new("EQ_BAD_IGNORE_RANGE_PORT", 0, "b");
	/* a .part of wrong bytes: appending the whole file to it would fail
	 * the hash, so success shows the .part was started over */
	uint8_t *junk = make_data(20000, 99);
	snprintf(path, sizeof(path), "%s/%s.part", x->dl, sha);
	write_file(path, junk, 20000);
	free(junk);
	struct eq_error e;
	char *out = NULL;
	assert_int_equal(eq_fetch_object(x->f, rel, sha, len, &out, &e), EQ_OK);
	eq_free(out);
	assert_int_equal(stats(x).requests, 1);
	assert_int_equal(stats(x).resumed, 0);
	fx_free(x);
	free(d);
}

/* file:// repositories (a USB stick, a test tree): no HTTP status, curl
 * applies the range itself. */
static void test_object_file_url(void **state)
{
	(void)state;
	char sha[EQ_SHA256_HEX_LEN + 1], rel[128], path[1024];
	size_t len = 30000;
	uint8_t *d = publish_object(len, 10, sha, rel);
	struct fx *x = fx_new("HTTPD_PORT", 0, "b");
	eq_fetcher_free(x->f);
	snprintf(x->url, sizeof(x->url), "file://%s", env("EQ_WWW"));
	struct eq_error e;
	assert_int_equal(eq_fetcher_new(&x->cfg, x->dl, &x->f, &e), EQ_OK);
	snprintf(path, sizeof(path), "%s/%s.part", x->dl, sha);
	write_file(path, d, 1000);
	char *out = NULL;
	assert_int_equal(eq_fetch_object(x->f, rel, sha, len, &out, &e), EQ_OK);
	eq_free(out);
	assert_int_equal(stats(x).resumed, 1);
	assert_int_equal(stats(x).bytes, len - 1000);
	sha_hex("missing", 7, sha);
	snprintf(rel, sizeof(rel), "objects/%s", sha);
	expect_err(eq_fetch_object(x->f, rel, sha, 10, &out, &e), &e, EQ_ERR_NOTFOUND, rel);
	fx_free(x);
	free(d);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	struct fx *x = fx_new("HTTPD_PORT", 0, "b");
	struct eq_error e;
	char *out = NULL;
	char sha[EQ_SHA256_HEX_LEN + 1];
	sha_hex("x", 1, sha);
	expect_err(eq_fetch_object(x->f, "../etc/passwd", sha, 1, &out, &e), &e, EQ_ERR_UNSAFE,
		   "not a repository path");
	expect_err(eq_fetch_object(x->f, "objects/x", "../../x", 1, &out, &e), &e, EQ_ERR_INVAL, "is not a SHA-256");
	assert_int_equal(stats(x).requests, 0);
	fx_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_manifest_conditional),
		cmocka_unit_test(test_manifest_too_large),
		cmocka_unit_test(test_object_ok_and_cached),
		cmocka_unit_test(test_object_corrupt),
		cmocka_unit_test(test_object_404),
		cmocka_unit_test(test_object_resume_part),
		cmocka_unit_test(test_object_truncated_then_resumed),
		cmocka_unit_test(test_object_more),
		cmocka_unit_test(test_object_flaky),
		cmocka_unit_test(test_object_slow),
		cmocka_unit_test(test_object_ignore_range),
		cmocka_unit_test(test_object_file_url),
		cmocka_unit_test(test_bad_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
