#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <eq/gen_equiv.h>
#include <eq/gen_hashserv.h>
#include <eq/gen_import.h>
#include <eq/gen_store.h>

/* What one manifest of the repository says was published for a unihash. */
struct pub_row {
	char unihash[EQ_SHA256_HEX_LEN + 1];
	char *pn;
	struct eq_store_published pub;
	size_t seq; /* walk order: oldest first, breaks ties in the sort */
};

struct eq_equiv {
	char *name;
	struct eq_store *store; /* local backend */
	struct eq_hashserv *hs; /* remote backend */
	struct pub_row *rows;   /* remote: sorted by unihash, then seq */
	size_t n_rows, cap_rows;
	size_t n_sorted; /* rows[0..n_sorted) are sorted; later ones were added by this run */
};

static void rows_free(struct eq_equiv *e)
{
	for (size_t i = 0; i < e->n_rows; i++)
		eq_free(e->rows[i].pn);
	eq_free(e->rows);
	e->rows = NULL;
	e->n_rows = e->cap_rows = e->n_sorted = 0;
}

void eq_equiv_close(struct eq_equiv *e)
{
	if (!e)
		return;
	eq_store_close(e->store);
	eq_hashserv_close(e->hs);
	rows_free(e);
	eq_free(e->name);
	eq_free(e);
}

static eq_err add_row(struct eq_equiv *e, const char *unihash, const char *pn, const struct eq_store_published *pub,
		      struct eq_error *err)
{
	if (e->n_rows == e->cap_rows) {
		size_t ncap = e->cap_rows ? e->cap_rows * 2 : 256;
		struct pub_row *nv = eq_realloc(e->rows, ncap * sizeof(*nv));
		if (!nv)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		e->rows = nv;
		e->cap_rows = ncap;
	}
	struct pub_row *r = &e->rows[e->n_rows];
	memset(r, 0, sizeof(*r));
	snprintf(r->unihash, sizeof(r->unihash), "%s", unihash);
	r->pn = eq_strdup(pn);
	if (!r->pn)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	r->pub = *pub;
	r->seq = e->n_rows++;
	return EQ_OK;
}

static int cmp_row(const void *a, const void *b)
{
	const struct pub_row *x = a, *y = b;
	int c = strcmp(x->unihash, y->unihash);
	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static eq_err load_one(void *ctx, const struct eq_repo_pkg_ref *ref, struct eq_error *err)
{
	const struct eq_manifest_package *p = ref->pkg;
	struct eq_store_published pub = {.payload_size = p->payload.size, .object_size = p->object.size};
	snprintf(pub.payload_sha256, sizeof(pub.payload_sha256), "%s", p->payload.sha256);
	snprintf(pub.object_sha256, sizeof(pub.object_sha256), "%s", p->object.sha256);
	return add_row(ctx, p->unihash, p->name, &pub, err);
}

/*
 * The publisher's own manifests, oldest first, read without signature
 * check like eq_repo_history_load(): they are the files this host wrote
 * and serves, and what it already serves is what must stay consistent.
 */
static eq_err load_repo(struct eq_equiv *e, const char *repo, struct eq_error *err)
{
	struct eq_repo_walk_opts wo = {.unverified = true};
	eq_err r = eq_repo_walk(repo, &wo, load_one, e, err);
	if (!r && e->n_rows > 1)
		qsort(e->rows, e->n_rows, sizeof(*e->rows), cmp_row);
	e->n_sorted = e->n_rows;
	return r;
}

static const char *env2(const char *a, const char *b)
{
	const char *v = secure_getenv(a);
	if (!v || !*v)
		v = secure_getenv(b);
	return v && *v ? v : NULL;
}

eq_err eq_equiv_open(const struct eq_equiv_opts *o, struct eq_equiv **ret, struct eq_error *err)
{
	struct eq_equiv *e = eq_calloc(1, sizeof(*e));
	if (!e)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	eq_err r;
	if (o->hashserv) {
		struct eq_hashserv_opts ho = {
			.timeout_ms = o->timeout_ms,
			.username = env2("EQOTA_HASHSERV_USERNAME", "BB_HASHSERVE_USERNAME"),
			.token = env2("EQOTA_HASHSERV_TOKEN", "BB_HASHSERVE_PASSWORD"),
		};
		e->name = eq_asprintf("hashserv '%s'", o->hashserv);
		r = e->name ? eq_hashserv_open(o->hashserv, &ho, &e->hs, err)
			    : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		if (!r && o->repo) {
			r = load_repo(e, o->repo, err);
			if (r)
				eq_error_prefix(err, r, "repository '%s'", o->repo);
		}
	} else {
		EQ_AUTOFREE char *def = NULL;
		const char *path = o->store_path;
		r = path ? EQ_OK : eq_store_default_path(&def, err);
		if (!r) {
			path = path ? path : def;
			e->name = eq_asprintf("store '%s'", path);
			r = e->name ? eq_store_open(path, &e->store, err)
				    : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			if (r)
				eq_error_prefix(err, r, "equivalence store '%s'", path);
		}
	}
	if (r) {
		eq_equiv_close(e);
		return r;
	}
	*ret = e;
	return EQ_OK;
}

/* The server's answer is adopted only once a get shows it stored: a
 * read-only server (or a user without @report) answers a report with a
 * unihash it never records, and a manifest must not name a mapping that
 * the next build will not get back. */
static eq_err remote_report(struct eq_equiv *e, const char *method, struct eq_equiv_item *v, size_t n,
			    struct eq_error *err)
{
	struct eq_hashserv_report *rep = eq_calloc(n, sizeof(*rep));
	const char **th = eq_calloc(n, sizeof(*th));
	char(*got)[EQ_SHA256_HEX_LEN + 1] = eq_calloc(n, sizeof(*got));
	eq_err r = EQ_OK;
	if (!rep || !th || !got) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		rep[i].taskhash = v[i].taskhash;
		rep[i].outhash = v[i].outhash;
		rep[i].unihash = v[i].proposed ? v[i].proposed : v[i].taskhash;
		rep[i].pn = v[i].pn;
		rep[i].pv = v[i].pv;
		th[i] = v[i].taskhash;
	}
	r = eq_hashserv_report_many(e->hs, method, rep, n, err);
	if (!r)
		r = eq_hashserv_get_many(e->hs, method, th, n, got, err);
	for (size_t i = 0; !r && i < n; i++) {
		if (!got[i][0]) {
			r = eq_error_set(err, EQ_ERR_STATE,
					 "%s did not record the report for package '%s' (taskhash %s): the server is "
					 "read-only or the user lacks the @report permission",
					 e->name, v[i].pn ? v[i].pn : "?", v[i].taskhash);
			break;
		}
		memcpy(v[i].unihash, got[i], sizeof(v[i].unihash));
		v[i].flags = 0;
	}
out:
	eq_free(rep);
	eq_free(th);
	eq_free(got);
	return r;
}

