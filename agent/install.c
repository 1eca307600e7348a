/*
 * The installer: builds a slot from scratch so that it holds exactly one
 * release (docs/internals/install.md). One package at a time, streamed, so
 * memory is the plan plus one package's file list, and temporary disk use is
 * at most two payloads.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <eq/agent.h>
#include <eq/beneath.h>

#include "image_aside.h"
#include "install.h"
#include "meta_copy.h"
#include "persist.h"
#include "records.h"
#include "slot.h"

#define COPY_BUF_LEN (128u * 1024u)
_Static_assert(COPY_BUF_LEN >= EQ_META_SCRATCH_LEN, "the copy buffer is the metadata copy's scratch too");

struct inst {
	const struct eq_install *in;
	int tfd;    /* target root, O_PATH */
	int rfd;    /* running root, O_PATH, or -1 */
	int slotfd; /* <target>/EQ_SLOT_RECORD_DIR, O_RDONLY */
	int recfd;  /* <target>/EQ_SLOT_RECORD_DIR/packages, O_RDONLY */
	struct eq_payload_limits lim;
	struct eq_install_report rep;
	struct eq_progress prog;
	double t0;
	uint8_t *buf; /* COPY_BUF_LEN */
	unsigned long tmpn;
	long pid;                    /* taken once: getpid() is a system call per entry otherwise */
	bool mismatch;               /* the last error is about the running slot, not ours */
	struct stat slot_st, rec_st; /* identities of slotfd and recfd */
	/* The paths the running slot persisted ([persist]) and where it keeps
	 * the release's version of them: what its records describe. */
	struct eq_persist_list plist;
	int pfd;         /* <running>/EQ_PERSIST_IMAGE_DIR, O_PATH, or -1 */
	char *pimg_root; /* its path, for the payload builder */
	/* An image release: the package versions of the paths the image
	 * replaces or removes, set aside in the running slot (image_aside.c),
	 * and whether the record being read is a package's (not a component's). */
	struct eq_aside_read aside;
	bool read_aside;
};

/* The root a recorded path of the running slot is read from: a package's
 * version of a path the image replaced or removed is in the aside folder;
 * the release's version of a persisted path was set aside (persist.c), and
 * the device's own file in its place is none of the record's business. */
static int source_root(const struct inst *x, const char *path)
{
	if (x->read_aside && eq_aside_read_has(&x->aside, path))
		return x->aside.fd;
	return x->pfd >= 0 && eq_persist_list_covers(&x->plist, path) ? x->pfd : x->rfd;
}

/* The path of root fd @fd of source_root(), for the payload builder. */
static const char *source_path(const struct inst *x, int fd)
{
	return fd == x->rfd ? x->in->running_root : fd == x->pfd ? x->pimg_root : x->aside.root;
}

/* Loads the running slot's persist list and opens its image folder. A
 * damaged one is no reason to stop: without it the persisted paths are
 * read in place, and their packages fall back to downloads. */
static eq_err open_persisted(struct inst *x, const char *root, struct eq_error *err)
{
	struct eq_error le;
	eq_err r = eq_persist_list_load(x->rfd, &x->plist, &le);
	if (!r && x->plist.n)
		r = eq_open_beneath(x->rfd, EQ_PERSIST_IMAGE_DIR, O_PATH | O_DIRECTORY, 0, EQ_BENEATH_NO_SYMLINKS,
				    &x->pfd, &le);
	if (r == EQ_ERR_NOMEM)
		return eq_error_set(err, r, "%s", eq_error_msg(&le));
	if (r) {
		eq_log(EQ_LOG_WARNING, "slot '%s': %s; its persisted paths are read in place, continuing", root,
		       eq_error_msg(&le));
		eq_persist_list_done(&x->plist);
		return EQ_OK;
	}
	if (x->plist.n && !(x->pimg_root = eq_asprintf("%s/%s", root, EQ_PERSIST_IMAGE_DIR)))
		return eq_error_set(err, EQ_ERR_NOMEM, "install: out of memory");
	return EQ_OK;
}

/* Both folders of the running slot (holding release @m) that keep a
 * version of a path other than the one in place. */
static eq_err open_sources(struct inst *x, const char *root, const struct eq_manifest *m, struct eq_error *err)
{
	eq_err r = open_persisted(x, root, err);
	return r ? r : eq_aside_read_open(x->rfd, root, m, &x->aside, err);
}

static void close_persisted(struct inst *x)
{
	eq_persist_list_done(&x->plist);
	if (x->pfd >= 0)
		close(x->pfd);
	x->pfd = -1;
	eq_free(x->pimg_root);
	x->pimg_root = NULL;
	eq_aside_read_done(&x->aside);
}

/* ---- small helpers -------------------------------------------------------- */

/* A running-slot problem: the package is downloaded instead. */
static eq_err miss(struct inst *x, struct eq_error *err, const char *fmt, ...) EQ_PRINTF(3, 4);
static eq_err miss(struct inst *x, struct eq_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	eq_error_setv(err, EQ_ERR_VERIFY, fmt, ap);
	va_end(ap);
	x->mismatch = true;
	return EQ_ERR_VERIFY;
}

static void progress(struct inst *x, const char *item)
{
	if (!x->in->progress)
		return;
	x->prog.item = item;
	x->prog.elapsed_s = eq_now_s() - x->t0;
	x->in->progress(&x->prog, x->in->progress_ctx);
}

/* A sink that hashes and counts what it writes to a file descriptor, and
 * remembers whether the failure was its own (our disk) or the producer's. */
struct hsink {
	int fd;          /* -1: hash and count only */
	const char *dir; /* where the file is, for errors */
	struct eq_sha256 sha;
	uint64_t n;
	bool failed;
	/* The producer hashes what it writes (the payload builder, a delta's
	 * output check) and hands over its digest: hashing every byte twice
	 * is the largest cost of an install on a device without SHA
	 * instructions. */
	bool given;
	uint8_t d[EQ_SHA256_LEN];
};

static eq_err hsink_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	struct hsink *h = ctx;
	eq_err r = h->fd >= 0 ? eq_write_all(h->fd, data, len, err) : EQ_OK;
	if (r) {
		h->failed = true;
		/* Name the folder: "No space left on device" alone does not say
		 * which file system is full. */
		return eq_error_prefix(err, r, "writing a temporary file in '%s'", h->dir);
	}
	if (!h->given)
		eq_sha256_update(&h->sha, data, len);
	h->n += len;
	return EQ_OK;
}

static void hsink_init(struct hsink *h, int fd, const char *dir)
{
	memset(h, 0, sizeof(*h));
	h->fd = fd;
	h->dir = dir;
	eq_sha256_init(&h->sha);
}

/* True when the digest of @h equals the manifest's @hex and size. */
static bool hsink_matches(struct hsink *h, const char *hex, uint64_t size, char got[EQ_SHA256_HEX_LEN + 1])
{
	uint8_t d[EQ_SHA256_LEN];
	if (h->given)
		memcpy(d, h->d, sizeof(d));
	else
		eq_sha256_final(&h->sha, d);
	eq_hex_encode(d, sizeof(d), got);
	return h->n == size && !strcmp(got, hex);
}

/* A temporary file in work_dir. With @ret_path NULL it is unlinked at once
 * (used through the fd only), so nothing is left behind by a crash. */
static eq_err work_tmp(struct inst *x, const char *what, int *ret_fd, char **ret_path, struct eq_error *err)
{
	char *p = eq_asprintf("%s/.eq-%s-XXXXXX", x->in->work_dir, what);
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "install: out of memory");
	int fd = mkostemp(p, O_CLOEXEC);
	if (fd < 0) {
		eq_err r = eq_error_errno(err, EQ_ERR_IO, "install: cannot create a temporary file in '%s'",
					  x->in->work_dir);
		eq_free(p);
		return r;
	}
	if (!ret_path) {
		(void)unlink(p);
		eq_free(p);
	} else {
		*ret_path = p;
	}
	*ret_fd = fd;
	return EQ_OK;
}

