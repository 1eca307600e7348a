/*
 * The image analysis (eq/gen_image.h): a root filesystem read into entries,
 * its directory symlinks resolved as the device resolves them, each entry
 * attributed to the packages that ship it, the rest classified.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <locale.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/gen_image.h>
#include <eq/gen_package.h>
#include <eq/gen_repo.h>

#include "gen_priv.h"

#define QMAX 160
#define DATA_BUF (256u * 1024u)

/* Entries read from one source: the image, or one package's payload. */
struct elist {
	struct eq_image_entry *v;
	size_t n, cap;
	struct eqg_names idx; /* path -> index */
	uint32_t n_groups;
	uint64_t total; /* bytes of regular files */
	struct eq_payload_limits lim;
};

struct miss {
	char *path;
	uint32_t pkg;
};

struct eq_image {
	struct elist e;
	uint32_t *shipper;  /* per entry: first package shipping its path */
	uint32_t *last_pkg; /* per entry: the last package counted in n_pkgs */
	uint32_t *group_n;  /* per hard-link group: members */
	char **pkgs;
	size_t n_pkgs, cap_pkgs;
	struct miss *miss;
	size_t n_miss, cap_miss;
	uint64_t pkg_entries;
	/* For the components (gen_image_compose.c): */
	uint8_t *skel;           /* per entry: a symlink some package path leads through */
	uint32_t *last_name;     /* per entry: the shipping package last in name order */
	uint8_t *last_same;      /* per entry: ... and its entry is identical */
	struct miss *repl, *rmv; /* package paths to set aside (see eqg_image_found) */
	size_t n_repl, cap_repl, n_rmv, cap_rmv;
};

static const char *const class_names[EQ_IMAGE_CLASSES] = {"package", "override", "file", "empty",
							  "symlink", "device",   "fifo", "dir"};

const char *eq_image_class_name(enum eq_image_class c)
{
	return (unsigned)c < EQ_IMAGE_CLASSES ? class_names[c] : "?";
}

static void entry_done(struct eq_image_entry *e)
{
	eq_free(e->path);
	eq_free(e->link);
	for (size_t i = 0; i < e->n_xattrs; i++) {
		eq_free(e->xattrs[i].name);
		eq_free(e->xattrs[i].value);
	}
	eq_free(e->xattrs);
}

static void elist_init(struct elist *l, const struct eq_payload_limits *lim)
{
	*l = (struct elist){0};
	eq_payload_limits_resolve(lim, &l->lim);
	eqg_names_init(&l->idx, l->lim.max_entries > UINT32_MAX - 1 ? UINT32_MAX - 1 : (size_t)l->lim.max_entries);
}

static void elist_done(struct elist *l)
{
	for (size_t i = 0; i < l->n; i++)
		entry_done(&l->v[i]);
	eq_free(l->v);
	eqg_names_done(&l->idx);
	*l = (struct elist){0};
}

static size_t elist_find(const struct elist *l, const char *path)
{
	uint32_t i;
	return eqg_names_find(&l->idx, path, strlen(path), &i) ? i : SIZE_MAX;
}

static eq_err nomem(struct eq_error *err)
{
	return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
}

static eq_err grow(void **v, size_t *cap, size_t n, size_t size, struct eq_error *err)
{
	if (n < *cap)
		return EQ_OK;
	size_t c = *cap ? *cap * 2 : 256;
	void *p = eq_realloc(*v, c * size);
	if (!p)
		return nomem(err);
	*v = p;
	*cap = c;
	return EQ_OK;
}

/* The path as entries spell it: no leading "/" or "./", no trailing "/";
 * "" is the root. NULL (*@why set) for a path no image may hold. Caller
 * frees. */
static char *norm_path(const char *in, const struct eq_payload_limits *lim, const char **why)
{
	for (;;) {
		if (in[0] == '/')
			in++;
		else if (in[0] == '.' && in[1] == '/')
			in += 2;
		else
			break;
	}
	if (!strcmp(in, "."))
		in = "";
	size_t len = strlen(in);
	while (len && in[len - 1] == '/')
		len--;
	*why = "path too long";
	if (len > lim->max_path)
		return NULL;
	for (size_t s = 0; s < len;) {
		size_t e = s;
		while (e < len && in[e] != '/')
			e++;
		size_t cl = e - s;
		*why = "empty, '.' or '..' component";
		if (!cl || (cl == 1 && in[s] == '.') || (cl == 2 && in[s] == '.' && in[s + 1] == '.'))
			return NULL;
		*why = "a component longer than 255 bytes";
		if (cl > EQ_PAYLOAD_NAME_MAX)
			return NULL;
		s = e + 1;
	}
	*why = NULL;
	return eq_strndup(in, len);
}

static int cmp_xattr(const void *a, const void *b)
{
	return strcmp(((const struct eq_xattr *)a)->name, ((const struct eq_xattr *)b)->name);
}

static eq_err copy_xattrs(struct eq_image_entry *o, const struct eq_xattr *x, size_t n, const char *path,
			  const struct eq_payload_limits *lim, struct eq_error *err)
{
	char q[QMAX];
	if (!n)
		return EQ_OK;
	if (n > lim->max_xattrs)
		return eq_error_set(err, EQ_ERR_LIMIT, "entry '%s': more than %zu xattrs", eq_quote(q, sizeof(q), path),
				    lim->max_xattrs);
	o->xattrs = eq_calloc(n, sizeof(*o->xattrs));
	if (!o->xattrs)
		return nomem(err);
	for (size_t i = 0; i < n; i++) {
		/* What a payload does not keep, a device could not rebuild
		 * (<eq/delta.h> eq_payload_xattr_kept(): LSM labels come from
		 * the device's policy, trusted.* needs CAP_SYS_ADMIN). */
		if (!eq_payload_xattr_kept(x[i].name)) {
			eq_log(EQ_LOG_WARNING, "image entry '%s': xattr '%s' is not reproduced on devices, left out",
			       eq_quote(q, sizeof(q), path), x[i].name);
			continue;
		}
		if (x[i].len > lim->max_xattr_size)
			return eq_error_set(err, EQ_ERR_LIMIT, "entry '%s': xattr '%s' is larger than %zu bytes",
					    eq_quote(q, sizeof(q), path), x[i].name, lim->max_xattr_size);
		struct eq_xattr *d = &o->xattrs[o->n_xattrs++];
		d->name = eq_strdup(x[i].name);
		d->value = eq_malloc(x[i].len ? x[i].len : 1);
		if (!d->name || !d->value)
			return nomem(err);
		if (x[i].len)
			memcpy(d->value, x[i].value, x[i].len);
		d->len = x[i].len;
	}
	qsort(o->xattrs, o->n_xattrs, sizeof(*o->xattrs), cmp_xattr);
	eq_payload_xattr_digest(o->xattrs, o->n_xattrs, o->xattr_sha256);
	return EQ_OK;
}

