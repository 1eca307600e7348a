/*
 * Shared by the decision fuzzers of the trust store (fuzz_trust_store.c,
 * fuzz_trust_sequence.c): test keys made once, documents signed once at
 * start-up (ECDSA is far too slow for the hot loop), a repository in
 * memory served through the fetch callback eq_trust_refresh() takes, and a
 * device folder with root version 1 installed. Each target defines
 * FT_NAME before including this file.
 */
#ifndef EQ_FUZZ_TRUST_REPO_H
#define EQ_FUZZ_TRUST_REPO_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/manifest.h>

#define FT_T0 INT64_C(1780000000) /* 2026-05-28 */
#define FT_HOUR INT64_C(3600)
#define FT_DAY INT64_C(86400)
#define FT_YEARS (FT_DAY * 3650)
#define FT_9999 INT64_C(253402041600) /* 9999-12-28T00:00:00Z */

enum ft_key { FT_R1, FT_R2, FT_K1, FT_K2, FT_T1, FT_T2, FT_NKEYS };
static const char *const ft_key_names[FT_NKEYS] = {"R1", "R2", "K1", "K2", "T1", "T2"};
#define FT_BIT(k) (1u << (k))

/* A document and its signature file, both from eq_malloc. */
struct ft_doc {
	uint8_t *d, *s;
	size_t dl, sl;
};


static char ft_dir[64];
static char ft_trust_dir[128], ft_root_path[128];
static struct eq_manifest_key *ft_keys[FT_NKEYS];

/* ASan's quarantine of freed memory makes every bignum allocation of the
 * signature checks (a few thousand per input) touch fresh pages: a small
 * one doubles the executions per second. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=16";
}

static void ft_check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "%s: invariant broken: %s\n", FT_NAME, what);
		abort();
	}
}

static void ft_ok(eq_err r, const struct eq_error *e, const char *what)
{
	if (r != EQ_OK) {
		fprintf(stderr, "%s: set-up failed: %s: %s\n", FT_NAME, what, e->msg);
		abort();
	}
}

/* The role of the keys in @mask, threshold 1. */
static struct eq_manifest_trust *ft_role(unsigned mask)
{
	char *paths[FT_NKEYS];
	size_t n = 0;
	for (unsigned k = 0; k < FT_NKEYS; k++)
		if (mask & FT_BIT(k))
			paths[n++] = eq_asprintf("%s/%s.pub", ft_dir, ft_key_names[k]);
	struct eq_manifest_trust *t = NULL;
	struct eq_error e;
	ft_ok(eq_manifest_trust_from_pubkeys((const char *const *)paths, n, 1, &t, &e), &e, "role");
	for (size_t i = 0; i < n; i++)
		eq_free(paths[i]);
	return t;
}

static void ft_sign(struct ft_doc *doc, unsigned signers)
{
	const struct eq_manifest_key *ks[FT_NKEYS];
	size_t n = 0;
	for (unsigned k = 0; k < FT_NKEYS; k++)
		if (signers & FT_BIT(k))
			ks[n++] = ft_keys[k];
	struct eq_error e;
	ft_ok(eq_manifest_sign(doc->d, doc->dl, ks, n, &doc->s, &doc->sl, &e), &e, "sign");
}

static struct ft_doc ft_root(uint64_t version, int64_t issued, unsigned rk, unsigned kk, unsigned tk, unsigned signers)
{
	struct eq_manifest_trust *roles[EQ_ROLE_COUNT] = {ft_role(rk), ft_role(kk), ft_role(tk)};
	struct eq_root_info info = {.version = version, .issued = issued, .expires = FT_T0 + FT_YEARS};
	struct ft_doc doc = {0};
	struct eq_error e;
	ft_ok(eq_root_to_json(&info, (const struct eq_manifest_trust *const *)roles, &doc.d, &doc.dl, &e), &e, "root");
	for (int i = 0; i < EQ_ROLE_COUNT; i++)
		eq_manifest_trust_free(roles[i]);
	ft_sign(&doc, signers);
	return doc;
}

/* Release @number of board b1, channel stable, with no packages. */
static struct ft_doc ft_manifest(uint64_t number, unsigned signers)
{
	struct eq_manifest *m = NULL;
	struct eq_error e;
	char rel[32];
	snprintf(rel, sizeof(rel), "r%" PRIu64, number);
	struct eq_manifest_header h = {.board = "b1",
				       .channel = "stable",
				       .release = rel,
				       .number = number,
				       .issued = FT_T0,
				       .expires = FT_T0 + FT_YEARS};
	ft_ok(eq_manifest_new(&m, &e), &e, "manifest");
	ft_ok(eq_manifest_set_header(m, &h, &e), &e, "manifest header");
	struct eq_manifest_package p = {.name = "pkg", .version = "1.0", .arch = "all"};
	memset(p.taskhash, 'a', 64);
	memset(p.unihash, 'b', 64);
	memset(p.payload.sha256, 'c', 64);
	memset(p.object.sha256, 'd', 64);
	p.payload.size = p.object.size = 10;
	snprintf(p.object.path, sizeof(p.object.path), "objects/%s", p.object.sha256);
	ft_ok(eq_manifest_add_package(m, &p, &e), &e, "manifest package");
	struct ft_doc doc = {0};
	ft_ok(eq_manifest_to_json(m, &doc.d, &doc.dl, &e), &e, "manifest json");
	eq_manifest_free(m);
	ft_sign(&doc, signers);
	return doc;
}

