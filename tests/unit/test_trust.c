/*
 * Root of trust, rotation, timestamp and the device's trust store
 * (manifest/manifest_root.c, manifest/manifest_trust.c). The cases named
 * threat_* follow TUF's list of attacks, each run as a CTest test of its
 * own (unit.trust.threat_*); docs/security.md has the table. The
 * "repository" is a table in memory served through the same fetch callback
 * the agent gives eq_trust_refresh(), with the size cap the real fetcher
 * enforces.
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

#include <cJSON.h>

#include <eq/manifest.h>

#include "eq_test.h"

#define T0 INT64_C(1780000000) /* 2026-05-28 */
#define HOUR INT64_C(3600)
#define DAY INT64_C(86400)

/* ---- keys (made once) --------------------------------------------------- */

static const char *const KEY_NAMES[] = {"R1", "R2", "R3", "K1", "K2", "T1", "T2"};
#define N_KEYS (sizeof(KEY_NAMES) / sizeof(KEY_NAMES[0]))

static char topdir[64] = "/tmp/eq-trust-XXXXXX";
static struct eq_manifest_key *keys[N_KEYS];

static size_t key_index(const char *name, size_t len)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strlen(KEY_NAMES[i]) == len && !strncmp(KEY_NAMES[i], name, len))
			return i;
	fail_msg("no test key %.*s", (int)len, name);
	return 0;
}

/* A role from "R1,R2" and a threshold. */
static struct eq_manifest_trust *role(const char *names, unsigned th)
{
	char *paths[N_KEYS] = {NULL};
	size_t n = 0;
	for (const char *p = names; *p;) {
		size_t l = strcspn(p, ",");
		paths[n] = eq_asprintf("%s/%.*s.pub", topdir, (int)l, p);
		assert_non_null(paths[n]);
		n++;
		p += l + (p[l] == ',');
	}
	struct eq_manifest_trust *t = NULL;
	struct eq_error e;
	eq_err r = eq_manifest_trust_from_pubkeys((const char *const *)paths, n, th, &t, &e);
	for (size_t i = 0; i < n; i++)
		eq_free(paths[i]);
	assert_int_equal(r, EQ_OK);
	return t;
}

/* The signature file by the keys named in "R1,K1". */
static uint8_t *sign(const uint8_t *d, size_t n, const char *signers, size_t *ret_len)
{
	const struct eq_manifest_key *ks[N_KEYS];
	size_t m = 0;
	for (const char *p = signers; *p;) {
		size_t l = strcspn(p, ",");
		ks[m++] = keys[key_index(p, l)];
		p += l + (p[l] == ',');
	}
	uint8_t *sig = NULL;
	struct eq_error e;
	assert_int_equal(eq_manifest_sign(d, n, ks, m, &sig, ret_len, &e), EQ_OK);
	return sig;
}

/* ---- the repository ----------------------------------------------------- */

struct file {
	char path[128];
	uint8_t *data;
	size_t len;
};

static struct repo {
	struct file f[64];
	size_t n;
	unsigned fetches;
	size_t manifest_max;   /* the cap asked for manifest.json */
	const char *fail_path; /* this path fails with EQ_ERR_NETWORK */
	/* Conditional requests (@have_sha256): answer "unchanged" when the
	 * file still has those bytes (a 304), or always (a lying server). */
	bool cond, lie_unchanged;
	unsigned not_modified;
	char log[2048]; /* the paths fetched, one per line */
} repo;

static void repo_clear(void)
{
	for (size_t i = 0; i < repo.n; i++)
		eq_free(repo.f[i].data);
	memset(&repo, 0, sizeof(repo));
}

static struct file *repo_find(const char *path)
{
	for (size_t i = 0; i < repo.n; i++)
		if (!strcmp(repo.f[i].path, path))
			return &repo.f[i];
	return NULL;
}

/* Takes @d (eq_malloc'ed). */
static void put(const char *path, uint8_t *d, size_t n)
{
	struct file *f = repo_find(path);
	if (!f) {
		assert_true(repo.n < 64);
		f = &repo.f[repo.n++];
		assert_true(snprintf(f->path, sizeof(f->path), "%s", path) < (int)sizeof(f->path));
	} else {
		eq_free(f->data);
	}
	f->data = d;
	f->len = n;
}

static void put_copy(const char *path, const uint8_t *d, size_t n)
{
	uint8_t *c = eq_malloc(n ? n : 1);
	assert_non_null(c);
	memcpy(c, d, n);
	put(path, c, n);
}

static void drop(const char *path)
{
	struct file *f = repo_find(path);
	if (f) {
		eq_free(f->data);
		*f = repo.f[--repo.n];
	}
}

static void put_signed(const char *path, uint8_t *d, size_t n, const char *signers)
{
	size_t sl;
	uint8_t *sig = sign(d, n, signers, &sl);
	char sp[140];
	snprintf(sp, sizeof(sp), "%s.sig", path);
	put(sp, sig, sl);
	put(path, d, n);
}

static eq_err fetch(void *ctx, const char *path, size_t max, const char *expect, const char *have, uint8_t **ret,
		    size_t *ret_len, struct eq_error *err)
{
	(void)ctx;
	(void)expect;
	repo.fetches++;
	size_t ll = strlen(repo.log);
	snprintf(repo.log + ll, sizeof(repo.log) - ll, "%s\n", path);
	if (strstr(path, "manifest.json") && !strstr(path, ".sig"))
		repo.manifest_max = max;
	if (repo.fail_path && !strcmp(path, repo.fail_path))
		return eq_error_set(err, EQ_ERR_NETWORK, "%s: transfer too slow", path);
	const struct file *f = repo_find(path);
	if (!f)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "%s: 404", path);
	/* As the real fetcher: never more than @max bytes. */
	if (f->len > max)
		return eq_error_set(err, EQ_ERR_LIMIT, "%s: more than %zu bytes", path, max);
	if (have && (repo.cond || repo.lie_unchanged)) {
		uint8_t h[EQ_SHA256_LEN];
		char hex[EQ_SHA256_HEX_LEN + 1];
		eq_sha256(f->data, f->len, h);
		eq_hex_encode(h, sizeof(h), hex);
		if (repo.lie_unchanged || !strcmp(hex, have)) {
			repo.not_modified++;
			*ret = NULL;
			*ret_len = 0;
			return EQ_OK;
		}
	}
	*ret = eq_malloc(f->len ? f->len : 1);
	assert_non_null(*ret);
	memcpy(*ret, f->data, f->len);
	*ret_len = f->len;
	return EQ_OK;
}

/* ---- documents ---------------------------------------------------------- */

/* Root version @v with roles "R1"/th etc., signed by @signers, published at
 * root/<v>.root.json. */
static void root_doc(uint64_t v, int64_t issued, int64_t expires, const char *rk, unsigned rt, const char *kk,
		     unsigned kt, const char *tk, unsigned tt, const char *signers)
{
	struct eq_manifest_trust *roles[EQ_ROLE_COUNT] = {role(rk, rt), role(kk, kt), role(tk, tt)};
	struct eq_root_info info = {.version = v, .issued = issued, .expires = expires};
	uint8_t *d = NULL;
	size_t n = 0;
	struct eq_error e;
	assert_int_equal(eq_root_to_json(&info, (const struct eq_manifest_trust *const *)roles, &d, &n, &e), EQ_OK);
	for (int i = 0; i < EQ_ROLE_COUNT; i++)
		eq_manifest_trust_free(roles[i]);
	char path[64];
	snprintf(path, sizeof(path), "root/%" PRIu64 ".root.json", v);
	put_signed(path, d, n, signers);
}