eq_err eq_equiv_report_many(struct eq_equiv *e, const char *method, struct eq_equiv_item *v, size_t n,
			    struct eq_error *err)
{
	if (n == 0)
		return EQ_OK;
	if (e->hs)
		return remote_report(e, method, v, n, err);
	for (size_t i = 0; i < n; i++) {
		eq_err r = eq_store_report(e->store, method, v[i].taskhash, v[i].outhash, v[i].proposed, v[i].pn,
					   v[i].pv, v[i].unihash, &v[i].flags, err);
		if (r)
			return r;
	}
	return EQ_OK;
}

eq_err eq_equiv_get(struct eq_equiv *e, const char *method, const char *taskhash,
		    char ret_unihash[EQ_SHA256_HEX_LEN + 1], struct eq_error *err)
{
	if (!e->hs)
		return eq_store_get(e->store, method, taskhash, ret_unihash, err);
	const char *th[1] = {taskhash};
	char got[1][EQ_SHA256_HEX_LEN + 1] = {{0}};
	eq_err r = eq_hashserv_get_many(e->hs, method, th, 1, got, err);
	if (r)
		return r;
	if (!got[0][0])
		return eq_error_set(err, EQ_ERR_NOTFOUND, "taskhash %s: unknown to %s", taskhash, e->name);
	memcpy(ret_unihash, got[0], EQ_SHA256_HEX_LEN + 1);
	return EQ_OK;
}

/* First (oldest) row of @unihash in the sorted part, or NULL. */
static const struct pub_row *first_row(const struct eq_equiv *e, const char *unihash)
{
	size_t lo = 0, hi = e->n_sorted;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(e->rows[mid].unihash, unihash) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < e->n_sorted && !strcmp(e->rows[lo].unihash, unihash))
		return &e->rows[lo];
	for (size_t i = e->n_sorted; i < e->n_rows; i++)
		if (!strcmp(e->rows[i].unihash, unihash))
			return &e->rows[i];
	return NULL;
}

static bool row_matches(const struct pub_row *r, const char *unihash, const char *pn, const char *payload)
{
	return !strcmp(r->unihash, unihash) && !strcmp(r->pn, pn) && !strcmp(r->pub.payload_sha256, payload);
}

eq_err eq_equiv_get_published(struct eq_equiv *e, const char *method, const char *unihash, const char *pn,
			      struct eq_store_published *ret, bool *ret_same_package, struct eq_error *err)
{
	if (!e->hs) {
		eq_err r = eq_store_get_published(e->store, method, unihash, ret, err);
		if (!r)
			r = eq_store_output_of(e->store, method, ret->payload_sha256, pn, ret_same_package, err);
		return r;
	}
	const struct pub_row *first = first_row(e, unihash);
	if (!first)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "unihash %s: nothing published under method '%s'", unihash,
				    method);
	*ret = first->pub;
	bool same = false;
	for (const struct pub_row *r = first; !same && r < e->rows + e->n_sorted && !strcmp(r->unihash, unihash); r++)
		same = row_matches(r, unihash, pn, ret->payload_sha256);
	for (size_t i = e->n_sorted; !same && i < e->n_rows; i++)
		same = row_matches(&e->rows[i], unihash, pn, ret->payload_sha256);
	*ret_same_package = same;
	return EQ_OK;
}

eq_err eq_equiv_set_published(struct eq_equiv *e, const char *method, const char *unihash, const char *pn,
			      const struct eq_store_published *pub, struct eq_store_published *ret, bool *ret_inserted,
			      struct eq_error *err)
{
	if (!e->hs)
		return eq_store_set_published(e->store, method, unihash, pub, ret, ret_inserted, err);
	const struct pub_row *first = first_row(e, unihash);
	if (first) {
		*ret = first->pub;
		if (ret_inserted)
			*ret_inserted = false;
		return EQ_OK;
	}
	eq_err r = add_row(e, unihash, pn, pub, err);
	if (r)
		return r;
	*ret = *pub;
	if (ret_inserted)
		*ret_inserted = true;
	return EQ_OK;
}
