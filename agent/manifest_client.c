/*
 * The manifest-fetching client of eq_agent: the channel's current manifest
 * at the fewest bytes on the wire (conditional requests, the legacy pointer
 * file, manifest deltas and compressed manifests, the timestamp and the root
 * chain in root mode), verified before anything acts on it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/agent.h>
#include <eq/repo_layout.h>

#include "agent_priv.h"
#include "fetch.h"
#include "http_header.h"
#include "manifest_client.h"
#include "manifest_unpack.h"

/* The manifest bytes to act on: fresh from the server, or the copy cached
 * at the last successful verification when the server says 304. */
static eq_err fetch_manifest(struct eq_agent *a, uint8_t **m, size_t *mlen, uint8_t **s, size_t *slen, bool *ret_fresh,
			     struct eq_error *err)
{
	bool not_modified = false;
	eq_err r = eq_fetch_manifest(a->fetcher, &not_modified, m, mlen, s, slen, err);
	if (r)
		return r;
	*ret_fresh = !not_modified;
	if (!not_modified)
		return EQ_OK;
	r = eq_file_read_all(a->cache_manifest, EQ_MANIFEST_MAX_BYTES, m, mlen, err);
	if (!r) {
		r = eq_file_read_all(a->cache_sig, EQ_MANIFEST_SIG_MAX_BYTES, s, slen, err);
		if (r) {
			eq_free(*m);
			*m = NULL;
		}
	}
	if (r == EQ_ERR_NOTFOUND) {
		/* Validators without a cached copy: ask again without them. */
		eq_fetch_manifest_forget(a->fetcher);
		*ret_fresh = true;
		return eq_fetch_manifest(a->fetcher, &not_modified, m, mlen, s, slen, err);
	}
	return r;
}

/* The compressed forms of a manifest cost at most this much more than it. */
#define MANIFEST_PACKED_SLACK (64u * 1024u)

/*
 * The manifest @rel the timestamp names (@max bytes, SHA-256 @expect) from
 * what costs the fewest bytes on the wire: a delta from the manifest this
 * device holds (@have, its SHA-256 hex @have_hex; NULL if none), else the
 * compressed manifest. Every result must hash to @expect; whatever is
 * missing or wrong leaves the caller to fetch the full manifest.
 */
static bool fetch_manifest_packed(struct eq_agent *a, const char *rel, size_t max, const char *expect,
				  const char *have_hex, uint8_t **ret, size_t *ret_len)
{
	uint8_t want[EQ_SHA256_LEN];
	if (!eq_hex_decode(expect, want, sizeof(want)) || max > SIZE_MAX - MANIFEST_PACKED_SLACK)
		return false;
	const char *b = a->cfg->board, *c = a->cfg->channel;
	for (int kind = have_hex ? 0 : 1; kind < 2; kind++) {
		EQ_AUTOFREE char *p = NULL;
		uint8_t *d = NULL;
		size_t n = 0;
		struct eq_error e;
		eq_error_clear(&e);
		eq_err lr = kind == 0 ? eq_layout_manifest_delta(NULL, b, c, have_hex, expect, &p, &e)
				      : eq_layout_channel(NULL, b, c, EQ_LAYOUT_MANIFEST_ZST, &p, &e);
		if (lr || eq_fetch_file(a->fetcher, p, max + MANIFEST_PACKED_SLACK, &d, &n, &e) != EQ_OK) {
			eq_log(EQ_LOG_DEBUG, "%s: %s", p ? p : rel, e.msg);
			continue;
		}
		uint8_t *m = NULL;
		size_t ml = 0;
		eq_err r = eq_manifest_unpack(kind == 0 ? EQ_MPACK_DELTA : EQ_MPACK_ZST, a->cache_manifest, d, n, max,
					      want, &m, &ml, &e);
		eq_free(d);
		if (!r) {
			eq_log(EQ_LOG_INFO, "manifest from %s (%zu bytes for %zu)", p, n, ml);
			*ret = m;
			*ret_len = ml;
			return true;
		}
		eq_log(EQ_LOG_WARNING, "%s: %s; fetching the %s", p, e.msg,
		       kind == 0 ? "compressed manifest" : "manifest");
	}
	return false;
}

/* The ETag kept in @path for the bytes with SHA-256 @have (a "sha256 HEX"
 * line first, then "etag VALUE"), into @etag; "" when the file is missing
 * or names other bytes. */