/* The usual root version @v: root R1, release K1, timestamp T1, a year. */
static void root_plain(uint64_t v)
{
	root_doc(v, T0, T0 + 365 * DAY, "R1", 1, "K1", 1, "T1", 1, "R1");
}

static void manifest_doc(const char *board, const char *channel, uint64_t number, int64_t issued, int64_t expires,
			 const char *signers, int n_pkgs)
{
	struct eq_manifest *m = NULL;
	struct eq_error e;
	char rel[32];
	snprintf(rel, sizeof(rel), "r%" PRIu64, number);
	struct eq_manifest_header h = {.board = board,
				       .channel = channel,
				       .release = rel,
				       .number = number,
				       .issued = issued,
				       .expires = expires};
	assert_int_equal(eq_manifest_new(&m, &e), EQ_OK);
	assert_int_equal(eq_manifest_set_header(m, &h, &e), EQ_OK);
	for (int i = 0; i < n_pkgs; i++) {
		char name[16];
		snprintf(name, sizeof(name), "pkg%d", i);
		struct eq_manifest_package p = {.name = name, .version = "1.0", .arch = "all"};
		memset(p.taskhash, 'a', 64);
		memset(p.unihash, 'b', 64);
		memset(p.payload.sha256, 'c', 64);
		p.payload.size = 10;
		snprintf(p.object.sha256, sizeof(p.object.sha256), "%064d", i);
		snprintf(p.object.path, sizeof(p.object.path), "objects/%s", p.object.sha256);
		p.object.size = 10;
		struct eq_manifest_package q = p;
		q.taskhash[64] = q.unihash[64] = q.payload.sha256[64] = '\0';
		if (eq_manifest_add_package(m, &q, &e) != EQ_OK)
			fail_msg("add_package: %s", e.msg);
	}
	uint8_t *d = NULL;
	size_t n = 0;
	assert_int_equal(eq_manifest_to_json(m, &d, &n, &e), EQ_OK);
	eq_manifest_free(m);
	char path[128];
	snprintf(path, sizeof(path), "boards/%s/%s/manifest.json", board, channel);
	put_signed(path, d, n, signers);
}

/* A timestamp for what is now at boards/<board>/<channel>/manifest.json
 * (or @of_path), published at boards/<at_board>/<at_channel>/. */
static void timestamp_doc_at(const char *board, const char *channel, const char *of_path, const char *at_path,
			     uint64_t version, int64_t issued, int64_t expires, uint64_t number, const char *signers)
{
	const struct file *mf = repo_find(of_path);
	assert_non_null(mf);
	struct eq_timestamp ts = {.version = version, .issued = issued, .expires = expires, .number = number};
	snprintf(ts.board, sizeof(ts.board), "%s", board);
	snprintf(ts.channel, sizeof(ts.channel), "%s", channel);
	uint8_t h[EQ_SHA256_LEN];
	eq_sha256(mf->data, mf->len, h);
	eq_hex_encode(h, sizeof(h), ts.sha256);
	ts.size = mf->len;
	uint8_t *d = NULL;
	size_t n = 0;
	struct eq_error e;
	assert_int_equal(eq_timestamp_to_json(&ts, &d, &n, &e), EQ_OK);
	put_signed(at_path, d, n, signers);
}

static void timestamp_doc(uint64_t version, int64_t issued, int64_t expires, uint64_t number, const char *signers)
{
	timestamp_doc_at("b1", "stable", "boards/b1/stable/manifest.json", "boards/b1/stable/timestamp.json", version,
			 issued, expires, number, signers);
}

/* Release @number of b1/stable: manifest by K1, timestamp by T1. */
static void release(uint64_t number, uint64_t ts_version, int64_t issued)
{
	manifest_doc("b1", "stable", number, issued, issued + 30 * DAY, "K1", 1);
	timestamp_doc(ts_version, issued, issued + 12 * HOUR, number, "T1");
}

/* ---- the device --------------------------------------------------------- */

static unsigned device_no;
static char devdir[128];

/* A new device whose image holds root/<v>.root.json of the repository. */
static void device_install(uint64_t v)
{
	snprintf(devdir, sizeof(devdir), "%s/dev%u", topdir, ++device_no);
	struct eq_error e;
	assert_int_equal(eq_mkdir_p(devdir, 0755, &e), EQ_OK);
	char src[64], dst[160];
	snprintf(src, sizeof(src), "root/%" PRIu64 ".root.json", v);
	const struct file *f = repo_find(src);
	assert_non_null(f);
	snprintf(dst, sizeof(dst), "%s/root.json", devdir);
	assert_int_equal(eq_file_replace_atomic(dst, f->data, f->len, 0644, &e), EQ_OK);
	strcat(src, ".sig");
	f = repo_find(src);
	assert_non_null(f);
	strcat(dst, ".sig");
	assert_int_equal(eq_file_replace_atomic(dst, f->data, f->len, 0644, &e), EQ_OK);
}

static struct eq_trust *device_open(void)
{
	char tdir[160], rp[160];
	snprintf(tdir, sizeof(tdir), "%s/trust", devdir);
	snprintf(rp, sizeof(rp), "%s/root.json", devdir);
	struct eq_trust *t = NULL;
	struct eq_error e;
	if (eq_trust_open(tdir, rp, &t, &e) != EQ_OK)
		fail_msg("eq_trust_open: %s", e.msg);
	return t;
}

/* The common start: root 1 (R1, K1, T1) and release 1 published, a device
 * installed with root 1. */
static struct eq_trust *device_on_release1(void)
{
	root_plain(1);
	release(1, 1, T0);
	device_install(1);
	return device_open();
}

/* One update check; returns its code, the message in @e. */
static eq_err check(struct eq_trust *t, int64_t clock, struct eq_error *e, uint64_t *ret_number)
{
	struct eq_trust_result res;
	eq_err r = eq_trust_refresh(t, fetch, NULL, "b1", "stable", clock, &res, e);
	if (r == EQ_OK) {
		struct eq_manifest_header h;
		assert_int_equal(eq_manifest_get_header(res.m, &h, e), EQ_OK);
		if (ret_number)
			*ret_number = h.number;
		eq_trust_result_done(&res);
	}
	return r;
}

static uint64_t root_ver(const struct eq_trust *t)
{
	struct eq_root_info info;
	eq_root_get_info(eq_trust_root(t), &info);
	return info.version;
}

#define assert_msg(e, needle)                                                                                          \
	do {                                                                                                           \
		if (!strstr((e).msg, (needle)))                                                                        \
			fail_msg("message '%s' lacks '%s'", (e).msg, (needle));                                        \
	} while (0)

/* ---- cases -------------------------------------------------------------- */