/* proc/ and sys/ are mount points: an image may hold them as empty
 * folders, nothing more (what is under them exists only at run time). */
static bool under_mount_point(const char *p)
{
	return !strncmp(p, "proc/", 5) || !strncmp(p, "sys/", 4);
}

/*
 * Adds entry @e (@sha256: a regular file's content) to @l. Hard links
 * become files of their target's group. @image: the rules only an image
 * has (proc/, sys/). The root itself is skipped.
 */
static eq_err elist_add(struct elist *l, const struct eq_payload_entry *e, const uint8_t sha256[EQ_SHA256_LEN],
			bool image, struct eq_error *err)
{
	char q[QMAX], q2[QMAX];
	const char *why;
	EQ_AUTOFREE char *path = norm_path(e->path, &l->lim, &why);
	if (!path)
		return why ? eq_error_set(err, EQ_ERR_UNSAFE, "entry '%s': %s", eq_quote(q, sizeof(q), e->path), why)
			   : nomem(err);
	if (!path[0])
		return EQ_OK;
	if (image &&
	    (under_mount_point(path) || ((!strcmp(path, "proc") || !strcmp(path, "sys")) && e->type != EQ_ENTRY_DIR)))
		return eq_error_set(err, EQ_ERR_UNSAFE,
				    "entry '%s': proc and sys are mount points, an image holds them as empty "
				    "folders only (was the root filesystem copied with /proc or /sys mounted?)",
				    eq_quote(q, sizeof(q), path));
	if (elist_find(l, path) != SIZE_MAX)
		return eq_error_set(err, EQ_ERR_PARSE, "entry '%s' appears twice", eq_quote(q, sizeof(q), path));
	if (l->n >= l->lim.max_entries)
		return eq_error_set(err, EQ_ERR_LIMIT, "more than %" PRIu64 " entries at '%s'", l->lim.max_entries,
				    eq_quote(q, sizeof(q), path));
	eq_err r = grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v), err);
	if (r)
		return r;
	struct eq_image_entry *o = &l->v[l->n];
	const struct eq_xattr *xattrs = e->xattrs;
	size_t n_xattrs = e->n_xattrs;
	*o = (struct eq_image_entry){
		.type = e->type,
		.mode = e->mode & 07777,
		.uid = e->uid,
		.gid = e->gid,
		.pkg = EQ_IMAGE_NO_PKG,
	};
	switch (e->type) {
	case EQ_ENTRY_HARDLINK: {
		EQ_AUTOFREE char *target = e->link ? norm_path(e->link, &l->lim, &why) : NULL;
		if (!target && e->link && !why)
			return nomem(err);
		size_t t = target && target[0] ? elist_find(l, target) : SIZE_MAX;
		if (t == SIZE_MAX || l->v[t].type != EQ_ENTRY_FILE)
			return eq_error_set(err, EQ_ERR_UNSAFE,
					    "entry '%s': hard link to '%s', which is not an earlier file of the image",
					    eq_quote(q, sizeof(q), path), eq_quote(q2, sizeof(q2), e->link));
		struct eq_image_entry *d = &l->v[t];
		if (!d->link_group)
			d->link_group = ++l->n_groups;
		o->type = EQ_ENTRY_FILE;
		o->mode = d->mode;
		o->uid = d->uid;
		o->gid = d->gid;
		o->size = d->size;
		memcpy(o->sha256, d->sha256, EQ_SHA256_LEN);
		o->link_group = d->link_group;
		/* The group's xattrs are the inode's: the target's. */
		xattrs = d->xattrs;
		n_xattrs = d->n_xattrs;
		break;
	}
	case EQ_ENTRY_FILE:
		if (e->size > l->lim.max_file_size)
			return eq_error_set(err, EQ_ERR_LIMIT, "entry '%s': larger than %" PRIu64 " bytes",
					    eq_quote(q, sizeof(q), path), l->lim.max_file_size);
		if (e->size > l->lim.max_total - l->total)
			return eq_error_set(err, EQ_ERR_LIMIT, "entry '%s': files total more than %" PRIu64 " bytes",
					    eq_quote(q, sizeof(q), path), l->lim.max_total);
		l->total += e->size;
		o->size = e->size;
		memcpy(o->sha256, sha256, EQ_SHA256_LEN);
		break;
	case EQ_ENTRY_SYMLINK:
		if (!e->link || !e->link[0] || strlen(e->link) > l->lim.max_path)
			return eq_error_set(err, EQ_ERR_PARSE, "entry '%s': empty or too long link target",
					    eq_quote(q, sizeof(q), path));
		o->link = eq_strdup(e->link);
		if (!o->link)
			return nomem(err);
		break;
	case EQ_ENTRY_CHR:
	case EQ_ENTRY_BLK:
		o->devmajor = e->devmajor;
		o->devminor = e->devminor;
		break;
	case EQ_ENTRY_DIR:
	case EQ_ENTRY_FIFO: break;
	}
	r = copy_xattrs(o, xattrs, n_xattrs, path, &l->lim, err);
	uint32_t num;
	if (!r)
		r = eqg_names_add(&l->idx, path, strlen(path), &num, err);
	if (r) {
		entry_done(o);
		return r;
	}
	o->path = eq_steal_ptr(path);
	l->n++;
	return EQ_OK;
}

/* After all entries: nothing may sit under a non-folder of the same list
 * (a tar may say "bin -> usr/bin" and then "bin/sh"; a device would write
 * it through the link). */
