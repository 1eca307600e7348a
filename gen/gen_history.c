/*
 * What a publish needs to know about a channel's past releases, without
 * reading them all: their numbers and names, and for every package the
 * payloads it had, newest first. Parsing every old manifest made each
 * publish slower by a few milliseconds per release ever published (a
 * 1,000-package channel: 71 ms for the second release, 284 ms for the
 * fortieth), so after each publish this summary is written beside the
 * channel's manifest and the next publish reads it instead, checked
 * against the release folders and the newest manifest's hash; when it does
 * not match, it is rebuilt from the manifests, one at a time.
 *
 * The file, boards/<b>/<c>/publisher-history (devices never read it):
 *   eqota-history 1
 *   head <number> <SHA-256 of releases/<number>/manifest.json>
 *   r <number> <release name>                       one per release, ascending
 *   p <package name>                                 packages in name order,
 *   v <payload sha256> <payload size> <object sha256>  each followed by its
 *                                                    payloads, newest first
 *   end <SHA-256 of all the lines before>
 */
#include <eq/repo_layout.h>

#include "gen_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY_MAGIC "eqota-history 1"

void eqg_history_done(struct eqg_history *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n_releases; i++)
		eq_free(h->names[i]);
	eq_free(h->names);
	eq_free(h->numbers);
	for (size_t i = 0; i < h->n_pkgs; i++) {
		eq_free(h->pkgs[i].name);
		eq_free(h->pkgs[i].v);
	}
	eq_free(h->pkgs);
	memset(h, 0, sizeof(*h));
}

/* Where @name is in h->pkgs, or where it would go (*ret_found false). */
static size_t pkg_index(const struct eqg_history *h, const char *name, bool *ret_found)
{
	size_t lo = 0, hi = h->n_pkgs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(h->pkgs[mid].name, name);
		if (c == 0) {
			*ret_found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_found = false;
	return lo;
}

const struct eqg_hist_pkg *eqg_history_find(const struct eqg_history *h, const char *name)
{
	bool found;
	size_t i = pkg_index(h, name, &found);
	return found ? &h->pkgs[i] : NULL;
}

static eq_err nomem(struct eq_error *err)
{
	return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
}

static eq_err add_release(struct eqg_history *h, uint64_t number, const char *name, struct eq_error *err)
{
	uint64_t *nv = eq_realloc(h->numbers, (h->n_releases + 1) * sizeof(*nv));
	if (!nv)
		return nomem(err);
	h->numbers = nv;
	char **sv = eq_realloc(h->names, (h->n_releases + 1) * sizeof(*sv));
	if (!sv)
		return nomem(err);
	h->names = sv;
	if (!(sv[h->n_releases] = eq_strdup(name)))
		return nomem(err);
	nv[h->n_releases++] = number;
	return EQ_OK;
}

/* The package @name, added (empty) in name order if new; NULL when out of
 * memory. */
static struct eqg_hist_pkg *pkg_get(struct eqg_history *h, const char *name)
{
	bool found;
	size_t lo = pkg_index(h, name, &found);
	if (found)
		return &h->pkgs[lo];
	if (h->n_pkgs == h->cap_pkgs) {
		size_t cap = h->cap_pkgs ? h->cap_pkgs * 2 : 256;
		struct eqg_hist_pkg *v = eq_realloc(h->pkgs, cap * sizeof(*v));
		if (!v)
			return NULL;
		h->pkgs = v;
		h->cap_pkgs = cap;
	}
	char *n = eq_strdup(name);
	if (!n)
		return NULL;
	memmove(&h->pkgs[lo + 1], &h->pkgs[lo], (h->n_pkgs - lo) * sizeof(*h->pkgs));
	h->pkgs[lo] = (struct eqg_hist_pkg){.name = n};
	h->n_pkgs++;
	return &h->pkgs[lo];
}

/* Puts @e at the front of @p's payloads (moving it there if it was
 * further back), keeping at most EQG_HISTORY_DEPTH. */
static eq_err pkg_push(struct eqg_hist_pkg *p, const struct eqg_hist_payload *e, struct eq_error *err)
{
	size_t at = p->n;
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].payload_sha256, e->payload_sha256)) {
			at = i;
			break;
		}
	if (at == p->n) {
		if (p->n < EQG_HISTORY_DEPTH) {
			struct eqg_hist_payload *v = eq_realloc(p->v, (p->n + 1) * sizeof(*v));
			if (!v)
				return nomem(err);
			p->v = v;
			p->n++;
		}
		at = p->n - 1; /* the oldest drops out when full */
	}
	memmove(&p->v[1], &p->v[0], at * sizeof(*p->v));
	p->v[0] = *e;
	return EQ_OK;
}