static void test_happy_path(void **state)
{
	(void)state;
	struct eq_trust *t = device_on_release1();
	struct eq_error e;
	uint64_t n = 0;
	assert_int_equal(check(t, T0 + HOUR, &e, &n), EQ_OK);
	assert_int_equal(n, 1);
	assert_int_equal(eq_trust_timestamp(t)->version, 1);
	assert_string_equal(eq_trust_warning(t), "");
	/* The timestamp's size is the cap of the manifest download. */
	assert_int_equal(repo.manifest_max, repo_find("boards/b1/stable/manifest.json")->len);
	eq_trust_free(t);
	/* Reopened (a reboot), the store remembers the timestamp. */
	t = device_open();
	assert_int_equal(eq_trust_timestamp(t)->version, 1);
	assert_int_equal(eq_trust_now(t, 0), T0);
	eq_trust_free(t);
}

/* An attacker who controls the server but holds no key cannot get a
 * manifest of their own accepted: changed bytes break the timestamp's hash,
 * a timestamp of their own breaks its signature, and a key of the wrong
 * role is not a release key. */
static void test_threat_arbitrary_package(void **state)
{
	(void)state;
	struct eq_trust *t = device_on_release1();
	struct eq_error e;
	/* one byte of the manifest changed */
	struct file *mf = repo_find("boards/b1/stable/manifest.json");
	mf->data[mf->len / 2] ^= 0x01;
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_VERIFY);
	assert_msg(e, "but timestamp version 1 names");
	/* the attacker re-makes the timestamp, signed by a key they hold */
	manifest_doc("b1", "stable", 2, T0, T0 + DAY, "K2", 1);
	timestamp_doc(2, T0, T0 + HOUR, 2, "K2");
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_VERIFY);
	assert_msg(e, "timestamp.json: not signed by the timestamp role of root version 1");
	/* a manifest signed by the timestamp key: not a release key */
	manifest_doc("b1", "stable", 2, T0, T0 + DAY, "T1", 1);
	timestamp_doc(2, T0, T0 + HOUR, 2, "T1");
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_VERIFY);
	assert_msg(e, "signed by unknown key");
	eq_trust_free(t);
}

/* TUF's "extraneous dependencies": the packages to install are the signed
 * manifest's; one added by the server is refused before parsing. */
static void test_threat_extraneous_dependencies(void **state)
{
	(void)state;
	struct eq_trust *t = device_on_release1();
	struct eq_error e;
	const struct file *mf = repo_find("boards/b1/stable/manifest.json");
	/* the same release with one more package, the signature file kept */
	uint8_t *sig = eq_malloc(repo_find("boards/b1/stable/manifest.json.sig")->len);
	size_t sl = repo_find("boards/b1/stable/manifest.json.sig")->len;
	memcpy(sig, repo_find("boards/b1/stable/manifest.json.sig")->data, sl);
	(void)mf;
	manifest_doc("b1", "stable", 1, T0, T0 + 30 * DAY, "K2", 2);
	put("boards/b1/stable/manifest.json.sig", sig, sl);
	/* longer than the size the timestamp names: not even read */
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_LIMIT);
	/* and with a timestamp naming it (the attacker holds the timestamp
	 * key): the release key's signature still fails */
	timestamp_doc(2, T0, T0 + HOUR, 1, "T1");
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_VERIFY);
	assert_msg(e, "signature by key");
	eq_trust_free(t);
}

/* An older, validly signed timestamp and manifest are refused, also after
 * a reboot, and the release number never goes down. */
static void test_threat_rollback(void **state)
{
	(void)state;
	root_plain(1);
	release(1, 1, T0);
	/* keep release 1 as an attacker would */
	const struct file *m1 = repo_find("boards/b1/stable/manifest.json");
	const struct file *s1 = repo_find("boards/b1/stable/manifest.json.sig");
	const struct file *t1 = repo_find("boards/b1/stable/timestamp.json");
	const struct file *ts1 = repo_find("boards/b1/stable/timestamp.json.sig");
	struct file old[4] = {*m1, *s1, *t1, *ts1};
	for (int i = 0; i < 4; i++) {
		old[i].data = eq_malloc(old[i].len);
		memcpy(old[i].data, (i == 0 ? m1 : i == 1 ? s1 : i == 2 ? t1 : ts1)->data, old[i].len);
	}
	release(2, 2, T0 + HOUR);
	device_install(1);
	struct eq_trust *t = device_open();
	struct eq_error e;
	uint64_t n = 0;
	assert_int_equal(check(t, T0 + HOUR, &e, &n), EQ_OK);
	assert_int_equal(n, 2);
	for (int i = 0; i < 4; i++)
		put(old[i].path, old[i].data, old[i].len);
	assert_int_equal(check(t, T0 + HOUR, &e, NULL), EQ_ERR_STATE);
	assert_msg(e, "timestamp version 1 is older than the version 2 this device accepted");
	eq_trust_free(t);
	t = device_open();
	assert_int_equal(check(t, T0 + HOUR, &e, NULL), EQ_ERR_STATE);
	assert_int_equal(eq_trust_timestamp(t)->version, 2);
	eq_trust_free(t);
}

/* The server keeps serving what was valid: an expired timestamp is
 * refused; a device without a real-time clock (booted in 1970) still
 * refuses metadata that expired before the newest it accepted. */
static void test_threat_indefinite_freeze(void **state)
{
	(void)state;
	struct eq_trust *t = device_on_release1();
	struct eq_error e;
	assert_int_equal(check(t, T0 + 13 * HOUR, &e, NULL), EQ_ERR_EXPIRED);
	assert_msg(e, "timestamp expired at");
	/* fresh timestamp at T0+40d for the release of T0 (manifest expired at
	 * T0+30d): refused even by a clock of 0 */
	timestamp_doc(2, T0 + 40 * DAY, T0 + 40 * DAY + HOUR, 1, "T1");
	assert_int_equal(check(t, 0, &e, NULL), EQ_ERR_EXPIRED);
	assert_msg(e, "manifest.json: expired at");
	assert_int_equal(eq_trust_now(t, 0), T0 + 40 * DAY);
	eq_trust_free(t);
	/* after a reboot without a clock the lower bound holds */
	t = device_open();
	assert_int_equal(eq_trust_now(t, 0), T0 + 40 * DAY);
	/* the root expires too: after it, nothing is accepted until a new one */
	release(2, 3, T0 + 400 * DAY);
	assert_int_equal(check(t, T0 + 400 * DAY, &e, NULL), EQ_ERR_EXPIRED);
	assert_msg(e, "root version 1 expired at");
	root_doc(2, T0 + 399 * DAY, T0 + 800 * DAY, "R1", 1, "K1", 1, "T1", 1, "R1");
	assert_int_equal(check(t, T0 + 400 * DAY, &e, NULL), EQ_OK);
	eq_trust_free(t);
}

/* Nothing is read past its cap: the manifest past the size the timestamp
 * names, a root past 64 KiB, a timestamp past 16 KiB. */
