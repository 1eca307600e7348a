/*
 * The repository walker and `equiv import`: what a repository's manifests
 * say about taskhashes, unihashes and payloads, read back oldest first, so
 * a lost equivalence store can be rebuilt from what devices already run.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <eq/delta.h>
#include <eq/gen_import.h>
#include <eq/gen_root.h>
#include <eq/gen_store.h>
#include <eq/repo_layout.h>

/* One loaded manifest of the walk. */
struct walk_item {
	char *board, *channel, *path;
	uint64_t number;
	struct eq_manifest *m;        /* owned */
	struct eq_manifest_header hd; /* strings owned by m */
};

struct walk {
	const char *repo;
	const struct eq_repo_walk_opts *o;
	const struct eq_manifest_trust *keys; /* trust, or the newest root's release role */
	struct walk_item *v;
	size_t n, cap;
};

static void walk_done(struct walk *w)
{
	for (size_t i = 0; i < w->n; i++) {
		eq_free(w->v[i].board);
		eq_free(w->v[i].channel);
		eq_free(w->v[i].path);
		eq_manifest_free(w->v[i].m);
	}
	eq_free(w->v);
	w->v = NULL;
	w->n = w->cap = 0;
}

/* A release folder's name: decimal digits only, as eq_repo_history_load()
 * reads them ("1", never "1.old"). */
static bool release_number(const char *s, uint64_t *ret)
{
	size_t n = strlen(s);
	return n <= 16 && eq_parse_u64(s, n, UINT64_MAX, ret);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the sub-folders of @dir (no dot entries). A missing
 * @dir is an empty list when @missing_ok. Caller frees each and the array. */
static eq_err list_dirs(const char *dir, bool missing_ok, char ***ret, size_t *ret_n, struct eq_error *err)
{
	*ret = NULL;
	*ret_n = 0;
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT && missing_ok)
			return EQ_OK;
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot read '%s'", dir);
	}
	char **v = NULL;
	size_t n = 0;
	eq_err r = EQ_OK;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		EQ_AUTOFREE char *p = eq_asprintf("%s/%s", dir, de->d_name);
		struct stat st;
		if (!p) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
		if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		if (n >= EQ_REPO_WALK_MAX_MANIFESTS) {
			r = eq_error_set(err, EQ_ERR_LIMIT, "'%s' has more than %u entries", dir,
					 EQ_REPO_WALK_MAX_MANIFESTS);
			break;
		}
		char **nv = eq_realloc(v, (n + 1) * sizeof(*v));
		char *name = eq_strdup(de->d_name);
		if (!nv || !name) {
			if (nv)
				v = nv;
			eq_free(name);
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
		v = nv;
		v[n++] = name;
	}
	closedir(d);
	if (r) {
		for (size_t i = 0; i < n; i++)
			eq_free(v[i]);
		eq_free(v);
		return r;
	}
	/* readdir order depends on the file system: sort for a deterministic
	 * walk (a channel may hold thousands of releases). */
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_names);
	*ret = v;
	*ret_n = n;
	return EQ_OK;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		eq_free(v[i]);
	eq_free(v);
}

/* Loads one manifest, verified per the options, and checks it belongs in
 * its folder. */