/* ---- paths inside a root -------------------------------------------------- */

/* Opens the directory holding @path below @rootfd as O_PATH, resolving
 * symlinks as if @rootfd were "/" (a slot's absolute symlinks point into
 * the slot, never into the host; without openat2 none is followed at all);
 * *ret_base points into @path. With @create, missing parents are made
 * (0755, as extract does). -1 with errno on failure. */
static int open_parent(int rootfd, const char *path, bool create, const char **ret_base)
{
	const char *slash = strrchr(path, '/');
	*ret_base = slash ? slash + 1 : path;
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	char dir[EQ_REC_MAX_PATH + 1];
	if (dlen > EQ_REC_MAX_PATH) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, dlen);
	dir[dlen] = '\0';
	int fd = -1;
	unsigned how = EQ_BENEATH_IN_ROOT | (create ? EQ_BENEATH_MKDIRS : 0);
	if (eq_open_beneath(rootfd, dir, O_PATH | O_DIRECTORY, 0, how, &fd, NULL) != EQ_OK)
		return -1;
	return fd;
}

/* ---- eqota's own folder in a slot ------------------------------------------ */

/* The records folder, relative to a slot root (for messages too). */
#define REC_DIR EQ_SLOT_RECORD_DIR "/packages"

/*
 * Opens directory @rel below @rootfd (O_RDONLY), with @create making the
 * missing components (0755), following no symlink at all: this folder is
 * eqota's own, so a symlink in it was planted (by a package, through a
 * symlink of its own) and following it could lead out of the slot.
 * -1 with errno on failure (ELOOP or ENOTDIR for a symlink).
 */
static int open_own_dir(int rootfd, const char *rel, bool create)
{
	int fd = -1;
	unsigned how = EQ_BENEATH_NO_SYMLINKS | (create ? EQ_BENEATH_MKDIRS : 0);
	if (eq_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY, 0, how, &fd, NULL) != EQ_OK)
		return -1;
	return fd;
}

/* Creates @name in eqota's folder @dfd (@where names it) for writing:
 * O_EXCL | O_NOFOLLOW, so a name a package put there first (a symlink to
 * the host's /etc/passwd, say) is refused, never followed or truncated. */
static eq_err create_own(int dfd, const char *where, const char *name, int *ret_fd, struct eq_error *err)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST)
		return eq_error_set(err, EQ_ERR_UNSAFE,
				    "'%s/%s' already exists in the target before eqota wrote it (put there by a "
				    "package?), refusing to write through it",
				    where, name);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot create '%s/%s' in the target", where, name);
	*ret_fd = fd;
	return EQ_OK;
}

/* A record file (payload order, see records.h) as a stdio stream. */
static eq_err create_own_stream(int dfd, const char *name, FILE **ret, struct eq_error *err)
{
	int fd = -1;
	eq_err r = create_own(dfd, REC_DIR, name, &fd, err);
	if (r)
		return r;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		r = eq_error_errno(err, EQ_ERR_NOMEM, "cannot write '%s/%s'", REC_DIR, name);
		close(fd);
		(void)unlinkat(dfd, name, 0);
		return r;
	}
	*ret = f;
	return EQ_OK;
}

/* eq_file_replace_atomic() inside eqota's folder @dfd: temporary name,
 * fsync, rename, fsync of the folder, all relative to @dfd. */
static eq_err write_own_atomic(int dfd, const char *name, const void *data, size_t len, struct eq_error *err)
{
	char tmp[128];
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	int fd = -1;
	eq_err r = create_own(dfd, EQ_SLOT_RECORD_DIR, tmp, &fd, err);
	if (r)
		return r;
	r = eq_write_all(fd, data, len, err);
	if (r)
		r = eq_error_prefix(err, r, "writing '%s/%s'", EQ_SLOT_RECORD_DIR, tmp);
	if (!r && fsync(fd) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "fsync '%s/%s'", EQ_SLOT_RECORD_DIR, tmp);
	if (close(fd) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "writing '%s/%s'", EQ_SLOT_RECORD_DIR, tmp);
	if (!r && renameat(dfd, tmp, dfd, name) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot rename '%s/%s'", EQ_SLOT_RECORD_DIR, tmp);
	if (r) {
		(void)unlinkat(dfd, tmp, 0);
		return r;
	}
	if (fsync(dfd) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "fsync '%s'", EQ_SLOT_RECORD_DIR);
	return EQ_OK;
}

/* Loads the running slot's record of package @name. */
static eq_err load_running_record(struct inst *x, const char *name, struct eq_rec_list *l, struct eq_error *err)
{
	int d = open_own_dir(x->rfd, REC_DIR, false);
	if (d < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			return eq_error_set(err, EQ_ERR_UNSAFE, "running slot: '%s' is not a plain folder (a symlink?)",
					    REC_DIR);
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "running slot: '%s'",
				      REC_DIR);
	}
	char fname[160];
	snprintf(fname, sizeof(fname), "%s.files", name);
	eq_err r = eq_rec_load_at(d, fname, l, err);
	close(d);
	return r ? eq_error_prefix(err, r, "running slot: %s", REC_DIR) : EQ_OK;
}

/* ---- copying a kept package ------------------------------------------------ */

/* Owner, mode and xattrs of a kept entry: the record's owner and mode, the
 * running slot's xattrs. A source that fails to read is a mismatch (the
 * package is downloaded); our own side failing is an error. */
static eq_err copy_meta(struct inst *x, int sfd, int tfd, const struct eq_rec_entry *e, struct eq_error *err)
{
	bool source = false;
	eq_err r = eq_meta_copy(sfd, tfd, e->uid, e->gid, e->mode, x->in->owners, x->buf, &source, err);
	if (r && source) {
		x->mismatch = true;
		r = EQ_ERR_VERIFY;
	}
	return r ? eq_error_prefix(err, r, "'%s'", e->path) : EQ_OK;
}

static bool meta_matches(const struct inst *x, const struct eq_rec_entry *e, const struct stat *st)
{
	if ((uint32_t)(st->st_mode & 07777) != e->mode)
		return false;
	/* Without owners the slot's files belong to whoever installed them. */
	return !x->in->owners || (st->st_uid == e->uid && st->st_gid == e->gid);
}

static void tmp_name(struct inst *x, char out[64])
{
	snprintf(out, 64, ".eqtmp-%ld-%lu", x->pid, x->tmpn++);
}

