/*
 * The device's trust store and the update check of root mode
 * (eq_trust_refresh): root chain, timestamp, then the manifest the
 * timestamp names. What is stored here only ever narrows what a device
 * accepts: every stored root is verified again from the installed one.
 *
 * The stored timestamp belongs to the timestamp role that signed it: it is
 * only ever verified with the current root's timestamp role, and a root
 * that changes that role deletes it, with the versions and the lower bound
 * for "now" it set (TUF's fast-forward recovery). A leaked timestamp key
 * could otherwise pin a device for good with a timestamp of version 2^53
 * or one issued in 9999.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <eq/repo_layout.h>

#include "manifest_priv.h"

struct eq_trust {
	char *dir;
	struct eq_root *root;                     /* newest accepted */
	struct eq_manifest_trust *installed;      /* release keys over the chain, newest first */
	struct eq_timestamp ts;                   /* version 0: none accepted yet */
	char ts_sha256[EQ_MANIFEST_HASH_LEN + 1]; /* of the stored timestamp.json bytes, "" if none */
	/* The newest issue time of the accepted roots: the part of the lower
	 * bound for "now" that offline keys set. The timestamp's part is
	 * ts.issued, and goes with the timestamp. */
	int64_t roots_issued;
	char warning[EQ_ERROR_MSG_MAX + 64];
};

void eq_trust_free(struct eq_trust *t)
{
	if (!t)
		return;
	eq_root_free(t->root);
	eq_manifest_trust_free(t->installed);
	eq_free(t->dir);
	eq_free(t);
}

const char *eq_trust_warning(const struct eq_trust *t)
{
	return t->warning;
}

const struct eq_root *eq_trust_root(const struct eq_trust *t)
{
	return t->root;
}

const struct eq_manifest_trust *eq_trust_release_keys(const struct eq_trust *t)
{
	return eq_root_role(t->root, EQ_ROLE_RELEASE);
}

const struct eq_manifest_trust *eq_trust_installed_keys(const struct eq_trust *t)
{
	return t->installed;
}

const struct eq_timestamp *eq_trust_timestamp(const struct eq_trust *t)
{
	return &t->ts;
}

int64_t eq_trust_now(const struct eq_trust *t, int64_t clock)
{
	int64_t bound = t->ts.version && t->ts.issued > t->roots_issued ? t->ts.issued : t->roots_issued;
	return clock > bound ? clock : bound;
}

void eq_trust_result_done(struct eq_trust_result *res)
{
	if (!res)
		return;
	eq_manifest_free(res->m);
	eq_free(res->manifest);
	eq_free(res->sig);
	memset(res, 0, sizeof(*res));
}

/* @role's keys first, then those of @prev (NULL: none) while they fit:
 * the cap drops the oldest keys, never the current ones. */
static eq_err key_union(const struct eq_manifest_trust *role, const struct eq_manifest_trust *prev,
			struct eq_manifest_trust **ret, struct eq_error *err)
{
	struct eq_manifest_trust *u = eqm_trust_new(1);
	if (!u)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	eq_err r = EQ_OK;
	for (size_t i = 0; !r && i < eq_manifest_trust_key_count(role); i++)
		r = eqm_trust_add(u, eqm_trust_key(role, i), EQM_TRUST_CAP, err);
	for (size_t i = 0; !r && prev && i < eq_manifest_trust_key_count(prev); i++) {
		r = eqm_trust_add(u, eqm_trust_key(prev, i), EQM_TRUST_CAP, err);
		if (r == EQ_ERR_LIMIT)
			r = EQ_OK;
	}
	if (r) {
		eq_manifest_trust_free(u);
		return r;
	}
	*ret = u;
	return EQ_OK;
}

/* Makes @next the newest root (taking it). */
static eq_err adopt_root(struct eq_trust *t, struct eq_root *next, struct eq_error *err)
{
	struct eq_manifest_trust *rel = NULL;
	eq_err r = key_union(eq_root_role(next, EQ_ROLE_RELEASE), t->installed, &rel, err);
	if (r)
		return r;
	eq_manifest_trust_free(t->installed);
	t->installed = rel;
	eq_root_free(t->root);
	t->root = next;
	struct eq_root_info info;
	eq_root_get_info(next, &info);
	if (info.issued > t->roots_issued)
		t->roots_issued = info.issued;
	return EQ_OK;
}

