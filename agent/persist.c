/*
 * [persist]: the files a device holds of its own (machine id, ssh host
 * keys, hostname) carried from the running slot into the new one, after
 * the installer completed it and before the bootloader is told to try it.
 *
 * Both slots are read and written through descriptors and eq_open_beneath()
 * with EQ_BENEATH_NO_SYMLINKS: a symlink in the running slot (planted there
 * or shipped by a release) is never followed, and one the new release put
 * at a persisted path is moved aside, never written through.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/beneath.h>

#include "meta_copy.h"
#include "persist.h"

#define COPY_BUF_LEN (64u * 1024u)
#define LIST_MAX_BYTES (64u * 1024u)
/* Names one glob may match: host keys are a handful. */
#define GLOB_MAX_MATCHES 256u

struct pctx {
	const struct eq_persist *p;
	struct eq_persist_report rep;
	int rfd, tfd; /* slot roots, O_PATH */
	int imgfd;    /* <target>/EQ_PERSIST_IMAGE_DIR, or -1 until needed */
	FILE *list;   /* <target>/EQ_PERSIST_LIST, or NULL until needed */
	int listdir;  /* <target>/EQ_PERSIST_DIR */
	uint8_t buf[COPY_BUF_LEN];
	uint8_t meta[EQ_META_SCRATCH_LEN];
	unsigned long tmpn;
	bool preserving; /* copying the release's own version aside: not capped */
};

/* ---- paths ----------------------------------------------------------------- */

static bool has_glob(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '*' || s[i] == '?' || s[i] == '[')
			return true;
	return false;
}

const char *eq_persist_path_problem(const char *path)
{
	if (path[0] != '/')
		return "expected an absolute path";
	if (!path[1])
		return "'/' is the whole slot";
	const char *last = strrchr(path, '/') + 1;
	if (!*last)
		return "no trailing '/' (write the folder's path)";
	for (const char *c = path + 1; c;) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);
		if (n == 0)
			return "empty path component ('//')";
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return "'.' and '..' are not allowed";
		if (e && has_glob(c, n))
			return "wildcards (* ? [) only in the last component";
		c = e ? e + 1 : NULL;
	}
	/* eqota's folder holds the records verify and keep rely on: neither it
	 * nor a folder above it may be replaced by a device's copy. */
	const char *rel = path + 1, *own = EQ_SLOT_RECORD_DIR;
	size_t ol = strlen(own);
	if (!strncmp(rel, own, ol) && (rel[ol] == '\0' || rel[ol] == '/'))
		return "inside eqota's own folder /" EQ_SLOT_RECORD_DIR;
	size_t pl = (size_t)(last - rel); /* parent, with its '/' */
	if (pl <= ol && !strncmp(own, rel, pl)) {
		const char *oc = own + pl, *oe = strchr(oc, '/');
		char comp[256];
		snprintf(comp, sizeof(comp), "%.*s", (int)(oe ? (size_t)(oe - oc) : strlen(oc)), oc);
		if (!strcmp(comp, last) || (has_glob(last, strlen(last)) && !fnmatch(last, comp, FNM_PERIOD)))
			return "contains eqota's own folder /" EQ_SLOT_RECORD_DIR;
	}
	return NULL;
}

/* Whether @a matches @b or a folder above it, or the reverse: one copy
 * would land inside the other, and the release's versions with them. */
static bool ancestor_matches(const char *a, const char *b)
{
	char pre[PATH_MAX];
	snprintf(pre, sizeof(pre), "%s", b);
	for (char *slash = pre + strlen(pre); slash; slash = strrchr(pre, '/')) {
		*slash = '\0';
		if (*pre && !fnmatch(a, pre, FNM_PATHNAME | FNM_PERIOD))
			return true;
		if (slash == pre)
			break;
	}
	return !fnmatch(a, b, FNM_PATHNAME | FNM_PERIOD);
}

bool eq_persist_paths_overlap(const char *a, const char *b)
{
	return ancestor_matches(a, b) || ancestor_matches(b, a);
}

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFLNK: return "a symlink";
	case S_IFIFO: return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFDIR: return "a directory";
	case S_IFREG: return "a regular file";
	default: return "of an unknown type";
	}
}

/* ---- the release's version, set aside ------------------------------------------ */

