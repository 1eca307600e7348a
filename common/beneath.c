#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "eq/beneath.h"

/* openat2 answers EAGAIN when a rename or mount raced the lookup and asks
 * for a retry; a bound keeps a hostile loop of renames from pinning us. */
#define OPENAT2_TRIES 8

/* Set once the kernel said ENOSYS: it will not learn openat2 while we run. */
static atomic_bool no_openat2;

static bool want_openat2(void)
{
#ifdef EQ_TEST_HOOKS
	if (secure_getenv("EQ_TEST_NO_OPENAT2"))
		return false;
#endif
	return !atomic_load_explicit(&no_openat2, memory_order_relaxed);
}

/* The next component of @s that is not "" or ".", or NULL at the end. */
static char *next_comp(char *s, size_t *ret_len)
{
	for (;;) {
		while (*s == '/')
			s++;
		if (!*s)
			return NULL;
		size_t n = strcspn(s, "/");
		if (n == 1 && s[0] == '.') {
			s++;
			continue;
		}
		*ret_len = n;
		return s;
	}
}

/* Where a lookup failed: the component as offset and length in the path
 * (the same in the caller's string and the working copy), and errno. */
struct bad {
	size_t off;
	size_t len;
	int e;
};

static int via_openat2(int rootfd, const char *path, int oflags, mode_t mode, unsigned how)
{
	/* open_how must carry a mode only when one is used (else EINVAL). */
	bool with_mode = (oflags & O_CREAT) || (oflags & O_TMPFILE) == O_TMPFILE;
	struct open_how oh = {
		.flags = (uint64_t)(unsigned)(oflags | O_CLOEXEC),
		.mode = with_mode ? (uint64_t)mode : 0,
		.resolve = RESOLVE_NO_MAGICLINKS | ((how & EQ_BENEATH_IN_ROOT) ? RESOLVE_IN_ROOT : RESOLVE_BENEATH) |
			   ((how & EQ_BENEATH_NO_SYMLINKS) ? RESOLVE_NO_SYMLINKS : 0),
	};
	for (int i = 0; i < OPENAT2_TRIES; i++) {
		long fd = syscall(SYS_openat2, rootfd, path[0] ? path : ".", &oh, sizeof(oh));
		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN)
			return -1;
	}
	return -1;
}

/*
 * The walker for kernels without openat2: one component at a time with
 * O_NOFOLLOW, so no symlink is followed at all, and each name is opened in
 * the directory the previous step returned (no re-resolution a rename could
 * redirect). @path is checked (relative, no "..") and writable; it is
 * restored before returning.
 */
