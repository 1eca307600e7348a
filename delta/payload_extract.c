/*
 * Safe extraction of a payload under a root directory. The payload may come
 * from anyone until its hash is checked, so every path is resolved inside
 * the root, entries never pass through symlinks the payload itself made,
 * and a failure removes everything this call created.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <eq/beneath.h>

#include "payload_tar.h"

#define DATA_BUF_LEN (64u * 1024u)
/* Components of EQ_PAYLOAD_RESERVED_DIR ("usr/lib/eqota/slot"). */
#define RES_DEPTH 4
/* Most folders walked up from an entry's parent to the root: a path of
 * at most 4096 bytes has at most 2048 components. */
#define MAX_WALK 2049

/* What rollback undoes: a created file or directory is removed, an
 * existing directory whose mode and owner this call changed gets them back
 * (its xattrs are not restored). */
enum made_kind { MADE_FILE, MADE_DIR, CHANGED_DIR };

struct made {
	char *path;
	enum made_kind kind;
	uint32_t mode, uid, gid;
};

struct ex {
	int rootfd;
	unsigned flags;
	struct eq_payload_reader *r;
	const struct eq_payload_entry *ent;
	struct made *made; /* created by this call, in creation order */
	size_t n_made, cap_made;
	struct eq_payload_checker *rules; /* the path rules, shared with the publisher */
	/* The folders on the way to EQ_PAYLOAD_RESERVED_DIR as they are on
	 * disk ("usr", "usr/lib", "usr/lib/eqota", the reserved one; .ok
	 * false when missing), looked up again after this call made a
	 * directory (stale), and the folders found outside the reserved one
	 * (eq_dirset: a walk up stops at the first one known). Nothing here
	 * removes or moves a folder before rollback, so an inode in the set
	 * stays the folder it was. */
	struct fid {
		dev_t dev;
		ino_t ino;
		bool ok;
	} root_id, res_id[RES_DEPTH];
	struct eq_dirset *outside;
	bool res_stale;
	unsigned long tmp_seq;
	long pid; /* taken once: getpid() is a system call per entry otherwise */
	uint8_t *buf;
};

static eq_err efail(struct ex *x, struct eq_error *err, eq_err code, bool with_errno, const char *fmt, ...)
	EQ_PRINTF(5, 6);
static eq_err efail(struct ex *x, struct eq_error *err, eq_err code, bool with_errno, const char *fmt, ...)
{
	int saved = errno;
	char q[TAR_QUOTE_MAX];
	va_list ap;
	va_start(ap, fmt);
	if (with_errno)
		eq_error_errnov(err, code, saved, fmt, ap);
	else
		eq_error_setv(err, code, fmt, ap);
	va_end(ap);
	const char *name = eq_quote(q, sizeof(q), x->ent ? x->ent->path : "");
	eq_error_prefix(err, code, "payload: entry '%s' at byte %" PRIu64, name, tar_reader_entry_offset(x->r));
	errno = saved;
	return code;
}

/* Opens directory @rel (possibly "") inside the root as an O_PATH fd,
 * symlinks resolved as if the root were "/" (without openat2 none is
 * followed at all). On failure returns -1 with errno set; EXDEV/ELOOP mean
 * an escape attempt. */
static int open_dir_in_root(struct ex *x, const char *rel)
{
	int fd = -1;
	if (eq_open_beneath(x->rootfd, rel, O_PATH | O_DIRECTORY, 0, EQ_BENEATH_IN_ROOT, &fd, NULL) != EQ_OK)
		return -1;
	return fd;
}

static eq_err record(struct ex *x, const char *path, enum made_kind kind, const struct stat *old, struct eq_error *err)
{
	if (x->n_made == x->cap_made) {
		size_t cap = x->cap_made ? x->cap_made * 2 : 64;
		struct made *n = eq_realloc(x->made, cap * sizeof(*n));
		if (!n)
			return efail(x, err, EQ_ERR_NOMEM, false, "out of memory");
		x->made = n;
		x->cap_made = cap;
	}
	char *p = eq_strdup(path);
	if (!p)
		return efail(x, err, EQ_ERR_NOMEM, false, "out of memory");
	if (kind == MADE_DIR)
		x->res_stale = true;
	x->made[x->n_made++] = (struct made){p, kind, old ? (uint32_t)(old->st_mode & 07777) : 0,
					     old ? (uint32_t)old->st_uid : 0, old ? (uint32_t)old->st_gid : 0};
	return EQ_OK;
}

