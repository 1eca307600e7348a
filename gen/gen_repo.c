#include "gen_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/gen_repo.h>
#include <eq/repo_layout.h>

/* ---- symbolic links inside the repository ------------------------------ */

/* Deeper than boards/B/C/releases/N/manifest.json by far. */
#define REPO_DEPTH_MAX 32

static eq_err link_refused(const char *repo, const char *rel, struct eq_error *err)
{
	return eq_error_set(err, EQ_ERR_UNSAFE,
			    "'%s/%s' is a symbolic link inside the repository: eqota-gen follows none (it writes "
			    "and removes only inside '%s'); replace it with the folder or file itself",
			    repo, rel, repo);
}

/* What eqota-gen writes or removes at the top of a repository; anything
 * else there (a web server's index, a link to another repository) is not
 * its business and is left alone. */
static bool ours(const char *name)
{
	static const char *const top[] = {EQ_LAYOUT_OBJECTS_DIR, EQ_LAYOUT_DELTAS_DIR, EQ_LAYOUT_BOARDS_DIR,
					  EQ_LAYOUT_ROOT_DIR, ".publish.lock"};
	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
		if (!strcmp(name, top[i]))
			return true;
	return !strncmp(name, ".tmp-", 5);
}

/* Walks the open folder @dfd (repository path @rel, in a PATH_MAX buffer
 * of which @len bytes are used); takes @dfd over. */
static eq_err check_tree(int dfd, const char *repo, char *rel, size_t len, unsigned depth, struct eq_error *err)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		eq_err r = eq_error_errno(err, EQ_ERR_IO, "cannot read '%s/%s'", repo, rel);
		close(dfd);
		return r;
	}
	eq_err r = EQ_OK;
	struct dirent *de;
	while (!r && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || (depth == 0 && !ours(de->d_name)))
			continue;
		size_t nl = strlen(de->d_name), at = len ? len + 1 : 0;
		if (at + nl >= PATH_MAX) {
			r = eq_error_set(err, EQ_ERR_LIMIT, "'%s/%s/%s': path too long", repo, rel, de->d_name);
			break;
		}
		if (len)
			rel[len] = '/';
		memcpy(rel + at, de->d_name, nl + 1);
		unsigned char type = de->d_type;
		struct stat st;
		if (type == DT_UNKNOWN) {
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
			else if (errno != ENOENT)
				r = eq_error_errno(err, EQ_ERR_IO, "cannot stat '%s/%s'", repo, rel);
		}
		if (r) {
		} else if (type == DT_LNK) {
			r = link_refused(repo, rel, err);
		} else if (type == DT_DIR) {
			int sub = depth < REPO_DEPTH_MAX ? openat(dirfd(d), de->d_name,
								  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
							 : -2;
			if (sub == -2)
				r = eq_error_set(err, EQ_ERR_LIMIT, "'%s/%s': folders nested deeper than %d", repo, rel,
						 REPO_DEPTH_MAX);
			else if (sub < 0 && (errno == ELOOP || errno == ENOTDIR))
				r = link_refused(repo, rel, err); /* swapped for a link meanwhile */
			else if (sub < 0 && errno != ENOENT)
				r = eq_error_errno(err, EQ_ERR_IO, "cannot open '%s/%s'", repo, rel);
			else if (sub >= 0)
				r = check_tree(sub, repo, rel, at + nl, depth + 1, err);
		}
		rel[len] = '\0';
	}
	closedir(d);
	return r;
}