static int via_walk(int rootfd, char *path, int oflags, mode_t mode, struct bad *bad)
{
	bad->off = 0;
	bad->len = 0;
	size_t n = 0;
	char *c = next_comp(path, &n);
	if (!c) {
		int fd = openat(rootfd, ".", oflags | O_CLOEXEC, mode);
		bad->e = errno;
		return fd;
	}
	int cur = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0) {
		bad->e = errno;
		return -1;
	}
	while (c) {
		size_t nn = 0;
		char *nx = next_comp(c + n, &nn);
		char save = c[n];
		c[n] = '\0';
		int fd;
		if (nx)
			fd = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		else
			fd = openat(cur, c, oflags | O_NOFOLLOW | O_CLOEXEC, mode);
		int e = errno;
		struct stat st;
		/* O_PATH | O_NOFOLLOW opens a symlink itself; the caller who did
		 * not ask for that wanted it followed, which we cannot do safely. */
		if (fd >= 0 && !nx && (oflags & O_PATH) && !(oflags & O_NOFOLLOW) && fstat(fd, &st) == 0 &&
		    S_ISLNK(st.st_mode)) {
			close(fd);
			fd = -1;
			e = ELOOP;
		}
		/* A symlink refused as a directory shows up as ENOTDIR: name it. */
		if (fd < 0 && (e == ENOTDIR || e == ELOOP) && fstatat(cur, c, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			e = ELOOP;
		c[n] = save;
		close(cur);
		if (fd < 0) {
			*bad = (struct bad){(size_t)(c - path), n, e};
			errno = e;
			return -1;
		}
		cur = fd;
		c = nx;
		n = nn;
	}
	return cur;
}

/*
 * After openat2 failed on @path: the first component whose prefix fails to
 * open as a directory, else the last one, for the message. A symlink the
 * kernel refused as a directory (O_DIRECTORY | O_NOFOLLOW answers ENOTDIR)
 * becomes ELOOP, as in the walker.
 */
static void find_bad(int rootfd, char *path, int oflags, unsigned how, struct bad *bad)
{
	size_t n = 0;
	char *c = next_comp(path, &n);
	while (c) {
		size_t nn = 0;
		char *nx = next_comp(c + n, &nn);
		if (!nx)
			break;
		char save = c[n];
		c[n] = '\0';
		int fd = via_openat2(rootfd, path, O_PATH | O_DIRECTORY, 0, how);
		c[n] = save;
		if (fd < 0)
			break;
		close(fd);
		c = nx;
		n = nn;
	}
	bad->off = c ? (size_t)(c - path) : 0;
	bad->len = c ? n : 0;
	size_t nn = 0;
	bool last = c && !next_comp(c + n, &nn);
	bool refuses_link = (how & EQ_BENEATH_NO_SYMLINKS) || (last && (oflags & O_NOFOLLOW));
	if (!c || bad->e != ENOTDIR || !refuses_link)
		return;
	char save = *c;
	*c = '\0';
	int pfd = via_openat2(rootfd, path, O_PATH | O_DIRECTORY, 0, how);
	*c = save;
	if (pfd < 0)
		return;
	save = c[n];
	c[n] = '\0';
	struct stat st;
	if (fstatat(pfd, c, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		bad->e = ELOOP;
	c[n] = save;
	close(pfd);
}

static int open_once(bool use2, int rootfd, char *path, int oflags, mode_t mode, unsigned how, struct bad *bad)
{
	if (use2) {
		int fd = via_openat2(rootfd, path, oflags, mode, how);
		if (fd >= 0)
			return fd;
		bad->e = errno;
		if (bad->e != ENOSYS && bad->e != EPERM) {
			find_bad(rootfd, path, oflags, how, bad);
			errno = bad->e;
			return -1;
		}
		/* EPERM: a seccomp filter that predates openat2 (or a real
		 * EPERM, which the walker meets again). ENOSYS: remember. */
		if (bad->e == ENOSYS)
			atomic_store_explicit(&no_openat2, true, memory_order_relaxed);
	}
	return via_walk(rootfd, path, oflags, mode, bad);
}

/* Makes each missing directory of @path (and @path itself if @all), each
 * in a parent opened beneath the root like any other lookup. */
static int make_dirs(bool use2, int rootfd, char *path, bool all, unsigned how, struct bad *bad)
{
	size_t n = 0;
	for (char *c = next_comp(path, &n); c;) {
		size_t nn = 0;
		char *nx = next_comp(c + n, &nn);
		if (!nx && !all)
			break;
		char save = *c;
		*c = '\0';
		int pfd = open_once(use2, rootfd, path, O_PATH | O_DIRECTORY, 0, how, bad);
		*c = save;
		if (pfd < 0)
			return -1;
		save = c[n];
		c[n] = '\0';
		int rc = mkdirat(pfd, c, 0755);
		int e = errno;
		c[n] = save;
		close(pfd);
		if (rc != 0 && e != EEXIST) {
			*bad = (struct bad){(size_t)(c - path), n, e};
			errno = e;
			return -1;
		}
		c = nx;
		n = nn;
	}
	return 0;
}

/* @s (@len bytes) for a message: control bytes shown as '?', cut with
 * "..." to fit @size; the names come from packages and payloads. */
static const char *shown(char *buf, size_t size, const char *s, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 1 < size; i++) {
		if (o + 4 >= size && i + 1 < len) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		unsigned char ch = (unsigned char)s[i];
		buf[o++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
	buf[o] = '\0';
	return buf;
}

static eq_err code_of(int e)
{
	switch (e) {
	case ELOOP:
	case EXDEV: return EQ_ERR_UNSAFE;
	case ENOENT: return EQ_ERR_NOTFOUND;
	case ENOTDIR: return EQ_ERR_STATE;
	case ENAMETOOLONG: return EQ_ERR_LIMIT;
	case ENOMEM: return EQ_ERR_NOMEM;
	default: return EQ_ERR_IO;
	}
}

static eq_err fail(struct eq_error *err, const char *path, const struct bad *bad)
{
	char qp[200], qc[120];
	shown(qp, sizeof(qp), path, strlen(path));
	/* len 0: the root itself. */
	if (bad->len)
		shown(qc, sizeof(qc), path + bad->off, bad->len);
	else
		strcpy(qc, ".");
	eq_err code = code_of(bad->e);
	if (bad->e == ELOOP)
		eq_error_set(err, code, "'%s': '%s' is a symlink, refusing to follow it here", qp, qc);
	else if (bad->e == EXDEV)
		eq_error_set(err, code, "'%s': '%s' leads outside the root, refused", qp, qc);
	else {
		errno = bad->e;
		eq_error_errno(err, code, "'%s': cannot open '%s'", qp, qc);
	}
	errno = bad->e;
	return code;
}

eq_err eq_open_beneath(int rootfd, const char *path, int oflags, mode_t mode, unsigned how, int *ret_fd,
		       struct eq_error *err)
{
	struct bad bad = {0, strlen(path), EXDEV};
	/* Refused before any lookup: RESOLVE_IN_ROOT would take both as
	 * meaning "inside", RESOLVE_BENEATH refuses them, the walker cannot
	 * tell; no caller has a reason to pass either. */
	if (path[0] == '/')
		return fail(err, path, &bad);
	/* A copy to cut components from. PATH_MAX is the kernel's own limit
	 * for one lookup, so it refuses nothing openat2 would take, and the
	 * callers get no allocation failure they did not have before. */
	char copy[PATH_MAX];
	if (bad.len >= sizeof(copy)) {
		bad.e = ENAMETOOLONG;
		return fail(err, path, &bad);
	}
	memcpy(copy, path, bad.len + 1);
	size_t n = 0;
	for (char *c = next_comp(copy, &n); c; c = next_comp(c + n, &n)) {
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			bad = (struct bad){(size_t)(c - copy), n, EXDEV};
			return fail(err, path, &bad);
		}
	}
	bool use2 = want_openat2();
	int fd = open_once(use2, rootfd, copy, oflags, mode, how, &bad);
	if (fd < 0 && bad.e == ENOENT && (how & EQ_BENEATH_MKDIRS)) {
		use2 = use2 && want_openat2();
		if (make_dirs(use2, rootfd, copy, (oflags & O_DIRECTORY) != 0, how, &bad) == 0)
			fd = open_once(use2, rootfd, copy, oflags, mode, how, &bad);
	}
	if (fd < 0)
		return fail(err, path, &bad);
	*ret_fd = fd;
	return EQ_OK;
}

/* ---- directories known to be outside a folder ----------------------------- */

#define DIRSET_SLOTS 1024u /* a power of two */

struct eq_dirset {
	size_t n;
	struct dirset_id {
		dev_t dev;
		ino_t ino;
		bool used;
	} slot[DIRSET_SLOTS];
};

struct eq_dirset *eq_dirset_new(void)
{
	return eq_calloc(1, sizeof(struct eq_dirset));
}

static size_t dirset_hash(const struct stat *st)
{
	uint64_t h = ((uint64_t)st->st_ino ^ ((uint64_t)st->st_dev << 32)) * 0x9e3779b97f4a7c15u;
	return (size_t)(h >> 40) & (DIRSET_SLOTS - 1);
}

bool eq_dirset_has(const struct eq_dirset *s, const struct stat *st)
{
	if (!s)
		return false;
	for (size_t i = dirset_hash(st);; i = (i + 1) & (DIRSET_SLOTS - 1)) {
		if (!s->slot[i].used)
			return false;
		if (s->slot[i].dev == st->st_dev && s->slot[i].ino == st->st_ino)
			return true;
	}
}

void eq_dirset_add(struct eq_dirset *s, const struct stat *st)
{
	if (!s || eq_dirset_has(s, st))
		return;
	if (s->n >= DIRSET_SLOTS / 4 * 3)
		eq_dirset_clear(s);
	size_t i = dirset_hash(st);
	while (s->slot[i].used)
		i = (i + 1) & (DIRSET_SLOTS - 1);
	s->slot[i] = (struct dirset_id){st->st_dev, st->st_ino, true};
	s->n++;
}

void eq_dirset_clear(struct eq_dirset *s)
{
	if (s)
		memset(s, 0, sizeof(*s));
}

void eq_dirset_free(struct eq_dirset *s)
{
	eq_free(s);
}