static eq_err resolve_fail(struct ex *x, const char *dir, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	if (errno == EXDEV || errno == ELOOP)
		return efail(x, err, EQ_ERR_UNSAFE, false, "'%s' leads outside the root or through a symlink",
			     eq_quote(q, sizeof(q), dir));
	if (errno == ENOTDIR)
		return efail(x, err, EQ_ERR_STATE, false, "'%s' is not a directory", eq_quote(q, sizeof(q), dir));
	return efail(x, err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, true, "cannot open directory '%s'",
		     eq_quote(q, sizeof(q), dir));
}

/* ---- eqota's reserved folder, after symlinks ------------------------------ */

static bool fid_eq(const struct fid *a, const struct stat *st)
{
	return a->ok && a->dev == st->st_dev && a->ino == st->st_ino;
}

/* Looks up the folders on the way to the reserved one again, following no
 * symlink: that is how the agent opens its own folder (agent/install.c),
 * and the path rules keep every package's non-directories off the way. */
static void reserved_lookup(struct ex *x)
{
	struct fid was[RES_DEPTH];
	memcpy(was, x->res_id, sizeof(was));
	memset(x->res_id, 0, sizeof(x->res_id));
	x->res_stale = false;
	const char *res = EQ_PAYLOAD_RESERVED_DIR;
	char prefix[sizeof(EQ_PAYLOAD_RESERVED_DIR)];
	size_t n = 0;
	for (size_t k = 0; k < RES_DEPTH; k++) {
		n += strcspn(res + n, "/");
		memcpy(prefix, res, n);
		prefix[n] = '\0';
		int fd = -1;
		if (eq_open_beneath(x->rootfd, prefix, O_PATH | O_DIRECTORY, 0, EQ_BENEATH_NO_SYMLINKS, &fd, NULL))
			break;
		struct stat st;
		if (fstat(fd, &st) == 0)
			x->res_id[k] = (struct fid){st.st_dev, st.st_ino, true};
		close(fd);
		if (!res[n])
			break;
		n++;
	}
	/* The set was judged against the folders as they were. */
	for (size_t k = 0; k < RES_DEPTH; k++) {
		const struct fid *a = &was[k], *b = &x->res_id[k];
		if (a->ok != b->ok || (a->ok && (a->dev != b->dev || a->ino != b->ino))) {
			eq_dirset_clear(x->outside);
			break;
		}
	}
}

/*
 * True when directory @dfd is the reserved folder or below it: walks up
 * with ".." until the root (or the top of the file system), comparing
 * device and inode numbers, never names, so no symlink, bind mount or
 * "lib -> usr/lib" of another package can disguise the folder.
 */
