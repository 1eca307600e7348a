/*
 * Signing for a role and the timestamp step of a publish
 * (eq_manifest_sign_for(), eq_manifest_check_policy(), eq_gen_timestamp()
 * with the root and manifest hash a publish hands over): what is skipped
 * because it was already checked, and that nothing else is.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/gen_root.h>
#include <eq/manifest.h>

#include "eq_test.h"

#define T0 INT64_C(1780000000) /* 2026-05-28 */
#define DAY INT64_C(86400)

static char topdir[64] = "/tmp/eq-gen-sign-XXXXXX";
/* The SHA-256 of repo/root/1.root.json: the pin every signing step is given. */
static char pin[EQ_SHA256_HEX_LEN + 1];

/* A path in the test folder; eight calls later the buffer is reused. */
static const char *at(const char *rel)
{
	static char buf[8][256];
	static int i;
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", topdir, rel);
	return buf[i];
}

/* A new root for @repo (the caller's static buffer), signed by R; X also
 * releases when @with_x (a planted root names an attacker's key). */
static eq_err root_init(const char *repo, bool with_x, struct eq_error *e)
{
	static char p[6][256];
	const char *files[6] = {"R.key", "R.pub", "K.pub", "T.pub", "X.pub"};
	for (size_t i = 0; i < 5; i++)
		snprintf(p[i], sizeof(p[i]), "%s/%s", topdir, files[i]);
	const char *rk[] = {p[0]}, *rp[] = {p[1]}, *kp[] = {p[2], p[4]}, *tp[] = {p[3]};
	struct eq_root_opts o = {.repo = repo, .sign_keys = rk, .n_sign = 1, .now = T0};
	o.roles[EQ_ROLE_ROOT] = (struct eq_root_role_opts){rp, 1, 1};
	o.roles[EQ_ROLE_RELEASE] = (struct eq_root_role_opts){kp, with_x ? 2 : 1, 1};
	o.roles[EQ_ROLE_TIMESTAMP] = (struct eq_root_role_opts){tp, 1, 1};
	uint64_t v = 0;
	eq_err r = eq_mkdir_p(repo, 0755, e);
	return r ? r : eq_gen_root_write(&o, true, &v, e);
}

static void sha_hex(const char *path, char out[EQ_SHA256_HEX_LEN + 1])
{
	uint8_t *d = NULL, dg[EQ_SHA256_LEN];
	size_t dl = 0;
	struct eq_error e;
	assert_int_equal(eq_file_read_all(path, EQ_ROOT_MAX_BYTES, &d, &dl, &e), EQ_OK);
	eq_sha256(d, dl, dg);
	eq_hex_encode(dg, sizeof(dg), out);
	eq_free(d);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(topdir))
		return -1;
	struct eq_error e;
	const char *names[] = {"R", "K", "T", "X"};
	for (size_t i = 0; i < 4; i++)
		if (eq_manifest_key_generate(at(names[i]), NULL, &e) != EQ_OK)
			return -1;
	/* A root: R signs, K releases, T timestamps; X is in no role. */
	static char repo[256];
	snprintf(repo, sizeof(repo), "%s/repo", topdir);
	if (root_init(repo, false, &e) != EQ_OK) {
		fprintf(stderr, "root: %s\n", e.msg);
		return -1;
	}
	sha_hex(at("repo/root/1.root.json"), pin);
	return eq_mkdir_p(at("repo/boards/b/c"), 0755, &e) == EQ_OK ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", topdir);
	return system(cmd);
}

static struct eq_manifest_key *key(const char *name)
{
	char rel[16];
	snprintf(rel, sizeof(rel), "%s.key", name);
	struct eq_manifest_key *k = NULL;
	struct eq_error e;
	assert_int_equal(eq_manifest_key_load(at(rel), &k, &e), EQ_OK);
	return k;
}

/* boards/b/c/manifest.json for @board and @release, signed by @signer;
 * *ret_sha gets the SHA-256 of its bytes. */
static void write_manifest(const char *board, const char *release, const char *signer, uint8_t ret_sha[EQ_SHA256_LEN])
{
	struct eq_manifest *m = NULL;
	struct eq_error e;
	assert_int_equal(eq_manifest_new(&m, &e), EQ_OK);
	struct eq_manifest_header h = {board, "c", release, 1, T0, T0 + 30 * DAY};
	assert_int_equal(eq_manifest_set_header(m, &h, &e), EQ_OK);
	uint8_t *json = NULL, *sig = NULL;
	size_t jl = 0, sl = 0;
	assert_int_equal(eq_manifest_to_json(m, &json, &jl, &e), EQ_OK);
	struct eq_manifest_key *k = key(signer);
	const struct eq_manifest_key *kv[] = {k};
	assert_int_equal(eq_manifest_sign(json, jl, kv, 1, &sig, &sl, &e), EQ_OK);
	assert_int_equal(eq_signed_file_write(at("repo/boards/b/c/manifest.json"), json, jl, sig, sl, &e), EQ_OK);
	eq_sha256(json, jl, ret_sha);
	eq_manifest_key_free(k);
	eq_manifest_free(m);
	eq_free(json);
	eq_free(sig);
}