static eq_err load_one(struct walk *w, const char *board, const char *channel, uint64_t number, const char *path,
		       struct eq_error *err)
{
	if (w->n >= EQ_REPO_WALK_MAX_MANIFESTS)
		return eq_error_set(err, EQ_ERR_LIMIT, "%s: more than %u release manifests", w->repo,
				    EQ_REPO_WALK_MAX_MANIFESTS);
	struct eq_manifest *m = NULL;
	eq_err r;
	if (w->o->unverified) {
		uint8_t *data = NULL;
		size_t len = 0;
		r = eq_file_read_all(path, EQ_MANIFEST_MAX_BYTES, &data, &len, err);
		if (!r)
			r = eq_manifest_parse_unverified(data, len, &m, err);
		eq_free(data);
		if (r)
			return eq_error_prefix(err, r, "%s", path);
	} else {
		/* Old releases are past their expiry on purpose; the folder
		 * names the board, channel and number the signature covers. */
		struct eq_manifest_policy pol = {
			.board = board, .channel = channel, .number = number, .now = 0, .check_expiry = false};
		r = eq_manifest_load_verified_file(path, NULL, w->keys, &pol, &m, err);
		if (r)
			return r;
	}
	struct eq_manifest_header hd;
	r = eq_manifest_get_header(m, &hd, err);
	if (!r && (strcmp(hd.board, board) || strcmp(hd.channel, channel) || hd.number != number))
		/* Unverified too: a manifest copied into another folder would
		 * be imported under the wrong release. */
		r = eq_error_set(err, EQ_ERR_STATE,
				 "%s: the manifest is board '%s', channel '%s', number %" PRIu64
				 ", not what its folder says",
				 path, hd.board, hd.channel, hd.number);
	if (r) {
		eq_manifest_free(m);
		return r;
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		struct walk_item *v = eq_realloc(w->v, cap * sizeof(*v));
		if (!v) {
			eq_manifest_free(m);
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		}
		w->v = v;
		w->cap = cap;
	}
	struct walk_item it = {.board = eq_strdup(board),
			       .channel = eq_strdup(channel),
			       .path = eq_strdup(path),
			       .number = number,
			       .m = m,
			       .hd = hd};
	if (!it.board || !it.channel || !it.path) {
		eq_free(it.board);
		eq_free(it.channel);
		eq_free(it.path);
		eq_manifest_free(m);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	w->v[w->n++] = it;
	return EQ_OK;
}

static eq_err load_channel(struct walk *w, const char *board, const char *channel, struct eq_error *err)
{
	EQ_AUTOFREE char *dir = NULL;
	char **names = NULL;
	size_t n = 0;
	eq_err r = eq_layout_channel(w->repo, board, channel, EQ_LAYOUT_RELEASES, &dir, err);
	if (!r)
		r = list_dirs(dir, true, &names, &n, err);
	for (size_t i = 0; !r && i < n; i++) {
		uint64_t number;
		if (!release_number(names[i], &number))
			continue;
		EQ_AUTOFREE char *path = eq_asprintf("%s/%s/manifest.json", dir, names[i]);
		r = path ? load_one(w, board, channel, number, path, err)
			 : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	free_names(names, n);
	return r;
}

/* The installed root, then every next root the repository has. */
static eq_err root_chain(const char *repo, const char *root_path, struct eq_root **ret, struct eq_error *err)
{
	struct eq_root *cur = NULL;
	eq_err r = eq_root_load_file(root_path, &cur, err);
	return r ? r : eq_gen_root_follow(repo, cur, ret, err);
}

static int cmp_item(const void *a, const void *b)
{
	const struct walk_item *x = a, *y = b;
	if (x->hd.issued != y->hd.issued)
		return x->hd.issued < y->hd.issued ? -1 : 1;
	int c = strcmp(x->board, y->board);
	if (!c)
		c = strcmp(x->channel, y->channel);
	if (!c && x->number != y->number)
		c = x->number < y->number ? -1 : 1;
	return c;
}

eq_err eq_repo_walk(const char *repo, const struct eq_repo_walk_opts *o, eq_repo_walk_fn fn, void *ctx,
		    struct eq_error *err)
{
	if (!repo || !o || !fn)
		return eq_error_set(err, EQ_ERR_INVAL, "repository walk: no repository, options or callback");
	if (!!o->trust + !!o->root_path + !!o->unverified != 1)
		return eq_error_set(err, EQ_ERR_INVAL,
				    "repository walk: give exactly one of release keys, a root, or unverified");
	struct walk w = {.repo = repo, .o = o, .keys = o->trust};
	struct eq_root *root = NULL;
	eq_err r = EQ_OK;
	if (o->root_path) {
		if ((r = root_chain(repo, o->root_path, &root, err)))
			return r;
		w.keys = eq_root_role(root, EQ_ROLE_RELEASE);
	}
	EQ_AUTOFREE char *bdir = eq_asprintf("%s/" EQ_LAYOUT_BOARDS_DIR, repo);
	char **boards = NULL;
	size_t nb = 0;
	r = bdir ? list_dirs(bdir, false, &boards, &nb, err) : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (r == EQ_ERR_NOTFOUND)
		eq_error_set(err, r, "'%s' has no boards/ folder: not an eqota repository", repo);
	for (size_t i = 0; !r && i < nb; i++) {
		if (o->board && strcmp(o->board, boards[i]))
			continue;
		EQ_AUTOFREE char *cdir = eq_asprintf("%s/%s", bdir, boards[i]);
		char **chans = NULL;
		size_t nc = 0;
		r = cdir ? list_dirs(cdir, false, &chans, &nc, err) : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		for (size_t k = 0; !r && k < nc; k++) {
			if (o->channel && strcmp(o->channel, chans[k]))
				continue;
			r = load_channel(&w, boards[i], chans[k], err);
		}
		free_names(chans, nc);
	}
	free_names(boards, nb);
	if (!r && w.n)
		qsort(w.v, w.n, sizeof(*w.v), cmp_item);
	for (size_t i = 0; !r && i < w.n; i++) {
		const struct walk_item *it = &w.v[i];
		struct eq_repo_pkg_ref ref = {.board = it->board,
					      .channel = it->channel,
					      .release = it->hd.release,
					      .path = it->path,
					      .number = it->number,
					      .issued = it->hd.issued,
					      .manifest_index = i,
					      .n_manifests = w.n};
		size_t np = eq_manifest_package_count(it->m);
		for (size_t k = 0; !r && k < np; k++) {
			ref.pkg = eq_manifest_package_at(it->m, k);
			r = fn(ctx, &ref, err);
		}
	}
	walk_done(&w);
	eq_root_free(root);
	return r;
}

/* ---- import into the local store ---------------------------------------- */

struct import_ctx {
	struct eq_store *s;
	const char *method;
	eq_import_conflict_fn on_conflict;
	void *conflict_ctx;
	struct eq_import_report rep;
};

static void conflict(struct import_ctx *c, const struct eq_repo_pkg_ref *ref, const char *what)
{
	c->rep.conflicts++;
	if (c->on_conflict)
		c->on_conflict(c->conflict_ctx, ref, what);
}

static eq_err import_one(void *ctx, const struct eq_repo_pkg_ref *ref, struct eq_error *err)
{
	struct import_ctx *c = ctx;
	const struct eq_manifest_package *p = ref->pkg;
	c->rep.manifests = ref->n_manifests;
	c->rep.packages++;
	char have[EQ_SHA256_HEX_LEN + 1];
	eq_err r = eq_store_get(c->s, c->method, p->taskhash, have, err);
	bool was_known = r == EQ_OK;
	if (r == EQ_ERR_NOTFOUND)
		r = eq_store_report_equiv(c->s, c->method, p->taskhash, p->unihash, have, err);
	if (r)
		return eq_error_prefix(err, r, "%s: package '%s'", ref->path, p->name);
	if (strcmp(have, p->unihash)) {
		/* The store is the authority for what it already answered:
		 * its unihash may be in manifests this repository never saw. */
		char what[256];
		snprintf(what, sizeof(what),
			 "taskhash %.12s... is mapped to unihash %.12s..., the manifest says %.12s...", p->taskhash,
			 have, p->unihash);
		conflict(c, ref, what);
		return EQ_OK;
	}
	if (was_known)
		c->rep.present++;
	else
		c->rep.added++;
	char uni[EQ_SHA256_HEX_LEN + 1];
	unsigned flags = 0;
	r = eq_store_report(c->s, c->method, p->taskhash, p->payload.sha256, p->unihash, p->name, p->version, uni,
			    &flags, err);
	if (r)
		return eq_error_prefix(err, r, "%s: package '%s'", ref->path, p->name);
	if (flags & EQ_STORE_NEW_OUTHASH)
		c->rep.outhashes_added++;
	struct eq_store_published pub = {.payload_size = p->payload.size, .object_size = p->object.size}, held;
	snprintf(pub.payload_sha256, sizeof(pub.payload_sha256), "%s", p->payload.sha256);
	snprintf(pub.object_sha256, sizeof(pub.object_sha256), "%s", p->object.sha256);
	bool inserted = false;
	r = eq_store_set_published(c->s, c->method, p->unihash, &pub, &held, &inserted, err);
	if (r)
		return eq_error_prefix(err, r, "%s: package '%s'", ref->path, p->name);
	if (inserted) {
		c->rep.published_added++;
	} else if (strcmp(held.payload_sha256, pub.payload_sha256)) {
		char what[256];
		snprintf(what, sizeof(what),
			 "unihash %.12s... is published with payload %.12s..., the manifest says %.12s...", p->unihash,
			 held.payload_sha256, p->payload.sha256);
		conflict(c, ref, what);
	}
	return EQ_OK;
}

eq_err eq_gen_equiv_import(struct eq_store *s, const char *method, const char *repo, const struct eq_repo_walk_opts *o,
			   eq_import_conflict_fn on_conflict, void *conflict_ctx, struct eq_import_report *ret,
			   struct eq_error *err)
{
	if (!s || !ret)
		return eq_error_set(err, EQ_ERR_INVAL, "import: no store or report");
	struct import_ctx c = {.s = s,
			       .method = method ? method : EQ_PAYLOAD_METHOD,
			       .on_conflict = on_conflict,
			       .conflict_ctx = conflict_ctx};
	eq_err r = eq_repo_walk(repo, o, import_one, &c, err);
	/* Rows already written stay (each is one transaction and an import
	 * is idempotent): the counts say how far it got. */
	*ret = c.rep;
	return r;
}