eq_err eqg_repo_check_links(const char *repo, struct eq_error *err)
{
	int fd = open(repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? EQ_OK : eq_error_errno(err, EQ_ERR_IO, "cannot open repository '%s'", repo);
	char *rel = eq_malloc(PATH_MAX);
	if (!rel) {
		close(fd);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	rel[0] = '\0';
	eq_err r = check_tree(fd, repo, rel, 0, 0, err);
	eq_free(rel);
	return r;
}

/*
 * Opens the folder holding @path (which starts with "@repo/") one
 * component at a time, following no link: a component swapped for a link
 * fails here rather than leading outside. *ret_name points into @path.
 */
static eq_err open_parent(const char *repo, const char *path, int *ret_fd, const char **ret_name, struct eq_error *err)
{
	size_t rl = strlen(repo);
	if (strncmp(path, repo, rl) || path[rl] != '/' || !path[rl + 1])
		return eq_error_set(err, EQ_ERR_UNSAFE, "'%s' is not inside repository '%s'", path, repo);
	EQ_AUTOFREE char *rel = eq_strdup(path + rl + 1);
	if (!rel)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	int fd = open(repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot open repository '%s'", repo);
	char *comp = rel, *slash;
	while ((slash = strchr(comp, '/'))) {
		*slash = '\0';
		if (!*comp || !strcmp(comp, "..")) {
			close(fd);
			return eq_error_set(err, EQ_ERR_UNSAFE, "'%s': an empty or '..' component", path);
		}
		int sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		if (sub < 0 && (e == ELOOP || e == ENOTDIR))
			return link_refused(repo, rel, err);
		if (sub < 0) {
			errno = e;
			return eq_error_errno(err, e == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot open '%s/%s'",
					      repo, rel);
		}
		fd = sub;
		*slash = '/';
		comp = slash + 1;
	}
	*ret_fd = fd;
	*ret_name = path + rl + 1 + (size_t)(comp - rel);
	return EQ_OK;
}

eq_err eqg_repo_remove(const char *repo, const char *path, struct eq_error *err)
{
	int fd = -1;
	const char *name = NULL;
	eq_err r = open_parent(repo, path, &fd, &name, err);
	if (r)
		return r == EQ_ERR_NOTFOUND ? EQ_OK : r;
	struct stat st;
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		r = link_refused(repo, path + strlen(repo) + 1, err);
	else
		r = eq_rm_rf_at(fd, name, path, err);
	close(fd);
	return r;
}


/* ---- the files a manifest names ----------------------------------------- */

eq_err eq_gen_check_files(const char *repo, const struct eq_manifest *m, bool deep, struct eq_error *err)
{
	for (size_t i = 0; i < eq_manifest_package_count(m); i++) {
		const struct eq_manifest_package *p = eq_manifest_package_at(m, i);
		for (size_t k = 0; k <= p->n_deltas; k++) {
			const char *rel = k == 0 ? p->object.path : p->deltas[k - 1].path;
			const char *sha = k == 0 ? p->object.sha256 : p->deltas[k - 1].sha256;
			uint64_t size = k == 0 ? p->object.size : p->deltas[k - 1].size;
			EQ_AUTOFREE char *path = eq_asprintf("%s/%s", repo, rel);
			if (!path)
				return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			struct stat st;
			if (stat(path, &st) != 0)
				return eq_error_errno(err, EQ_ERR_NOTFOUND, "package '%s': '%s' is missing", p->name,
						      rel);
			if ((uint64_t)st.st_size != size)
				return eq_error_set(err, EQ_ERR_VERIFY,
						    "package '%s': '%s' has %lld bytes, the manifest says %" PRIu64,
						    p->name, rel, (long long)st.st_size, size);
			if (deep) {
				uint8_t d[EQ_SHA256_LEN];
				char hex[EQ_SHA256_HEX_LEN + 1];
				eq_err r = eq_sha256_file(path, d, NULL, err);
				if (r)
					return r;
				eq_hex_encode(d, EQ_SHA256_LEN, hex);
				if (strcmp(hex, sha))
					return eq_error_set(err, EQ_ERR_VERIFY,
							    "package '%s': '%s' has SHA-256 %s, the manifest says %s",
							    p->name, rel, hex, sha);
			}
		}
	}
	return EQ_OK;
}

static int cmp_release(const void *a, const void *b)
{
	const struct eq_repo_release *x = a, *y = b;
	return x->number < y->number ? -1 : x->number > y->number;
}

void eq_repo_history_done(struct eq_repo_history *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++) {
		eq_free(h->v[i].release);
		eq_manifest_free(h->v[i].m);
	}
	eq_free(h->v);
	h->v = NULL;
	h->n = 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

eq_err eq_repo_history_load(const char *repo, const char *board, const char *channel, struct eq_repo_history *ret,
			    struct eq_error *err)
{
	struct eq_repo_history h = {0};
	EQ_AUTOFREE char *dir = NULL;
	eq_err lr = eq_layout_channel(repo, board, channel, EQ_LAYOUT_RELEASES, &dir, err);
	if (lr)
		return lr;
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT) {
			*ret = h;
			return EQ_OK;
		}
		return eq_error_errno(err, EQ_ERR_IO, "cannot read '%s'", dir);
	}
	eq_err r = EQ_OK;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!all_digits(de->d_name))
			continue;
		EQ_AUTOFREE char *path = eq_asprintf("%s/%s/manifest.json", dir, de->d_name);
		if (!path) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
		uint8_t *data = NULL;
		size_t len = 0;
		r = eq_file_read_all(path, EQ_MANIFEST_MAX_BYTES, &data, &len, err);
		if (r)
			break;
		struct eq_manifest *m = NULL;
		r = eq_manifest_parse_unverified(data, len, &m, err);
		eq_free(data);
		if (r) {
			eq_error_prefix(err, r, "%s", path);
			break;
		}
		struct eq_manifest_header hd;
		r = eq_manifest_get_header(m, &hd, err);
		if (r) {
			eq_manifest_free(m);
			break;
		}
		struct eq_repo_release *v = eq_realloc(h.v, (h.n + 1) * sizeof(*v));
		char *name = eq_strdup(hd.release);
		if (!v || !name) {
			if (v)
				h.v = v;
			eq_free(name);
			eq_manifest_free(m);
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
		h.v = v;
		h.v[h.n++] = (struct eq_repo_release){.number = hd.number, .release = name, .m = m};
	}
	closedir(d);
	if (r) {
		eq_repo_history_done(&h);
		return r;
	}
	if (h.n)
		qsort(h.v, h.n, sizeof(*h.v), cmp_release);
	*ret = h;
	return EQ_OK;
}