static void test_threat_endless_data(void **state)
{
	(void)state;
	struct eq_trust *t = device_on_release1();
	struct eq_error e;
	size_t signed_len = repo_find("boards/b1/stable/manifest.json")->len;
	/* the server streams more than the timestamp names */
	uint8_t *big = eq_malloc(signed_len * 4);
	memset(big, ' ', signed_len * 4);
	put("boards/b1/stable/manifest.json", big, signed_len * 4);
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_LIMIT);
	assert_int_equal(repo.manifest_max, signed_len);
	uint8_t *huge = eq_malloc(EQ_ROOT_MAX_BYTES + 1);
	memset(huge, ' ', EQ_ROOT_MAX_BYTES + 1);
	put("root/2.root.json", huge, EQ_ROOT_MAX_BYTES + 1);
	put_copy("root/2.root.json.sig", (const uint8_t *)"{}", 2);
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_LIMIT);
	assert_msg(e, "root/2.root.json");
	drop("root/2.root.json");
	huge = eq_malloc(EQ_TIMESTAMP_MAX_BYTES + 1);
	memset(huge, ' ', EQ_TIMESTAMP_MAX_BYTES + 1);
	put("boards/b1/stable/timestamp.json", huge, EQ_TIMESTAMP_MAX_BYTES + 1);
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_LIMIT);
	eq_trust_free(t);
}

/* Validly signed files of another board, channel or release served in
 * place of this channel's. */
static void test_threat_mix_and_match(void **state)
{
	(void)state;
	root_plain(1);
	release(1, 1, T0);
	manifest_doc("b1", "beta", 7, T0, T0 + 30 * DAY, "K1", 1);
	timestamp_doc_at("b1", "beta", "boards/b1/beta/manifest.json", "boards/b1/beta/timestamp.json", 9, T0,
			 T0 + HOUR, 7, "T1");
	device_install(1);
	struct eq_trust *t = device_open();
	struct eq_error e;
	/* beta's timestamp at stable's path */
	struct file *bt = repo_find("boards/b1/beta/timestamp.json"),
		    *bts = repo_find("boards/b1/beta/timestamp.json.sig");
	put_copy("boards/b1/stable/timestamp.json", bt->data, bt->len);
	put_copy("boards/b1/stable/timestamp.json.sig", bts->data, bts->len);
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_STATE);
	assert_msg(e, "timestamp is for channel 'beta', this device follows 'stable'");
	/* stable's timestamp, beta's manifest */
	release(1, 1, T0);
	struct file *bm = repo_find("boards/b1/beta/manifest.json"),
		    *bms = repo_find("boards/b1/beta/manifest.json.sig");
	put_copy("boards/b1/stable/manifest.json", bm->data, bm->len);
	put_copy("boards/b1/stable/manifest.json.sig", bms->data, bms->len);
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_VERIFY);
	assert_msg(e, "but timestamp version 1 names");
	/* the timestamp itself was genuine, so it is kept (as in TUF) */
	assert_int_equal(eq_trust_timestamp(t)->version, 1);
	/* a timestamp that names beta's manifest at stable's path: the
	 * manifest's own channel is checked too */
	timestamp_doc(2, T0, T0 + HOUR, 7, "T1");
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_STATE);
	assert_msg(e, "manifest is for channel 'beta', this device follows 'stable'");
	eq_trust_free(t);
}

/* A server that stalls: the refresh fails with the fetcher's error, the
 * roots accepted before the stall stay, nothing else changes. The network
 * side (a server trickling bytes) is integration.agent_hostile_net. */
static void test_threat_slow_retrieval(void **state)
{
	(void)state;
	root_plain(1);
	root_plain(2);
	release(1, 1, T0);
	device_install(1);
	struct eq_trust *t = device_open();
	struct eq_error e;
	/* a stalled root fetch is an error, never "no newer root" */
	repo.fail_path = "root/3.root.json";
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_NETWORK);
	assert_msg(e, "root/3.root.json");
	assert_int_equal(root_ver(t), 2);
	assert_int_equal(eq_trust_timestamp(t)->version, 0);
	repo.fail_path = "boards/b1/stable/timestamp.json";
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_NETWORK);
	assert_msg(e, "transfer too slow");
	assert_int_equal(root_ver(t), 2);
	assert_int_equal(eq_trust_timestamp(t)->version, 0);
	eq_trust_free(t);
	t = device_open();
	assert_int_equal(root_ver(t), 2);
	repo.fail_path = NULL;
	assert_int_equal(check(t, T0, &e, NULL), EQ_OK);
	eq_trust_free(t);
}

static void test_threat_wrong_board_channel(void **state)
{
	(void)state;
	root_plain(1);
	manifest_doc("b2", "stable", 1, T0, T0 + 30 * DAY, "K1", 1);
	timestamp_doc_at("b2", "stable", "boards/b2/stable/manifest.json", "boards/b1/stable/timestamp.json", 1, T0,
			 T0 + HOUR, 1, "T1");
	device_install(1);
	struct eq_trust *t = device_open();
	struct eq_error e;
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_STATE);
	assert_msg(e, "timestamp is for board 'b2', this device is 'b1'");
	/* b1's timestamp naming b2's manifest */
	timestamp_doc_at("b1", "stable", "boards/b2/stable/manifest.json", "boards/b1/stable/timestamp.json", 1, T0,
			 T0 + HOUR, 1, "T1");
	struct file *m = repo_find("boards/b2/stable/manifest.json"),
		    *s = repo_find("boards/b2/stable/manifest.json.sig");
	put_copy("boards/b1/stable/manifest.json", m->data, m->len);
	put_copy("boards/b1/stable/manifest.json.sig", s->data, s->len);
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_STATE);
	assert_msg(e, "manifest is for board 'b2', this device is 'b1'");
	eq_trust_free(t);
}

/* Release key K1 leaks; root version 2 revokes it (release K2). */
static void test_threat_release_key_compromise(void **state)
{
	(void)state;
	struct eq_trust *t = device_on_release1();
	struct eq_error e;
	assert_int_equal(check(t, T0, &e, NULL), EQ_OK);
	root_doc(2, T0 + DAY, T0 + 365 * DAY, "R1", 1, "K2", 1, "T1", 1, "R1");
	/* the attacker holds K1 and the network, not the timestamp key: the
	 * genuine timestamp names the genuine manifest */
	manifest_doc("b1", "stable", 2, T0 + DAY, T0 + 30 * DAY, "K2", 1);
	timestamp_doc(2, T0 + DAY, T0 + DAY + HOUR, 2, "T1");
	const struct file *g = repo_find("boards/b1/stable/manifest.json");
	uint8_t *genuine = eq_malloc(g->len);
	size_t glen = g->len;
	memcpy(genuine, g->data, glen);
	manifest_doc("b1", "stable", 2, T0 + DAY, T0 + 30 * DAY, "K1", 1);
	assert_int_equal(check(t, T0 + DAY, &e, NULL), EQ_ERR_VERIFY);
	/* with a timestamp naming the attacker's bytes (suppose the timestamp
	 * key leaked as well): K1 is no longer a release key */
	timestamp_doc(3, T0 + DAY, T0 + DAY + HOUR, 2, "T1");
	assert_int_equal(check(t, T0 + DAY, &e, NULL), EQ_ERR_VERIFY);
	assert_msg(e, "signed by unknown key");
	assert_int_equal(root_ver(t), 2);
	/* the genuine release goes through */
	put("boards/b1/stable/manifest.json", genuine, glen);
	manifest_doc("b1", "stable", 2, T0 + DAY, T0 + 30 * DAY, "K2", 1);
	timestamp_doc(4, T0 + DAY, T0 + DAY + HOUR, 2, "T1");
	uint64_t n = 0;
	assert_int_equal(check(t, T0 + DAY, &e, &n), EQ_OK);
	assert_int_equal(n, 2);
	/* an installed slot signed by K1 still verifies locally */
	const struct eq_manifest_trust *inst = eq_trust_installed_keys(t);
	assert_int_equal(eq_manifest_trust_key_count(inst), 2);
	assert_string_equal(eq_manifest_trust_keyid(inst, 0), eq_manifest_key_id(keys[key_index("K2", 2)]));
	eq_trust_free(t);
}