/* The same keys and threshold (keys in any order). */
static bool same_role(const struct eq_manifest_trust *a, const struct eq_manifest_trust *b)
{
	size_t n = eq_manifest_trust_key_count(a);
	if (eq_manifest_trust_threshold(a) != eq_manifest_trust_threshold(b) || n != eq_manifest_trust_key_count(b))
		return false;
	for (size_t i = 0; i < n; i++) {
		bool found = false;
		for (size_t j = 0; j < n && !found; j++)
			found = strcmp(eq_manifest_trust_keyid(a, i), eq_manifest_trust_keyid(b, j)) == 0;
		if (!found)
			return false;
	}
	return true;
}

/* Forgets the accepted timestamp, with the versions and the issue time it
 * bounded, and deletes its files (the document first: a signature file
 * alone is never read), durably: the root that follows must not outlive
 * the deletion in a power cut. */
static eq_err drop_timestamp(struct eq_trust *t, struct eq_error *err)
{
	memset(&t->ts, 0, sizeof(t->ts));
	t->ts_sha256[0] = '\0';
	static const char *const names[] = {"timestamp.json", "timestamp.json.sig"};
	bool removed = false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		EQ_AUTOFREE char *p = eq_asprintf("%s/%s", t->dir, names[i]);
		if (!p)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		if (unlink(p) == 0)
			removed = true;
		else if (errno != ENOENT)
			return eq_error_errno(err, EQ_ERR_IO, "cannot remove '%s'", p);
	}
	if (removed) {
		EQ_AUTOFREE char *p = eq_asprintf("%s/timestamp.json", t->dir);
		if (!p)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		return eq_fsync_dir_of(p, err);
	}
	return EQ_OK;
}

/* A pair of the store, @rel below its folder; the signature goes first, so
 * a file is never there without the signature written for it (a stale one
 * fails verification, which only ends the chain). */
static eq_err store_pair(const struct eq_trust *t, const char *rel, const uint8_t *d, size_t dl, const uint8_t *s,
			 size_t sl, struct eq_error *err)
{
	EQ_AUTOFREE char *p = eq_asprintf("%s/%s", t->dir, rel);
	return p ? eq_signed_file_write(p, d, dl, s, sl, err) : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
}

static void hash_hex(const uint8_t *d, size_t len, char out[EQ_MANIFEST_HASH_LEN + 1])
{
	uint8_t h[EQ_SHA256_LEN];
	eq_sha256(d, len, h);
	eq_hex_encode(h, sizeof(h), out);
}

static uint64_t root_version(const struct eq_root *root)
{
	struct eq_root_info info;
	eq_root_get_info(root, &info);
	return info.version;
}