static void load_etag_for(const char *path, const char *have, char *etag, size_t cap)
{
	char lastmod[256];
	uint8_t *v = NULL;
	size_t vl = 0;
	etag[0] = '\0';
	if (!have || !have[0] || eq_file_read_all(path, 4096, &v, &vl, NULL) != EQ_OK)
		return;
	if (vl > 7 + EQ_SHA256_HEX_LEN && memcmp(v, "sha256 ", 7) == 0 && memcmp(v + 7, have, EQ_SHA256_HEX_LEN) == 0 &&
	    v[7 + EQ_SHA256_HEX_LEN] == '\n')
		eq_http_validators_parse((const char *)v, vl, cap < sizeof(lastmod) ? cap : sizeof(lastmod), etag,
					 lastmod);
	eq_free(v);
}

/* A channel's manifest.json.sha256: 64 lower-case hex digits and "\n". */
#define POINTER_MAX 128u

static bool parse_pointer(const uint8_t *d, size_t n, char out[EQ_SHA256_HEX_LEN + 1])
{
	if (n != EQ_SHA256_HEX_LEN + 1 || d[EQ_SHA256_HEX_LEN] != '\n')
		return false;
	for (size_t i = 0; i < EQ_SHA256_HEX_LEN; i++)
		if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f')))
			return false;
	memcpy(out, d, EQ_SHA256_HEX_LEN);
	out[EQ_SHA256_HEX_LEN] = '\0';
	return true;
}

static eq_err read_cached(struct eq_agent *a, uint8_t **m, size_t *mlen, uint8_t **s, size_t *slen,
			  struct eq_error *err)
{
	eq_err r = eq_file_read_all(a->cache_manifest, EQ_MANIFEST_MAX_BYTES, m, mlen, err);
	if (!r && (r = eq_file_read_all(a->cache_sig, EQ_MANIFEST_SIG_MAX_BYTES, s, slen, err))) {
		eq_free(*m);
		*m = NULL;
	}
	return r;
}

/*
 * Legacy mode's manifest, cheaply: the channel's manifest.json.sha256 (a
 * pointer the publisher writes last) asked for conditionally. Unchanged,
 * or naming the cached copy: that copy. Changed: the .sig, and the manifest
 * from a delta against the cached copy or compressed, each rebuilt to the
 * pointer's hash, else in full. The pointer is not signed: it only names
 * what to fetch, and the signature the caller checks decides. A repository
 * without a pointer gets the conditional GET of manifest.json as before.
 */