/* Timestamp key T1 leaks. One poll answered by the attacker (a mirror, a
 * captive portal) gets the device a validly signed timestamp naming the
 * genuine manifest with version 2^53: every genuine timestamp is then
 * older. A root that rotates only the release role changes nothing; one
 * that rotates the timestamp role (T2) drops the forged timestamp and its
 * bounds, and the device follows the new role's timestamps again. */
static void test_threat_timestamp_key_compromise(void **state)
{
	(void)state;
	struct eq_trust *t = device_on_release1();
	struct eq_error e;
	uint64_t n = 0;
	assert_int_equal(check(t, T0 + HOUR, &e, &n), EQ_OK);
	timestamp_doc(EQ_MANIFEST_NUMBER_MAX, T0 + 2 * HOUR, T0 + 14 * HOUR, 1, "T1");
	struct file *ff = repo_find("boards/b1/stable/timestamp.json"),
		    *ffs = repo_find("boards/b1/stable/timestamp.json.sig");
	struct file forged[2] = {*ff, *ffs};
	for (int i = 0; i < 2; i++) {
		forged[i].data = eq_malloc(forged[i].len);
		memcpy(forged[i].data, (i ? ffs : ff)->data, forged[i].len);
	}
	assert_int_equal(check(t, T0 + 2 * HOUR, &e, &n), EQ_OK);
	assert_int_equal(eq_trust_timestamp(t)->version, EQ_MANIFEST_NUMBER_MAX);
	/* the genuine repository again: frozen, also after a reboot */
	release(2, 2, T0 + 3 * HOUR);
	assert_int_equal(check(t, T0 + 3 * HOUR, &e, NULL), EQ_ERR_STATE);
	assert_msg(e, "timestamp version 2 is older than the version 9007199254740992 this device accepted");
	eq_trust_free(t);
	t = device_open();
	assert_int_equal(check(t, T0 + 3 * HOUR, &e, NULL), EQ_ERR_STATE);
	/* a root that rotates the release role only: the timestamp role's
	 * bounds stay (they still hold back replays of its timestamps) */
	root_doc(2, T0 + 3 * HOUR, T0 + 365 * DAY, "R1", 1, "K1,K2", 1, "T1", 1, "R1");
	assert_int_equal(check(t, T0 + 3 * HOUR, &e, NULL), EQ_ERR_STATE);
	assert_int_equal(root_ver(t), 2);
	assert_int_equal(eq_trust_timestamp(t)->version, EQ_MANIFEST_NUMBER_MAX);
	/* docs/security.md "Revoke a stolen key": root 3 with T2, a timestamp
	 * signed by T2 (the repository's next version) */
	root_doc(3, T0 + 4 * HOUR, T0 + 365 * DAY, "R1", 1, "K1,K2", 1, "T2", 1, "R1");
	timestamp_doc(3, T0 + 4 * HOUR, T0 + 16 * HOUR, 2, "T2");
	assert_int_equal(check(t, T0 + 4 * HOUR, &e, &n), EQ_OK);
	assert_int_equal(n, 2);
	assert_int_equal(root_ver(t), 3);
	assert_int_equal(eq_trust_timestamp(t)->version, 3);
	eq_trust_free(t);
	/* after a reboot too, and the forged timestamp replayed is refused */
	t = device_open();
	assert_string_equal(eq_trust_warning(t), "");
	assert_int_equal(eq_trust_timestamp(t)->version, 3);
	for (int i = 0; i < 2; i++)
		put(forged[i].path, forged[i].data, forged[i].len);
	assert_int_equal(check(t, T0 + 5 * HOUR, &e, NULL), EQ_ERR_VERIFY);
	assert_msg(e, "not signed by the timestamp role of root version 3");
	assert_int_equal(eq_trust_timestamp(t)->version, 3);
	eq_trust_free(t);
}

/* Timestamp key T1 leaks and the attacker serves a timestamp issued in
 * 9999. A device whose clock is set refuses it; one without a clock (1970)
 * takes it, and its "now" becomes 9999, so every root and manifest is
 * expired. Rotating the timestamp role drops that bound; the roots' own
 * bound stays. */
static void test_threat_timestamp_from_the_future(void **state)
{
	(void)state;
	int64_t y9999 = 0;
	assert_true(eq_manifest_parse_time("9999-12-30T00:00:00Z", &y9999));
	struct eq_trust *t = device_on_release1();
	struct eq_error e;
	uint64_t n = 0;
	assert_int_equal(check(t, T0 + HOUR, &e, &n), EQ_OK);
	timestamp_doc(2, y9999, y9999 + DAY, 1, "T1");
	assert_int_equal(check(t, T0 + HOUR, &e, NULL), EQ_ERR_STATE);
	assert_msg(e, "was issued at 9999-12-30T00:00:00Z, more than 24 hours after this device's clock");
	assert_int_equal(eq_trust_timestamp(t)->version, 1);
	assert_int_equal(eq_trust_now(t, T0 + HOUR), T0 + HOUR);
	/* within a day of the clock: taken (clocks drift) */
	timestamp_doc(2, T0 + 20 * HOUR, T0 + 30 * HOUR, 1, "T1");
	assert_int_equal(check(t, T0 + HOUR, &e, NULL), EQ_OK);
	eq_trust_free(t);

	/* a device without a clock */
	repo_clear();
	t = device_on_release1();
	timestamp_doc(2, y9999, y9999 + DAY, 1, "T1");
	assert_int_equal(check(t, 0, &e, NULL), EQ_ERR_EXPIRED); /* the manifest, at "now" 9999 */
	assert_int_equal(eq_trust_now(t, 0), y9999);
	release(2, 3, T0 + HOUR);
	assert_int_equal(check(t, 0, &e, NULL), EQ_ERR_EXPIRED);
	assert_msg(e, "(now 9999-12-30T00:00:00Z)");
	eq_trust_free(t);
	t = device_open();
	assert_int_equal(eq_trust_now(t, 0), y9999);
	root_doc(2, T0 + 2 * HOUR, T0 + 365 * DAY, "R1", 1, "K1", 1, "T2", 1, "R1");
	timestamp_doc(4, T0 + 2 * HOUR, T0 + 14 * HOUR, 2, "T2");
	assert_int_equal(check(t, 0, &e, &n), EQ_OK);
	assert_int_equal(n, 2);
	assert_int_equal(eq_trust_now(t, 0), T0 + 2 * HOUR);
	eq_trust_free(t);
	t = device_open();
	assert_int_equal(eq_trust_now(t, 0), T0 + 2 * HOUR);
	/* the roots' bound is not the timestamp's: a root 3 issued later still
	 * bounds "now" once a new timestamp role drops the timestamp */
	root_doc(3, T0 + 3 * HOUR, T0 + 365 * DAY, "R1", 1, "K1", 1, "T1", 1, "R1");
	timestamp_doc(5, T0 + 2 * HOUR, T0 + 14 * HOUR, 2, "T1");
	assert_int_equal(check(t, 0, &e, &n), EQ_OK);
	assert_int_equal(eq_trust_now(t, 0), T0 + 3 * HOUR);
	eq_trust_free(t);
}