eq_err eqg_history_add(struct eqg_history *h, uint64_t number, const char *release, const struct eq_manifest *m,
		       struct eq_error *err)
{
	eq_err r = add_release(h, number, release, err);
	for (size_t i = 0; !r && i < eq_manifest_package_count(m); i++) {
		const struct eq_manifest_package *mp = eq_manifest_package_at(m, i);
		struct eqg_hist_pkg *p = pkg_get(h, mp->name);
		if (!p)
			return nomem(err);
		struct eqg_hist_payload e = {.payload_size = mp->payload.size};
		memcpy(e.payload_sha256, mp->payload.sha256, sizeof(e.payload_sha256));
		memcpy(e.object_sha256, mp->object.sha256, sizeof(e.object_sha256));
		r = pkg_push(p, &e, err);
	}
	return r;
}

eq_err eqg_release_numbers(const char *dir, uint64_t **ret, size_t *ret_n, struct eq_error *err)
{
	return eq_dir_numbers(dir, "", 0, ret, ret_n, err);
}

static bool hist_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 255)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return false;
	return true;
}

static bool parse_u64(const char *s, uint64_t *ret)
{
	return s && eq_parse_u64(s, strlen(s), UINT64_MAX, ret);
}

/*
 * Reads the summary at @path into @h if it describes exactly the releases
 * @nums (ascending) and its head is the newest of them with the manifest
 * hash @head_sha; false (and @h left empty) for anything else, with the
 * reason in *@why.
 */