eq_err eq_trust_open(const char *dir, const char *root_path, struct eq_trust **ret, struct eq_error *err)
{
	assert(dir && root_path && ret);
	struct eq_trust *t = eq_calloc(1, sizeof(*t));
	if (!t)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	struct eq_root *root = NULL;
	eq_err r;
	/* All here, before the first goto: cleanup variables must not be
	 * jumped over. */
	EQ_AUTOFREE char *rdir = eq_asprintf("%s/root", dir);
	EQ_AUTOFREE char *tp = eq_asprintf("%s/timestamp.json", dir);
	if (!(t->dir = eq_strdup(dir)) || !rdir || !tp) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if ((r = eq_mkdir_p(rdir, 0755, err)))
		goto fail;
	if ((r = eq_root_load_file(root_path, &root, err)))
		goto fail;
	if ((r = adopt_root(t, root, err))) {
		eq_root_free(root);
		goto fail;
	}
	/* The stored chain, each step verified as it was when fetched. A
	 * stored root at or below the installed version is simply not used:
	 * a newer image may ship a newer root. */
	for (unsigned steps = 0; steps < EQ_ROOT_CHAIN_MAX; steps++) {
		uint64_t v = root_version(t->root) + 1;
		uint8_t *d = NULL, *s = NULL;
		size_t dl = 0, sl = 0;
		struct eq_error e;
		struct eq_root *next = NULL;
		EQ_AUTOFREE char *p = eq_asprintf("%s/root/%" PRIu64 ".root.json", t->dir, v);
		eq_err rr = p ? eq_signed_file_read(p, EQ_ROOT_MAX_BYTES, &d, &dl, &s, &sl, &e)
			      : eq_error_set(&e, EQ_ERR_NOMEM, "out of memory");
		if (rr == EQ_OK)
			rr = eq_root_verify_next(t->root, d, dl, s, sl, &next, &e);
		eq_free(d);
		eq_free(s);
		if (rr == EQ_ERR_NOTFOUND)
			break;
		if (rr == EQ_OK && (rr = adopt_root(t, next, &e)))
			eq_root_free(next);
		if (rr) {
			snprintf(t->warning, sizeof(t->warning), "stored root version %" PRIu64 " ignored: %s", v,
				 e.msg);
			break;
		}
	}
	/* The newest accepted timestamp, checked with the newest root's
	 * timestamp role only: one signed by a key that role no longer holds
	 * (a root in a new image rotated it) goes, with the bounds it set, as
	 * when a refresh accepts such a root. A damaged file is dropped too:
	 * the next refresh accepts any timestamp the root vouches for. */
	uint8_t *d = NULL, *s = NULL;
	size_t dl = 0, sl = 0;
	struct eq_error e;
	eq_err rr = eq_signed_file_read(tp, EQ_TIMESTAMP_MAX_BYTES, &d, &dl, &s, &sl, &e);
	if (rr == EQ_OK)
		rr = eq_timestamp_load_verified(d, dl, s, sl, t->root, &t->ts, &e);
	if (rr == EQ_OK)
		hash_hex(d, dl, t->ts_sha256);
	eq_free(d);
	eq_free(s);
	if (rr != EQ_OK) {
		memset(&t->ts, 0, sizeof(t->ts));
		if (rr != EQ_ERR_NOTFOUND && !t->warning[0])
			snprintf(t->warning, sizeof(t->warning), "stored timestamp ignored: %s", e.msg);
	}
	*ret = t;
	return EQ_OK;
fail:
	eq_trust_free(t);
	return r;
}

/* A plain request: the fetcher must answer with bytes, never "unchanged". */
static eq_err fetch_plain(eq_trust_fetch_fn fetch, void *ctx, const char *rel, size_t max, uint8_t **d, size_t *dl,
			  struct eq_error *err)
{
	*d = NULL;
	eq_err r = fetch(ctx, rel, max, NULL, NULL, d, dl, err);
	if (!r && !*d)
		r = eq_error_set(err, EQ_ERR_VERIFY, "%s: the fetcher answered 'unchanged' to a plain request", rel);
	return r;
}

/* The signature file of @rel; a missing one is a verification failure. */
static eq_err fetch_sig(eq_trust_fetch_fn fetch, void *ctx, const char *rel, uint8_t **s, size_t *sl,
			struct eq_error *err)
{
	EQ_AUTOFREE char *srel = eq_asprintf("%s.sig", rel);
	if (!srel)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	eq_err r = fetch_plain(fetch, ctx, srel, EQ_MANIFEST_SIG_MAX_BYTES, s, sl, err);
	if (r == EQ_ERR_NOTFOUND)
		r = eq_error_set(err, EQ_ERR_VERIFY, "%s: not in the repository", srel);
	return r;
}

static eq_err fetch_pair(eq_trust_fetch_fn fetch, void *ctx, const char *rel, size_t max, uint8_t **d, size_t *dl,
			 uint8_t **s, size_t *sl, struct eq_error *err)
{
	*s = NULL;
	eq_err r = fetch_plain(fetch, ctx, rel, max, d, dl, err);
	if (!r && (r = fetch_sig(fetch, ctx, rel, s, sl, err))) {
		eq_free(*d);
		*d = NULL;
	}
	return r;
}