/* Root keys rotate R1 -> R2 -> R3 -> R1,R2 across four versions; a device
 * installed with version 1 and off for two years walks the whole chain
 * (the intermediate roots expired long ago) and keeps it after a reboot.
 * Each broken link is refused. */
static void test_threat_root_rotation(void **state)
{
	(void)state;
	root_doc(1, T0, T0 + 365 * DAY, "R1", 1, "K1", 1, "T1", 1, "R1");
	root_doc(2, T0 + 100 * DAY, T0 + 465 * DAY, "R2", 1, "K1", 1, "T1", 1, "R1,R2");
	root_doc(3, T0 + 200 * DAY, T0 + 565 * DAY, "R3", 1, "K2", 1, "T2", 1, "R2,R3");
	root_doc(4, T0 + 700 * DAY, T0 + 1065 * DAY, "R1,R2", 2, "K2", 1, "T2", 1, "R3,R1,R2");
	manifest_doc("b1", "stable", 5, T0 + 700 * DAY, T0 + 730 * DAY, "K2", 1);
	timestamp_doc(1, T0 + 700 * DAY, T0 + 701 * DAY, 5, "T2");
	device_install(1);
	struct eq_trust *t = device_open();
	struct eq_error e;
	struct eq_trust_result res;
	assert_int_equal(eq_trust_refresh(t, fetch, NULL, "b1", "stable", T0 + 700 * DAY, &res, &e), EQ_OK);
	assert_int_equal(res.roots_walked, 3);
	eq_trust_result_done(&res);
	assert_int_equal(root_ver(t), 4);
	eq_trust_free(t);
	t = device_open();
	assert_int_equal(root_ver(t), 4);
	assert_string_equal(eq_trust_warning(t), "");
	eq_trust_free(t);

	/* Broken links, each on a fresh device from version 1. */
	struct {
		const char *signers;
		uint64_t version;
		const char *msg;
	} bad[] = {
		{"R2", 2, "not signed by root version 1's root role"}, /* new keys only */
		{"R1", 2, "not signed by its own root role"},          /* old keys only */
		{"R1,R2", 3, "root version 3, expected 2"},            /* a skipped version */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		repo_clear();
		root_doc(1, T0, T0 + 365 * DAY, "R1", 1, "K1", 1, "T1", 1, "R1");
		struct eq_manifest_trust *roles[EQ_ROLE_COUNT] = {role("R2", 1), role("K1", 1), role("T1", 1)};
		struct eq_root_info info = {.version = bad[i].version, .issued = T0, .expires = T0 + 365 * DAY};
		uint8_t *d = NULL;
		size_t n = 0;
		assert_int_equal(eq_root_to_json(&info, (const struct eq_manifest_trust *const *)roles, &d, &n, &e),
				 EQ_OK);
		for (int k = 0; k < EQ_ROLE_COUNT; k++)
			eq_manifest_trust_free(roles[k]);
		put_signed("root/2.root.json", d, n, bad[i].signers);
		release(1, 1, T0);
		device_install(1);
		t = device_open();
		assert_int_equal(check(t, T0, &e, NULL), bad[i].version == 2 ? EQ_ERR_VERIFY : EQ_ERR_STATE);
		assert_msg(e, bad[i].msg);
		assert_msg(e, "root/2.root.json");
		assert_int_equal(root_ver(t), 1);
		eq_trust_free(t);
	}
}

/* The timestamp is asked for with the stored copy's hash: unchanged, it
 * costs one request and no .sig; changed, both come; a server that lies
 * "unchanged" freezes the device only until the stored timestamp expires;
 * a stored pair that no longer verifies is fetched again plainly. */
static void test_conditional_timestamp(void **state)
{
	(void)state;
	struct eq_trust *t = device_on_release1();
	struct eq_error e;
	uint64_t n = 0;
	repo.cond = true;
	/* nothing stored yet: a plain request for both */
	assert_int_equal(check(t, T0 + HOUR, &e, &n), EQ_OK);
	assert_int_equal(repo.not_modified, 0);
	assert_non_null(strstr(repo.log, "boards/b1/stable/timestamp.json.sig\n"));
	/* unchanged: "not modified", no .sig, the same release */
	repo.log[0] = '\0';
	assert_int_equal(check(t, T0 + 2 * HOUR, &e, &n), EQ_OK);
	assert_int_equal(n, 1);
	assert_int_equal(repo.not_modified, 1);
	assert_non_null(strstr(repo.log, "boards/b1/stable/timestamp.json\n"));
	assert_null(strstr(repo.log, "timestamp.json.sig"));
	/* a server without validators sends the same bytes: the stored .sig */
	repo.cond = false;
	repo.log[0] = '\0';
	assert_int_equal(check(t, T0 + 3 * HOUR, &e, &n), EQ_OK);
	assert_null(strstr(repo.log, "timestamp.json.sig"));
	/* changed: the new pair, and it is stored (a reopened store has it) */
	repo.cond = true;
	release(2, 2, T0 + 4 * HOUR);
	repo.log[0] = '\0';
	assert_int_equal(check(t, T0 + 4 * HOUR, &e, &n), EQ_OK);
	assert_int_equal(n, 2);
	assert_non_null(strstr(repo.log, "boards/b1/stable/timestamp.json.sig\n"));
	eq_trust_free(t);
	t = device_open();
	assert_int_equal(eq_trust_timestamp(t)->version, 2);
	repo.log[0] = '\0';
	assert_int_equal(check(t, T0 + 5 * HOUR, &e, &n), EQ_OK);
	assert_int_equal(repo.not_modified, 2);
	assert_null(strstr(repo.log, "timestamp.json.sig"));
	/* a lying "unchanged" hides release 3 (the device keeps to the
	 * timestamp it holds, which names release 2's manifest; this fetcher
	 * has no cached copy of it), but only until the stored timestamp
	 * expires (12 hours): then the device says so */
	release(3, 3, T0 + 6 * HOUR);
	repo.lie_unchanged = true;
	assert_int_equal(check(t, T0 + 6 * HOUR, &e, &n), EQ_ERR_VERIFY);
	assert_msg(e, "but timestamp version 2 names");
	assert_int_equal(eq_trust_timestamp(t)->version, 2);
	assert_int_equal(check(t, T0 + 17 * HOUR, &e, &n), EQ_ERR_EXPIRED);
	assert_msg(e, "timestamp expired at");
	repo.lie_unchanged = false;
	assert_int_equal(check(t, T0 + 17 * HOUR, &e, &n), EQ_OK);
	assert_int_equal(n, 3);
	/* the timestamp key rotates (root 2, T2) and the same timestamp bytes
	 * are signed again: the rotation deleted the stored pair, so both are
	 * fetched plainly (no conditional request) and the new signature
	 * counts */
	root_doc(2, T0, T0 + 365 * DAY, "R1", 1, "K1", 1, "T2", 1, "R1");
	const struct file *tf = repo_find("boards/b1/stable/timestamp.json");
	{
		size_t sl;
		uint8_t *sig = sign(tf->data, tf->len, "T2", &sl);
		put("boards/b1/stable/timestamp.json.sig", sig, sl);
	}
	unsigned nm = repo.not_modified;
	repo.log[0] = '\0';
	assert_int_equal(check(t, T0 + 17 * HOUR, &e, &n), EQ_OK);
	assert_int_equal(n, 3);
	assert_int_equal(root_ver(t), 2);
	assert_int_equal(repo.not_modified, nm);
	assert_non_null(strstr(repo.log, "boards/b1/stable/timestamp.json.sig\n"));
	eq_trust_free(t);
}