static eq_err elist_check_parents(const struct elist *l, struct eq_error *err)
{
	char q[QMAX], q2[QMAX];
	for (size_t i = 0; i < l->n; i++) {
		const char *p = l->v[i].path, *s = strrchr(p, '/');
		if (!s)
			continue;
		EQ_AUTOFREE char *parent = eq_strndup(p, (size_t)(s - p));
		if (!parent)
			return nomem(err);
		size_t k = elist_find(l, parent);
		if (k != SIZE_MAX && l->v[k].type != EQ_ENTRY_DIR)
			return eq_error_set(err, EQ_ERR_UNSAFE, "entry '%s': its parent '%s' is not a folder",
					    eq_quote(q, sizeof(q), p), eq_quote(q2, sizeof(q2), parent));
	}
	return EQ_OK;
}

/* ---- a payload builder's entries, through a pipe -------------------------- */

struct writer {
	struct eq_payload_builder *b;
	int fd;
	atomic_bool stop; /* the reader failed: the rest is not wanted */
	eq_err r;
	struct eq_error err;
};

static eq_err write_unless_stopped(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	struct writer *w = ctx;
	if (atomic_load(&w->stop))
		return eq_error_set(err, EQ_ERR_STOPPED, "stopped");
	return eq_fd_write(&w->fd, data, len, err);
}

static void *write_payload(void *arg)
{
	struct writer *w = arg;
	uint8_t sha[EQ_SHA256_LEN];
	uint64_t size;
	w->r = eq_payload_builder_write(w->b, write_unless_stopped, w, sha, &size, &w->err);
	close(w->fd);
	w->fd = -1;
	return NULL;
}

/* The payload is streamed to a reader on this thread instead of a
 * temporary file: an image is as large as the root filesystem, and only
 * its hashes are kept. */
static eq_err read_builder(struct elist *l, struct eq_payload_builder *b, bool image, struct eq_error *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return eq_error_errno(err, EQ_ERR_IO, "pipe");
	(void)fcntl(p[1], F_SETPIPE_SZ, 1024 * 1024);
	struct writer w = {.b = b, .fd = p[1]};
	atomic_init(&w.stop, false);
	pthread_t th;
	int rc = pthread_create(&th, NULL, write_payload, &w);
	if (rc) {
		close(p[0]);
		close(p[1]);
		errno = rc;
		return eq_error_errno(err, EQ_ERR_IO, "cannot start a thread");
	}
	int rfd = p[0];
	struct eq_payload_reader *rd = NULL;
	EQ_AUTOFREE uint8_t *buf = eq_malloc(DATA_BUF);
	eq_err r = buf ? eq_payload_reader_new(eq_fd_read, &rfd, &l->lim, &rd, err) : nomem(err);
	while (!r) {
		const struct eq_payload_entry *e;
		r = eq_payload_reader_next(rd, &e, err);
		if (r || !e)
			break;
		uint8_t sha[EQ_SHA256_LEN] = {0};
		if (e->type == EQ_ENTRY_FILE)
			r = eq_payload_reader_hash(rd, buf, DATA_BUF, sha, NULL, err);
		if (!r)
			r = elist_add(l, e, sha, image, err);
	}
	eq_payload_reader_free(rd);
	if (r)
		atomic_store(&w.stop, true);
	/* The writer blocks on a full pipe until it is drained. */
	if (buf) {
		ssize_t n;
		while ((n = read(rfd, buf, DATA_BUF)) > 0 || (n < 0 && errno == EINTR))
			;
	} else {
		char c[512];
		ssize_t n;
		while ((n = read(rfd, c, sizeof(c))) > 0 || (n < 0 && errno == EINTR))
			;
	}
	pthread_join(th, NULL);
	close(rfd);
	if (w.r && !(r && w.r == EQ_ERR_STOPPED)) {
		/* The writer's failure is the cause of whatever the reader saw. */
		if (err)
			*err = w.err;
		return w.r;
	}
	return r;
}

/* ---- a tar ------------------------------------------------------------------ */

static eq_err arch_err(struct archive *a, eq_err code, const char *what, struct eq_error *err)
{
	if (archive_errno(a) == ENOMEM)
		return nomem(err);
	const char *m = archive_error_string(a);
	return eq_error_set(err, code, "%s: %s", what, m ? m : "libarchive error");
}