const struct eq_repo_release *eq_repo_history_find(const struct eq_repo_history *h, const char *name_or_number)
{
	/* The rule is shared with the agent's provision --release. */
	const struct eq_repo_release *by_number = NULL;
	for (size_t i = 0; i < h->n; i++) {
		enum eq_release_match m = eq_manifest_release_match(h->v[i].release, h->v[i].number, name_or_number);
		if (m == EQ_RELEASE_BY_NAME)
			return &h->v[i];
		if (m == EQ_RELEASE_BY_NUMBER && !by_number)
			by_number = &h->v[i];
	}
	return by_number;
}

static bool is_package_name(const char *n)
{
	/* Every suffix the package reader takes (names_from_tarball() in
	 * gen_package.c); a package file skipped here is silently missing
	 * from the release. */
	static const char *const ext[] = {".deb",    ".ipk",     ".rpm",     ".tar",      ".tar.gz", ".tgz",
					  ".tar.xz", ".tar.zst", ".tar.bz2", ".tar.lzma", ".txz",    ".tbz2"};
	size_t len = strlen(n);
	if (n[0] == '.')
		return false;
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t el = strlen(ext[i]);
		if (len > el && !strcmp(n + len - el, ext[i]))
			return true;
	}
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

eq_err eq_gen_list_packages(const char *dir, char ***ret_paths, size_t *ret_n, struct eq_error *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO,
				      "cannot read package folder '%s'", dir);
	char **v = NULL;
	size_t n = 0;
	eq_err r = EQ_OK;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!is_package_name(de->d_name))
			continue;
		char **nv = eq_realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
		v = nv;
		v[n] = eq_asprintf("%s/%s", dir, de->d_name);
		if (!v[n]) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
		n++;
	}
	closedir(d);
	if (r) {
		for (size_t i = 0; i < n; i++)
			eq_free(v[i]);
		eq_free(v);
		return r;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*ret_paths = v;
	*ret_n = n;
	return EQ_OK;
}

const char *eq_diff_state_name(enum eq_diff_state s)
{
	switch (s) {
	case EQ_DIFF_KEPT: return "kept";
	case EQ_DIFF_EQUIVALENT: return "equivalent";
	case EQ_DIFF_CHANGED: return "changed";
	case EQ_DIFF_ADDED: return "added";
	case EQ_DIFF_REMOVED: return "removed";
	}
	return "?";
}

void eq_diff_done(struct eq_diff *d)
{
	if (!d)
		return;
	eq_free(d->v);
	memset(d, 0, sizeof(*d));
}

/* What a device holding payload @from downloads to get @p: the delta from
 * that payload when one is offered and smaller, else the full object. */
static uint64_t download_cost(const struct eq_manifest_package *p, const char *from, bool *ret_delta)
{
	uint64_t best = p->object.size;
	*ret_delta = false;
	for (size_t i = 0; from && i < p->n_deltas; i++) {
		if (!strcmp(p->deltas[i].from, from) && p->deltas[i].size < best) {
			best = p->deltas[i].size;
			*ret_delta = true;
		}
	}
	return best;
}