static bool read_index(const char *path, const uint64_t *nums, size_t n_nums, const char *head_sha,
		       struct eqg_history *h, const char **why, struct eq_error *err, eq_err *ret_r)
{
	uint8_t *data = NULL;
	size_t len = 0;
	*ret_r = EQ_OK;
	struct eq_error e;
	eq_err r = eq_file_read_all(path, (size_t)1 << 30, &data, &len, &e);
	if (r) {
		*why = r == EQ_ERR_NOTFOUND ? "no summary yet" : "the summary cannot be read";
		if (r == EQ_ERR_NOMEM)
			*ret_r = nomem(err);
		return false;
	}
	/* A NUL makes the text end early; the summary never holds one. */
	char *text = eq_malloc(len + 1);
	if (!text) {
		eq_free(data);
		*ret_r = nomem(err);
		return false;
	}
	memcpy(text, data, len);
	text[len] = '\0';
	eq_free(data);
	/* The last line, "end <SHA-256 of the bytes before it>", catches a
	 * file cut at a line end, which would parse as fewer packages. */
	bool ok = strlen(text) == len && len > 0 && text[len - 1] == '\n';
	if (ok) {
		size_t start = len - 1;
		while (start > 0 && text[start - 1] != '\n')
			start--;
		uint8_t dg[EQ_SHA256_LEN];
		char hex[EQ_SHA256_HEX_LEN + 1];
		eq_sha256(text, start, dg);
		eq_hex_encode(dg, sizeof(dg), hex);
		ok = len - start == 4 + EQ_SHA256_HEX_LEN + 1 && !memcmp(text + start, "end ", 4) &&
		     !memcmp(text + start + 4, hex, EQ_SHA256_HEX_LEN);
		if (!ok)
			*why = "the summary is damaged";
		text[start] = '\0';
	}
	if (!ok) {
		eq_free(text);
		return false;
	}
	char *p = text, *line;
	struct eqg_hist_pkg *cur = NULL;
	uint64_t head = 0;
	*why = "the summary is malformed";
	line = eqg_next_line(&p);
	ok = line && !strcmp(line, HISTORY_MAGIC);
	while (ok && (line = eqg_next_line(&p))) {
		char *f = line, *kind = eqg_next_field(&f);
		char *a = eqg_next_field(&f), *b = eqg_next_field(&f), *c = eqg_next_field(&f);
		char *more = eqg_next_field(&f);
		uint64_t x;
		if (!kind || more) {
			ok = false;
		} else if (!strcmp(kind, "head")) {
			ok = parse_u64(a, &head) && b && eq_is_sha256_hex(b) && !c && h->n_releases == 0;
			if (ok && (head != (n_nums ? nums[n_nums - 1] : 0) || strcmp(b, head_sha))) {
				*why = "the newest release is not the one the summary was made for";
				ok = false;
			}
		} else if (!strcmp(kind, "r")) {
			ok = head && parse_u64(a, &x) && b && hist_name_ok(b) && !c && h->n_pkgs == 0;
			if (ok && (h->n_releases >= n_nums || x != nums[h->n_releases])) {
				*why = "release folders were added or removed since the summary";
				ok = false;
			}
			if (ok && (*ret_r = add_release(h, x, b, err)))
				ok = false;
		} else if (!strcmp(kind, "p")) {
			/* name order, each once: what pkg_get() would build */
			ok = h->n_releases == n_nums && a && hist_name_ok(a) && !b &&
			     (!cur || strcmp(cur->name, a) < 0) && (!cur || cur->n > 0);
			if (ok && !(cur = pkg_get(h, a))) {
				*ret_r = nomem(err);
				ok = false;
			}
		} else if (!strcmp(kind, "v")) {
			ok = cur && cur->n < EQG_HISTORY_DEPTH && a && eq_is_sha256_hex(a) && parse_u64(b, &x) && c &&
			     eq_is_sha256_hex(c);
			for (size_t i = 0; ok && i < cur->n; i++)
				ok = strcmp(cur->v[i].payload_sha256, a) != 0;
			if (ok) {
				struct eqg_hist_payload *v = eq_realloc(cur->v, (cur->n + 1) * sizeof(*v));
				if (!v) {
					*ret_r = nomem(err);
					ok = false;
				} else {
					cur->v = v;
					struct eqg_hist_payload *pe = &v[cur->n++];
					memcpy(pe->payload_sha256, a, EQ_SHA256_HEX_LEN + 1);
					memcpy(pe->object_sha256, c, EQ_SHA256_HEX_LEN + 1);
					pe->payload_size = x;
				}
			}
		} else {
			ok = false;
		}
	}
	if (ok && (h->n_releases != n_nums || (cur && cur->n == 0))) {
		*why = h->n_releases != n_nums ? "release folders were added or removed since the summary"
					       : "the summary is malformed";
		ok = false;
	}
	eq_free(text);
	if (!ok)
		eqg_history_done(h);
	return ok;
}

eq_err eqg_manifest_read(const char *path, struct eq_manifest **ret, struct eq_error *err)
{
	uint8_t *data = NULL;
	size_t len = 0;
	eq_err r = eq_file_read_all(path, EQ_MANIFEST_MAX_BYTES, &data, &len, err);
	if (r)
		return r;
	r = eq_manifest_parse_unverified(data, len, ret, err);
	eq_free(data);
	return r ? eq_error_prefix(err, r, "%s", path) : EQ_OK;
}

/* The summary of @dir's releases @nums from their manifests, one at a
 * time, so memory stays that of one manifest. */
static eq_err rebuild(const char *dir, const uint64_t *nums, size_t n_nums, struct eqg_history *h, struct eq_error *err)
{
	for (size_t i = 0; i < n_nums; i++) {
		EQ_AUTOFREE char *path = eq_asprintf("%s/%" PRIu64 "/manifest.json", dir, nums[i]);
		if (!path)
			return nomem(err);
		struct eq_manifest *m = NULL;
		eq_err r = eqg_manifest_read(path, &m, err);
		if (r)
			return r;
		struct eq_manifest_header hd;
		r = eq_manifest_get_header(m, &hd, err);
		if (!r && hd.number != nums[i])
			r = eq_error_set(err, EQ_ERR_PARSE, "%s: release number %" PRIu64 " in folder %" PRIu64, path,
					 hd.number, nums[i]);
		if (!r)
			r = eqg_history_add(h, hd.number, hd.release, m, err);
		eq_manifest_free(m);
		if (r)
			return r;
	}
	return EQ_OK;
}