static eq_err tar_entry(struct elist *l, struct archive *a, struct archive_entry *ae, uint8_t *buf,
			struct eq_error *err)
{
	char q[QMAX];
	const char *name = archive_entry_pathname(ae);
	if (!name)
		return eq_error_set(err, EQ_ERR_PARSE, "an entry without a name");
	struct eq_payload_entry e = {
		.path = name,
		.mode = (uint32_t)(archive_entry_perm(ae) & 07777),
	};
	la_int64_t uid = archive_entry_uid(ae), gid = archive_entry_gid(ae);
	if (uid < 0 || uid > UINT32_MAX || gid < 0 || gid > UINT32_MAX)
		return eq_error_set(err, EQ_ERR_PARSE, "entry '%s': owner out of range", eq_quote(q, sizeof(q), name));
	e.uid = (uint32_t)uid;
	e.gid = (uint32_t)gid;
	uint8_t sha[EQ_SHA256_LEN] = {0};
	const char *hl = archive_entry_hardlink(ae);
	if (hl) {
		e.type = EQ_ENTRY_HARDLINK;
		e.link = hl;
	} else {
		switch (archive_entry_filetype(ae)) {
		case AE_IFREG: e.type = EQ_ENTRY_FILE; break;
		case AE_IFDIR: e.type = EQ_ENTRY_DIR; break;
		case AE_IFLNK:
			e.type = EQ_ENTRY_SYMLINK;
			e.link = archive_entry_symlink(ae);
			break;
		case AE_IFCHR:
		case AE_IFBLK:
			e.type = archive_entry_filetype(ae) == AE_IFCHR ? EQ_ENTRY_CHR : EQ_ENTRY_BLK;
			e.devmajor = (uint32_t)archive_entry_rdevmajor(ae);
			e.devminor = (uint32_t)archive_entry_rdevminor(ae);
			break;
		case AE_IFIFO: e.type = EQ_ENTRY_FIFO; break;
		case AE_IFSOCK:
			return eq_error_set(err, EQ_ERR_UNSUPPORTED,
					    "entry '%s': a socket (created at run time; cannot be part of an image)",
					    eq_quote(q, sizeof(q), name));
		default:
			return eq_error_set(err, EQ_ERR_UNSUPPORTED, "entry '%s': unknown file type",
					    eq_quote(q, sizeof(q), name));
		}
	}
	if (e.type == EQ_ENTRY_FILE) {
		la_int64_t sz = archive_entry_size(ae);
		if (sz < 0)
			return eq_error_set(err, EQ_ERR_PARSE, "entry '%s': bad size", eq_quote(q, sizeof(q), name));
		e.size = (uint64_t)sz;
		if (e.size > l->lim.max_file_size)
			return eq_error_set(err, EQ_ERR_LIMIT, "entry '%s': larger than %" PRIu64 " bytes",
					    eq_quote(q, sizeof(q), name), l->lim.max_file_size);
		struct eq_sha256 s;
		eq_sha256_init(&s);
		uint64_t got = 0;
		for (;;) {
			la_ssize_t n = archive_read_data(a, buf, DATA_BUF);
			if (n < 0)
				return arch_err(a, EQ_ERR_PARSE, "data", err);
			if (n == 0)
				break;
			got += (uint64_t)n;
			eq_sha256_update(&s, buf, (size_t)n);
		}
		if (got != e.size)
			return eq_error_set(err, EQ_ERR_PARSE,
					    "entry '%s': %" PRIu64 " bytes of data, header says %" PRIu64,
					    eq_quote(q, sizeof(q), name), got, e.size);
		eq_sha256_final(&s, sha);
	}
	struct eq_xattr *xs = NULL;
	size_t nx = 0;
	eq_err r = EQ_OK;
	if (archive_entry_xattr_reset(ae) > 0) {
		const char *xn;
		const void *xv;
		size_t xl;
		while (!r && archive_entry_xattr_next(ae, &xn, &xv, &xl) == ARCHIVE_OK) {
			if (nx >= l->lim.max_xattrs) {
				r = eq_error_set(err, EQ_ERR_LIMIT, "entry '%s': more than %zu xattrs",
						 eq_quote(q, sizeof(q), name), l->lim.max_xattrs);
				break;
			}
			struct eq_xattr *nxs = eq_realloc(xs, (nx + 1) * sizeof(*xs));
			if (!nxs) {
				r = nomem(err);
				break;
			}
			xs = nxs;
			/* Borrowed from libarchive until the next header. */
			xs[nx++] = (struct eq_xattr){
				.name = (char *)(uintptr_t)xn, .value = (uint8_t *)(uintptr_t)xv, .len = xl};
		}
	}
	e.xattrs = xs;
	e.n_xattrs = nx;
	if (!r)
		r = elist_add(l, &e, sha, true, err);
	eq_free(xs);
	return r;
}

/* A possibly compressed tar @path opened for reading (*@ret: free it with
 * archive_read_free() whatever the result, when set). */
static eq_err tar_open(const char *path, struct archive **ret, struct eq_error *err)
{
	struct archive *a = archive_read_new();
	if (!a)
		return nomem(err);
	*ret = a;
	if (archive_read_support_filter_gzip(a) < ARCHIVE_WARN || archive_read_support_filter_xz(a) < ARCHIVE_WARN ||
	    archive_read_support_filter_lzma(a) < ARCHIVE_WARN || archive_read_support_filter_bzip2(a) < ARCHIVE_WARN ||
	    archive_read_support_filter_zstd(a) < ARCHIVE_WARN || archive_read_support_filter_none(a) != ARCHIVE_OK ||
	    archive_read_support_format_tar(a) != ARCHIVE_OK)
		return arch_err(a, EQ_ERR_UNSUPPORTED, "libarchive setup", err);
	if (archive_read_open_filename(a, path, 64 * 1024) != ARCHIVE_OK)
		return arch_err(a, EQ_ERR_PARSE, "not a tar", err);
	return EQ_OK;
}

typedef eq_err (*tar_entry_fn)(void *ctx, struct archive *a, struct archive_entry *ae, struct eq_error *err);

/* Every header of tar @path to @fn, in order. @first is the entry list of
 * the first reading (NULL for a later one): a header that does not read is
 * said after its last entry, a warning is refused (it means lost metadata,
 * an xattr or an owner). GNU tar --xattrs writes pax headers, whose names
 * are UTF-8; libarchive converts them to the current locale's charset and
 * warns where it cannot (any non-ASCII name under "C"). Names are bytes to
 * the image: this thread reads in a UTF-8 locale, where the conversion is a
 * copy. */
static eq_err tar_each(const char *path, const struct elist *first, tar_entry_fn fn, void *ctx, struct eq_error *err)
{
	locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	locale_t old = utf8 ? uselocale(utf8) : (locale_t)0;
	struct archive *a = NULL;
	eq_err r = tar_open(path, &a, err);
	while (!r) {
		struct archive_entry *ae;
		int rc = archive_read_next_header(a, &ae);
		if (rc == ARCHIVE_EOF)
			break;
		if (rc == ARCHIVE_OK) {
			r = fn(ctx, a, ae, err);
		} else if (!first) {
			r = arch_err(a, EQ_ERR_PARSE, "reading again", err);
		} else if (rc == ARCHIVE_WARN) {
			r = arch_err(a, EQ_ERR_PARSE, "warning", err);
		} else {
			r = arch_err(a, EQ_ERR_PARSE, "after entry", err);
			if (first->n)
				r = eq_error_prefix(err, r, "after '%s'", first->v[first->n - 1].path);
		}
	}
	if (a)
		archive_read_free(a);
	if (utf8) {
		uselocale(old);
		freelocale(utf8);
	}
	return r;
}

struct first_read {
	struct elist *l;
	uint8_t *buf; /* DATA_BUF */
};

static eq_err first_entry(void *ctx, struct archive *a, struct archive_entry *ae, struct eq_error *err)
{
	struct first_read *f = ctx;
	return tar_entry(f->l, a, ae, f->buf, err);
}