static eq_err diff_push(struct eq_diff *d, size_t *cap, const struct eq_diff_entry *e, struct eq_error *err)
{
	if (d->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct eq_diff_entry *v = eq_realloc(d->v, nc * sizeof(*v));
		if (!v)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		d->v = v;
		*cap = nc;
	}
	d->v[d->n++] = *e;
	d->download_bytes += e->bytes;
	if (e->component) {
		d->component_count[e->state == EQ_DIFF_EQUIVALENT ? EQ_DIFF_KEPT : e->state]++;
		d->component_bytes += e->bytes;
	} else {
		d->count[e->state]++;
		d->package_bytes += e->bytes;
	}
	return EQ_OK;
}

eq_err eq_gen_diff(const struct eq_manifest *from, const struct eq_manifest *to, struct eq_diff *ret,
		   struct eq_error *err)
{
	struct eq_diff d = {0};
	size_t cap = 0;
	size_t nf = eq_manifest_package_count(from), nt = eq_manifest_package_count(to);
	size_t i = 0, j = 0;
	eq_err r = EQ_OK;
	/* Both package lists are sorted by name: one merge pass. */
	while (!r && (i < nf || j < nt)) {
		const struct eq_manifest_package *a = i < nf ? eq_manifest_package_at(from, i) : NULL;
		const struct eq_manifest_package *b = j < nt ? eq_manifest_package_at(to, j) : NULL;
		int c = !a ? 1 : !b ? -1 : strcmp(a->name, b->name);
		struct eq_diff_entry e = {0};
		if (c < 0) {
			e = (struct eq_diff_entry){
				.state = EQ_DIFF_REMOVED, .name = a->name, .old_version = a->version};
			i++;
		} else if (c > 0) {
			bool dl;
			e = (struct eq_diff_entry){.state = EQ_DIFF_ADDED,
						   .name = b->name,
						   .new_version = b->version,
						   .bytes = download_cost(b, NULL, &dl)};
			d.full_bytes += b->object.size;
			j++;
		} else {
			e.name = b->name;
			e.old_version = a->version;
			e.new_version = b->version;
			d.full_bytes += b->object.size;
			if (!strcmp(a->unihash, b->unihash)) {
				e.state = strcmp(a->taskhash, b->taskhash) ? EQ_DIFF_EQUIVALENT : EQ_DIFF_KEPT;
			} else if (!strcmp(a->payload.sha256, b->payload.sha256)) {
				/* A new unihash with identical bytes still costs nothing: the
				 * device rebuilds this payload from its own slot. */
				e.state = EQ_DIFF_EQUIVALENT;
			} else {
				e.state = EQ_DIFF_CHANGED;
				e.bytes = download_cost(b, a->payload.sha256, &e.via_delta);
			}
			i++;
			j++;
		}
		/* A removed component was one in the old release. */
		e.component =
			b && c >= 0 ? eq_manifest_is_component(to, b->name) : eq_manifest_is_component(from, a->name);
		r = diff_push(&d, &cap, &e, err);
	}
	if (r) {
		eq_diff_done(&d);
		return r;
	}
	*ret = d;
	return EQ_OK;
}

eq_err eq_repo_current(const char *repo, const char *board, const char *channel, uint64_t *ret_number,
		       char ret_name[EQ_MANIFEST_NAME_MAX + 1], struct eq_error *err)
{
	EQ_AUTOFREE char *path = NULL;
	eq_err r = eq_layout_channel(repo, board, channel, EQ_LAYOUT_MANIFEST, &path, err);
	if (r)
		return r;
	struct eq_manifest *m = NULL;
	struct eq_manifest_header h;
	uint8_t *d = NULL;
	size_t dl = 0;
	r = eq_file_read_all(path, EQ_MANIFEST_MAX_BYTES, &d, &dl, err);
	if (!r && (r = eq_manifest_parse_unverified(d, dl, &m, err)))
		eq_error_prefix(err, r, "%s", path);
	if (!r && !(r = eq_manifest_get_header(m, &h, err))) {
		/* The header points into @m, which goes now. */
		*ret_number = h.number;
		snprintf(ret_name, EQ_MANIFEST_NAME_MAX + 1, "%s", h.release);
	}
	eq_manifest_free(m);
	eq_free(d);
	return r;
}