static bool inside_reserved(struct ex *x, int dfd, const struct stat *dst)
{
	const struct fid *res = &x->res_id[RES_DEPTH - 1];
	if (!res->ok || eq_dirset_has(x->outside, dst))
		return false;
	int cur = openat(dfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st = *dst;
	bool inside = cur < 0; /* cannot tell: refuse */
	for (int depth = 0; cur >= 0 && depth < MAX_WALK; depth++) {
		if (fid_eq(res, &st)) {
			inside = true;
			break;
		}
		if (fid_eq(&x->root_id, &st) || (depth > 0 && eq_dirset_has(x->outside, &st)))
			break;
		int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct stat ust;
		if (up < 0 || fstat(up, &ust) != 0) {
			inside = true;
			if (up >= 0)
				close(up);
			break;
		}
		close(cur);
		cur = up;
		if (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino)
			break; /* "/" of the process: not below the root at all */
		st = ust;
	}
	if (cur >= 0)
		close(cur);
	if (!inside)
		eq_dirset_add(x->outside, dst);
	return inside;
}

/*
 * The path rules (eq_payload_checker_add()) judge an entry's path as
 * written; this judges where it lands. Entry @base in directory @pfd, as
 * the directories resolved it inside the root, following the symlinks
 * other packages of the slot made ("lib -> usr/lib" of a merged /usr):
 * it must not be in the reserved folder, nor be that folder, nor be a
 * non-directory where a folder on the way to it is.
 */
static eq_err check_landing(struct ex *x, int pfd, const char *base, bool is_dir, const char *what,
			    struct eq_error *err)
{
	if (x->res_stale)
		reserved_lookup(x);
	struct stat st;
	if (fstat(pfd, &st) != 0)
		return efail(x, err, EQ_ERR_IO, true, "stat of the parent directory");
	if (inside_reserved(x, pfd, &st))
		return efail(x, err, EQ_ERR_UNSAFE, false,
			     "%s resolves into eqota's own folder '%s' through a symlink, refusing to write there",
			     what, EQ_PAYLOAD_RESERVED_DIR);
	const char *c = EQ_PAYLOAD_RESERVED_DIR;
	for (size_t k = 0; k < RES_DEPTH && *c; k++) {
		size_t n = strcspn(c, "/");
		const struct fid *up = k ? &x->res_id[k - 1] : &x->root_id;
		if (fid_eq(up, &st) && strlen(base) == n && !memcmp(base, c, n) && (k == RES_DEPTH - 1 || !is_dir))
			return efail(x, err, EQ_ERR_UNSAFE, false, "%s resolves to '%.*s' through a symlink, %s", what,
				     (int)(c + n - EQ_PAYLOAD_RESERVED_DIR), EQ_PAYLOAD_RESERVED_DIR,
				     k == RES_DEPTH - 1 ? "eqota's own folder"
							: "a folder on the way to eqota's own one");
		c += n + (c[n] == '/');
	}
	return EQ_OK;
}

/*
 * Opens the parent directory of @path, creating missing ones (mode 0755,
 * as GNU tar does), and sets *ret_base to the last component.
 */
static eq_err open_parent(struct ex *x, const char *path, int *ret_fd, const char **ret_base, struct eq_error *err)
{
	const char *slash = strrchr(path, '/');
	*ret_base = slash ? slash + 1 : path;
	EQ_AUTOFREE char *dir = eq_strndup(path, slash ? (size_t)(slash - path) : 0);
	if (!dir)
		return efail(x, err, EQ_ERR_NOMEM, false, "out of memory");
	int fd = open_dir_in_root(x, dir);
	if (fd >= 0) {
		*ret_fd = fd;
		return EQ_OK;
	}
	if (errno != ENOENT)
		return resolve_fail(x, dir, err);
	/* Slow path: walk the prefixes and create what is missing. */
	size_t len = strlen(dir);
	for (size_t i = 0; i <= len; i++) {
		if (dir[i] != '/' && dir[i] != '\0')
			continue;
		char saved = dir[i];
		dir[i] = '\0';
		fd = open_dir_in_root(x, dir);
		if (fd < 0 && errno == ENOENT) {
			char *cut = strrchr(dir, '/');
			const char *comp = cut ? cut + 1 : dir;
			if (cut)
				*cut = '\0';
			int pfd = open_dir_in_root(x, cut ? dir : "");
			if (cut)
				*cut = '/';
			if (pfd < 0)
				return resolve_fail(x, dir, err);
			int rc = mkdirat(pfd, comp, 0755);
			close(pfd);
			if (rc < 0) {
				char q[TAR_QUOTE_MAX];
				return efail(x, err, EQ_ERR_IO, true, "cannot create directory '%s'",
					     eq_quote(q, sizeof(q), dir));
			}
			eq_err e = record(x, dir, MADE_DIR, NULL, err);
			if (e)
				return e;
			fd = open_dir_in_root(x, dir);
		}
		if (fd < 0)
			return resolve_fail(x, dir, err);
		dir[i] = saved;
		if (saved == '\0') {
			*ret_fd = fd;
			return EQ_OK;
		}
		close(fd);
	}
	return efail(x, err, EQ_ERR_STATE, false, "cannot open the parent directory");
}

static eq_err set_xattrs_fd(struct ex *x, int fd, const char *proc_path, struct eq_error *err)
{
	if (!(x->flags & EQ_EXTRACT_OWNERS))
		return EQ_OK;
	for (size_t i = 0; i < x->ent->n_xattrs; i++) {
		const struct eq_xattr *a = &x->ent->xattrs[i];
		int rc = fd >= 0 ? fsetxattr(fd, a->name, a->value, a->len, 0)
				 : lsetxattr(proc_path, a->name, a->value, a->len, 0);
		if (rc < 0) {
			char q[TAR_QUOTE_MAX];
			return efail(x, err, EQ_ERR_IO, true, "cannot set xattr '%s'", eq_quote(q, sizeof(q), a->name));
		}
	}
	return EQ_OK;
}

static eq_err make_dir(struct ex *x, struct eq_error *err)
{
	const struct eq_payload_entry *e = x->ent;
	int pfd = -1;
	const char *base;
	eq_err r = open_parent(x, e->path, &pfd, &base, err);
	if (!r)
		r = check_landing(x, pfd, base, true, "the directory", err);
	if (r) {
		if (pfd >= 0)
			close(pfd);
		return r;
	}
	if (mkdirat(pfd, base, 0700) == 0) {
		r = record(x, e->path, MADE_DIR, NULL, err);
	} else if (errno == EEXIST) {
		struct stat st;
		if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = efail(x, err, EQ_ERR_IO, true, "stat");
		} else if (S_ISLNK(st.st_mode)) {
			/* A directory symlink already in the root (a merged /usr's
			 * "bin -> usr/bin"): kept, as dpkg does, if it leads to a
			 * directory inside the root. */
			int fd = open_dir_in_root(x, e->path);
			if (fd < 0) {
				r = resolve_fail(x, e->path, err);
			} else {
				close(fd);
				close(pfd);
				return EQ_OK;
			}
		} else if (!S_ISDIR(st.st_mode)) {
			r = efail(x, err, EQ_ERR_STATE, false, "exists and is not a directory");
		} else {
			r = record(x, e->path, CHANGED_DIR, &st, err);
		}
	} else {
		r = efail(x, err, EQ_ERR_IO, true, "mkdir");
	}
	if (r) {
		close(pfd);
		return r;
	}
	int fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(pfd);
	if (fd < 0)
		return efail(x, err, EQ_ERR_IO, true, "open directory");
	if ((x->flags & EQ_EXTRACT_OWNERS) && fchown(fd, e->uid, e->gid) < 0)
		r = efail(x, err, EQ_ERR_IO, true, "chown");
	if (!r && fchmod(fd, e->mode) < 0)
		r = efail(x, err, EQ_ERR_IO, true, "chmod");
	if (!r)
		r = set_xattrs_fd(x, fd, NULL, err);
	close(fd);
	return r;
}