/* Signatures by keys of the role verify under it, and one by a key outside
 * it is still made (and checked on its own). */
static void test_sign_for(void **state)
{
	(void)state;
	struct eq_root *root = NULL;
	struct eq_error e;
	assert_int_equal(eq_gen_root_newest(at("repo"), pin, &root, &e), EQ_OK);
	const struct eq_manifest_trust *rel = eq_root_role(root, EQ_ROLE_RELEASE);
	struct eq_manifest_key *k = key("K"), *x = key("X");
	const struct eq_manifest_key *kv[] = {k, x};
	const uint8_t data[] = "{\"the\":\"document\"}";
	uint8_t *sig = NULL;
	size_t sl = 0;
	assert_int_equal(eq_manifest_sign_for(data, sizeof(data) - 1, kv, 2, rel, &sig, &sl, &e), EQ_OK);
	assert_int_equal(eq_manifest_verify(data, sizeof(data) - 1, sig, sl, rel, &e), EQ_OK);
	/* X's signature is there: a trust set of X alone accepts the file */
	char *xp = eq_asprintf("%s", at("X.pub"));
	struct eq_manifest_trust *xt = NULL;
	assert_int_equal(eq_manifest_trust_from_pubkeys((const char *const *)&xp, 1, 1, &xt, &e), EQ_OK);
	assert_int_equal(eq_manifest_verify(data, sizeof(data) - 1, sig, sl, xt, &e), EQ_OK);
	/* other bytes: refused, as from eq_manifest_sign() */
	assert_int_equal(eq_manifest_verify(data, sizeof(data) - 2, sig, sl, rel, &e), EQ_ERR_VERIFY);
	/* the same key twice */
	const struct eq_manifest_key *dup[] = {k, k};
	uint8_t *s2 = NULL;
	size_t s2l = 0;
	assert_int_equal(eq_manifest_sign_for(data, sizeof(data) - 1, dup, 2, rel, &s2, &s2l, &e), EQ_ERR_INVAL);
	eq_manifest_trust_free(xt);
	eq_free(xp);
	eq_free(sig);
	eq_manifest_key_free(k);
	eq_manifest_key_free(x);
	eq_root_free(root);
}

static eq_err timestamp(const struct eq_root *root, const uint8_t *verified, struct eq_error *e)
{
	const char *tk[] = {at("T.key")};
	struct eq_timestamp_opts o = {.repo = at("repo"),
				      .board = "b",
				      .channel = "c",
				      .keys = tk,
				      .n_keys = 1,
				      .now = T0 + DAY,
				      .trusted_root = pin,
				      .root = root,
				      .verified_sha256 = verified};
	struct eq_timestamp ts;
	eq_err r = eq_gen_timestamp(&o, &ts, e);
	if (r)
		return r;
	/* what was written verifies under the root's timestamp role */
	uint8_t *d = NULL, *s = NULL;
	size_t dl = 0, sl = 0;
	assert_int_equal(eq_signed_file_read(at("repo/boards/b/c/timestamp.json"), 1 << 16, &d, &dl, &s, &sl, e),
			 EQ_OK);
	struct eq_root *own = NULL;
	assert_int_equal(eq_gen_root_newest(at("repo"), pin, &own, e), EQ_OK);
	struct eq_timestamp back;
	assert_int_equal(eq_timestamp_load_verified(d, dl, s, sl, own, &back, e), EQ_OK);
	assert_int_equal(back.version, ts.version);
	eq_root_free(own);
	eq_free(d);
	eq_free(s);
	return EQ_OK;
}

/*
 * The timestamp trusts the publish's check only for the exact bytes it
 * checked: a manifest that differs is verified again, so one signed by a
 * key outside the release role is refused; the board, channel and expiry
 * are checked either way.
 */
static void test_timestamp_handover(void **state)
{
	(void)state;
	struct eq_root *root = NULL;
	struct eq_error e;
	assert_int_equal(eq_gen_root_newest(at("repo"), pin, &root, &e), EQ_OK);
	uint8_t good[EQ_SHA256_LEN], bad[EQ_SHA256_LEN];

	write_manifest("b", "r1", "K", good);
	assert_int_equal(timestamp(NULL, NULL, &e), EQ_OK);
	assert_int_equal(timestamp(root, good, &e), EQ_OK);

	/* other bytes, signed by X, outside the release role */
	write_manifest("b", "r2", "X", bad);
	eq_err r = timestamp(NULL, NULL, &e);
	assert_int_equal(r, EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, "manifest.json"));
	/* a hash of other bytes does not vouch for these */
	r = timestamp(root, good, &e);
	assert_int_equal(r, EQ_ERR_VERIFY);
	/* the caller's word for these exact bytes is taken (its contract) */
	assert_int_equal(timestamp(root, bad, &e), EQ_OK);

	/* policy still applies to vouched-for bytes: another board */
	write_manifest("other", "r1", "K", good);
	r = timestamp(root, good, &e);
	assert_int_equal(r, EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "board"));
	eq_root_free(root);
}