static eq_err read_tar(struct elist *l, const char *path, struct eq_error *err)
{
	EQ_AUTOFREE uint8_t *buf = eq_malloc(DATA_BUF);
	if (!buf)
		return nomem(err);
	struct first_read f = {.l = l, .buf = buf};
	return tar_each(path, l, first_entry, &f, err);
}

/* ---- the image ------------------------------------------------------------- */

void eq_image_free(struct eq_image *img)
{
	if (!img)
		return;
	elist_done(&img->e);
	eq_free(img->shipper);
	eq_free(img->last_pkg);
	eq_free(img->group_n);
	for (size_t i = 0; i < img->n_pkgs; i++)
		eq_free(img->pkgs[i]);
	eq_free(img->pkgs);
	for (size_t i = 0; i < img->n_miss; i++)
		eq_free(img->miss[i].path);
	eq_free(img->miss);
	for (size_t i = 0; i < img->n_repl; i++)
		eq_free(img->repl[i].path);
	eq_free(img->repl);
	for (size_t i = 0; i < img->n_rmv; i++)
		eq_free(img->rmv[i].path);
	eq_free(img->rmv);
	eq_free(img->skel);
	eq_free(img->last_name);
	eq_free(img->last_same);
	eq_free(img);
}

size_t eq_image_count(const struct eq_image *img)
{
	return img->e.n;
}

const struct eq_image_entry *eq_image_get(const struct eq_image *img, size_t i)
{
	return i < img->e.n ? &img->e.v[i] : NULL;
}

size_t eq_image_find(const struct eq_image *img, const char *path)
{
	return elist_find(&img->e, path);
}

const char *eq_image_pkg_name(const struct eq_image *img, uint32_t i)
{
	return i < img->n_pkgs ? img->pkgs[i] : NULL;
}

void eq_image_missing_get(const struct eq_image *img, size_t i, const char **ret_path, uint32_t *ret_pkg)
{
	*ret_path = i < img->n_miss ? img->miss[i].path : NULL;
	*ret_pkg = i < img->n_miss ? img->miss[i].pkg : EQ_IMAGE_NO_PKG;
}

/* eq_image_resolve(); every symlink followed gets its @mark set (NULL:
 * none kept). */
static eq_err resolve_mark(const struct eq_image *img, const char *path, bool follow_last, uint8_t *mark, char **ret,
			   struct eq_error *err)
{
	char q[QMAX], q2[QMAX];
	size_t max = img->e.lim.max_path;
	EQ_AUTOFREE char *out = eq_malloc(max + 2);
	EQ_AUTOFREE char *rest = eq_strdup(path);
	if (!out || !rest)
		return nomem(err);
	size_t olen = 0;
	out[0] = '\0';
	const char *p = rest;
	unsigned follows = 0;
	while (*p) {
		const char *s = strchr(p, '/');
		size_t cl = s ? (size_t)(s - p) : strlen(p);
		const char *next = s ? s + 1 : p + cl;
		if (!cl || (cl == 1 && p[0] == '.')) {
			p = next;
			continue;
		}
		if (cl == 2 && p[0] == '.' && p[1] == '.') {
			/* Never above the image's root. */
			while (olen && out[olen - 1] != '/')
				olen--;
			if (olen)
				olen--;
			out[olen] = '\0';
			p = next;
			continue;
		}
		size_t nl = olen + (olen ? 1 : 0) + cl;
		if (nl > max)
			return eq_error_set(err, EQ_ERR_LIMIT, "'%s' resolves to a path longer than %zu bytes",
					    eq_quote(q, sizeof(q), path), max);
		size_t base = olen;
		if (olen)
			out[olen++] = '/';
		memcpy(out + olen, p, cl);
		olen += cl;
		out[olen] = '\0';
		size_t k = elist_find(&img->e, out);
		bool last = !*next;
		if (k == SIZE_MAX || img->e.v[k].type != EQ_ENTRY_SYMLINK || (last && !follow_last)) {
			p = next;
			continue;
		}
		if (++follows > EQ_IMAGE_MAX_FOLLOW)
			return eq_error_set(
				err, EQ_ERR_UNSAFE, "'%s': more than %u symlinks on the way (a loop at '%s')",
				eq_quote(q, sizeof(q), path), EQ_IMAGE_MAX_FOLLOW, eq_quote(q2, sizeof(q2), out));
		if (mark)
			mark[k] = 1;
		const char *target = img->e.v[k].link;
		/* A relative target continues from the link's folder, an
		 * absolute one from the image's root. */
		olen = target[0] == '/' ? 0 : base;
		out[olen] = '\0';
		char *nr = eq_asprintf("%s%s%s", target, *next ? "/" : "", next);
		if (!nr)
			return nomem(err);
		eq_free(rest);
		rest = nr;
		p = rest;
	}
	*ret = eq_steal_ptr(out);
	return EQ_OK;
}

eq_err eq_image_resolve(const struct eq_image *img, const char *path, bool follow_last, char **ret,
			struct eq_error *err)
{
	return resolve_mark(img, path, follow_last, NULL, ret, err);
}

eq_err eq_image_load(const char *path, const struct eq_payload_limits *limits, struct eq_image **ret,
		     struct eq_error *err)
{
	struct eq_image *img = eq_calloc(1, sizeof(*img));
	if (!img)
		return nomem(err);
	elist_init(&img->e, limits);
	struct stat st;
	eq_err r = EQ_OK;
	if (stat(path, &st) < 0) {
		r = eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot open");
	} else if (S_ISDIR(st.st_mode)) {
		struct eq_payload_builder *b = NULL;
		r = eq_payload_builder_new(&img->e.lim, &b, err);
		if (!r)
			r = eq_payload_builder_add_tree(b, path, err);
		if (!r)
			r = read_builder(&img->e, b, true, err);
		eq_payload_builder_free(b);
	} else {
		r = read_tar(&img->e, path, err);
	}
	if (!r)
		r = elist_check_parents(&img->e, err);
	/* Every symlink must resolve, so that no package path can meet a
	 * loop later. */
	for (size_t i = 0; i < img->e.n && !r; i++) {
		if (img->e.v[i].type != EQ_ENTRY_SYMLINK)
			continue;
		char *res = NULL;
		r = eq_image_resolve(img, img->e.v[i].path, true, &res, err);
		eq_free(res);
	}
	if (!r) {
		img->shipper = eq_malloc((img->e.n ? img->e.n : 1) * sizeof(*img->shipper));
		img->last_pkg = eq_malloc((img->e.n ? img->e.n : 1) * sizeof(*img->last_pkg));
		img->group_n = eq_calloc((size_t)img->e.n_groups + 1, sizeof(*img->group_n));
		img->skel = eq_calloc(img->e.n ? img->e.n : 1, 1);
		img->last_name = eq_malloc((img->e.n ? img->e.n : 1) * sizeof(*img->last_name));
		img->last_same = eq_calloc(img->e.n ? img->e.n : 1, 1);
		if (!img->shipper || !img->last_pkg || !img->group_n || !img->skel || !img->last_name ||
		    !img->last_same)
			r = nomem(err);
	}
	if (r) {
		eq_image_free(img);
		return eq_error_prefix(err, r, "image '%s'", path);
	}
	for (size_t i = 0; i < img->e.n; i++) {
		img->shipper[i] = img->last_pkg[i] = img->last_name[i] = EQ_IMAGE_NO_PKG;
		img->group_n[img->e.v[i].link_group]++;
	}
	*ret = img;
	return EQ_OK;
}