static eq_err fetch_manifest_cheap(struct eq_agent *a, uint8_t **m, size_t *mlen, uint8_t **s, size_t *slen,
				   bool *ret_fresh, struct eq_error *err)
{
	char have[EQ_SHA256_HEX_LEN + 1] = "", want[EQ_SHA256_HEX_LEN + 1], etag[256];
	uint8_t h[EQ_SHA256_LEN];
	if (eq_sha256_file(a->cache_manifest, h, NULL, NULL) == EQ_OK)
		eq_hex_encode(h, sizeof(h), have);
	load_etag_for(a->ptr_validators, have, etag, sizeof(etag));
	EQ_AUTOFREE char *prel = NULL, *mrel = NULL, *srel = NULL;
	const char *b = a->cfg->board, *c = a->cfg->channel;
	eq_err r;
	if ((r = eq_layout_channel(NULL, b, c, EQ_LAYOUT_MANIFEST_SHA256, &prel, err)) ||
	    (r = eq_layout_channel(NULL, b, c, EQ_LAYOUT_MANIFEST, &mrel, err)) ||
	    (r = eq_layout_channel(NULL, b, c, EQ_LAYOUT_MANIFEST_SIG, &srel, err)))
		return r;
	bool not_modified = false;
	uint8_t *p = NULL;
	size_t pl = 0;
	char *new_etag = NULL;
	struct eq_error e;
	r = eq_fetch_file_cond(a->fetcher, prel, POINTER_MAX, etag, &not_modified, &p, &pl, &new_etag, &e);
	if (r == EQ_ERR_STOPPED) {
		if (err)
			*err = e;
		return r;
	}
	/* Missing (an older publisher), or refused as some stores refuse a
	 * missing key (403): the manifest itself, whose answer decides. */
	if (r) {
		eq_log(EQ_LOG_DEBUG, "%s; fetching the manifest", e.msg);
		return fetch_manifest(a, m, mlen, s, slen, ret_fresh, err);
	}
	bool ok = not_modified || parse_pointer(p, pl, want);
	eq_free(p);
	if (!ok) {
		eq_free(new_etag);
		eq_log(EQ_LOG_WARNING, "%s: not a SHA-256 and a newline; fetching the manifest", prel);
		return fetch_manifest(a, m, mlen, s, slen, ret_fresh, err);
	}
	if (!not_modified) {
		eq_free(a->ptr_pending);
		a->ptr_pending = new_etag ? eq_asprintf("sha256 %s\netag %s\n", want, new_etag) : NULL;
		eq_free(new_etag);
	}
	*ret_fresh = false;
	if (not_modified || strcmp(want, have) == 0) {
		if ((r = read_cached(a, m, mlen, s, slen, err)) != EQ_ERR_NOTFOUND)
			return r;
		/* The copy went away: the whole manifest, plainly. */
		(void)unlink(a->ptr_validators);
		return fetch_manifest(a, m, mlen, s, slen, ret_fresh, err);
	}
	*ret_fresh = true;
	if ((r = eq_fetch_file(a->fetcher, srel, EQ_MANIFEST_SIG_MAX_BYTES, s, slen, err)))
		return r;
	if (fetch_manifest_packed(a, mrel, EQ_MANIFEST_MAX_BYTES, want, have[0] ? have : NULL, m, mlen)) {
		/* The pointer and the .sig may come from different moments of a
		 * mirror: bytes the signatures do not cover cost one full GET. */
		if (eq_manifest_verify(*m, *mlen, *s, *slen, a->trust, &e) == EQ_OK)
			return EQ_OK;
		eq_log(EQ_LOG_WARNING, "%s: the manifest %s names: %s; fetching the manifest", srel, prel, e.msg);
		eq_free(*m);
		*m = NULL;
	}
	if ((r = eq_fetch_file(a->fetcher, mrel, EQ_MANIFEST_MAX_BYTES, m, mlen, err))) {
		eq_free(*s);
		*s = NULL;
	}
	return r;
}

/*
 * The timestamp, conditionally: its ETag is kept with the hash of the bytes
 * it came with ("sha256 HEX" and "etag VALUE" lines), and sent only while
 * the trust store still holds those bytes (@have, NULL: none). A new ETag waits in
 * a->ts_pending until the refresh verified what it came with.
 */
static eq_err fetch_timestamp_cond(struct eq_agent *a, const char *path, size_t max, const char *have, uint8_t **ret,
				   size_t *ret_len, struct eq_error *err)
{
	char etag[256];
	load_etag_for(a->ts_validators, have, etag, sizeof(etag));
	bool not_modified = false;
	char *new_etag = NULL;
	eq_err r = eq_fetch_file_cond(a->fetcher, path, max, etag, &not_modified, ret, ret_len, &new_etag, err);
	if (r || not_modified) {
		if (not_modified)
			eq_log(EQ_LOG_DEBUG, "%s: not modified", path);
		return r;
	}
	eq_free(a->ts_pending);
	a->ts_pending = NULL;
	if (new_etag) {
		uint8_t h[EQ_SHA256_LEN];
		char hex[EQ_SHA256_HEX_LEN + 1];
		eq_sha256(*ret, *ret_len, h);
		eq_hex_encode(h, sizeof(h), hex);
		a->ts_pending = eq_asprintf("sha256 %s\netag %s\n", hex, new_etag);
		eq_free(new_etag);
	}
	return EQ_OK;
}

/* eq_trust_refresh()'s reader: the manifest the timestamp names may come
 * from the copy cached at the last verification (its hash is checked), or
 * be rebuilt from it with a manifest delta, or come compressed. */