static eq_err copy_file(struct inst *x, int sdir, int tdir, const char *base, const struct eq_rec_entry *e,
			struct eq_error *err)
{
	int s = openat(sdir, base, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (s < 0)
		return miss(x, err, "'%s': %s", e->path, strerror(errno));
	struct stat st;
	if (fstat(s, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(s);
		return miss(x, err, "'%s' is not a regular file", e->path);
	}
	if (!meta_matches(x, e, &st) || (uint64_t)st.st_size != e->size) {
		close(s);
		return miss(x, err, "'%s': mode, owner or size differ from the record", e->path);
	}
	char tmp[64];
	tmp_name(x, tmp);
	int t = openat(tdir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (t < 0) {
		close(s);
		return eq_error_errno(err, EQ_ERR_IO, "'%s': cannot create", e->path);
	}
	struct eq_sha256 sha;
	eq_sha256_init(&sha);
	uint64_t total = 0;
	eq_err r = EQ_OK;
	for (;;) {
		ssize_t n = read(s, x->buf, COPY_BUF_LEN);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = miss(x, err, "'%s': read: %s", e->path, strerror(errno));
			break;
		}
		if (!n)
			break;
		total += (uint64_t)n;
		if (total > e->size) {
			r = miss(x, err, "'%s' grew past its recorded size", e->path);
			break;
		}
		eq_sha256_update(&sha, x->buf, (size_t)n);
		r = eq_write_all(t, x->buf, (size_t)n, err);
		if (r) {
			r = eq_error_prefix(err, r, "'%s'", e->path);
			break;
		}
	}
	if (!r) {
		uint8_t d[EQ_SHA256_LEN];
		eq_sha256_final(&sha, d);
		if (total != e->size || memcmp(d, e->sha256, sizeof(d)))
			r = miss(x, err, "'%s': content differs from the record", e->path);
	}
	if (!r)
		r = copy_meta(x, s, t, e, err);
	close(s);
	if (close(t) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "'%s': close", e->path);
	if (!r && renameat(tdir, tmp, tdir, base) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "'%s': rename into place", e->path);
	if (r)
		(void)unlinkat(tdir, tmp, 0);
	return r;
}

static eq_err copy_dir(struct inst *x, int sdir, int tdir, const char *base, const struct eq_rec_entry *e,
		       struct eq_error *err)
{
	/* Mode and owner are compared like a file's, not taken on trust: a
	 * record that says 0777 for etc would otherwise hand every new slot a
	 * world-writable etc (issue 29). Packages that share a directory with
	 * different metadata (eqota-gen publish warns) lose their keep: the
	 * running slot holds the last one's, so the others are downloaded. */
	int s = openat(sdir, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0)
		return miss(x, err, "'%s': not a directory: %s", e->path, strerror(errno));
	struct stat sst;
	if (fstat(s, &sst) != 0 || !meta_matches(x, e, &sst)) {
		close(s);
		return miss(x, err, "'%s': directory mode or owner differ from the record", e->path);
	}
	eq_err r = EQ_OK;
	if (mkdirat(tdir, base, 0700) != 0 && errno != EEXIST)
		r = eq_error_errno(err, EQ_ERR_IO, "'%s': mkdir", e->path);
	struct stat tst;
	if (!r && fstatat(tdir, base, &tst, AT_SYMLINK_NOFOLLOW) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "'%s': stat", e->path);
	/* Another package made it a symlink to a directory: keep it, as
	 * extract and dpkg do. */
	if (!r && S_ISLNK(tst.st_mode)) {
		close(s);
		return EQ_OK;
	}
	if (!r && !S_ISDIR(tst.st_mode))
		r = eq_error_set(err, EQ_ERR_STATE, "'%s': another package put a non-directory there", e->path);
	int t = r ? -1 : openat(tdir, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!r && t < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "'%s': open", e->path);
	if (!r)
		r = copy_meta(x, s, t, e, err);
	if (t >= 0)
		close(t);
	close(s);
	return r;
}

/* @linked: @tmp is a hard link of an existing file, not a new inode. */
static eq_err place_tmp(int tdir, const char *tmp, const char *base, const char *path, bool linked,
			struct eq_error *err)
{
	if (renameat(tdir, tmp, tdir, base) != 0) {
		eq_err r = eq_error_errno(err, EQ_ERR_IO, "'%s': rename into place", path);
		(void)unlinkat(tdir, tmp, 0);
		return r;
	}
	/* rename() of a name onto a hard link of the same inode does nothing;
	 * a new symlink or node is its own inode, and its rename left nothing. */
	if (linked)
		(void)unlinkat(tdir, tmp, 0);
	return EQ_OK;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* A kept entry that would land in eqota's folder of the target, through a
 * symlink an earlier package copied there ("lib -> usr/lib"): only a
 * release signed before the publisher refused such entries (issue 29) can
 * hold one, and an old agent installed it. The installer makes no folder
 * below "packages", so its two descriptors are all there is to compare. */
static bool lands_in_own_dir(const struct inst *x, int tdir, const char *tbase)
{
	struct stat st;
	if (fstat(tdir, &st) != 0 || same_file(&st, &x->slot_st) || same_file(&st, &x->rec_st))
		return true;
	return fstatat(tdir, tbase, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       (same_file(&st, &x->slot_st) || same_file(&st, &x->rec_st));
}

static eq_err copy_entry(struct inst *x, const struct eq_rec_entry *e, struct eq_error *err)
{
	const char *sbase, *tbase;
	int sdir = open_parent(source_root(x, e->path), e->path, false, &sbase);
	if (sdir < 0)
		return miss(x, err, "'%s': parent directory: %s", e->path, strerror(errno));
	int tdir = open_parent(x->tfd, e->path, true, &tbase);
	if (tdir < 0) {
		eq_err r = eq_error_errno(err, EQ_ERR_IO, "'%s': cannot open its directory in the target", e->path);
		close(sdir);
		return r;
	}
	eq_err r = EQ_OK;
	struct stat st;
	char tmp[64];
	if (lands_in_own_dir(x, tdir, tbase)) {
		close(sdir);
		close(tdir);
		return eq_error_set(
			err, EQ_ERR_UNSAFE,
			"'%s' lands in eqota's own folder '%s' of the target through a symlink, refusing to "
			"write there",
			e->path, EQ_SLOT_RECORD_DIR);
	}
	if (e->type != 'f' && e->type != 'd') {
		if (fstatat(sdir, sbase, &st, AT_SYMLINK_NOFOLLOW) != 0)
			r = miss(x, err, "'%s': %s", e->path, strerror(errno));
		else if (!meta_matches(x, e, &st))
			r = miss(x, err, "'%s': mode or owner differ from the record", e->path);
	}
	switch (r ? 0 : e->type) {
	case 'f': r = copy_file(x, sdir, tdir, sbase, e, err); break;
	case 'd': r = copy_dir(x, sdir, tdir, sbase, e, err); break;
	case 'l': {
		char target[EQ_REC_MAX_PATH + 2];
		ssize_t n = S_ISLNK(st.st_mode) ? readlinkat(sdir, sbase, target, sizeof(target)) : -1;
		if (n < 0 || (size_t)n >= sizeof(target) - 1 || (target[n] = '\0', strcmp(target, e->link))) {
			r = miss(x, err, "'%s': not a symlink to the recorded target", e->path);
			break;
		}
		tmp_name(x, tmp);
		if (symlinkat(e->link, tdir, tmp) != 0)
			r = eq_error_errno(err, EQ_ERR_IO, "'%s': symlink", e->path);
		else if (x->in->owners && fchownat(tdir, tmp, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) != 0)
			r = eq_error_errno(err, EQ_ERR_IO, "'%s': chown", e->path);
		r = r ? r : place_tmp(tdir, tmp, tbase, e->path, false, err);
		if (r)
			(void)unlinkat(tdir, tmp, 0);
		break;
	}
	case 'h': {
		/* The record says both names are one file in the running slot;
		 * the rebuilt payload depends on that, so check it. */
		const char *fbase;
		struct stat fst;
		int fs = open_parent(source_root(x, e->link), e->link, false, &fbase);
		bool same = fs >= 0 && S_ISREG(st.st_mode) && fstatat(fs, fbase, &fst, AT_SYMLINK_NOFOLLOW) == 0 &&
			    fst.st_dev == st.st_dev && fst.st_ino == st.st_ino;
		if (fs >= 0)
			close(fs);
		if (!same) {
			r = miss(x, err, "'%s' is not a hard link of '%s'", e->path, e->link);
			break;
		}
		int ft = open_parent(x->tfd, e->link, false, &fbase);
		tmp_name(x, tmp);
		if (ft < 0 || linkat(ft, fbase, tdir, tmp, 0) != 0)
			r = eq_error_errno(err, EQ_ERR_IO, "'%s': link to '%s'", e->path, e->link);
		if (ft >= 0)
			close(ft);
		r = r ? r : place_tmp(tdir, tmp, tbase, e->path, true, err);
		break;
	}
	case 'c':
	case 'b':
	case 'p': {
		mode_t fmt = e->type == 'c' ? S_IFCHR : e->type == 'b' ? S_IFBLK : S_IFIFO;
		dev_t dev = e->type == 'p' ? 0 : makedev(e->devmajor, e->devminor);
		if ((st.st_mode & S_IFMT) != fmt || (e->type != 'p' && st.st_rdev != dev)) {
			r = miss(x, err, "'%s': not the recorded device node or fifo", e->path);
			break;
		}
		tmp_name(x, tmp);
		if (mknodat(tdir, tmp, fmt | 0600, dev) != 0)
			r = eq_error_errno(err, EQ_ERR_IO, "'%s': mknod", e->path);
		else if (x->in->owners && fchownat(tdir, tmp, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) != 0)
			r = eq_error_errno(err, EQ_ERR_IO, "'%s': chown", e->path);
		else if (fchmodat(tdir, tmp, e->mode, 0) != 0)
			r = eq_error_errno(err, EQ_ERR_IO, "'%s': chmod", e->path);
		if (r)
			(void)unlinkat(tdir, tmp, 0);
		else
			r = place_tmp(tdir, tmp, tbase, e->path, false, err);
		break;
	}
	default: break;
	}
	close(sdir);
	close(tdir);
	return r;
}

/* Removes the non-directories a failed copy already placed, so the full
 * object extracts over exactly what it describes. */
static void undo_copy(struct inst *x, const struct eq_rec_list *l, size_t upto)
{
	for (size_t i = upto; i-- > 0;) {
		if (l->v[i].type == 'd')
			continue;
		const char *b;
		int d = open_parent(x->tfd, l->v[i].path, false, &b);
		if (d >= 0) {
			(void)unlinkat(d, b, 0);
			close(d);
		}
	}
}

static eq_err write_list(struct inst *x, const char *name, const struct eq_rec_list *l, struct eq_error *err)
{
	char fname[160];
	snprintf(fname, sizeof(fname), "%s.files", name);
	FILE *f;
	eq_err r = create_own_stream(x->recfd, fname, &f, err);
	if (r)
		return r;
	r = eq_rec_write_header(f, err);
	for (size_t i = 0; i < l->n && !r; i++)
		r = eq_rec_write_entry(f, &l->v[i], err);
	if (fclose(f) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "writing '%s/%s'", REC_DIR, fname);
	if (r)
		(void)unlinkat(x->recfd, fname, 0);
	return r;
}

/*
 * Writes the canonical payload of the files record @l lists, as they are in
 * the running slot, to @hs: how a device gets back a package's payload.
 * x->mismatch tells a running-slot problem from our own.
 */
static eq_err rebuild_record(struct inst *x, const struct eq_rec_list *l, struct hsink *hs, struct eq_error *err)
{
	EQ_AUTOFREE const char **paths = eq_calloc(l->n ? l->n : 1, sizeof(*paths));
	struct eq_payload_builder *b = NULL;
	eq_err r = EQ_OK;
	if (!paths)
		r = eq_error_set(err, EQ_ERR_NOMEM, "install: out of memory");
	if (!r)
		r = eq_payload_builder_new(&x->lim, &b, err);
	/* Paths set aside (image) or persisted come from those folders, one
	 * group per root; the builder writes in path order anyway, and knows
	 * a hard link across roots by its inode (a rename keeps it). */
	const int roots[] = {x->rfd, x->aside.fd, x->pfd};
	for (size_t k = 0; !r && k < sizeof(roots) / sizeof(roots[0]); k++) {
		if (roots[k] < 0)
			continue;
		size_t n = 0;
		for (size_t i = 0; i < l->n; i++)
			if (source_root(x, l->v[i].path) == roots[k])
				paths[n++] = l->v[i].path;
		if (n)
			r = eq_payload_builder_add_paths(b, source_path(x, roots[k]), paths, n, err);
		x->mismatch = r && r != EQ_ERR_NOMEM;
	}
	if (!r) {
		uint64_t n;
		hs->given = true;
		r = eq_payload_builder_write(b, hsink_write, hs, hs->d, &n, err);
		x->mismatch = r && !hs->failed && r != EQ_ERR_NOMEM;
	}
	eq_payload_builder_free(b);
	return r;
}

static eq_err do_keep(struct inst *x, const struct eq_plan_item *it, struct eq_error *err)
{
	struct eq_rec_list l;
	eq_rec_list_init(&l);
	eq_err r = load_running_record(x, it->old->name, &l, err);
	if (r) {
		x->mismatch = r != EQ_ERR_NOMEM;
		return r;
	}
	/*
	 * The record is not signed, and a package could once write it (issue
	 * 29: "lib/eqota/slot/packages/base.files" through a merged /usr's
	 * "lib -> usr/lib"); trusting it would carry a forged file list from
	 * slot to slot, long after that package left the release. So it is
	 * tied to the signed manifest before anything is copied: the payload
	 * rebuilt from the running files it lists must hash to the payload
	 * SHA-256 the running release signed for this package (and the plan
	 * keeps a package only when the new release signs the same one). That
	 * proves the list of paths and what is on disk at them; copy_entry()
	 * then compares every other field of the record (mode and owner of
	 * directories too) with what is on disk, so no field of the record is
	 * taken on trust. It costs one more read of the package's files.
	 */
	struct hsink hs;
	hsink_init(&hs, -1, x->in->work_dir);
	r = rebuild_record(x, &l, &hs, err);
	char got[EQ_SHA256_HEX_LEN + 1];
	if (!r && !hsink_matches(&hs, it->old->payload.sha256, it->old->payload.size, got))
		r = miss(x, err,
			 "the running files its record lists rebuild a payload with SHA-256 %s, the running "
			 "release says %s (a damaged or forged record?)",
			 got, it->old->payload.sha256);
	if (r) {
		eq_rec_list_done(&l);
		return r;
	}
	size_t i = 0;
	for (; i < l.n && !r; i++)
		r = copy_entry(x, &l.v[i], err);
	if (r && x->mismatch)
		undo_copy(x, &l, i);
	if (!r)
		r = write_list(x, it->pkg->name, &l, err);
	eq_rec_list_done(&l);
	return r;
}

/* ---- payloads ------------------------------------------------------------- */

/* Fetches @rel and checks the file against the manifest again: the fetch
 * callback is pluggable, the manifest is what we trust. */
static eq_err fetch_checked(struct inst *x, const char *rel, const char *sha, uint64_t size, char **ret_path,
			    struct eq_error *err)
{
	char *path = NULL;
	eq_err r = x->in->fetch(x->in->fetch_ctx, rel, sha, size, &path, err);
	if (r)
		return r;
	uint8_t d[EQ_SHA256_LEN];
	char hex[EQ_SHA256_HEX_LEN + 1];
	uint64_t got = 0;
	r = eq_sha256_file(path, d, &got, err);
	if (!r) {
		eq_hex_encode(d, sizeof(d), hex);
		if (got != size)
			r = eq_error_set(err, EQ_ERR_VERIFY, "'%s' has %" PRIu64 " bytes, the manifest says %" PRIu64,
					 rel, got, size);
		else if (strcmp(hex, sha))
			r = eq_error_set(err, EQ_ERR_VERIFY, "'%s' has SHA-256 %s, the manifest says %s", rel, hex,
					 sha);
	}
	if (r) {
		eq_free(path);
		return r;
	}
	*ret_path = path;
	return EQ_OK;
}

/* Writes the record of the verified payload in @fd, then extracts it. */
static eq_err install_payload(struct inst *x, const struct eq_manifest_package *pkg, int fd, struct eq_error *err)
{
	char tmp[160], fin[160];
	snprintf(tmp, sizeof(tmp), "%s.files.tmp", pkg->name);
	snprintf(fin, sizeof(fin), "%s.files", pkg->name);
	if (lseek(fd, 0, SEEK_SET) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "install: seek in the temporary payload");
	FILE *f;
	eq_err r = create_own_stream(x->recfd, tmp, &f, err);
	if (r)
		return r;
	r = eq_rec_from_payload(eq_fd_read, &fd, &x->lim, f, NULL, err);
	if (fclose(f) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "writing '%s/%s'", REC_DIR, tmp);
	if (!r && lseek(fd, 0, SEEK_SET) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "install: seek in the temporary payload");
	uint8_t d[EQ_SHA256_LEN];
	unsigned flags = x->in->owners ? EQ_EXTRACT_OWNERS : 0;
	if (!r)
		r = eq_payload_extract(eq_fd_read, &fd, x->in->target_root, &x->lim, flags, d, err);
	if (!r) {
		char hex[EQ_SHA256_HEX_LEN + 1];
		eq_hex_encode(d, sizeof(d), hex);
		/* Our own temporary file changed under us: refuse the slot. */
		if (strcmp(hex, pkg->payload.sha256))
			r = eq_error_set(err, EQ_ERR_VERIFY, "extracted payload has SHA-256 %s, the manifest says %s",
					 hex, pkg->payload.sha256);
	}
	/* renameat() replaces whatever name is at @fin, never following it. */
	if (!r && renameat(x->recfd, tmp, x->recfd, fin) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot rename '%s/%s'", REC_DIR, tmp);
	if (r)
		(void)unlinkat(x->recfd, tmp, 0);
	else
		x->rep.bytes_written += pkg->payload.size;
	return r;
}

static eq_err do_full(struct inst *x, const struct eq_manifest_package *pkg, struct eq_error *err)
{
	EQ_AUTOFREE char *obj = NULL;
	eq_err r = fetch_checked(x, pkg->object.path, pkg->object.sha256, pkg->object.size, &obj, err);
	if (r)
		return r;
	int ofd = open(obj, O_RDONLY | O_CLOEXEC);
	if (ofd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", obj);
	int pfd = -1;
	r = work_tmp(x, "payload", &pfd, NULL, err);
	if (r) {
		close(ofd);
		return r;
	}
	struct hsink hs;
	hsink_init(&hs, pfd, x->in->work_dir);
	r = eq_object_decompress(eq_fd_read, &ofd, hsink_write, &hs, pkg->payload.size, 0, err);
	close(ofd);
	char got[EQ_SHA256_HEX_LEN + 1];
	if (!r && !hsink_matches(&hs, pkg->payload.sha256, pkg->payload.size, got))
		r = eq_error_set(err, EQ_ERR_VERIFY,
				 "payload of '%s' has SHA-256 %s (%" PRIu64 " bytes), the manifest says %s (%" PRIu64
				 " bytes)",
				 pkg->object.path, got, hs.n, pkg->payload.sha256, pkg->payload.size);
	if (!r)
		r = install_payload(x, pkg, pfd, err);
	close(pfd);
	return r;
}

/* Rebuilds the running package's payload into a temporary file (path
 * returned) and checks it against the running manifest. */
static eq_err rebuild_old(struct inst *x, const struct eq_manifest_package *old, char **ret_path, struct eq_error *err)
{
	struct eq_rec_list l;
	eq_rec_list_init(&l);
	eq_err r = load_running_record(x, old->name, &l, err);
	if (r) {
		x->mismatch = r != EQ_ERR_NOMEM;
		return r;
	}
	int fd = -1;
	char *path = NULL;
	r = work_tmp(x, "ref", &fd, &path, err);
	struct hsink hs;
	hsink_init(&hs, fd, x->in->work_dir);
	if (!r)
		r = rebuild_record(x, &l, &hs, err);
	eq_rec_list_done(&l);
	char got[EQ_SHA256_HEX_LEN + 1];
	if (!r && !hsink_matches(&hs, old->payload.sha256, old->payload.size, got))
		r = miss(x, err, "the rebuilt payload has SHA-256 %s, the running release says %s", got,
			 old->payload.sha256);
	if (fd >= 0 && close(fd) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "writing '%s'", path);
	if (r) {
		if (path)
			(void)unlink(path);
		eq_free(path);
		return r;
	}
	*ret_path = path;
	return EQ_OK;
}

static eq_err do_delta(struct inst *x, const struct eq_plan_item *it, struct eq_error *err)
{
	const struct eq_manifest_package *pkg = it->pkg;
	EQ_AUTOFREE char *ref = NULL;
	EQ_AUTOFREE char *dpath = NULL;
	eq_err r = rebuild_old(x, it->old, &ref, err);
	if (r)
		return r;
	r = fetch_checked(x, it->delta->path, it->delta->sha256, it->delta->size, &dpath, err);
	/* A broken delta on the server: the full object is another way. */
	if (r == EQ_ERR_VERIFY)
		x->mismatch = true;
	int dfd = -1, pfd = -1;
	if (!r && (dfd = open(dpath, O_RDONLY | O_CLOEXEC)) < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", dpath);
	if (!r)
		r = work_tmp(x, "payload", &pfd, NULL, err);
	struct hsink hs;
	hsink_init(&hs, pfd, x->in->work_dir);
	if (!r) {
		uint8_t expect[EQ_SHA256_LEN];
		if (!eq_hex_decode(pkg->payload.sha256, expect, sizeof(expect))) {
			r = eq_error_set(err, EQ_ERR_INVAL, "bad payload hash in the manifest");
		} else {
			/* The delta's own check compares its output with @expect. */
			hs.given = true;
			memcpy(hs.d, expect, sizeof(hs.d));
			r = eq_delta_apply(ref, eq_fd_read, &dfd, hsink_write, &hs, expect, err);
		}
		x->mismatch = r && !hs.failed && r != EQ_ERR_NOMEM;
	}
	/* The reference is no longer needed: free its disk space first. */
	(void)unlink(ref);
	if (dfd >= 0)
		close(dfd);
	char got[EQ_SHA256_HEX_LEN + 1];
	if (!r && !hsink_matches(&hs, pkg->payload.sha256, pkg->payload.size, got))
		r = miss(x, err, "delta result has SHA-256 %s, the manifest says %s", got, pkg->payload.sha256);
	if (!r)
		r = install_payload(x, pkg, pfd, err);
	if (pfd >= 0)
		close(pfd);
	return r;
}

/* ---- space ---------------------------------------------------------------- */

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

eq_err eq_install_check_space(const struct eq_install *in, const struct eq_plan *plan, struct eq_error *err)
{
	if (!in || !plan || !in->target_root || !in->work_dir)
		return eq_error_set(err, EQ_ERR_INVAL, "install: target_root and work_dir are required");
	uint64_t tmp_max = 0;
	for (size_t i = 0; i < plan->n; i++) {
		const struct eq_plan_item *it = &plan->items[i];
		if (it->action == EQ_PLAN_REMOVE || !it->pkg)
			continue;
		uint64_t t = it->pkg->payload.size;
		/* Any kept package may fall back to its full object. */
		if (it->action == EQ_PLAN_DELTA && it->old)
			t = add_sat(t, it->old->payload.size);
		if (t > tmp_max)
			tmp_max = t;
	}
	uint64_t work_need = add_sat(plan->download_bytes, tmp_max);
	uint64_t target_need = plan->install_bytes;
	struct statvfs wv, tv;
	struct stat ws, ts;
	if (statvfs(in->work_dir, &wv) != 0 || stat(in->work_dir, &ws) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "install: work dir '%s'", in->work_dir);
	if (statvfs(in->target_root, &tv) != 0 || stat(in->target_root, &ts) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "install: target '%s'", in->target_root);
	uint64_t wfree = (uint64_t)wv.f_bavail * (uint64_t)wv.f_frsize;
	uint64_t tfree = (uint64_t)tv.f_bavail * (uint64_t)tv.f_frsize;
	char what[300];
	if (in->target_name)
		snprintf(what, sizeof(what), "slot %s", in->target_name);
	else
		snprintf(what, sizeof(what), "target '%s'", in->target_root);
	char a[EQ_SIZE_STR_MAX], b[EQ_SIZE_STR_MAX], c[EQ_SIZE_STR_MAX], d[EQ_SIZE_STR_MAX];
	if (ws.st_dev == ts.st_dev) {
		uint64_t need = add_sat(work_need, target_need);
		if (tfree < need) {
			eq_format_size(tfree, EQ_SIZE_DOWN, a);
			eq_format_size(need, EQ_SIZE_UP, b);
			eq_format_size(target_need, EQ_SIZE_UP, c);
			eq_format_size(work_need, EQ_SIZE_UP, d);
			return eq_error_set(err, EQ_ERR_LIMIT,
					    "%s has %s free, release needs %s (%s of files, %s of downloads and "
					    "temporary payloads in the same filesystem)",
					    what, a, b, c, d);
		}
		return EQ_OK;
	}
	if (tfree < target_need) {
		eq_format_size(tfree, EQ_SIZE_DOWN, a);
		eq_format_size(target_need, EQ_SIZE_UP, b);
		return eq_error_set(err, EQ_ERR_LIMIT, "%s has %s free, release needs %s", what, a, b);
	}
	if (wfree < work_need) {
		eq_format_size(wfree, EQ_SIZE_DOWN, a);
		eq_format_size(work_need, EQ_SIZE_UP, b);
		return eq_error_set(err, EQ_ERR_LIMIT,
				    "work dir '%s' has %s free, downloads and temporary payloads need %s", in->work_dir,
				    a, b);
	}
	return EQ_OK;
}

/* ---- the slot ------------------------------------------------------------- */

static eq_err check_empty(const char *root, struct eq_error *err)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "install: target '%s'", root);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return eq_error_errno(err, EQ_ERR_IO, "install: target '%s'", root);
	}
	struct dirent *de;
	eq_err r = EQ_OK;
	while ((de = readdir(d))) {
		/* mkfs.ext4 makes lost+found; it belongs to the filesystem. */
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, "lost+found"))
			continue;
		r = eq_error_set(err, EQ_ERR_STATE, "install: target '%s' is not empty ('%s')", root, de->d_name);
		break;
	}
	closedir(d);
	return r;
}

static eq_err check_plan(const struct eq_install *in, const struct eq_plan *plan, struct eq_error *err)
{
	if (!in->target_root || !in->next || !in->work_dir || !in->fetch || !in->manifest_bytes || !in->sig_bytes)
		return eq_error_set(err, EQ_ERR_INVAL,
				    "install: target_root, next, work_dir, fetch and the manifest bytes are required");
	size_t n = 0;
	for (size_t i = 0; i < plan->n; i++) {
		const struct eq_plan_item *it = &plan->items[i];
		if (it->action == EQ_PLAN_REMOVE)
			continue;
		if (!it->pkg || eq_manifest_package_at(in->next, n) != it->pkg)
			return eq_error_set(err, EQ_ERR_INVAL, "install: the plan was not made for this manifest");
		n++;
		if ((it->action == EQ_PLAN_KEEP || it->action == EQ_PLAN_DELTA) &&
		    (!in->running_root || !in->running || !it->old))
			return eq_error_set(err, EQ_ERR_INVAL,
					    "install: package '%s' is planned as %s without a running slot",
					    it->pkg->name, eq_plan_action_name(it->action));
		if (it->action == EQ_PLAN_DELTA && !it->delta)
			return eq_error_set(err, EQ_ERR_INVAL, "install: package '%s' has no delta", it->pkg->name);
	}
	if (n != eq_manifest_package_count(in->next))
		return eq_error_set(err, EQ_ERR_INVAL, "install: the plan was not made for this manifest");
	return EQ_OK;
}

static eq_err install_item(struct inst *x, const struct eq_plan_item *it, struct eq_error *err)
{
	const char *name = it->pkg->name;
	enum eq_plan_action act = it->action;
	x->mismatch = false;
	/* Components are never read from the aside folder: it holds packages'. */
	x->read_aside = it->old && !eq_manifest_is_component(x->in->running, it->old->name);
	eq_err r = EQ_OK;
	if (act == EQ_PLAN_KEEP)
		r = do_keep(x, it, err);
	else if (act == EQ_PLAN_DELTA)
		r = do_delta(x, it, err);
	if (r && x->mismatch) {
		/* The running slot is not what its record says (or a delta does
		 * not fit it): the full object is the way that needs nothing
		 * from it. */
		eq_log(EQ_LOG_WARNING, "package '%s': %s; downloading the full object, continuing", name,
		       eq_error_msg(err));
		x->rep.fallback++;
		act = EQ_PLAN_FULL;
		r = EQ_OK;
	}
	if (!r && act == EQ_PLAN_FULL)
		r = do_full(x, it->pkg, err);
	if (r)
		return eq_error_prefix(err, r, "package '%s'", name);
	if (act == EQ_PLAN_KEEP) {
		x->rep.kept++;
		x->rep.bytes_written += it->pkg->payload.size;
	} else if (act == EQ_PLAN_DELTA) {
		x->rep.delta++;
	} else {
		x->rep.full++;
	}
	if (eq_manifest_is_component(x->in->next, name)) {
		x->rep.components++;
		x->rep.component_bytes += it->pkg->payload.size;
	}
	return EQ_OK;
}

/* The set-aside step of an image release (image_aside.c). */
static eq_err set_aside(struct inst *x, struct eq_error *err)
{
	struct eq_aside_report ar;
	progress(x, "image: set aside");
	eq_err r = eq_aside_set(x->tfd, &x->slot_st, eq_manifest_get_image(x->in->next), x->in->owners, &ar, err);
	if (r)
		return r;
	x->rep.aside = ar.moved + ar.dirs;
	eq_log(EQ_LOG_INFO, "image: %zu package entries set aside (%zu folders), %zu removed, %zu not in the slot",
	       ar.moved + ar.dirs, ar.dirs, ar.removed, ar.missing);
	return EQ_OK;
}

/* Where package @name of the new release is in @plan (@items: the
 * positions of its items in manifest order, which is name order), or
 * SIZE_MAX. */
static size_t find_item(const struct eq_plan *plan, const size_t *items, size_t n, const char *name)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(plan->items[items[mid]].pkg->name, name);
		if (!c)
			return items[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

/*
 * The order packages are installed in: @ret_order (n positions in @plan,
 * eq_free()), with *ret_aside the position of the set-aside step (n when
 * there is none): a release of packages alone in name order; an image
 * release its `before` components, the other packages in name order, the
 * set-aside step, then its `after` components (docs/internals/install.md).
 */
static eq_err install_order(const struct eq_install *in, const struct eq_plan *plan, size_t **ret_order, size_t *ret_n,
			    size_t *ret_aside, struct eq_error *err)
{
	size_t n = eq_manifest_package_count(in->next);
	size_t *items = eq_calloc(n ? n : 1, sizeof(*items));
	size_t *order = eq_calloc(n ? n : 1, sizeof(*order));
	if (!items || !order) {
		eq_free(items);
		eq_free(order);
		return eq_error_set(err, EQ_ERR_NOMEM, "install: out of memory");
	}
	size_t k = 0;
	for (size_t i = 0; i < plan->n; i++)
		if (plan->items[i].action != EQ_PLAN_REMOVE)
			items[k++] = i;
	const struct eq_manifest_image *img = eq_manifest_get_image(in->next);
	size_t m = 0;
	eq_err r = EQ_OK;
	if (!img) {
		memcpy(order, items, n * sizeof(*order));
		m = n;
		*ret_aside = n;
	} else {
		/* The parser checks these; a manifest built in memory may not be. */
		for (size_t i = 0; !r && i < img->n_before + img->n_after; i++) {
			const char *c = i < img->n_before ? img->before[i] : img->after[i - img->n_before];
			if (find_item(plan, items, n, c) == SIZE_MAX)
				r = eq_error_set(err, EQ_ERR_INVAL,
						 "install: image component '%s' is not in the release", c);
		}
		/* m < n: a name twice in before and after is no overflow. */
		for (size_t i = 0; !r && i < img->n_before && m < n; i++)
			order[m++] = find_item(plan, items, n, img->before[i]);
		size_t placed_before = m;
		for (size_t i = 0; !r && i < n && m < n; i++)
			if (!eq_manifest_is_component(in->next, plan->items[items[i]].pkg->name))
				order[m++] = items[i];
		*ret_aside = m;
		for (size_t i = 0; !r && i < img->n_after && m < n; i++)
			order[m++] = find_item(plan, items, n, img->after[i]);
		if (!r && (placed_before != img->n_before || m != n || *ret_aside + img->n_after != n))
			r = eq_error_set(err, EQ_ERR_INVAL,
					 "install: the image's components are not %zu distinct packages",
					 img->n_before + img->n_after);
	}
	eq_free(items);
	if (r) {
		eq_free(order);
		return r;
	}
	*ret_order = order;
	*ret_n = m;
	return EQ_OK;
}

eq_err eq_install_slot(const struct eq_install *in, const struct eq_plan *plan, struct eq_install_report *ret,
		       struct eq_error *err)
{
	if (!in || !plan)
		return eq_error_set(err, EQ_ERR_INVAL, "install: no plan");
	eq_err r = check_plan(in, plan, err);
	if (!r)
		r = check_empty(in->target_root, err);
	if (!r)
		r = eq_install_check_space(in, plan, err);
	if (r)
		return r;
	struct inst x = {.in = in,
			 .pid = (long)getpid(),
			 .tfd = -1,
			 .rfd = -1,
			 .slotfd = -1,
			 .recfd = -1,
			 .pfd = -1,
			 .aside = {.fd = -1},
			 .t0 = eq_now_s()};
	size_t *order = NULL;
	size_t n_order = 0, at_aside = 0;
	eq_payload_limits_default(&x.lim);
	x.prog.what = "install";
	x.prog.items_total = eq_manifest_package_count(in->next);
	x.prog.bytes_total = plan->install_bytes;
	x.buf = eq_malloc(COPY_BUF_LEN);
	if (!x.buf)
		r = eq_error_set(err, EQ_ERR_NOMEM, "install: out of memory");
	if (!r && (x.tfd = open(in->target_root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "install: target '%s'", in->target_root);
	/* The record folder is made first, as real directories, and every
	 * later write in it goes through these descriptors: a package that
	 * turns a component into a symlink afterwards changes nothing. */
	if (!r && (x.slotfd = open_own_dir(x.tfd, EQ_SLOT_RECORD_DIR, true)) < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "install: cannot make '%s' in the target", EQ_SLOT_RECORD_DIR);
	if (!r && (x.recfd = open_own_dir(x.slotfd, "packages", true)) < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "install: cannot make '%s' in the target", REC_DIR);
	if (!r && (fstat(x.slotfd, &x.slot_st) != 0 || fstat(x.recfd, &x.rec_st) != 0))
		r = eq_error_errno(err, EQ_ERR_IO, "install: cannot stat '%s' in the target", REC_DIR);
	if (!r && in->running_root && (x.rfd = open(in->running_root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "install: running slot '%s'", in->running_root);
	if (!r && x.rfd >= 0)
		r = open_sources(&x, in->running_root, in->running, err);
	if (!r)
		r = install_order(in, plan, &order, &n_order, &at_aside, err);
	for (size_t i = 0; !r && i <= n_order; i++) {
		if (i == at_aside && eq_manifest_get_image(in->next)) {
			r = set_aside(&x, err);
			if (r)
				break;
		}
		if (i == n_order)
			break;
		const struct eq_plan_item *it = &plan->items[order[i]];
#ifdef EQ_TEST_HOOKS
		/* Test hook: the daemon (this step's parent) gets SIGTERM as the
		 * install reaches this package, and the step waits (at most 5 s)
		 * until its own stop request arrives: a stop that lands between
		 * two packages, every time (tests/integration/agent_stop.sh). */
		const char *term_at = secure_getenv("EQ_TEST_TERM_PARENT_AT");
		if (term_at && in->stop && !strcmp(term_at, it->pkg->name)) {
			kill(getppid(), SIGTERM);
			for (int k = 0; k < 50 && !*in->stop; k++) {
				struct timespec ts = {0, 100 * 1000 * 1000};
				nanosleep(&ts, NULL);
			}
		}
#endif
		if (in->stop && *in->stop) {
			r = eq_error_set(err, EQ_ERR_STOPPED,
					 "stopped on request before package '%s' (%" PRIu64 " of %" PRIu64
					 " installed)",
					 it->pkg->name, x.prog.items_done, x.prog.items_total);
			break;
		}
		progress(&x, it->pkg->name);
		r = install_item(&x, it, err);
		x.prog.items_done++;
		x.prog.bytes_done += it->pkg->payload.size;
	}
	/* The device's own files, into a slot that holds the whole release:
	 * before the manifest, so a failure leaves no complete-looking slot. */
	if (!r && in->persist) {
		struct eq_persist p = *in->persist;
		struct eq_persist_report pr;
		p.running_root = in->running_root;
		p.target_root = in->target_root;
		p.owners = in->owners;
		r = eq_persist_copy(&p, &pr, err);
		if (!r && (pr.files || pr.dirs || pr.skipped))
			eq_log(EQ_LOG_INFO,
			       "persist: %zu files and %zu folders (%" PRIu64 " bytes) copied from the running slot, "
			       "%zu skipped, %zu release versions set aside",
			       pr.files, pr.dirs, pr.bytes, pr.skipped, pr.saved);
	}
	/* The manifest goes last: a slot with a manifest is complete. */
	if (!r)
		r = write_own_atomic(x.slotfd, "manifest.json.sig", in->sig_bytes, in->sig_len, err);
	if (!r)
		r = write_own_atomic(x.slotfd, "manifest.json", in->manifest_bytes, in->manifest_len, err);
	if (!r) {
		int sfd = open(in->target_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sfd < 0 || syncfs(sfd) != 0)
			r = eq_error_errno(err, EQ_ERR_IO, "install: syncfs '%s'", in->target_root);
		if (sfd >= 0)
			close(sfd);
	}
	if (!r)
		progress(&x, NULL);
	if (x.tfd >= 0)
		close(x.tfd);
	if (x.rfd >= 0)
		close(x.rfd);
	if (x.slotfd >= 0)
		close(x.slotfd);
	if (x.recfd >= 0)
		close(x.recfd);
	close_persisted(&x);
	eq_free(order);
	eq_free(x.buf);
	if (!r && ret)
		*ret = x.rep;
	return r;
}

/* ---- verifying a slot against its records ---------------------------------- */

/* The "package" verify names the image's own problems under; no package
 * has a name of the image's (the publisher refuses them). */
#define VERIFY_IMAGE "eqota-image"

struct verify {
	struct inst x;
	eq_verify_fn fn;
	void *ctx;
	struct eq_verify_report *rep;
	const char *pkg;
	size_t pkg_problems;
};

static void vproblem(struct verify *v, const char *path, const char *fmt, ...) EQ_PRINTF(3, 4);
static void vproblem(struct verify *v, const char *path, const char *fmt, ...)
{
	if (v->pkg_problems++ == 0)
		v->rep->damaged++;
	v->rep->problems++;
	if (v->pkg_problems > EQ_VERIFY_MAX_LISTED || !v->fn)
		return;
	char msg[EQ_ERROR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	v->fn(v->ctx, v->pkg, path, msg);
}

/* The content of regular file @base in @dir against the record. */
static void verify_data(struct verify *v, int dir, const char *base, const struct eq_rec_entry *e)
{
	int fd = openat(dir, base, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		vproblem(v, e->path, "cannot be read: %s", strerror(errno));
		return;
	}
	struct eq_sha256 sha;
	eq_sha256_init(&sha);
	uint64_t total = 0;
	ssize_t n;
	while ((n = read(fd, v->x.buf, COPY_BUF_LEN)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			vproblem(v, e->path, "read: %s", strerror(errno));
			close(fd);
			return;
		}
		total += (uint64_t)n;
		eq_sha256_update(&sha, v->x.buf, (size_t)n);
	}
	close(fd);
	v->rep->bytes += total;
	uint8_t d[EQ_SHA256_LEN];
	eq_sha256_final(&sha, d);
	if (total != e->size || memcmp(d, e->sha256, sizeof(d)) != 0)
		vproblem(v, e->path, "content differs from the record");
}

/* One entry, with the checks a kept package's copy makes (copy_entry). */
static void verify_entry(struct verify *v, const struct eq_rec_entry *e)
{
	const char *base;
	/* A persisted path holds the device's own file; the release's version
	 * set aside beside the records is what is checked (and counted). */
	int src = source_root(&v->x, e->path);
	if (src == v->x.aside.fd && src >= 0)
		v->rep->aside++;
	else if (src != v->x.rfd)
		v->rep->persistent++;
	int dir = open_parent(source_root(&v->x, e->path), e->path, false, &base);
	struct stat st;
	v->rep->entries++;
	if (dir < 0 || fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		vproblem(v, e->path, "%s", errno == ENOENT ? "missing" : strerror(errno));
		if (dir >= 0)
			close(dir);
		return;
	}
	switch (e->type) {
	case 'f':
		if (!S_ISREG(st.st_mode))
			vproblem(v, e->path, "not a regular file");
		else if (!meta_matches(&v->x, e, &st) || (uint64_t)st.st_size != e->size)
			vproblem(v, e->path, "mode, owner or size differ from the record");
		else
			verify_data(v, dir, base, e);
		break;
	case 'd':
		/* Mode and owner are compared, as for a copy (copy_dir()): a
		 * record that lies about them is what a forged one looks like. */
		if (!S_ISDIR(st.st_mode))
			vproblem(v, e->path, "not a directory");
		else if (!meta_matches(&v->x, e, &st))
			vproblem(v, e->path, "directory mode or owner differ from the record");
		break;
	case 'l': {
		char target[EQ_REC_MAX_PATH + 2];
		ssize_t n = S_ISLNK(st.st_mode) ? readlinkat(dir, base, target, sizeof(target)) : -1;
		if (n < 0 || (size_t)n >= sizeof(target) - 1 || (target[n] = '\0', strcmp(target, e->link)))
			vproblem(v, e->path, "not a symlink to the recorded target");
		break;
	}
	case 'h': {
		const char *fbase;
		struct stat fst;
		int fs = open_parent(source_root(&v->x, e->link), e->link, false, &fbase);
		bool same = fs >= 0 && S_ISREG(st.st_mode) && fstatat(fs, fbase, &fst, AT_SYMLINK_NOFOLLOW) == 0 &&
			    fst.st_dev == st.st_dev && fst.st_ino == st.st_ino;
		if (fs >= 0)
			close(fs);
		if (!same)
			vproblem(v, e->path, "not a hard link of '%s'", e->link);
		break;
	}
	default: {
		mode_t fmt = e->type == 'c' ? S_IFCHR : e->type == 'b' ? S_IFBLK : S_IFIFO;
		if ((st.st_mode & S_IFMT) != fmt || (e->type != 'p' && st.st_rdev != makedev(e->devmajor, e->devminor)))
			vproblem(v, e->path, "not the recorded device node or fifo");
		else if (!meta_matches(&v->x, e, &st))
			vproblem(v, e->path, "mode or owner differ from the record");
		break;
	}
	}
	close(dir);
}

/* The paths an image release removes: none may be in the slot. */
static void verify_removed(struct verify *v, const struct eq_manifest *m, char *const *persist_paths, size_t n_persist)
{
	const struct eq_manifest_image *img = eq_manifest_get_image(m);
	v->pkg = VERIFY_IMAGE;
	v->pkg_problems = 0;
	for (size_t i = 0; img && i < img->n_remove; i++) {
		const char *base, *path = img->remove[i];
		/* A folder holding eqota's records stays (image_aside.c). */
		if (eq_aside_holds_own_dir(path))
			continue;
		/* The device's own file may be there ([persist] copies it). */
		char abs[EQ_MANIFEST_IMAGE_PATH_MAX + 2];
		snprintf(abs, sizeof(abs), "/%s", path);
		bool persisted = false;
		for (size_t k = 0; k < n_persist && !persisted; k++)
			persisted = eq_persist_paths_overlap(persist_paths[k], abs);
		if (persisted)
			continue;
		int dir = open_parent(v->x.rfd, path, false, &base);
		struct stat st;
		if (dir >= 0 && fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) == 0)
			vproblem(v, path, "present, the release's image does not have it");
		if (dir >= 0)
			close(dir);
	}
}

eq_err eq_slot_verify(const char *root, const struct eq_manifest *m, char *const *persist_paths, size_t n_persist,
		      eq_verify_fn fn, void *ctx, struct eq_verify_report *ret, struct eq_error *err)
{
	struct eq_install in = {.owners = geteuid() == 0, .running_root = root};
	struct eq_verify_report rep;
	memset(&rep, 0, sizeof(rep));
	struct verify v = {
		.x = {.in = &in, .tfd = -1, .rfd = -1, .slotfd = -1, .recfd = -1, .pfd = -1, .aside = {.fd = -1}},
		.fn = fn,
		.ctx = ctx,
		.rep = &rep};
	eq_err r = EQ_OK;
	if (!(v.x.buf = eq_malloc(COPY_BUF_LEN)))
		r = eq_error_set(err, EQ_ERR_NOMEM, "verify: out of memory");
	if (!r && (v.x.rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "verify: slot root '%s'", root);
	if (!r)
		r = open_sources(&v.x, root, m, err);
	for (size_t i = 0; !r && i < eq_manifest_package_count(m); i++) {
		const struct eq_manifest_package *p = eq_manifest_package_at(m, i);
		struct eq_rec_list l;
		eq_rec_list_init(&l);
		struct eq_error le;
		v.pkg = p->name;
		v.pkg_problems = 0;
		rep.packages++;
		v.x.read_aside = !eq_manifest_is_component(m, p->name);
		rep.components += !v.x.read_aside;
		/* A record that is missing or damaged is a finding about the
		 * slot, like a damaged file: the update downloads that package. */
		if (load_running_record(&v.x, p->name, &l, &le) != EQ_OK)
			vproblem(&v, "", "its record: %s", eq_error_msg(&le));
		for (size_t k = 0; k < l.n; k++)
			verify_entry(&v, &l.v[k]);
		/* Each file matching its line says nothing of the lines a forged
		 * record added or dropped: the signed payload hash does (do_keep()). */
		if (!v.pkg_problems) {
			struct hsink hs;
			hsink_init(&hs, -1, root);
			char got[EQ_SHA256_HEX_LEN + 1];
			eq_err rr = rebuild_record(&v.x, &l, &hs, &le);
			if (rr == EQ_ERR_NOMEM)
				r = eq_error_set(err, rr, "verify: %s", eq_error_msg(&le));
			else if (rr)
				vproblem(&v, "", "its files do not rebuild the package's payload: %s",
					 eq_error_msg(&le));
			else if (!hsink_matches(&hs, p->payload.sha256, p->payload.size, got))
				vproblem(&v, "",
					 "the files its record lists rebuild a payload with SHA-256 %s, the release "
					 "signed %s: the record lists other files than the package ships",
					 got, p->payload.sha256);
		}
		eq_rec_list_done(&l);
	}
	if (!r)
		verify_removed(&v, m, persist_paths, n_persist);
	if (v.x.rfd >= 0)
		close(v.x.rfd);
	close_persisted(&v.x);
	eq_free(v.x.buf);
	if (!r)
		*ret = rep;
	return r;
}