/* Fewer signatures than a role's threshold, for a root and a manifest. */
static void test_threat_threshold_not_met(void **state)
{
	(void)state;
	root_doc(1, T0, T0 + 365 * DAY, "R1,R2,R3", 2, "K1,K2", 2, "T1", 1, "R1,R2");
	root_doc(2, T0, T0 + 365 * DAY, "R1,R2,R3", 2, "K1,K2", 2, "T1", 1, "R1");
	manifest_doc("b1", "stable", 1, T0, T0 + 30 * DAY, "K1,K2", 1);
	timestamp_doc(1, T0, T0 + HOUR, 1, "T1");
	device_install(1);
	struct eq_trust *t = device_open();
	struct eq_error e;
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_VERIFY);
	assert_msg(e, "1 of 2 required signatures");
	assert_int_equal(root_ver(t), 1);
	drop("root/2.root.json");
	assert_int_equal(check(t, T0, &e, NULL), EQ_OK);
	manifest_doc("b1", "stable", 2, T0, T0 + 30 * DAY, "K2", 1);
	timestamp_doc(2, T0, T0 + HOUR, 2, "T1");
	assert_int_equal(check(t, T0, &e, NULL), EQ_ERR_VERIFY);
	assert_msg(e, "1 of 2 required signatures");
	eq_trust_free(t);
}

/* The store only narrows trust: a planted or damaged root file in it ends
 * the chain (with a warning), and a root in the image newer than the
 * stored ones wins. */
static void test_store_planted_files(void **state)
{
	(void)state;
	root_plain(1);
	root_doc(2, T0, T0 + 365 * DAY, "R2", 1, "K2", 1, "T2", 1, "R2"); /* not signed by R1 */
	device_install(1);
	char p[200];
	struct eq_error e;
	for (uint64_t v = 2; v <= 2; v++) {
		const struct file *f = repo_find("root/2.root.json"), *s = repo_find("root/2.root.json.sig");
		snprintf(p, sizeof(p), "%s/trust/root", devdir);
		assert_int_equal(eq_mkdir_p(p, 0755, &e), EQ_OK);
		snprintf(p, sizeof(p), "%s/trust/root/2.root.json", devdir);
		assert_int_equal(eq_file_replace_atomic(p, f->data, f->len, 0644, &e), EQ_OK);
		strcat(p, ".sig");
		assert_int_equal(eq_file_replace_atomic(p, s->data, s->len, 0644, &e), EQ_OK);
	}
	struct eq_trust *t = device_open();
	assert_int_equal(root_ver(t), 1);
	if (!strstr(eq_trust_warning(t), "stored root version 2 ignored: not signed by root version 1"))
		fail_msg("warning: '%s'", eq_trust_warning(t));
	eq_trust_free(t);
	/* a damaged timestamp file is dropped the same way */
	snprintf(p, sizeof(p), "%s/trust/timestamp.json", devdir);
	assert_int_equal(eq_file_replace_atomic(p, "{", 1, 0644, &e), EQ_OK);
	strcat(p, ".sig");
	assert_int_equal(eq_file_replace_atomic(p, "{", 1, 0644, &e), EQ_OK);
	t = device_open();
	assert_int_equal(eq_trust_timestamp(t)->version, 0);
	eq_trust_free(t);
	/* a stored timestamp must meet the timestamp role's threshold too (it
	 * once needed one key of any root's timestamp role) */
	repo_clear();
	root_doc(1, T0, T0 + 365 * DAY, "R1", 1, "K1", 1, "T1,T2", 2, "R1");
	manifest_doc("b1", "stable", 1, T0, T0 + 30 * DAY, "K1", 1);
	timestamp_doc(EQ_MANIFEST_NUMBER_MAX, T0, T0 + 12 * HOUR, 1, "T1");
	device_install(1);
	const struct file *tf = repo_find("boards/b1/stable/timestamp.json"),
			  *tsf = repo_find("boards/b1/stable/timestamp.json.sig");
	snprintf(p, sizeof(p), "%s/trust", devdir);
	assert_int_equal(eq_mkdir_p(p, 0755, &e), EQ_OK);
	snprintf(p, sizeof(p), "%s/trust/timestamp.json", devdir);
	assert_int_equal(eq_signed_file_write(p, tf->data, tf->len, tsf->data, tsf->len, &e), EQ_OK);
	t = device_open();
	assert_int_equal(eq_trust_timestamp(t)->version, 0);
	if (!strstr(eq_trust_warning(t),
		    "stored timestamp ignored: not signed by the timestamp role of root version 1"))
		fail_msg("warning: '%s'", eq_trust_warning(t));
	eq_trust_free(t);
}

/* Document rules: the parser refuses what the writer never makes. */
static void test_document_rules(void **state)
{
	(void)state;
	root_plain(1);
	const struct file *f = repo_find("root/1.root.json");
	struct eq_root *root = NULL;
	struct eq_error e;
	assert_int_equal(eq_root_parse_unverified(f->data, f->len, &root, &e), EQ_OK);
	eq_root_free(root);
	struct {
		const char *from, *to;
		eq_err code;
		const char *msg;
	} edits[] = {
		{"\"type\": \"root\"", "\"type\": \"timestamp\"", EQ_ERR_PARSE, "type: 'timestamp', expected 'root'"},
		{"\"format\": 1", "\"format\": 2", EQ_ERR_UNSUPPORTED, "format version 2"},
		{"\"version\": 1", "\"version\": 0", EQ_ERR_PARSE, "version"},
		{"\"threshold\": 1,\n      \"keyids\": [\n        \"",
		 "\"threshold\": 2,\n      \"keyids\": [\n        \"", EQ_ERR_PARSE, "roles.root.threshold"},
		{"\"roles\": {", "\"roles\": {\"x\": {},", EQ_ERR_PARSE, "roles: unknown key 'x'"},
		{"\"expires\": \"", "\"expires\": \"1", EQ_ERR_PARSE, "expires"},
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		char *text = eq_malloc(f->len + 64);
		memcpy(text, f->data, f->len);
		text[f->len] = '\0';
		char *at = strstr(text, edits[i].from);
		assert_non_null(at);
		size_t fl = strlen(edits[i].from), tl = strlen(edits[i].to);
		memmove(at + tl, at + fl, strlen(at + fl) + 1);
		memcpy(at, edits[i].to, tl);
		eq_err r = eq_root_parse_unverified((const uint8_t *)text, strlen(text), &root, &e);
		eq_free(text);
		if (r != edits[i].code || !strstr(e.msg, edits[i].msg))
			fail_msg("edit %zu: code %d, message '%s'", i, r, r ? e.msg : "");
	}
	/* a timestamp is not a root, and a root is not a timestamp */
	release(1, 1, T0);
	const struct file *tf = repo_find("boards/b1/stable/timestamp.json");
	assert_int_equal(eq_root_parse_unverified(tf->data, tf->len, &root, &e), EQ_ERR_PARSE);
	struct eq_timestamp ts;
	assert_int_equal(eq_timestamp_parse_unverified(f->data, f->len, &ts, &e), EQ_ERR_PARSE);
	assert_int_equal(eq_timestamp_parse_unverified(tf->data, tf->len, &ts, &e), EQ_OK);
	assert_int_equal(ts.number, 1);
	/* revoking the last key of a role is refused */
	struct eq_manifest_trust *r1 = role("R1", 1), *c = NULL;
	bool removed = false;
	assert_int_equal(eq_manifest_trust_copy(r1, eq_manifest_key_id(keys[0]), 0, &c, &removed, &e), EQ_ERR_STATE);
	assert_int_equal(eq_manifest_trust_copy(r1, "00", 0, &c, &removed, &e), EQ_OK);
	assert_false(removed);
	eq_manifest_trust_free(c);
	eq_manifest_trust_free(r1);
}