/* ---- attribution ------------------------------------------------------------ */

static bool same_entry(const struct eq_image_entry *a, const struct eq_image_entry *b)
{
	if (a->type != b->type || a->mode != b->mode || a->uid != b->uid || a->gid != b->gid ||
	    memcmp(a->xattr_sha256, b->xattr_sha256, EQ_SHA256_LEN) || !a->link_group != !b->link_group)
		return false;
	switch (a->type) {
	case EQ_ENTRY_FILE: return a->size == b->size && !memcmp(a->sha256, b->sha256, EQ_SHA256_LEN);
	case EQ_ENTRY_SYMLINK: return !strcmp(a->link, b->link);
	case EQ_ENTRY_CHR:
	case EQ_ENTRY_BLK: return a->devmajor == b->devmajor && a->devminor == b->devminor;
	case EQ_ENTRY_DIR:
	case EQ_ENTRY_FIFO:
	case EQ_ENTRY_HARDLINK: break;
	}
	return true;
}

static eq_err add_path(struct miss **v, size_t *n, size_t *cap, const char *path, uint32_t pkg, struct eq_error *err)
{
	eq_err r = grow((void **)v, cap, *n, sizeof(**v), err);
	if (r)
		return r;
	(*v)[*n] = (struct miss){.path = eq_strdup(path), .pkg = pkg};
	if (!(*v)[*n].path)
		return nomem(err);
	(*n)++;
	return EQ_OK;
}

/*
 * What package @pi's entries @pl (@at[i]: the image entry entry i lands
 * on, or SIZE_MAX; @map as match_pkg()'s) mean for the components: the
 * package last in name order shipping each image entry (the device
 * installs in name order, so its metadata is the one left), and the
 * package paths to set aside (replace) or take away (remove).
 */
static eq_err note_pkg(struct eq_image *img, uint32_t pi, const struct elist *pl, const size_t *at, const size_t *map,
		       struct eq_error *err)
{
	eq_err r = EQ_OK;
	for (size_t i = 0; i < pl->n && !r; i++) {
		size_t k = at[i];
		if (k == SIZE_MAX)
			continue;
		const struct eq_image_entry *pe = &pl->v[i];
		uint32_t ln = img->last_name[k];
		if (ln == EQ_IMAGE_NO_PKG || strcmp(img->pkgs[pi], img->pkgs[ln]) > 0) {
			img->last_name[k] = pi;
			img->last_same[k] = map[i] != SIZE_MAX;
		}
		if (pe->type == EQ_ENTRY_DIR && img->e.v[k].type != EQ_ENTRY_DIR) {
			r = add_path(&img->rmv, &img->n_rmv, &img->cap_rmv, pe->path, pi, err);
			continue;
		}
		bool set_aside = map[i] == SIZE_MAX;
		if (!set_aside && pe->type == EQ_ENTRY_DIR) {
			/* A folder the image has as a symlink ("bin" with
			 * "bin -> usr/bin"): the package's rebuild must find a
			 * folder there. */
			char *own = NULL;
			r = eq_image_resolve(img, pe->path, false, &own, err);
			size_t o = r || !own[0] ? SIZE_MAX : elist_find(&img->e, own);
			eq_free(own);
			set_aside = o != SIZE_MAX && img->e.v[o].type == EQ_ENTRY_SYMLINK;
		}
		if (!r && set_aside)
			r = add_path(&img->repl, &img->n_repl, &img->cap_repl, pe->path, pi, err);
	}
	return r;
}

/* Package @pi's entries @pl against the image: @map[i] receives the image
 * entry package entry i is identical to, or SIZE_MAX; @at[i] the one it
 * lands on, or SIZE_MAX. */