/* eq_manifest_check_policy() on its own: each check and its error. */
static void test_check_policy(void **state)
{
	(void)state;
	struct eq_manifest *m = NULL;
	struct eq_error e;
	assert_int_equal(eq_manifest_new(&m, &e), EQ_OK);
	struct eq_manifest_header h = {"b", "c", "r1", 7, T0, T0 + DAY};
	assert_int_equal(eq_manifest_set_header(m, &h, &e), EQ_OK);
	struct eq_manifest_policy p = {.board = "b", .channel = "c", .number = 7, .now = T0, .check_expiry = true};
	assert_int_equal(eq_manifest_check_policy(m, &p, &e), EQ_OK);
	p.board = "x";
	assert_int_equal(eq_manifest_check_policy(m, &p, &e), EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "board"));
	p.board = NULL;
	p.channel = "beta";
	assert_int_equal(eq_manifest_check_policy(m, &p, &e), EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "channel"));
	p.channel = NULL;
	p.number = 6;
	assert_int_equal(eq_manifest_check_policy(m, &p, &e), EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "release number 7"));
	p.number = 0;
	p.now = T0 + DAY;
	assert_int_equal(eq_manifest_check_policy(m, &p, &e), EQ_ERR_EXPIRED);
	p.check_expiry = false;
	assert_int_equal(eq_manifest_check_policy(m, &p, &e), EQ_OK);
	eq_manifest_free(m);
}

/*
 * The pin (eq_gen_root_newest()): a repository's own root/1 is not trusted
 * for being there. Without a pin a repository with a root is refused, saying
 * how to pin; a root that is not the pinned one is refused naming the file
 * and both hashes; a pinned repository without its root is not taken for
 * one that never had a root; a copy of the root file pins as its hash does.
 */
static void test_root_pin(void **state)
{
	(void)state;
	struct eq_root *root = NULL;
	struct eq_error e;
	assert_int_equal(eq_gen_root_newest(at("repo"), NULL, &root, &e), EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "--trusted-root"));
	assert_null(root);
	assert_int_equal(eq_gen_root_newest(at("none"), NULL, &root, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(eq_gen_root_newest(at("none"), pin, &root, &e), EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, "root/1.root.json is missing"));

	/* a root planted by a writer of the repository: X releases too */
	assert_int_equal(root_init(at("planted"), true, &e), EQ_OK);
	char planted[EQ_SHA256_HEX_LEN + 1];
	sha_hex(at("planted/root/1.root.json"), planted);
	assert_int_equal(eq_gen_root_newest(at("planted"), pin, &root, &e), EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, planted));
	assert_non_null(strstr(e.msg, pin));
	assert_non_null(strstr(e.msg, "planted/root/1.root.json"));
	assert_null(root);
	/* the same, pinned by a copy of the genuine root file */
	char copy[256];
	snprintf(copy, sizeof(copy), "%s", at("pinned.root.json"));
	uint8_t *d = NULL;
	size_t dl = 0;
	assert_int_equal(eq_file_read_all(at("repo/root/1.root.json"), EQ_ROOT_MAX_BYTES, &d, &dl, &e), EQ_OK);
	assert_int_equal(eq_file_replace_atomic(copy, d, dl, 0644, &e), EQ_OK);
	eq_free(d);
	assert_int_equal(eq_gen_root_newest(at("planted"), copy, &root, &e), EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, planted));
	assert_int_equal(eq_gen_root_newest(at("repo"), copy, &root, &e), EQ_OK);
	struct eq_root_info info;
	eq_root_get_info(root, &info);
	assert_int_equal(info.version, 1);
	eq_root_free(root);
	root = NULL;
	/* a pin file that is missing: never "no root here", which signs without one */
	assert_int_equal(eq_gen_root_newest(at("repo"), at("no-such-pin"), &root, &e), EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, "no-such-pin"));
	/* a pin that is not a root at all */
	assert_int_equal(eq_gen_root_newest(at("repo"), at("K.pub"), &root, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "--trusted-root"));
	/* nor is a signing step fooled: the timestamp is refused in the planted repository */
	const char *tk[] = {at("T.key")};
	struct eq_timestamp_opts o = {.repo = at("planted"),
				      .board = "b",
				      .channel = "c",
				      .keys = tk,
				      .n_keys = 1,
				      .now = T0 + DAY,
				      .trusted_root = pin};
	assert_int_equal(eq_gen_timestamp(&o, NULL, &e), EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, planted));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sign_for),
		cmocka_unit_test(test_timestamp_handover),
		cmocka_unit_test(test_check_policy),
		cmocka_unit_test(test_root_pin),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