/*
 * The timestamp, asked for conditionally: the fetcher learns the hash of
 * the stored copy and may answer "unchanged" (NULL data, a 304 to its
 * If-None-Match), so an unchanged check moves a few hundred bytes. The
 * stored pair is then used, and when the server sends the very bytes this
 * device holds, their stored signature file is too. *ret_stored says the
 * pair came (partly) from the store, so that the caller can ask plainly
 * when it does not verify. Every byte is verified by the caller as if it
 * had just been fetched.
 */
static eq_err fetch_timestamp(struct eq_trust *t, eq_trust_fetch_fn fetch, void *ctx, const char *rel, uint8_t **d,
			      size_t *dl, uint8_t **s, size_t *sl, bool *ret_stored, struct eq_error *err)
{
	const char *have = t->ts.version && t->ts_sha256[0] ? t->ts_sha256 : NULL;
	EQ_AUTOFREE char *tp = eq_asprintf("%s/timestamp.json", t->dir);
	char got[EQ_MANIFEST_HASH_LEN + 1];
	*ret_stored = false;
	if (!have || !tp)
		return fetch_pair(fetch, ctx, rel, EQ_TIMESTAMP_MAX_BYTES, d, dl, s, sl, err);
	eq_err r = fetch(ctx, rel, EQ_TIMESTAMP_MAX_BYTES, NULL, have, d, dl, err);
	if (r)
		return r;
	if (!*d) {
		/* "Unchanged": the stored pair, if it is still what it was. */
		struct eq_error e;
		if (eq_signed_file_read(tp, EQ_TIMESTAMP_MAX_BYTES, d, dl, s, sl, &e) == EQ_OK) {
			hash_hex(*d, *dl, got);
			if (strcmp(got, have) == 0) {
				*ret_stored = true;
				return EQ_OK;
			}
			eq_free(*d);
			eq_free(*s);
			*d = *s = NULL;
		}
		return fetch_pair(fetch, ctx, rel, EQ_TIMESTAMP_MAX_BYTES, d, dl, s, sl, err);
	}
	hash_hex(*d, *dl, got);
	if (strcmp(got, have) == 0) {
		EQ_AUTOFREE char *sp = eq_asprintf("%s.sig", tp);
		if (sp && eq_file_read_all(sp, EQ_MANIFEST_SIG_MAX_BYTES, s, sl, NULL) == EQ_OK) {
			*ret_stored = true;
			return EQ_OK;
		}
	}
	if ((r = fetch_sig(fetch, ctx, rel, s, sl, err))) {
		eq_free(*d);
		*d = NULL;
	}
	return r;
}

static eq_err walk_roots(struct eq_trust *t, eq_trust_fetch_fn fetch, void *ctx, uint64_t *walked, struct eq_error *err)
{
	for (unsigned steps = 0; steps < EQ_ROOT_CHAIN_MAX; steps++) {
		uint64_t v = root_version(t->root) + 1;
		EQ_AUTOFREE char *rel = NULL;
		uint8_t *d = NULL, *s = NULL;
		size_t dl = 0, sl = 0;
		struct eq_root *next = NULL;
		eq_err r = eq_layout_root(NULL, v, &rel, err);
		if (r)
			return r;
		r = fetch_pair(fetch, ctx, rel, EQ_ROOT_MAX_BYTES, &d, &dl, &s, &sl, err);
		if (r == EQ_ERR_NOTFOUND)
			return EQ_OK;
		if (!r)
			r = eq_root_verify_next(t->root, d, dl, s, sl, &next, err);
		/* A new timestamp role (keys or threshold): the timestamp the old
		 * one signed goes before the root is stored, so that no power cut
		 * keeps it. A leaked timestamp key may have signed it with any
		 * version and issue time; the new role's timestamps start afresh. */
		if (!r && !same_role(eq_root_role(t->root, EQ_ROLE_TIMESTAMP), eq_root_role(next, EQ_ROLE_TIMESTAMP)))
			r = drop_timestamp(t, err);
		/* Stored before it is used, so that a power cut never leaves the
		 * device trusting a root it cannot prove on the next start. */
		if (!r && (r = store_pair(t, rel, d, dl, s, sl, err)) == EQ_OK && (r = adopt_root(t, next, err)))
			eq_root_free(next);
		else if (r)
			eq_root_free(next);
		eq_free(d);
		eq_free(s);
		if (r)
			return eq_error_prefix(err, r, "%s", rel);
		(*walked)++;
	}
	return EQ_OK;
}