static eq_err trust_fetch(void *ctx, const char *path, size_t max, const char *expect, const char *held, uint8_t **ret,
			  size_t *ret_len, struct eq_error *err)
{
	struct eq_agent *a = ctx;
	size_t pl = strlen(path);
	/* The first timestamp too, for the ETag the next check sends. */
	if (held || (pl >= 15 && strcmp(path + pl - 15, "/timestamp.json") == 0))
		return fetch_timestamp_cond(a, path, max, held, ret, ret_len, err);
	/* The next root is almost never there: ask with a HEAD first. Only
	 * "not there" is taken from it; a server that refuses HEAD (405) or
	 * fails gets the GET, whose answer decides. */
	if (strncmp(path, "root/", 5) == 0 && pl > 10 && strcmp(path + pl - 10, ".root.json") == 0) {
		struct eq_error he;
		eq_err hr = eq_fetch_exists(a->fetcher, path, max, &he);
		if (hr == EQ_ERR_NOTFOUND || hr == EQ_ERR_STOPPED) {
			if (err)
				*err = he;
			return hr;
		}
		if (hr)
			eq_log(EQ_LOG_DEBUG, "HEAD %s: %s; asking with GET", path, he.msg);
	}
	uint8_t *d = NULL;
	size_t l = 0;
	char have[EQ_SHA256_HEX_LEN + 1] = "";
	if (expect && eq_file_read_all(a->cache_manifest, EQ_MANIFEST_MAX_BYTES, &d, &l, NULL) == EQ_OK) {
		uint8_t h[EQ_SHA256_LEN];
		eq_sha256(d, l, h);
		eq_hex_encode(h, sizeof(h), have);
		if (strcmp(have, expect) == 0 && l <= max) {
			*ret = d;
			*ret_len = l;
			a->cache_hit = true;
			return EQ_OK;
		}
		eq_free(d);
	}
	/* The signatures cached with those bytes: the server's file may
	 * already belong to a newer manifest the timestamp does not name. */
	if (a->cache_hit && pl > 4 && strcmp(path + pl - 4, ".sig") == 0 &&
	    eq_file_read_all(a->cache_sig, max, ret, ret_len, NULL) == EQ_OK)
		return EQ_OK;
	if (expect && pl >= 13 && strcmp(path + pl - 13, "manifest.json") == 0 &&
	    fetch_manifest_packed(a, path, max, expect, have[0] ? have : NULL, ret, ret_len))
		return EQ_OK;
	return eq_fetch_file(a->fetcher, path, max, ret, ret_len, err);
}

/* The entry point: see manifest_client.h. */
eq_err eq_mclient_fetch_current(struct eq_agent *a, int64_t now, struct eq_check *c, bool *ret_fresh,
				struct eq_error *err)
{
	eq_err r;
	if (a->tstore) {
		struct eq_trust_result res;
		a->cache_hit = false;
		eq_free(a->ts_pending);
		a->ts_pending = NULL;
		if ((r = eq_trust_refresh(a->tstore, trust_fetch, a, a->cfg->board, a->cfg->channel, now, &res, err)))
			return eq_error_prefix(err, r, "repository");
		/* Best effort: without it the next check is a plain GET. */
		struct eq_error e;
		if (a->ts_pending &&
		    eq_file_replace_atomic(a->ts_validators, a->ts_pending, strlen(a->ts_pending), 0600, &e) != EQ_OK)
			eq_log(EQ_LOG_DEBUG, "%s", e.msg);
		c->manifest_bytes = res.manifest;
		c->manifest_len = res.manifest_len;
		c->sig_bytes = res.sig;
		c->sig_len = res.sig_len;
		c->next = res.m;
		/* Cached for the next refresh, where an unchanged timestamp then
		 * costs no manifest download (the callers' cache code is for the
		 * conditional requests of legacy mode). */
		if (!a->cache_hit &&
		    ((r = eq_file_replace_atomic(a->cache_sig, c->sig_bytes, c->sig_len, 0644, err)) ||
		     (r = eq_file_replace_atomic(a->cache_manifest, c->manifest_bytes, c->manifest_len, 0644, err))))
			return r;
		*ret_fresh = false;
		return EQ_OK;
	}
	bool fresh;
	eq_free(a->ptr_pending);
	a->ptr_pending = NULL;
	if ((r = fetch_manifest_cheap(a, &c->manifest_bytes, &c->manifest_len, &c->sig_bytes, &c->sig_len, &fresh,
				      err)))
		return r;
	struct eq_manifest_policy pol = {
		.board = a->cfg->board, .channel = a->cfg->channel, .now = now, .check_expiry = true};
	if ((r = eq_manifest_load_verified(c->manifest_bytes, c->manifest_len, c->sig_bytes, c->sig_len, a->trust, &pol,
					   &c->next, err)))
		return eq_error_prefix(err, r, "%s", fresh ? "repository manifest" : a->cache_manifest);
	*ret_fresh = fresh;
	return EQ_OK;
}