/* Moves the finished temporary @tmp over @base. */
static eq_err commit_tmp(struct ex *x, int pfd, const char *tmp, const char *base, struct eq_error *err)
{
	struct stat st;
	bool existed = fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	eq_err r = EQ_OK;
	if (existed && S_ISDIR(st.st_mode))
		r = efail(x, err, EQ_ERR_STATE, false, "exists and is a directory");
	else if (renameat(pfd, tmp, pfd, base) < 0)
		r = efail(x, err, EQ_ERR_IO, true, "rename into place");
	/* rename() between two names of one inode succeeds doing nothing, so
	 * after a hard link to the file already there the temporary name still
	 * exists; on failure it surely does. A new file, link or node is its
	 * own inode, so its rename left nothing (one system call per entry). */
	if (r || x->ent->type == EQ_ENTRY_HARDLINK)
		(void)unlinkat(pfd, tmp, 0);
	if (!r && !existed)
		r = record(x, x->ent->path, MADE_FILE, NULL, err);
	return r;
}

static eq_err write_data(struct ex *x, int fd, struct eq_error *err)
{
	for (;;) {
		size_t n;
		eq_err r = eq_payload_reader_read(x->r, x->buf, DATA_BUF_LEN, &n, err);
		if (r)
			return r;
		if (!n)
			return EQ_OK;
		r = eq_write_all(fd, x->buf, n, err);
		if (r)
			return efail(x, err, EQ_ERR_IO, false, "write: %s", eq_error_msg(err));
	}
}