static eq_err check_timestamp(const struct eq_trust *t, const struct eq_timestamp *ts, const char *board,
			      const char *channel, int64_t clock, int64_t now, struct eq_error *err)
{
	char q[80];
	/* An issue time far ahead of a clock that is set would become the
	 * lower bound of "now" and of every later issue time: refused, not
	 * adopted. A clock before the newest root's issue time is not set (a
	 * device without a real-time clock in 1970); it has only the bound. */
	if (clock >= t->roots_issued && ts->issued > clock && ts->issued - clock > EQ_TIMESTAMP_MAX_AHEAD) {
		char at[EQ_MANIFEST_TIME_LEN + 1], c[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(ts->issued, at);
		eq_manifest_format_time(clock, c);
		return eq_error_set(err, EQ_ERR_STATE,
				    "timestamp version %" PRIu64 " was issued at %s, more than %d hours after this "
				    "device's clock (%s): a forged timestamp, or a clock that lags",
				    ts->version, at, (int)(EQ_TIMESTAMP_MAX_AHEAD / 3600), c);
	}
	if (strcmp(ts->board, board) != 0) {
		eq_quote(q, sizeof(q), board);
		return eq_error_set(err, EQ_ERR_STATE, "timestamp is for board '%s', this device is '%s'", ts->board,
				    q);
	}
	if (strcmp(ts->channel, channel) != 0) {
		eq_quote(q, sizeof(q), channel);
		return eq_error_set(err, EQ_ERR_STATE, "timestamp is for channel '%s', this device follows '%s'",
				    ts->channel, q);
	}
	const struct eq_timestamp *old = &t->ts;
	if (old->version && strcmp(old->board, ts->board) == 0 && strcmp(old->channel, ts->channel) == 0) {
		if (ts->version < old->version)
			return eq_error_set(err, EQ_ERR_STATE,
					    "timestamp version %" PRIu64 " is older than the version %" PRIu64
					    " this device accepted (rollback or freeze attack, or a stale mirror)",
					    ts->version, old->version);
		if (ts->issued < old->issued)
			return eq_error_set(err, EQ_ERR_STATE,
					    "timestamp was issued before the one this device accepted (version %" PRIu64
					    ")",
					    old->version);
		if (ts->version == old->version &&
		    (ts->number != old->number || strcmp(ts->sha256, old->sha256) != 0 || ts->issued != old->issued))
			return eq_error_set(err, EQ_ERR_STATE,
					    "timestamp version %" PRIu64
					    " differs from the one of that version this device accepted",
					    ts->version);
	}
	if (now >= ts->expires) {
		char exp[EQ_MANIFEST_TIME_LEN + 1], n[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(ts->expires, exp);
		eq_manifest_format_time(now, n);
		return eq_error_set(err, EQ_ERR_EXPIRED, "timestamp expired at %s (now %s)", exp, n);
	}
	return EQ_OK;
}

eq_err eq_trust_refresh(struct eq_trust *t, eq_trust_fetch_fn fetch, void *ctx, const char *board, const char *channel,
			int64_t clock, struct eq_trust_result *ret, struct eq_error *err)
{
	assert(t && fetch && board && channel && ret);
	struct eq_trust_result res;
	memset(&res, 0, sizeof(res));
	eq_err r = walk_roots(t, fetch, ctx, &res.roots_walked, err);
	if (r)
		return r;
	struct eq_root_info info;
	eq_root_get_info(t->root, &info);
	int64_t now = eq_trust_now(t, clock);
	if (now >= info.expires) {
		char exp[EQ_MANIFEST_TIME_LEN + 1], n[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(info.expires, exp);
		eq_manifest_format_time(now, n);
		return eq_error_set(err, EQ_ERR_EXPIRED,
				    "root version %" PRIu64
				    " expired at %s (now %s) and the repository has no newer one",
				    info.version, exp, n);
	}

	EQ_AUTOFREE char *ts_rel = NULL, *m_rel = NULL, *s_rel = NULL;
	if ((r = eq_layout_channel(NULL, board, channel, EQ_LAYOUT_TIMESTAMP, &ts_rel, err)) ||
	    (r = eq_layout_channel(NULL, board, channel, EQ_LAYOUT_MANIFEST, &m_rel, err)) ||
	    (r = eq_layout_channel(NULL, board, channel, EQ_LAYOUT_MANIFEST_SIG, &s_rel, err)))
		return r;
	uint8_t *d = NULL, *s = NULL;
	size_t dl = 0, sl = 0;
	struct eq_timestamp ts = {0};
	bool stored = false;
	r = fetch_timestamp(t, fetch, ctx, ts_rel, &d, &dl, &s, &sl, &stored, err);
	if (!r)
		r = eq_timestamp_load_verified(d, dl, s, sl, t->root, &ts, err);
	if (r && stored) {
		/* What this device holds no longer verifies (say, the timestamp
		 * key rotated and the file was signed again): ask plainly. */
		eq_free(d);
		eq_free(s);
		d = s = NULL;
		r = fetch_pair(fetch, ctx, ts_rel, EQ_TIMESTAMP_MAX_BYTES, &d, &dl, &s, &sl, err);
		if (!r)
			r = eq_timestamp_load_verified(d, dl, s, sl, t->root, &ts, err);
	}
	if (r == EQ_ERR_NOTFOUND)
		r = eq_error_set(err, EQ_ERR_VERIFY,
				 "not in the repository (a repository with a root needs "
				 "'eqota-gen timestamp')");
	if (!r)
		r = check_timestamp(t, &ts, board, channel, clock, now, err);
	if (!r && ts.version != t->ts.version) {
		if (!(r = store_pair(t, "timestamp.json", d, dl, s, sl, err))) {
			t->ts = ts;
			hash_hex(d, dl, t->ts_sha256);
		}
	}
	eq_free(d);
	eq_free(s);
	if (r)
		return eq_error_prefix(err, r, "%s", ts_rel);
	now = eq_trust_now(t, clock);

	/* The timestamp bounds the download (endless data) and names the
	 * exact bytes (a stale or swapped manifest never reaches the parser). */
	r = fetch(ctx, m_rel, (size_t)ts.size, ts.sha256, NULL, &res.manifest, &res.manifest_len, err);
	if (!r && !res.manifest)
		r = eq_error_set(err, EQ_ERR_VERIFY, "the fetcher answered 'unchanged' to a plain request");
	if (r == EQ_ERR_NOTFOUND)
		r = eq_error_set(err, EQ_ERR_VERIFY, "not in the repository, yet the timestamp names it");
	if (!r) {
		uint8_t h[EQ_SHA256_LEN];
		char hex[EQ_MANIFEST_HASH_LEN + 1];
		eq_sha256(res.manifest, res.manifest_len, h);
		eq_hex_encode(h, sizeof(h), hex);
		if (res.manifest_len != ts.size || strcmp(hex, ts.sha256) != 0)
			r = eq_error_set(err, EQ_ERR_VERIFY,
					 "%zu bytes with sha256 %s, but timestamp version %" PRIu64 " names %" PRIu64
					 " bytes with sha256 %s",
					 res.manifest_len, hex, ts.version, ts.size, ts.sha256);
	}
	if (!r) {
		r = fetch(ctx, s_rel, EQ_MANIFEST_SIG_MAX_BYTES, NULL, NULL, &res.sig, &res.sig_len, err);
		if (!r && !res.sig)
			r = eq_error_set(err, EQ_ERR_VERIFY, "manifest.json.sig: the fetcher answered 'unchanged'");
		if (r == EQ_ERR_NOTFOUND)
			r = eq_error_set(err, EQ_ERR_VERIFY, "manifest.json.sig: not in the repository");
	}
	if (!r) {
		struct eq_manifest_policy pol = {
			.board = board, .channel = channel, .number = ts.number, .now = now, .check_expiry = true};
		r = eq_manifest_load_verified(res.manifest, res.manifest_len, res.sig, res.sig_len,
					      eq_trust_release_keys(t), &pol, &res.m, err);
	}
	if (r) {
		eq_trust_result_done(&res);
		return eq_error_prefix(err, r, "%s", m_rel);
	}
	*ret = res;
	return EQ_OK;
}