static eq_err open_image_area(struct pctx *x, struct eq_error *err)
{
	if (x->imgfd >= 0)
		return EQ_OK;
	/* A fresh slot has no such folder: one there came with a package. */
	int fd = -1;
	eq_err r =
		eq_open_beneath(x->tfd, EQ_PERSIST_DIR, O_RDONLY | O_DIRECTORY, 0, EQ_BENEATH_NO_SYMLINKS, &fd, NULL);
	if (r == EQ_OK) {
		close(fd);
		return eq_error_set(err, EQ_ERR_UNSAFE, "persist: '%s' already exists in the new slot", EQ_PERSIST_DIR);
	}
	r = eq_open_beneath(x->tfd, EQ_PERSIST_DIR, O_RDONLY | O_DIRECTORY, 0,
			    EQ_BENEATH_NO_SYMLINKS | EQ_BENEATH_MKDIRS, &x->listdir, err);
	if (!r)
		r = eq_open_beneath(x->listdir, "image", O_RDONLY | O_DIRECTORY, 0,
				    EQ_BENEATH_NO_SYMLINKS | EQ_BENEATH_MKDIRS, &x->imgfd, err);
	if (!r) {
		int lfd = openat(x->listdir, "list", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (lfd < 0 || !(x->list = fdopen(lfd, "w"))) {
			r = eq_error_errno(err, EQ_ERR_IO, "persist: cannot create '%s'", EQ_PERSIST_LIST);
			if (lfd >= 0)
				close(lfd);
		}
	}
	return r ? eq_error_prefix(err, r, "persist") : EQ_OK;
}

/* Moves what the release put at @rel (in @tdir as @base) to the image
 * area, so the copy replaces it without writing through it and the slot
 * still holds the bytes its records describe. */
static eq_err set_aside(struct pctx *x, int tdir, const char *base, const char *rel, struct eq_error *err)
{
	eq_err r = open_image_area(x, err);
	if (r)
		return r;
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%.*s", (int)(strlen(rel) - strlen(base)), rel);
	int pd = -1;
	r = eq_open_beneath(x->imgfd, parent, O_RDONLY | O_DIRECTORY, 0, EQ_BENEATH_NO_SYMLINKS | EQ_BENEATH_MKDIRS,
			    &pd, err);
	if (r)
		return eq_error_prefix(err, r, "persist: '%s'", rel);
	if (renameat(tdir, base, pd, base) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: cannot move the release's '/%s' aside", rel);
	if (!r && (fprintf(x->list, "%s\n", rel) < 0))
		r = eq_error_errno(err, EQ_ERR_IO, "persist: writing '%s'", EQ_PERSIST_LIST);
	close(pd);
	if (!r)
		x->rep.saved++;
	return r;
}

/* ---- copying ---------------------------------------------------------------------- */

static eq_err copy_meta(struct pctx *x, int sfd, int tfd, const struct stat *st, const char *rel, struct eq_error *err)
{
	eq_err r = eq_meta_copy(sfd, tfd, st->st_uid, st->st_gid, st->st_mode, x->p->owners, x->meta, NULL, err);
	return r ? eq_error_prefix(err, r, "persist: '/%s'", rel) : EQ_OK;
}

static eq_err over_cap(struct pctx *x, const char *rel, uint64_t more, struct eq_error *err)
{
	char a[EQ_SIZE_STR_MAX], b[EQ_SIZE_STR_MAX];
	eq_format_size(x->rep.bytes + more, EQ_SIZE_UP, a);
	eq_format_size(x->p->max_bytes, EQ_SIZE_DOWN, b);
	return eq_error_set(
		err, EQ_ERR_LIMIT,
		"persist: '/%s' brings the files to copy to %s, over [persist] max-bytes (%s); the new slot "
		"is not used, the running slot is unchanged",
		rel, a, b);
}

/* Copies regular file @sbase of @sdir to the temporary @tmp in @tdir. */
static eq_err copy_file(struct pctx *x, int sdir, const char *sbase, int tdir, const char *tmp, const char *rel,
			struct eq_error *err)
{
	int s = openat(sdir, sbase, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (s < 0 || fstat(s, &st) != 0 || !S_ISREG(st.st_mode)) {
		eq_err r = eq_error_errno(err, EQ_ERR_IO, "persist: running slot's '/%s' changed while read", rel);
		if (s >= 0)
			close(s);
		return r;
	}
	if (!x->preserving && (uint64_t)st.st_size > x->p->max_bytes - x->rep.bytes) {
		close(s);
		return over_cap(x, rel, (uint64_t)st.st_size, err);
	}
	int t = openat(tdir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (t < 0) {
		close(s);
		return eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': cannot create its temporary copy", rel);
	}
	eq_err r = EQ_OK;
	for (;;) {
		ssize_t n = read(s, x->buf, sizeof(x->buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': read", rel);
			break;
		}
		if (!n)
			break;
		/* A file that grows while it is read still meets the cap. */
		if (!x->preserving && (uint64_t)n > x->p->max_bytes - x->rep.bytes) {
			r = over_cap(x, rel, (uint64_t)n, err);
			break;
		}
		if (!x->preserving)
			x->rep.bytes += (uint64_t)n;
		if ((r = eq_write_all(t, x->buf, (size_t)n, err))) {
			r = eq_error_prefix(err, r, "persist: '/%s'", rel);
			break;
		}
	}
	if (!r)
		r = copy_meta(x, s, t, &st, rel, err);
	if (!r && fsync(t) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': fsync", rel);
	if (close(t) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': close", rel);
	close(s);
	if (r)
		(void)unlinkat(tdir, tmp, 0);
	else if (!x->preserving)
		x->rep.files++;
	return r;
}

static eq_err copy_entry(struct pctx *x, int sdir, const char *sbase, int tdir, const char *tname, const char *rel,
			 unsigned depth, struct eq_error *err);

/* Copies directory @sbase of @sdir, what it holds included, to @tmp in @tdir. */
static eq_err copy_dir(struct pctx *x, int sdir, const char *sbase, int tdir, const char *tmp, const char *rel,
		       unsigned depth, struct eq_error *err)
{
	if (depth > EQ_PERSIST_MAX_DEPTH)
		return eq_error_set(err, EQ_ERR_LIMIT, "persist: '/%s' is nested deeper than %u folders", rel,
				    EQ_PERSIST_MAX_DEPTH);
	int s = openat(sdir, sbase, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0)
		return eq_error_errno(err, EQ_ERR_IO, "persist: running slot's '/%s'", rel);
	eq_err r = EQ_OK;
	int t = -1;
	struct stat st;
	if (fstat(s, &st) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': stat", rel);
	if (!r && mkdirat(tdir, tmp, 0700) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': mkdir", rel);
	if (!r && (t = openat(tdir, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': open", rel);
	int s2 = r ? -1 : dup(s);
	DIR *d = s2 >= 0 ? fdopendir(s2) : NULL;
	if (!r && !d) {
		r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': read folder", rel);
		if (s2 >= 0)
			close(s2);
	}
	struct dirent *de;
	while (!r && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char sub[PATH_MAX];
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) >= sizeof(sub)) {
			r = eq_error_set(err, EQ_ERR_LIMIT, "persist: a path in '/%s' is too long", rel);
			break;
		}
		r = copy_entry(x, s, de->d_name, t, de->d_name, sub, depth + 1, err);
	}
	if (d)
		closedir(d);
	if (!r)
		r = copy_meta(x, s, t, &st, rel, err);
	if (!r && fsync(t) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': fsync", rel);
	if (t >= 0)
		close(t);
	close(s);
	if (!r && !x->preserving)
		x->rep.dirs++;
	return r;
}

/* One entry of the running slot, @sbase in @sdir, to @tname in @tdir (a
 * name that does not exist there). Types other than file and folder are
 * skipped. */
static eq_err copy_entry(struct pctx *x, int sdir, const char *sbase, int tdir, const char *tname, const char *rel,
			 unsigned depth, struct eq_error *err)
{
	struct stat st;
	if (fstatat(sdir, sbase, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "persist: running slot's '/%s'", rel);
	if (S_ISREG(st.st_mode))
		return copy_file(x, sdir, sbase, tdir, tname, rel, err);
	if (S_ISDIR(st.st_mode))
		return copy_dir(x, sdir, sbase, tdir, tname, rel, depth, err);
	char q[PATH_MAX + 16];
	eq_log(EQ_LOG_WARNING, "persist: '/%s' in the %s slot is %s, not a file or folder: not copied, continuing",
	       eq_quote(q, sizeof(q), rel), x->preserving ? "new" : "running", type_name(st.st_mode));
	x->rep.skipped++;
	return EQ_OK;
}

/*
 * Keeps a copy of the release's entry @base of @tdir (@rel) beside the
 * records when the device's own does not replace it: the device may change
 * it in place later (a first boot writes /etc/machine-id), and verify and
 * the next update's keep still need the bytes the release signed.
 */
static eq_err preserve(struct pctx *x, int tdir, const char *base, const char *rel, struct eq_error *err)
{
	struct stat st;
	if (fstatat(tdir, base, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? EQ_OK : eq_error_errno(err, EQ_ERR_IO, "persist: '/%s' in the new slot", rel);
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
		return EQ_OK;
	eq_err r = open_image_area(x, err);
	int pd = -1;
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%.*s", (int)(strlen(rel) - strlen(base)), rel);
	if (!r)
		r = eq_open_beneath(x->imgfd, parent, O_RDONLY | O_DIRECTORY, 0,
				    EQ_BENEATH_NO_SYMLINKS | EQ_BENEATH_MKDIRS, &pd, err);
	if (r)
		return eq_error_prefix(err, r, "persist: '/%s'", rel);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(tdir, base, target, sizeof(target) - 1);
		if (n < 0 || (target[n] = '\0', symlinkat(target, pd, base) != 0))
			r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': copying the symlink aside", rel);
		else if (x->p->owners && fchownat(pd, base, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) != 0)
			r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': chown", rel);
	} else {
		/* The release's own bytes: not the device's, not capped. */
		x->preserving = true;
		r = copy_entry(x, tdir, base, pd, base, rel, 0, err);
		x->preserving = false;
	}
	if (!r && fprintf(x->list, "%s\n", rel) < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: writing '%s'", EQ_PERSIST_LIST);
	if (!r)
		x->rep.saved++;
	close(pd);
	return r;
}

/* One name @base of a configured path: @sdir is its folder in the running
 * slot (-1: none), @rel its path. */
static eq_err persist_one(struct pctx *x, int sdir, const char *base, const char *rel, struct eq_error *err)
{
	char q[PATH_MAX + 16];
	struct stat st;
	bool copy = false;
	if (sdir < 0) {
		/* provisioning, or no folder in the running slot: logged already */
	} else if (fstatat(sdir, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno != ENOENT)
			return eq_error_errno(err, EQ_ERR_IO, "persist: running slot's '/%s'", rel);
		eq_log(EQ_LOG_INFO, "persist: '/%s' is not in the running slot; the new slot keeps the release's",
		       eq_quote(q, sizeof(q), rel));
		x->rep.missing++;
	} else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		eq_log(EQ_LOG_WARNING,
		       "persist: '/%s' in the running slot is %s, not a file or folder: not copied (the new slot "
		       "keeps the release's), continuing",
		       eq_quote(q, sizeof(q), rel), type_name(st.st_mode));
		x->rep.skipped++;
	} else {
		copy = true;
	}
	const char *slash = strrchr(rel, '/');
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - rel) : 0, rel);
	int tdir = -1;
	struct eq_error oe;
	eq_err r = eq_open_beneath(x->tfd, parent, O_RDONLY | O_DIRECTORY, 0755,
				   EQ_BENEATH_NO_SYMLINKS | (copy ? EQ_BENEATH_MKDIRS : 0), &tdir, copy ? err : &oe);
	if (r && !copy)
		return EQ_OK; /* the release has nothing there to keep */
	if (r)
		return eq_error_prefix(err, r, "persist: '/%s' in the new slot", rel);
	if (!copy) {
		r = preserve(x, tdir, base, rel, err);
		close(tdir);
		return r;
	}
	struct stat tst;
	if (fstatat(tdir, base, &tst, AT_SYMLINK_NOFOLLOW) == 0)
		r = set_aside(x, tdir, base, rel, err);
	else if (errno != ENOENT)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s' in the new slot", rel);
	char tmp[64];
	snprintf(tmp, sizeof(tmp), ".eqpersist-%ld-%lu", (long)getpid(), x->tmpn++);
	if (!r)
		r = copy_entry(x, sdir, base, tdir, tmp, rel, 0, err);
	if (!r && renameat(tdir, tmp, tdir, base) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': rename into place", rel);
	if (!r && fsync(tdir) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: '/%s': fsync of its folder", rel);
	close(tdir);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the names of folder @dfd that match @pattern to @names. */
static eq_err glob_dir(int dfd, const char *pattern, const char *path, char **names, size_t *n, struct eq_error *err)
{
	int d2 = dup(dfd);
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	if (!d) {
		if (d2 >= 0)
			close(d2);
		return eq_error_errno(err, EQ_ERR_IO, "persist: '%s': reading its folder", path);
	}
	eq_err r = EQ_OK;
	struct dirent *de;
	while (!r && (de = readdir(d))) {
		if (fnmatch(pattern, de->d_name, FNM_PERIOD) != 0 || !strcmp(de->d_name, ".") ||
		    !strcmp(de->d_name, ".."))
			continue;
		bool dup_name = false;
		for (size_t i = 0; i < *n && !dup_name; i++)
			dup_name = !strcmp(names[i], de->d_name);
		if (dup_name)
			continue;
		if (*n == GLOB_MAX_MATCHES)
			r = eq_error_set(err, EQ_ERR_LIMIT, "persist: '%s' matches more than %u names", path,
					 GLOB_MAX_MATCHES);
		else if (!(names[*n] = eq_strdup(de->d_name)))
			r = eq_error_set(err, EQ_ERR_NOMEM, "persist: out of memory");
		else
			(*n)++;
	}
	closedir(d);
	return r;
}

/* One configured path: a name or a glob in its last component, matched in
 * both slots (the running one's names are copied, the release's kept). */
static eq_err persist_path(struct pctx *x, const char *path, struct eq_error *err)
{
	char q[PATH_MAX + 16];
	const char *rel = path + 1, *last = strrchr(path, '/') + 1;
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%.*s", (int)(last - rel > 0 ? last - rel - 1 : 0), rel);
	int sdir = -1, tdir = -1;
	struct eq_error oe;
	eq_err r = x->rfd < 0 ? EQ_ERR_NOTFOUND
			      : eq_open_beneath(x->rfd, parent, O_RDONLY | O_DIRECTORY, 0, EQ_BENEATH_NO_SYMLINKS,
						&sdir, &oe);
	if (r == EQ_ERR_NOTFOUND && x->rfd >= 0) {
		eq_log(EQ_LOG_INFO, "persist: '%s' is not in the running slot; the new slot keeps the release's",
		       eq_quote(q, sizeof(q), path));
		x->rep.missing++;
	} else if (r == EQ_ERR_UNSAFE || r == EQ_ERR_STATE) {
		eq_log(EQ_LOG_WARNING,
		       "persist: '%s': a folder on the way in the running slot is a symlink or no folder (%s): not "
		       "followed, not copied, continuing",
		       eq_quote(q, sizeof(q), path), eq_error_msg(&oe));
		x->rep.skipped++;
	} else if (r && r != EQ_ERR_NOTFOUND) {
		return eq_error_set(err, r, "persist: running slot: %s", eq_error_msg(&oe));
	}
	if (eq_open_beneath(x->tfd, parent, O_RDONLY | O_DIRECTORY, 0, EQ_BENEATH_NO_SYMLINKS, &tdir, NULL) != EQ_OK)
		tdir = -1;
	char *names[GLOB_MAX_MATCHES];
	size_t n = 0;
	r = EQ_OK;
	if (!has_glob(last, strlen(last))) {
		names[n++] = (char *)(uintptr_t)last;
	} else {
		if (sdir >= 0)
			r = glob_dir(sdir, last, path, names, &n, err);
		/* The release's matches, so that each one is kept too. */
		if (!r && tdir >= 0)
			r = glob_dir(tdir, last, path, names, &n, err);
		/* Sorted, so a cap that is hit is hit at the same name every time. */
		if (!r)
			qsort(names, n, sizeof(names[0]), cmp_str);
		if (!r && !n && sdir >= 0) {
			eq_log(EQ_LOG_INFO,
			       "persist: nothing in the running slot matches '%s'; the new slot keeps the release's",
			       eq_quote(q, sizeof(q), path));
			x->rep.missing++;
		}
	}
	for (size_t i = 0; !r && i < n; i++) {
		char sub[PATH_MAX];
		int len = snprintf(sub, sizeof(sub), "%s%s%s", parent, *parent ? "/" : "", names[i]);
		if (len < 0 || (size_t)len >= sizeof(sub))
			r = eq_error_set(err, EQ_ERR_LIMIT, "persist: '%s/%s' is longer than PATH_MAX", parent,
					 names[i]);
		else
			r = persist_one(x, sdir, names[i], sub, err);
	}
	if (has_glob(last, strlen(last)))
		for (size_t i = 0; i < n; i++)
			eq_free(names[i]);
	if (sdir >= 0)
		close(sdir);
	if (tdir >= 0)
		close(tdir);
	return r;
}

eq_err eq_persist_copy(const struct eq_persist *p, struct eq_persist_report *ret, struct eq_error *err)
{
	if (!p->n_paths) {
		if (ret)
			memset(ret, 0, sizeof(*ret));
		return EQ_OK;
	}
	/* Provisioning runs from an installer or a build host: its own
	 * machine id and keys are not the device's (docs/agent.md). */
	if (!p->running_root)
		eq_log(EQ_LOG_INFO, "persist: no running slot (provisioning): nothing copied, the release's "
				    "versions are kept beside the records");
	struct pctx *x = eq_calloc(1, sizeof(*x));
	if (!x)
		return eq_error_set(err, EQ_ERR_NOMEM, "persist: out of memory");
	x->p = p;
	x->imgfd = x->listdir = x->rfd = x->tfd = -1;
	eq_err r = EQ_OK;
	if (p->running_root && (x->rfd = open(p->running_root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: running slot '%s'", p->running_root);
	if (!r && (x->tfd = open(p->target_root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "persist: new slot '%s'", p->target_root);
	for (size_t i = 0; !r && i < p->n_paths; i++) {
		const char *why = eq_persist_path_problem(p->paths[i]);
		if (why)
			r = eq_error_set(err, EQ_ERR_INVAL, "persist: '%s': %s", p->paths[i], why);
		else
			r = persist_path(x, p->paths[i], err);
	}
	if (x->list) {
		if (!r && (fflush(x->list) != 0 || fsync(fileno(x->list)) != 0))
			r = eq_error_errno(err, EQ_ERR_IO, "persist: writing '%s'", EQ_PERSIST_LIST);
		if (fclose(x->list) != 0 && !r)
			r = eq_error_errno(err, EQ_ERR_IO, "persist: writing '%s'", EQ_PERSIST_LIST);
	}
	if (x->rfd >= 0)
		close(x->rfd);
	if (x->tfd >= 0)
		close(x->tfd);
	if (x->imgfd >= 0)
		close(x->imgfd);
	if (x->listdir >= 0)
		close(x->listdir);
	if (!r && ret)
		*ret = x->rep;
	eq_free(x);
	return r;
}

/* ---- the list ------------------------------------------------------------------------ */

void eq_persist_list_done(struct eq_persist_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		eq_free(l->v[i]);
	eq_free(l->v);
	memset(l, 0, sizeof(*l));
}

eq_err eq_persist_list_load(int rootfd, struct eq_persist_list *ret, struct eq_error *err)
{
	return eq_path_list_load(rootfd, EQ_PERSIST_LIST, LIST_MAX_BYTES, ret, err);
}

eq_err eq_path_list_load(int rootfd, const char *rel, size_t max, struct eq_persist_list *ret, struct eq_error *err)
{
	struct eq_persist_list l = {0};
	int fd = -1;
	struct eq_error oe;
	eq_err r =
		eq_open_beneath(rootfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0, EQ_BENEATH_NO_SYMLINKS, &fd, &oe);
	if (r == EQ_ERR_NOTFOUND) {
		*ret = l;
		return EQ_OK;
	}
	if (r)
		return eq_error_set(err, r, "%s", eq_error_msg(&oe));
	char *text = eq_malloc(max + 1);
	size_t len = 0;
	struct stat st;
	if (!text)
		r = eq_error_set(err, EQ_ERR_NOMEM, "'%s': out of memory", rel);
	else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		r = eq_error_set(err, EQ_ERR_UNSAFE, "'%s' is not a regular file", rel);
	while (!r) {
		ssize_t n = read(fd, text + len, max + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = eq_error_errno(err, EQ_ERR_IO, "'%s'", rel);
		else if (!n)
			break;
		else if ((len += (size_t)n) > max)
			r = eq_error_set(err, EQ_ERR_LIMIT, "'%s' is larger than %zu bytes", rel, max);
	}
	close(fd);
	for (size_t pos = 0; !r && pos < len;) {
		char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		if (n) {
			/* Doubling: an image's list has up to 200,000 lines. */
			char **v = (l.n & (l.n - 1)) ? l.v : eq_realloc(l.v, (l.n ? 2 * l.n : 1) * sizeof(*v));
			if (v)
				l.v = v;
			if (!v || !(l.v[l.n] = eq_asprintf("%.*s", (int)n, text + pos)))
				r = eq_error_set(err, EQ_ERR_NOMEM, "'%s': out of memory", rel);
			else
				l.n++;
		}
		pos += n + 1;
	}
	eq_free(text);
	if (r) {
		eq_persist_list_done(&l);
		return r;
	}
	*ret = l;
	return EQ_OK;
}

bool eq_persist_list_covers(const struct eq_persist_list *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++) {
		size_t n = strlen(l->v[i]);
		if (!strncmp(path, l->v[i], n) && (path[n] == '\0' || path[n] == '/'))
			return true;
	}
	return false;
}