/* The staged rollout in the timestamp (docs/fleet.md): written only when it
 * holds devices back, read back exactly, and strict like the rest. */
static void test_timestamp_rollout(void **state)
{
	(void)state;
	struct eq_timestamp ts = {.version = 3, .issued = T0, .expires = T0 + HOUR, .number = 7, .size = 100};
	snprintf(ts.board, sizeof(ts.board), "b1");
	snprintf(ts.channel, sizeof(ts.channel), "stable");
	memset(ts.sha256, 'a', EQ_MANIFEST_HASH_LEN);
	ts.sha256[EQ_MANIFEST_HASH_LEN] = '\0';
	uint8_t *d = NULL;
	size_t n = 0;
	struct eq_error e;
	struct eq_timestamp back;
	/* none: no "rollout" member at all, so older agents read it */
	assert_int_equal(eq_timestamp_to_json(&ts, &d, &n, &e), EQ_OK);
	assert_null(memmem(d, n, "rollout", 7));
	assert_int_equal(eq_timestamp_parse_unverified(d, n, &back, &e), EQ_OK);
	assert_false(back.rollout.present);
	eq_free(d);
	ts.rollout.present = true;
	ts.rollout.percent = 10;
	ts.rollout.halted = true;
	assert_int_equal(eq_timestamp_to_json(&ts, &d, &n, &e), EQ_OK);
	assert_int_equal(eq_timestamp_parse_unverified(d, n, &back, &e), EQ_OK);
	assert_true(back.rollout.present);
	assert_int_equal(back.rollout.percent, 10);
	assert_true(back.rollout.halted);
	struct {
		const char *from, *to, *msg;
	} edits[] = {
		{"\"percent\": 10", "\"percent\": 101", "rollout.percent"},
		{"\"percent\": 10", "\"percent\": 1.5", "rollout.percent"},
		{"\"percent\": 10", "\"percent\": \"10\"", "rollout.percent: expected a number"},
		{"\"halted\": true", "\"halted\": 1", "rollout.halted: expected true or false"},
		{"\"halted\": true", "\"halted\": true, \"x\": 1", "rollout: unknown key 'x'"},
		{",\n    \"halted\": true", "", "rollout.halted: missing"},
		{"\"rollout\": {", "\"rollout\": 5, \"y\": {", "rollout: expected an object"},
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		char *text = eq_malloc(n + 64);
		memcpy(text, d, n);
		text[n] = '\0';
		char *at = strstr(text, edits[i].from);
		assert_non_null(at);
		size_t fl = strlen(edits[i].from), tl = strlen(edits[i].to);
		memmove(at + tl, at + fl, strlen(at + fl) + 1);
		memcpy(at, edits[i].to, tl);
		eq_err r = eq_timestamp_parse_unverified((const uint8_t *)text, strlen(text), &back, &e);
		eq_free(text);
		if (r != EQ_ERR_PARSE || !strstr(e.msg, edits[i].msg))
			fail_msg("edit %zu: code %d, message '%s'", i, r, r ? e.msg : "");
	}
	eq_free(d);
	ts.rollout.percent = 101;
	assert_int_equal(eq_timestamp_to_json(&ts, &d, &n, &e), EQ_ERR_INVAL);
}

static int case_setup(void **state)
{
	(void)state;
	repo_clear();
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	if (!mkdtemp(topdir))
		return -1;
	for (size_t i = 0; i < N_KEYS; i++) {
		char *prefix = eq_asprintf("%s/%s", topdir, KEY_NAMES[i]);
		char *kp = eq_asprintf("%s.key", prefix);
		struct eq_error e;
		if (eq_manifest_key_generate(prefix, NULL, &e) || eq_manifest_key_load(kp, &keys[i], &e)) {
			fprintf(stderr, "key %s: %s\n", KEY_NAMES[i], e.msg);
			return -1;
		}
		eq_free(prefix);
		eq_free(kp);
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	repo_clear();
	for (size_t i = 0; i < N_KEYS; i++)
		eq_manifest_key_free(keys[i]);
	char *cmd = eq_asprintf("rm -rf '%s'", topdir);
	int rc = system(cmd);
	eq_free(cmd);
	return rc == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	cJSON_Hooks hooks = {.malloc_fn = eq_malloc, .free_fn = eq_free};
	cJSON_InitHooks(&hooks);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_happy_path, case_setup),
		cmocka_unit_test_setup(test_document_rules, case_setup),
		cmocka_unit_test_setup(test_timestamp_rollout, case_setup),
		cmocka_unit_test_setup(test_store_planted_files, case_setup),
		cmocka_unit_test_setup(test_threat_arbitrary_package, case_setup),
		cmocka_unit_test_setup(test_threat_extraneous_dependencies, case_setup),
		cmocka_unit_test_setup(test_threat_rollback, case_setup),
		cmocka_unit_test_setup(test_threat_indefinite_freeze, case_setup),
		cmocka_unit_test_setup(test_threat_endless_data, case_setup),
		cmocka_unit_test_setup(test_threat_mix_and_match, case_setup),
		cmocka_unit_test_setup(test_threat_slow_retrieval, case_setup),
		cmocka_unit_test_setup(test_threat_wrong_board_channel, case_setup),
		cmocka_unit_test_setup(test_threat_release_key_compromise, case_setup),
		cmocka_unit_test_setup(test_threat_root_rotation, case_setup),
		cmocka_unit_test_setup(test_threat_timestamp_key_compromise, case_setup),
		cmocka_unit_test_setup(test_threat_timestamp_from_the_future, case_setup),
		cmocka_unit_test_setup(test_threat_threshold_not_met, case_setup),
		cmocka_unit_test_setup(test_conditional_timestamp, case_setup),
	};
	return eq_test_run(tests, group_setup, group_teardown, argc, argv);
}