static eq_err match_pkg(struct eq_image *img, uint32_t pi, const struct elist *pl, size_t *map, size_t *at,
			struct eq_error *err)
{
	char q[QMAX];
	eq_err r = EQ_OK;
	for (size_t i = 0; i < pl->n && !r; i++) {
		const struct eq_image_entry *pe = &pl->v[i];
		map[i] = at[i] = SIZE_MAX;
		char *rp = NULL;
		r = resolve_mark(img, pe->path, pe->type == EQ_ENTRY_DIR, img->skel, &rp, err);
		if (r) {
			r = eq_error_prefix(err, r, "entry '%s'", eq_quote(q, sizeof(q), pe->path));
			break;
		}
		/* A folder that resolves to the image's root ("x -> /") is
		 * the root, which every image has. */
		bool root = !rp[0];
		size_t k = root ? SIZE_MAX : elist_find(&img->e, rp);
		eq_free(rp);
		if (root)
			continue;
		if (k == SIZE_MAX) {
			r = grow((void **)&img->miss, &img->cap_miss, img->n_miss, sizeof(*img->miss), err);
			if (!r) {
				img->miss[img->n_miss] = (struct miss){.path = eq_strdup(pe->path), .pkg = pi};
				if (img->miss[img->n_miss].path)
					img->n_miss++;
				else
					r = nomem(err);
			}
			continue;
		}
		at[i] = k;
		if (img->shipper[k] == EQ_IMAGE_NO_PKG)
			img->shipper[k] = pi;
		if (same_entry(pe, &img->e.v[k]))
			map[i] = k;
	}
	if (r || !pl->n_groups)
		return r;
	/* A hard-link group matches only whole: its members land in one image
	 * group of the same size. */
	uint32_t *to = eq_calloc((size_t)pl->n_groups + 1, sizeof(*to));
	uint32_t *cnt = eq_calloc((size_t)pl->n_groups + 1, sizeof(*cnt));
	bool *bad = eq_calloc((size_t)pl->n_groups + 1, sizeof(*bad));
	if (!to || !cnt || !bad)
		r = nomem(err);
	for (size_t i = 0; i < pl->n && !r; i++) {
		uint32_t g = pl->v[i].link_group;
		if (!g)
			continue;
		cnt[g]++;
		if (map[i] == SIZE_MAX) {
			bad[g] = true;
			continue;
		}
		uint32_t ig = img->e.v[map[i]].link_group;
		if (to[g] && to[g] != ig)
			bad[g] = true;
		to[g] = ig;
	}
	for (size_t i = 0; i < pl->n && !r; i++) {
		uint32_t g = pl->v[i].link_group;
		if (g && (bad[g] || img->group_n[to[g]] != cnt[g]))
			map[i] = SIZE_MAX;
	}
	eq_free(to);
	eq_free(cnt);
	eq_free(bad);
	return r;
}

/* Attributes the entries @pl of package @name (see eq_image_attribute()). */
static eq_err attribute_list(struct eq_image *img, const char *name, const struct elist *pl, struct eq_error *err)
{
	if (img->n_pkgs >= EQ_IMAGE_NO_PKG - 1)
		return eq_error_set(err, EQ_ERR_LIMIT, "too many packages");
	eq_err r = grow((void **)&img->pkgs, &img->cap_pkgs, img->n_pkgs, sizeof(*img->pkgs), err);
	if (r)
		return r;
	char *nm = eq_strdup(name);
	if (!nm)
		return nomem(err);
	img->pkgs[img->n_pkgs] = nm;
	uint32_t pi = (uint32_t)img->n_pkgs++;
	size_t *map = eq_malloc((pl->n ? pl->n : 1) * sizeof(*map));
	size_t *at = eq_malloc((pl->n ? pl->n : 1) * sizeof(*at));
	r = map && at ? match_pkg(img, pi, pl, map, at, err) : nomem(err);
	if (!r)
		r = note_pkg(img, pi, pl, at, map, err);
	for (size_t i = 0; i < pl->n && !r; i++) {
		if (map[i] == SIZE_MAX || img->last_pkg[map[i]] == pi)
			continue;
		struct eq_image_entry *ie = &img->e.v[map[i]];
		if (!ie->n_pkgs)
			ie->pkg = pi;
		ie->n_pkgs++;
		img->last_pkg[map[i]] = pi;
	}
	if (!r)
		img->pkg_entries += pl->n;
	eq_free(map);
	eq_free(at);
	return r;
}

/* attribute_list() of @pl once read (@r: how the reading went); frees @pl. */
static eq_err attribute_read(struct eq_image *img, const char *name, struct elist *pl, eq_err r, struct eq_error *err)
{
	char q[QMAX];
	if (!r)
		r = attribute_list(img, name, pl, err);
	elist_done(pl);
	return r ? eq_error_prefix(err, r, "package '%s'", eq_quote(q, sizeof(q), name)) : EQ_OK;
}

eq_err eq_image_attribute(struct eq_image *img, const char *name, struct eq_payload_builder *b, struct eq_error *err)
{
	struct elist pl;
	elist_init(&pl, &img->e.lim);
	eq_err r = read_builder(&pl, b, false, err);
	return attribute_read(img, name, &pl, r, err);
}

void eq_image_classify(struct eq_image *img, struct eq_image_summary *ret)
{
	*ret = (struct eq_image_summary){
		.entries = img->e.n,
		.packages = img->n_pkgs,
		.package_entries = img->pkg_entries,
		.missing = img->n_miss,
	};
	/* A hard-link group's bytes count once: group_n doubles as the mark
	 * of a group counted, restored below. */
	for (size_t i = 0; i < img->e.n; i++) {
		struct eq_image_entry *e = &img->e.v[i];
		if (e->n_pkgs) {
			e->cls = EQ_IMAGE_PACKAGE;
		} else if (img->shipper[i] != EQ_IMAGE_NO_PKG) {
			e->cls = EQ_IMAGE_OVERRIDE;
			e->pkg = img->shipper[i];
		} else {
			e->pkg = EQ_IMAGE_NO_PKG;
			switch (e->type) {
			case EQ_ENTRY_FILE:
			case EQ_ENTRY_HARDLINK: e->cls = e->size ? EQ_IMAGE_FILE : EQ_IMAGE_EMPTY; break;
			case EQ_ENTRY_DIR: e->cls = EQ_IMAGE_DIR; break;
			case EQ_ENTRY_SYMLINK: e->cls = EQ_IMAGE_SYMLINK; break;
			case EQ_ENTRY_CHR:
			case EQ_ENTRY_BLK: e->cls = EQ_IMAGE_DEVICE; break;
			case EQ_ENTRY_FIFO: e->cls = EQ_IMAGE_FIFO; break;
			}
		}
		ret->by_class[e->cls]++;
		if (e->type != EQ_ENTRY_FILE || (e->link_group && img->group_n[e->link_group] & 0x80000000u))
			continue;
		if (e->link_group)
			img->group_n[e->link_group] |= 0x80000000u;
		if (e->cls == EQ_IMAGE_PACKAGE)
			ret->package_bytes += e->size;
		else if (e->cls == EQ_IMAGE_FILE || e->cls == EQ_IMAGE_OVERRIDE)
			ret->image_bytes += e->size;
	}
	for (size_t g = 0; g <= img->e.n_groups; g++)
		img->group_n[g] &= 0x7fffffffu;
}

/* One package file read into entries, on any thread. */
struct pkg_job {
	const char *file;
	const struct eq_payload_limits *lim;
	char *name;
	struct elist l;
	eq_err r;
	struct eq_error err;
};