/* Creates the non-directory entry under a temporary name in @pfd. */
static eq_err make_tmp(struct ex *x, int pfd, char *tmp, size_t tmplen, struct eq_error *err)
{
	const struct eq_payload_entry *e = x->ent;
	for (int tries = 0; tries < 100; tries++) {
		snprintf(tmp, tmplen, ".eqtmp-%ld-%lu", x->pid, x->tmp_seq++);
		int rc = 0;
		int fd = -1;
		switch (e->type) {
		case EQ_ENTRY_FILE:
			fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			rc = fd < 0 ? -1 : 0;
			break;
		case EQ_ENTRY_SYMLINK: rc = symlinkat(e->link, pfd, tmp); break;
		case EQ_ENTRY_CHR: rc = mknodat(pfd, tmp, S_IFCHR | 0600, makedev(e->devmajor, e->devminor)); break;
		case EQ_ENTRY_BLK: rc = mknodat(pfd, tmp, S_IFBLK | 0600, makedev(e->devmajor, e->devminor)); break;
		case EQ_ENTRY_FIFO: rc = mknodat(pfd, tmp, S_IFIFO | 0600, 0); break;
		case EQ_ENTRY_HARDLINK: {
			int tfd;
			const char *tbase;
			eq_err r = open_parent(x, e->link, &tfd, &tbase, err);
			if (r)
				return r;
			r = check_landing(x, tfd, tbase, false, "the hard link's target", err);
			if (r) {
				close(tfd);
				return r;
			}
			rc = linkat(tfd, tbase, pfd, tmp, 0);
			close(tfd);
			break;
		}
		case EQ_ENTRY_DIR: return efail(x, err, EQ_ERR_STATE, false, "directory in make_tmp");
		}
		if (rc == 0 && fd < 0)
			return EQ_OK;
		if (rc < 0 && errno == EEXIST)
			continue;
		if (rc < 0)
			return efail(x, err, EQ_ERR_IO, true, "create");
		/* A regular file: fill it and set its metadata through the fd.
		 * chown before chmod and xattrs: it clears setuid and
		 * security.capability. */
		eq_err r = write_data(x, fd, err);
		if (!r && (x->flags & EQ_EXTRACT_OWNERS) && fchown(fd, e->uid, e->gid) < 0)
			r = efail(x, err, EQ_ERR_IO, true, "chown");
		if (!r && fchmod(fd, e->mode) < 0)
			r = efail(x, err, EQ_ERR_IO, true, "chmod");
		if (!r)
			r = set_xattrs_fd(x, fd, NULL, err);
		if (close(fd) < 0 && !r)
			r = efail(x, err, EQ_ERR_IO, true, "close");
		if (r)
			(void)unlinkat(pfd, tmp, 0);
		return r;
	}
	return efail(x, err, EQ_ERR_IO, false, "no free temporary name");
}

static eq_err make_nondir(struct ex *x, struct eq_error *err)
{
	const struct eq_payload_entry *e = x->ent;
	int pfd;
	const char *base;
	eq_err r = open_parent(x, e->path, &pfd, &base, err);
	if (r)
		return r;
	r = check_landing(x, pfd, base, false, "the entry", err);
	if (r) {
		close(pfd);
		return r;
	}
	char tmp[64];
	r = make_tmp(x, pfd, tmp, sizeof(tmp), err);
	if (r) {
		close(pfd);
		return r;
	}
	bool meta = e->type != EQ_ENTRY_FILE && e->type != EQ_ENTRY_HARDLINK;
	/* Symlinks and device nodes have no fd to set metadata through; the
	 * name below our own directory fd in /proc is as safe. */
	char proc[96];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d/%s", pfd, tmp);
	if (meta && (x->flags & EQ_EXTRACT_OWNERS) && fchownat(pfd, tmp, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) < 0)
		r = efail(x, err, EQ_ERR_IO, true, "chown");
	if (!r && meta && e->type != EQ_ENTRY_SYMLINK && fchmodat(pfd, tmp, e->mode, 0) < 0)
		r = efail(x, err, EQ_ERR_IO, true, "chmod");
	if (!r && meta)
		r = set_xattrs_fd(x, -1, proc, err);
	if (r)
		(void)unlinkat(pfd, tmp, 0);
	else
		r = commit_tmp(x, pfd, tmp, base, err);
	close(pfd);
	return r;
}

