/*
 * The set-aside step of an image release and the reading of what it set
 * aside (image_aside.h). The aside folder is eqota's own: it is opened and
 * written with EQ_BENEATH_NO_SYMLINKS and O_EXCL, so nothing a package
 * planted is followed; package paths are resolved inside the slot
 * (EQ_BENEATH_IN_ROOT) the way extraction placed them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/beneath.h>

#include "image_aside.h"
#include "meta_copy.h"

/* Lines of a damaged aside.list warned about one by one. */
#define MAX_WARNED 10u
/* Folders walked up from a package path's parent to the slot root. */
#define MAX_WALK 512

struct aside {
	int tfd; /* slot root, O_PATH */
	struct stat root_st, own_st;
	int imgfd;   /* EQ_ASIDE_DIR */
	int asidefd; /* EQ_ASIDE_IMAGE_DIR */
	FILE *list;  /* EQ_ASIDE_LIST */
	bool owners;
	/* Folders of the slot found outside eqota's folder (eq_dirset): valid
	 * while no folder is removed, so a removal empties it; folders are
	 * never moved here (only non-directories go to the aside folder). */
	struct eq_dirset *outside;
	struct eq_aside_report rep;
	uint8_t meta[EQ_META_SCRATCH_LEN];
};

static bool same_id(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

bool eq_aside_holds_own_dir(const char *path)
{
	size_t n = strlen(path);
	return !strncmp(EQ_SLOT_RECORD_DIR, path, n) && (EQ_SLOT_RECORD_DIR[n] == '\0' || EQ_SLOT_RECORD_DIR[n] == '/');
}

/* True when directory @dfd is eqota's folder or below it: walks up with
 * "..", comparing device and inode numbers, so no symlink on the way
 * ("x -> usr/lib/eqota") disguises the folder. Unsure counts as inside. */
static bool inside_own(struct aside *x, int dfd)
{
	struct stat dst;
	if (fstat(dfd, &dst) != 0)
		return true;
	if (eq_dirset_has(x->outside, &dst))
		return false;
	int cur = openat(dfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool inside = true;
	for (int depth = 0; cur >= 0 && depth < MAX_WALK; depth++) {
		struct stat st;
		if (fstat(cur, &st) != 0)
			break;
		if (same_id(&st, &x->own_st))
			break;
		/* The root, or a folder known to be outside eqota's (it has
		 * only such folders above it). */
		if (same_id(&st, &x->root_st) || (depth > 0 && eq_dirset_has(x->outside, &st))) {
			inside = false;
			eq_dirset_add(x->outside, &dst);
			break;
		}
		int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = up;
	}
	if (cur >= 0)
		close(cur);
	return inside;
}

/* The folder of @path in the aside folder, made as needed (0755). */
static eq_err aside_parent(struct aside *x, const char *path, const char **ret_base, int *ret_fd, struct eq_error *err)
{
	const char *slash = strrchr(path, '/');
	*ret_base = slash ? slash + 1 : path;
	char dir[EQ_MANIFEST_IMAGE_PATH_MAX + 1];
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	eq_err r = eq_open_beneath(x->asidefd, dir, O_RDONLY | O_DIRECTORY, 0,
				   EQ_BENEATH_NO_SYMLINKS | EQ_BENEATH_MKDIRS, ret_fd, err);
	return r ? eq_error_prefix(err, r, "image: '%s': its aside folder", path) : EQ_OK;
}

/* A directory at @path (@dirfd open on it, @st its stat): a directory of
 * the same metadata in the aside folder. */
static eq_err aside_dir(struct aside *x, const char *path, int dirfd, const struct stat *st, struct eq_error *err)
{
	const char *base;
	int apd = -1;
	eq_err r = aside_parent(x, path, &base, &apd, err);
	if (r)
		return r;
	/* Made already when a child was set aside first: its metadata is set now. */
	if (mkdirat(apd, base, 0700) != 0 && errno != EEXIST)
		r = eq_error_errno(err, EQ_ERR_IO, "image: '%s': mkdir in the aside folder", path);
	int t = r ? -1 : openat(apd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!r && t < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "image: '%s': open in the aside folder", path);
	if (!r && (r = eq_meta_copy(dirfd, t, st->st_uid, st->st_gid, st->st_mode, x->owners, x->meta, NULL, err)))
		r = eq_error_prefix(err, r, "image: '%s': its aside folder", path);
	if (!r && fsync(t) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "image: '%s': fsync in the aside folder", path);
	if (t >= 0)
		close(t);
	close(apd);
	return r;
}

/* One path of replace (@remove false) or remove. */
static eq_err aside_one(struct aside *x, const char *path, bool remove, struct eq_error *err)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char dir[EQ_MANIFEST_IMAGE_PATH_MAX + 1];
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	int pd = -1;
	struct eq_error oe;
	eq_err r = eq_open_beneath(x->tfd, dir, O_PATH | O_DIRECTORY, 0, EQ_BENEATH_IN_ROOT, &pd, &oe);
	if (r == EQ_ERR_NOTFOUND || r == EQ_ERR_STATE) {
		x->rep.missing++;
		return EQ_OK;
	}
	if (r)
		return eq_error_set(err, r, "image: '%s': %s", path, eq_error_msg(&oe));
	struct stat st;
	if (inside_own(x, pd)) {
		close(pd);
		return eq_error_set(err, EQ_ERR_UNSAFE,
				    "image: '%s' resolves into eqota's own folder '%s' through a symlink, refusing it",
				    path, EQ_SLOT_RECORD_DIR);
	}
	if (fstatat(pd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		close(pd);
		if (errno == ENOENT) {
			x->rep.missing++;
			return EQ_OK;
		}
		return eq_error_errno(err, EQ_ERR_IO, "image: '%s'", path);
	}
	/* A folder, or the image's symlink where a package has a folder
	 * ("bin -> usr/bin"): the folder's metadata is the package's entry. */
	int dfd = -1;
	struct stat dst = st;
	if (S_ISDIR(st.st_mode)) {
		dfd = openat(pd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			r = eq_error_errno(err, EQ_ERR_IO, "image: '%s'", path);
	} else if (S_ISLNK(st.st_mode)) {
		r = eq_open_beneath(x->tfd, path, O_RDONLY | O_DIRECTORY, 0, EQ_BENEATH_IN_ROOT, &dfd, &oe);
		if (r == EQ_ERR_UNSAFE) {
			r = eq_error_set(err, r,
					 "image: '%s' is a symlink that cannot be resolved inside the slot (%s); "
					 "moving it would break the image",
					 path, eq_error_msg(&oe));
		} else if (r) {
			r = EQ_OK; /* dangling or to a non-directory: a non-directory */
			dfd = -1;
		} else if (fstat(dfd, &dst) != 0) {
			r = eq_error_errno(err, EQ_ERR_IO, "image: '%s'", path);
		}
	}
	if (!r && dfd >= 0) {
		r = aside_dir(x, path, dfd, &dst, err);
		if (!r)
			x->rep.dirs++;
		if (!r && remove && !eq_aside_holds_own_dir(path)) {
			if (unlinkat(pd, base, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0)
				r = eq_error_errno(err, errno == ENOTEMPTY ? EQ_ERR_STATE : EQ_ERR_IO,
						   "image: cannot remove '%s', a path the image does not have", path);
			else
				x->rep.removed++;
			/* Its inode may come back as a folder of eqota's. */
			if (S_ISDIR(st.st_mode))
				eq_dirset_clear(x->outside);
		}
	} else if (!r) {
		const char *abase;
		int apd = -1;
		struct stat ast;
		r = aside_parent(x, path, &abase, &apd, err);
		/* Each path is set aside once: anything there is not ours. */
		if (!r && fstatat(apd, abase, &ast, AT_SYMLINK_NOFOLLOW) == 0)
			r = eq_error_set(err, EQ_ERR_UNSAFE, "image: '%s' is in the aside folder already", path);
		if (!r && renameat(pd, base, apd, abase) != 0)
			r = eq_error_errno(err, EQ_ERR_IO, "image: cannot move '%s' to the aside folder", path);
		if (!r && fsync(apd) != 0)
			r = eq_error_errno(err, EQ_ERR_IO, "image: '%s': fsync of its aside folder", path);
		if (!r) {
			x->rep.moved++;
			x->rep.removed += remove;
		}
		if (apd >= 0)
			close(apd);
	}
	if (dfd >= 0)
		close(dfd);
	close(pd);
	if (!r && fprintf(x->list, "%s\n", path) < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "image: writing '%s'", EQ_ASIDE_LIST);
	return r;
}

static eq_err open_area(struct aside *x, struct eq_error *err)
{
	/* A fresh slot has no such folder: one there came with a package. */
	int fd = -1;
	if (eq_open_beneath(x->tfd, EQ_ASIDE_DIR, O_PATH, 0, EQ_BENEATH_NO_SYMLINKS, &fd, NULL) == EQ_OK) {
		close(fd);
		return eq_error_set(err, EQ_ERR_UNSAFE, "image: '%s' already exists in the new slot", EQ_ASIDE_DIR);
	}
	eq_err r = eq_open_beneath(x->tfd, EQ_ASIDE_DIR, O_RDONLY | O_DIRECTORY, 0,
				   EQ_BENEATH_NO_SYMLINKS | EQ_BENEATH_MKDIRS, &x->imgfd, err);
	if (!r)
		r = eq_open_beneath(x->imgfd, "aside", O_RDONLY | O_DIRECTORY, 0,
				    EQ_BENEATH_NO_SYMLINKS | EQ_BENEATH_MKDIRS, &x->asidefd, err);
	if (!r) {
		int lfd = openat(x->imgfd, "aside.list", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (lfd < 0 || !(x->list = fdopen(lfd, "w"))) {
			r = eq_error_errno(err, EQ_ERR_IO, "image: cannot create '%s'", EQ_ASIDE_LIST);
			if (lfd >= 0)
				close(lfd);
		}
	}
	return r ? eq_error_prefix(err, r, "image") : EQ_OK;
}

eq_err eq_aside_set(int tfd, const struct stat *own, const struct eq_manifest_image *img, bool owners,
		    struct eq_aside_report *ret, struct eq_error *err)
{
	struct aside *x = eq_calloc(1, sizeof(*x));
	if (!x)
		return eq_error_set(err, EQ_ERR_NOMEM, "image: out of memory");
	x->tfd = tfd;
	x->own_st = *own;
	x->owners = owners;
	x->imgfd = x->asidefd = -1;
	eq_err r = EQ_OK;
	if (!(x->outside = eq_dirset_new()))
		r = eq_error_set(err, EQ_ERR_NOMEM, "image: out of memory");
	if (!r && fstat(tfd, &x->root_st) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "image: stat of the new slot");
	if (!r)
		r = open_area(x, err);
	/* Both lists sorted: merged backwards, a folder comes after all it holds. */
	size_t i = img->n_replace, k = img->n_remove;
	while (!r && (i || k)) {
		bool rm = !i || (k && strcmp(img->remove[k - 1], img->replace[i - 1]) > 0);
		const char *path = rm ? img->remove[--k] : img->replace[--i];
		r = aside_one(x, path, rm, err);
	}
	if (x->list) {
		if (!r && (fflush(x->list) != 0 || fsync(fileno(x->list)) != 0))
			r = eq_error_errno(err, EQ_ERR_IO, "image: writing '%s'", EQ_ASIDE_LIST);
		if (fclose(x->list) != 0 && !r)
			r = eq_error_errno(err, EQ_ERR_IO, "image: writing '%s'", EQ_ASIDE_LIST);
	}
	if (!r && (fsync(x->asidefd) != 0 || fsync(x->imgfd) != 0))
		r = eq_error_errno(err, EQ_ERR_IO, "image: fsync of '%s'", EQ_ASIDE_DIR);
	if (x->asidefd >= 0)
		close(x->asidefd);
	if (x->imgfd >= 0)
		close(x->imgfd);
	if (!r && ret)
		*ret = x->rep;
	eq_dirset_free(x->outside);
	eq_free(x);
	return r;
}

/* ---- reading ------------------------------------------------------------- */

static const char *line_problem(const struct eq_manifest_image *img, const char *p)
{
	if (p[0] == '/')
		return "an absolute path";
	for (const char *c = p; c;) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);
		if (!n || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return "a path with an empty, '.' or '..' component";
		c = e ? e + 1 : NULL;
	}
	if (!img || (!eq_manifest_path_listed(img->replace, img->n_replace, p) &&
		     !eq_manifest_path_listed(img->remove, img->n_remove, p)))
		return "not a path the release replaces or removes";
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void eq_aside_read_done(struct eq_aside_read *a)
{
	if (!a)
		return;
	eq_persist_list_done(&a->list);
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
	eq_free(a->root);
	a->root = NULL;
}

eq_err eq_aside_read_open(int rootfd, const char *root, const struct eq_manifest *m, struct eq_aside_read *ret,
			  struct eq_error *err)
{
	struct eq_aside_read a = {.fd = -1};
	const struct eq_manifest_image *img = m ? eq_manifest_get_image(m) : NULL;
	struct eq_error le;
	/* A release of packages alone sets nothing aside. */
	eq_err r = img ? eq_path_list_load(rootfd, EQ_ASIDE_LIST, EQ_MANIFEST_MAX_BYTES, &a.list, &le) : EQ_OK;
	if (r == EQ_ERR_NOMEM)
		return eq_error_set(err, r, "%s", eq_error_msg(&le));
	if (r) {
		eq_log(EQ_LOG_WARNING,
		       "slot '%s': %s; the package versions set aside are not used (their packages are downloaded), "
		       "continuing",
		       root, eq_error_msg(&le));
		*ret = a;
		return EQ_OK;
	}
	size_t n = 0, bad = 0;
	for (size_t i = 0; i < a.list.n; i++) {
		const char *why = line_problem(img, a.list.v[i]);
		if (why && ++bad <= MAX_WARNED) {
			char q[256];
			eq_log(EQ_LOG_WARNING, "slot '%s': %s: line '%s' is %s, ignoring", root, EQ_ASIDE_LIST,
			       eq_quote(q, sizeof(q), a.list.v[i]), why);
		}
		if (why)
			eq_free(a.list.v[i]);
		else
			a.list.v[n++] = a.list.v[i];
	}
	/* A list garbled throughout is one problem, not a page of warnings. */
	if (bad > MAX_WARNED)
		eq_log(EQ_LOG_WARNING, "slot '%s': %s: %zu more lines like these, ignoring", root, EQ_ASIDE_LIST,
		       bad - MAX_WARNED);
	a.list.n = n;
	if (n) {
		qsort(a.list.v, n, sizeof(a.list.v[0]), cmp_str);
		size_t u = 1;
		for (size_t i = 1; i < n; i++) {
			if (strcmp(a.list.v[i], a.list.v[u - 1]))
				a.list.v[u++] = a.list.v[i];
			else
				eq_free(a.list.v[i]);
		}
		a.list.n = u;
		r = eq_open_beneath(rootfd, EQ_ASIDE_IMAGE_DIR, O_PATH | O_DIRECTORY, 0, EQ_BENEATH_NO_SYMLINKS, &a.fd,
				    &le);
		if (r == EQ_ERR_NOMEM) {
			eq_aside_read_done(&a);
			return eq_error_set(err, r, "%s", eq_error_msg(&le));
		}
		if (r) {
			eq_log(EQ_LOG_WARNING,
			       "slot '%s': %s; the package versions set aside are not used (their packages are "
			       "downloaded), continuing",
			       root, eq_error_msg(&le));
			eq_persist_list_done(&a.list);
			a.fd = -1;
		} else if (!(a.root = eq_asprintf("%s/%s", root, EQ_ASIDE_IMAGE_DIR))) {
			eq_aside_read_done(&a);
			return eq_error_set(err, EQ_ERR_NOMEM, "image: out of memory");
		}
	}
	*ret = a;
	return EQ_OK;
}

bool eq_aside_read_has(const struct eq_aside_read *a, const char *path)
{
	return a->fd >= 0 && eq_manifest_path_listed((const char *const *)a->list.v, a->list.n, path);
}