static struct ft_doc ft_timestamp(uint64_t version, int64_t issued, int64_t expires, const struct ft_doc *manifest,
				  uint64_t number, unsigned signers)
{
	struct eq_timestamp ts = {.version = version, .issued = issued, .expires = expires, .number = number};
	snprintf(ts.board, sizeof(ts.board), "b1");
	snprintf(ts.channel, sizeof(ts.channel), "stable");
	uint8_t h[EQ_SHA256_LEN];
	eq_sha256(manifest->d, manifest->dl, h);
	eq_hex_encode(h, sizeof(h), ts.sha256);
	ts.size = manifest->dl;
	struct ft_doc doc = {0};
	struct eq_error e;
	ft_ok(eq_timestamp_to_json(&ts, &doc.d, &doc.dl, &e), &e, "timestamp");
	ft_sign(&doc, signers);
	return doc;
}

/* ---- the repository ----------------------------------------------------- */

#define FT_REPO_MAX 8
#define FT_TS_PATH "boards/b1/stable/timestamp.json"
#define FT_MANIFEST_PATH "boards/b1/stable/manifest.json"

struct ft_repo {
	const char *path[FT_REPO_MAX];
	const struct ft_doc *doc[FT_REPO_MAX];
	size_t n;
};

static void ft_repo_set(struct ft_repo *repo, const char *path, const struct ft_doc *doc)
{
	for (size_t i = 0; i < repo->n; i++) {
		if (strcmp(repo->path[i], path) == 0) {
			repo->doc[i] = doc;
			return;
		}
	}
	ft_check(repo->n < FT_REPO_MAX, "repository table full");
	repo->path[repo->n] = path;
	repo->doc[repo->n++] = doc;
}

/* Every answer is whole bytes (never "unchanged"), capped like the real
 * fetcher. */
static eq_err ft_fetch(void *ctx, const char *path, size_t max, const char *expect, const char *have, uint8_t **ret,
		       size_t *ret_len, struct eq_error *err)
{
	(void)expect;
	(void)have;
	const struct ft_repo *repo = ctx;
	size_t pl = strlen(path);
	bool sig = pl > 4 && strcmp(path + pl - 4, ".sig") == 0;
	for (size_t i = 0; i < repo->n; i++) {
		size_t l = strlen(repo->path[i]);
		if (l != (sig ? pl - 4 : pl) || strncmp(repo->path[i], path, l) != 0)
			continue;
		const uint8_t *d = sig ? repo->doc[i]->s : repo->doc[i]->d;
		size_t dl = sig ? repo->doc[i]->sl : repo->doc[i]->dl;
		if (dl > max)
			return eq_error_set(err, EQ_ERR_LIMIT, "%s: more than %zu bytes", path, max);
		*ret = eq_malloc(dl ? dl : 1);
		if (!*ret)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		memcpy(*ret, d, dl);
		*ret_len = dl;
		return EQ_OK;
	}
	return eq_error_set(err, EQ_ERR_NOTFOUND, "%s: 404", path);
}

/* ---- the device --------------------------------------------------------- */

static void ft_cleanup(void)
{
	struct eq_error e;
	if (eq_rm_rf(ft_dir, &e) != EQ_OK)
		fprintf(stderr, "%s: %s\n", FT_NAME, e.msg);
}

/* The keys and the device's folder. */
static void ft_init(void)
{
	/* In memory where there is /dev/shm: the store fsyncs every file it
	 * writes, which on a disk costs more than all the signatures. */
	snprintf(ft_dir, sizeof(ft_dir), "%s/eq-fuzz-trust-XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(ft_dir))
		abort();
	atexit(ft_cleanup);
	struct eq_error e;
	for (unsigned k = 0; k < FT_NKEYS; k++) {
		char *prefix = eq_asprintf("%s/%s", ft_dir, ft_key_names[k]);
		char *kp = eq_asprintf("%s.key", prefix);
		ft_ok(eq_manifest_key_generate(prefix, NULL, &e), &e, "keygen");
		ft_ok(eq_manifest_key_load(kp, &ft_keys[k], &e), &e, "key load");
		eq_free(prefix);
		eq_free(kp);
	}
	snprintf(ft_trust_dir, sizeof(ft_trust_dir), "%s/trust", ft_dir);
	snprintf(ft_root_path, sizeof(ft_root_path), "%s/root.json", ft_dir);
}

/* The root in the device's image. */
static void ft_install(const struct ft_doc *root1)
{
	struct eq_error e;
	ft_ok(eq_signed_file_write(ft_root_path, root1->d, root1->dl, root1->s, root1->sl, &e), &e, "root");
}

/* A new device: its trust folder emptied. */
static void ft_wipe(void)
{
	struct eq_error e;
	ft_ok(eq_rm_rf(ft_trust_dir, &e), &e, "wipe");
}

static struct eq_trust *ft_open(void)
{
	struct eq_trust *t = NULL;
	struct eq_error e;
	ft_check(eq_trust_open(ft_trust_dir, ft_root_path, &t, &e) == EQ_OK, "the store opens whatever it holds");
	return t;
}

static uint64_t ft_root_version(const struct eq_trust *t)
{
	struct eq_root_info info;
	eq_root_get_info(eq_trust_root(t), &info);
	return info.version;
}

#endif