static eq_err extract_one(struct ex *x, struct eq_error *err)
{
	const struct eq_payload_entry *e = x->ent;
	/* RESOLVE_IN_ROOT would contain most of these, but no honest payload
	 * breaks the rules, so the entry is refused before anything is made:
	 * the same rules the publisher ran (eq_payload_checker_add()). */
	struct eq_error why;
	eq_err r = eq_payload_checker_add(x->rules, e, &why);
	if (r)
		return efail(x, err, r, false, "%s", eq_error_msg(&why));
	return e->type == EQ_ENTRY_DIR ? make_dir(x, err) : make_nondir(x, err);
}

static void rollback(struct ex *x)
{
	for (size_t i = x->n_made; i-- > 0;) {
		const char *path = x->made[i].path;
		const char *slash = strrchr(path, '/');
		char *dir = eq_strndup(path, slash ? (size_t)(slash - path) : 0);
		if (!dir)
			continue;
		const char *base = slash ? slash + 1 : path;
		const struct made *m = &x->made[i];
		int pfd = open_dir_in_root(x, dir);
		if (pfd >= 0 && m->kind == CHANGED_DIR) {
			(void)fchownat(pfd, base, m->uid, m->gid, AT_SYMLINK_NOFOLLOW);
			(void)fchmodat(pfd, base, m->mode, 0);
		} else if (pfd >= 0) {
			(void)unlinkat(pfd, base, m->kind == MADE_DIR ? AT_REMOVEDIR : 0);
		}
		if (pfd >= 0)
			close(pfd);
		eq_free(dir);
	}
}

static void ex_done(struct ex *x)
{
	for (size_t i = 0; i < x->n_made; i++)
		eq_free(x->made[i].path);
	eq_free(x->made);
	eq_dirset_free(x->outside);
	eq_payload_checker_free(x->rules);
	eq_free(x->buf);
	eq_payload_reader_free(x->r);
	if (x->rootfd >= 0)
		close(x->rootfd);
}

eq_err eq_payload_extract(eq_read_fn src, void *src_ctx, const char *root, const struct eq_payload_limits *limits,
			  unsigned flags, uint8_t ret_sha256[EQ_SHA256_LEN], struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	struct ex x = {.rootfd = -1, .flags = flags, .pid = (long)getpid()};
	eq_err r = EQ_OK;
	x.rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x.rootfd < 0)
		r = eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "payload: extract root '%s'",
				   eq_quote(q, sizeof(q), root));
	struct stat rst;
	if (!r && fstat(x.rootfd, &rst) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "payload: extract root '%s'", eq_quote(q, sizeof(q), root));
	if (!r) {
		x.root_id = (struct fid){rst.st_dev, rst.st_ino, true};
		x.res_stale = true;
		if (!(x.outside = eq_dirset_new()))
			r = eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for extraction");
	}
	if (!r && !(x.buf = eq_malloc(DATA_BUF_LEN)))
		r = eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for extraction");
	if (!r)
		r = eq_payload_reader_new(src, src_ctx, limits, &x.r, err);
	if (!r)
		r = eq_payload_checker_new(limits, &x.rules, err);
	if (!r)
		tar_reader_hash_enable(x.r);
	while (!r) {
		x.ent = NULL;
		r = eq_payload_reader_next(x.r, &x.ent, err);
		if (r || !x.ent)
			break;
		r = extract_one(&x, err);
	}
	if (r) {
		rollback(&x);
	} else if (ret_sha256) {
		tar_reader_hash_final(x.r, ret_sha256);
	}
	ex_done(&x);
	return r;
}