eq_err eqg_history_open(const char *repo, const char *board, const char *channel, struct eqg_history *ret,
			struct eq_error *err)
{
	memset(ret, 0, sizeof(*ret));
	EQ_AUTOFREE char *dir = NULL, *ipath = NULL;
	uint64_t *nums = NULL;
	size_t n = 0;
	eq_err r;
	if ((r = eq_layout_channel(repo, board, channel, EQ_LAYOUT_RELEASES, &dir, err)) ||
	    (r = eq_layout_channel(repo, board, channel, EQ_LAYOUT_HISTORY, &ipath, err)))
		return r;
	r = eqg_release_numbers(dir, &nums, &n, err);
	if (r || n == 0) {
		eq_free(nums);
		return r;
	}
	/* The newest manifest's hash ties the summary to what is published. */
	char head_sha[EQ_SHA256_HEX_LEN + 1] = "";
	EQ_AUTOFREE char *hpath = eq_asprintf("%s/%" PRIu64 "/manifest.json", dir, nums[n - 1]);
	uint8_t dg[EQ_SHA256_LEN];
	if (!hpath) {
		r = nomem(err);
	} else if ((r = eq_sha256_file(hpath, dg, NULL, err)) == EQ_OK) {
		eq_hex_encode(dg, sizeof(dg), head_sha);
		const char *why = NULL;
		if (read_index(ipath, nums, n, head_sha, ret, &why, err, &r)) {
			ret->from_summary = true;
		} else if (!r) {
			eq_log(EQ_LOG_INFO, "reading the %zu releases of %s/%s (%s)", n, board, channel, why);
			if ((r = rebuild(dir, nums, n, ret, err)))
				eqg_history_done(ret);
		}
	}
	eq_free(nums);
	return r;
}

eq_err eqg_history_write(const struct eqg_history *h, const char *repo, const char *board, const char *channel,
			 const uint8_t head_sha256[EQ_SHA256_LEN], struct eq_error *err)
{
	if (!h->n_releases)
		return EQ_OK;
	struct eq_buf b;
	eq_buf_init(&b, (size_t)1 << 30);
	char sha[EQ_SHA256_HEX_LEN + 1];
	eq_hex_encode(head_sha256, EQ_SHA256_LEN, sha);
	eq_err r = eq_buf_printf(&b, err, HISTORY_MAGIC "\nhead %" PRIu64 " %s\n", h->numbers[h->n_releases - 1], sha);
	for (size_t i = 0; !r && i < h->n_releases; i++)
		r = eq_buf_printf(&b, err, "r %" PRIu64 " %s\n", h->numbers[i], h->names[i]);
	for (size_t i = 0; !r && i < h->n_pkgs; i++) {
		const struct eqg_hist_pkg *p = &h->pkgs[i];
		if (!p->n)
			continue;
		r = eq_buf_printf(&b, err, "p %s\n", p->name);
		for (size_t k = 0; !r && k < p->n; k++)
			r = eq_buf_printf(&b, err, "v %s %" PRIu64 " %s\n", p->v[k].payload_sha256,
					  p->v[k].payload_size, p->v[k].object_sha256);
	}
	if (!r) {
		uint8_t dg[EQ_SHA256_LEN];
		eq_sha256(b.data, b.len, dg);
		eq_hex_encode(dg, sizeof(dg), sha);
		r = eq_buf_printf(&b, err, "end %s\n", sha);
	}
	EQ_AUTOFREE char *path = NULL;
	if (!r)
		r = eq_layout_channel(repo, board, channel, EQ_LAYOUT_HISTORY, &path, err);
	if (!r)
		r = eq_file_replace_atomic(path, b.data, b.len, 0644, err);
	eq_buf_done(&b);
	return r;
}