static void read_pkg_job(void *ctx, size_t i)
{
	struct pkg_job *j = &((struct pkg_job *)ctx)[i];
	struct eq_pkg *p = NULL;
	elist_init(&j->l, j->lim);
	j->r = eq_pkg_read(j->file, j->lim, &p, &j->err);
	if (!j->r) {
		j->name = eq_strdup(eq_pkg_get_info(p)->name);
		j->r = j->name ? read_builder(&j->l, eq_pkg_get_builder(p), false, &j->err) : nomem(&j->err);
	}
	eq_pkg_free(p);
	if (j->r)
		j->r = eq_error_prefix(&j->err, j->r, "%s", j->file);
}

/* Packages read at once: each holds its entries until all are read. */
#define PKG_READ_JOBS 8u

eq_err eq_image_check(const char *image_path, const char *packages_dir, const struct eq_payload_limits *limits,
		      struct eq_image **ret, struct eq_image_summary *ret_summary, struct eq_error *err)
{
	char q[QMAX];
	struct eq_image *img = NULL;
	eq_err r = eq_image_load(image_path, limits, &img, err);
	if (r)
		return r;
	char **files = NULL;
	size_t n = 0;
	r = eq_gen_list_packages(packages_dir, &files, &n, err);
	if (!r && !n)
		r = eq_error_set(err, EQ_ERR_NOTFOUND, "no packages (.deb .ipk .rpm .tar.*) in '%s'", packages_dir);
	struct pkg_job *jobs = r ? NULL : eq_calloc(n, sizeof(*jobs));
	if (!r && !jobs)
		r = nomem(err);
	if (!r) {
		for (size_t i = 0; i < n; i++)
			jobs[i] = (struct pkg_job){.file = files[i], .lim = limits};
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		size_t threads = cpus > 0 ? (size_t)cpus : 1;
		eq_parallel(n, threads < PKG_READ_JOBS ? threads : PKG_READ_JOBS, read_pkg_job, jobs);
	}
	/* In file order, so the first package named for an entry is the same
	 * whatever the threads did. */
	for (size_t i = 0; i < n && !r; i++) {
		if (jobs[i].r) {
			if (err)
				*err = jobs[i].err;
			r = jobs[i].r;
			break;
		}
		r = attribute_list(img, jobs[i].name, &jobs[i].l, err);
		if (r)
			r = eq_error_prefix(err, r, "%s: package '%s'", files[i], eq_quote(q, sizeof(q), jobs[i].name));
	}
	for (size_t i = 0; jobs && i < n; i++) {
		eq_free(jobs[i].name);
		elist_done(&jobs[i].l);
	}
	eq_free(jobs);
	for (size_t i = 0; i < n; i++)
		eq_free(files[i]);
	eq_free(files);
	if (r) {
		eq_image_free(img);
		return r;
	}
	eq_image_classify(img, ret_summary);
	*ret = img;
	return EQ_OK;
}

/* ---- for publish and the components (gen_priv.h) ---------------------------- */

eq_err eqg_image_attribute_recs(struct eq_image *img, const char *name, const struct eqg_path_recs *rs,
				struct eq_error *err)
{
	struct elist pl;
	elist_init(&pl, &img->e.lim);
	eq_err r = EQ_OK;
	for (size_t i = 0; i < rs->n && !r; i++) {
		const struct rec *x = &rs->v[i];
		struct eq_payload_entry e = {
			.path = x->path,
			.type = x->type,
			.mode = x->mode,
			.uid = x->uid,
			.gid = x->gid,
			.size = x->size,
			.link = x->link,
			.devmajor = x->devmajor,
			.devminor = x->devminor,
		};
		size_t n = pl.n;
		r = elist_add(&pl, &e, x->sha, false, err);
		if (r || pl.n == n)
			continue;
		/* The records keep the xattrs' digest only, the one same_entry()
		 * compares; a hard link's are its group's. */
		struct eq_image_entry *o = &pl.v[pl.n - 1];
		memcpy(o->xattr_sha256, x->xsha, EQ_SHA256_LEN);
		if (x->type == EQ_ENTRY_HARDLINK)
			for (size_t k = 0; k < n; k++)
				if (pl.v[k].link_group == o->link_group) {
					memcpy(o->xattr_sha256, pl.v[k].xattr_sha256, EQ_SHA256_LEN);
					break;
				}
	}
	return attribute_read(img, name, &pl, r, err);
}

static int cmp_miss(const void *a, const void *b)
{
	return strcmp(((const struct miss *)a)->path, ((const struct miss *)b)->path);
}

void eqg_image_found(struct eq_image *img, struct eqg_image_found *ret)
{
	/* Sorted so the lists can be merged and deduplicated. */
	if (img->n_repl)
		qsort(img->repl, img->n_repl, sizeof(*img->repl), cmp_miss);
	if (img->n_rmv)
		qsort(img->rmv, img->n_rmv, sizeof(*img->rmv), cmp_miss);
	*ret = (struct eqg_image_found){
		.skel = img->skel,
		.last_name = img->last_name,
		.last_same = img->last_same,
		.n_replace = img->n_repl,
		.n_remove = img->n_rmv,
		.lim = &img->e.lim,
	};
}

const char *eqg_image_found_path(const struct eq_image *img, bool remove, size_t i)
{
	return remove ? img->rmv[i].path : img->repl[i].path;
}

struct walk {
	const struct eq_image *img;
	eqg_image_tar_fn fn;
	void *ctx;
};

static eq_err walk_entry(void *ctx, struct archive *a, struct archive_entry *ae, struct eq_error *err)
{
	const struct walk *w = ctx;
	const char *why, *name = archive_entry_pathname(ae);
	EQ_AUTOFREE char *np = name ? norm_path(name, &w->img->e.lim, &why) : NULL;
	if (!np)
		return EQ_OK; /* refused by the first read */
	return w->fn(w->ctx, a, ae, np, err);
}

eq_err eqg_image_tar_walk(const struct eq_image *img, const char *path, eqg_image_tar_fn fn, void *ctx,
			  struct eq_error *err)
{
	struct walk w = {.img = img, .fn = fn, .ctx = ctx};
	return tar_each(path, NULL, walk_entry, &w, err);
}
