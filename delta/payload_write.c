/*
 * The payload builder: collects entry metadata (from the caller, a directory
 * tree or a list of installed paths) and writes the canonical tar described
 * in docs/internals/payload.md.
 */
#include <dirent.h>
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

#define NO_ROOT SIZE_MAX
#define OUT_BUF_LEN (64u * 1024u)

struct bent {
	char *path;
	char *link;
	enum eq_entry_type type;
	uint32_t mode, uid, gid, devmajor, devminor;
	uint64_t size;
	struct eq_xattr *xattrs; /* sorted by name */
	size_t n_xattrs;
	int data_fd; /* caller's fd, or -1 */
	uint64_t data_offset;
	size_t root;  /* index into roots for files found on disk */
	bool has_ino; /* a non-directory with more than one link */
	uint64_t dev, ino;
};

struct eq_payload_builder {
	struct eq_payload_limits lim;
	struct bent *ents;
	size_t n, cap;
	char **roots;
	int *root_fds; /* O_PATH descriptors of roots[] */
	size_t n_roots;
	struct tar_strset paths; /* borrows ents[].path */
};

eq_err eq_payload_builder_new(const struct eq_payload_limits *limits, struct eq_payload_builder **ret,
			      struct eq_error *err)
{
	struct eq_payload_builder *b = eq_calloc(1, sizeof(*b));
	if (!b)
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for a builder");
	eq_payload_limits_resolve(limits, &b->lim);
	tar_strset_init(&b->paths);
	*ret = b;
	return EQ_OK;
}

static void free_xattrs(struct eq_xattr *x, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		eq_free(x[i].name);
		eq_free(x[i].value);
	}
	eq_free(x);
}

static void bent_done(struct bent *e)
{
	eq_free(e->path);
	eq_free(e->link);
	free_xattrs(e->xattrs, e->n_xattrs);
}

void eq_payload_builder_free(struct eq_payload_builder *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		bent_done(&b->ents[i]);
	eq_free(b->ents);
	for (size_t i = 0; i < b->n_roots; i++) {
		eq_free(b->roots[i]);
		if (b->root_fds[i] >= 0)
			close(b->root_fds[i]);
	}
	eq_free(b->roots);
	eq_free(b->root_fds);
	tar_strset_done(&b->paths);
	eq_free(b);
}

size_t eq_payload_builder_count(const struct eq_payload_builder *b)
{
	return b->n;
}

static const char *skip_dot_slash(const char *p)
{
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	return p;
}

static int cmp_xattr(const void *a, const void *b)
{
	return strcmp(((const struct eq_xattr *)a)->name, ((const struct eq_xattr *)b)->name);
}

static eq_err copy_xattrs(const struct eq_payload_limits *lim, const char *path, const struct eq_payload_entry *e,
			  struct bent *out, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	if (e->n_xattrs > lim->max_xattrs)
		return eq_error_set(err, EQ_ERR_LIMIT, "payload: entry '%s': %zu xattrs, the limit is %zu",
				    eq_quote(q, sizeof(q), path), e->n_xattrs, lim->max_xattrs);
	if (!e->n_xattrs)
		return EQ_OK;
	out->xattrs = eq_calloc(e->n_xattrs, sizeof(*out->xattrs));
	if (!out->xattrs)
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for xattrs");
	for (size_t i = 0; i < e->n_xattrs; i++) {
		const struct eq_xattr *x = &e->xattrs[i];
		/* '=' ends a pax keyword, and GNU tar %-decodes xattr keywords,
		 * so either character would not survive a round trip. */
		if (!x->name || !x->name[0] || strpbrk(x->name, "=%"))
			return eq_error_set(err, EQ_ERR_UNSUPPORTED,
					    "payload: entry '%s': xattr name '%s' is empty or contains '=' or '%%'",
					    eq_quote(q, sizeof(q), path), x->name ? x->name : "");
		if (x->len > lim->max_xattr_size)
			return eq_error_set(err, EQ_ERR_LIMIT,
					    "payload: entry '%s': xattr '%s' of %zu bytes exceeds the limit of %zu",
					    eq_quote(q, sizeof(q), path), x->name, x->len, lim->max_xattr_size);
		struct eq_xattr *o = &out->xattrs[out->n_xattrs];
		o->name = eq_strdup(x->name);
		o->value = eq_malloc(x->len ? x->len : 1);
		out->n_xattrs++;
		if (!o->name || !o->value)
			return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for xattrs");
		if (x->len)
			memcpy(o->value, x->value, x->len);
		o->len = x->len;
	}
	qsort(out->xattrs, out->n_xattrs, sizeof(*out->xattrs), cmp_xattr);
	for (size_t i = 1; i < out->n_xattrs; i++)
		if (!strcmp(out->xattrs[i - 1].name, out->xattrs[i].name))
			return eq_error_set(err, EQ_ERR_INVAL, "payload: entry '%s': xattr '%s' given twice",
					    eq_quote(q, sizeof(q), path), out->xattrs[i].name);
	return EQ_OK;
}

static eq_err check_entry(const struct eq_payload_limits *lim, const char *path, const struct eq_payload_entry *e,
			  int data_fd, size_t root, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	const char *why = tar_path_problem(path);
	if (why)
		return eq_error_set(err, EQ_ERR_INVAL, "payload: entry '%s': %s", eq_quote(q, sizeof(q), path), why);
	if (strlen(path) > lim->max_path)
		return eq_error_set(err, EQ_ERR_LIMIT, "payload: entry '%s': path is longer than %zu bytes",
				    eq_quote(q, sizeof(q), path), lim->max_path);
	if (e->mode & ~07777u)
		return eq_error_set(err, EQ_ERR_INVAL, "payload: entry '%s': mode %o has bits outside 07777",
				    eq_quote(q, sizeof(q), path), e->mode);
	switch (e->type) {
	case EQ_ENTRY_FILE:
		if (e->size > lim->max_file_size)
			return eq_error_set(err, EQ_ERR_LIMIT,
					    "payload: entry '%s': size %" PRIu64 " exceeds the limit of %" PRIu64,
					    eq_quote(q, sizeof(q), path), e->size, lim->max_file_size);
		if (e->size && data_fd < 0 && root == NO_ROOT)
			return eq_error_set(err, EQ_ERR_INVAL, "payload: entry '%s': file has no data fd",
					    eq_quote(q, sizeof(q), path));
		break;
	case EQ_ENTRY_SYMLINK:
	case EQ_ENTRY_HARDLINK:
		if (!e->link || !e->link[0])
			return eq_error_set(err, EQ_ERR_INVAL, "payload: entry '%s': empty link target",
					    eq_quote(q, sizeof(q), path));
		if (strlen(e->link) > lim->max_path)
			return eq_error_set(err, EQ_ERR_LIMIT,
					    "payload: entry '%s': link target is longer than %zu bytes",
					    eq_quote(q, sizeof(q), path), lim->max_path);
		if (e->type == EQ_ENTRY_HARDLINK && (why = tar_path_problem(skip_dot_slash(e->link))))
			return eq_error_set(err, EQ_ERR_INVAL, "payload: entry '%s': hard link target: %s",
					    eq_quote(q, sizeof(q), path), why);
		break;
	case EQ_ENTRY_DIR:
	case EQ_ENTRY_CHR:
	case EQ_ENTRY_BLK:
	case EQ_ENTRY_FIFO: break;
	default:
		return eq_error_set(err, EQ_ERR_INVAL, "payload: entry '%s': unknown type %d",
				    eq_quote(q, sizeof(q), path), (int)e->type);
	}
	return EQ_OK;
}

static eq_err add_entry(struct eq_payload_builder *b, const struct eq_payload_entry *e, int data_fd,
			uint64_t data_offset, size_t root, const struct stat *st, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	if (!e->path)
		return eq_error_set(err, EQ_ERR_INVAL, "payload: entry without a path");
	const char *path = skip_dot_slash(e->path);
	eq_err r = check_entry(&b->lim, path, e, data_fd, root, err);
	if (r)
		return r;
	if (tar_strset_has(&b->paths, path))
		return eq_error_set(err, EQ_ERR_INVAL, "payload: entry '%s' added twice", eq_quote(q, sizeof(q), path));
	if (b->n >= b->lim.max_entries)
		return eq_error_set(err, EQ_ERR_LIMIT, "payload: more than %" PRIu64 " entries at '%s'",
				    b->lim.max_entries, eq_quote(q, sizeof(q), path));
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		struct bent *n = eq_realloc(b->ents, cap * sizeof(*n));
		if (!n)
			return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for %zu entries", cap);
		b->ents = n;
		b->cap = cap;
	}
	struct bent *o = &b->ents[b->n];
	*o = (struct bent){
		.type = e->type,
		.mode = e->mode,
		.uid = e->uid,
		.gid = e->gid,
		.data_fd = e->type == EQ_ENTRY_FILE ? data_fd : -1,
		.data_offset = data_offset,
		.root = e->type == EQ_ENTRY_FILE ? root : NO_ROOT,
	};
	if (e->type == EQ_ENTRY_FILE)
		o->size = e->size;
	if (e->type == EQ_ENTRY_CHR || e->type == EQ_ENTRY_BLK) {
		o->devmajor = e->devmajor;
		o->devminor = e->devminor;
	}
	if (st && !S_ISDIR(st->st_mode) && st->st_nlink > 1) {
		o->has_ino = true;
		o->dev = (uint64_t)st->st_dev;
		o->ino = (uint64_t)st->st_ino;
	}
	o->path = eq_strdup(path);
	if (e->type == EQ_ENTRY_SYMLINK)
		o->link = eq_strdup(e->link);
	else if (e->type == EQ_ENTRY_HARDLINK)
		o->link = eq_strdup(skip_dot_slash(e->link));
	bool added;
	if (!o->path || ((e->type == EQ_ENTRY_SYMLINK || e->type == EQ_ENTRY_HARDLINK) && !o->link))
		r = eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for an entry");
	if (!r)
		r = copy_xattrs(&b->lim, path, e, o, err);
	if (!r)
		r = tar_strset_add(&b->paths, o->path, &added, err);
	if (r) {
		bent_done(o);
		return r;
	}
	b->n++;
	return EQ_OK;
}

eq_err eq_payload_builder_add(struct eq_payload_builder *b, const struct eq_payload_entry *e, int data_fd,
			      uint64_t data_offset, struct eq_error *err)
{
	return add_entry(b, e, data_fd, data_offset, NO_ROOT, NULL, err);
}

eq_err eq_payload_builder_remove(struct eq_payload_builder *b, const char *path, bool *ret_removed,
				 struct eq_error *err)
{
	path = skip_dot_slash(path);
	size_t at = SIZE_MAX, heir = SIZE_MAX, n_links = 0;
	for (size_t i = 0; i < b->n; i++) {
		const struct bent *e = &b->ents[i];
		if (!strcmp(e->path, path)) {
			at = i;
		} else if (e->type == EQ_ENTRY_HARDLINK && !strcmp(e->link, path)) {
			n_links++;
			if (heir == SIZE_MAX || strcmp(e->path, b->ents[heir].path) < 0)
				heir = i;
		}
	}
	if (ret_removed)
		*ret_removed = at != SIZE_MAX;
	if (at == SIZE_MAX)
		return EQ_OK;
	/* Everything that can fail comes first, so a failure leaves the
	 * builder as it was: the new path set (it borrows the entries' paths)
	 * and the new link targets of the other hard links. */
	struct tar_strset paths;
	tar_strset_init(&paths);
	eq_err r = EQ_OK;
	for (size_t i = 0; i < b->n && !r; i++) {
		bool added;
		if (i != at)
			r = tar_strset_add(&paths, b->ents[i].path, &added, err);
	}
	char **links = NULL;
	if (!r && n_links > 1 && !(links = eq_calloc(n_links - 1, sizeof(*links))))
		r = eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory removing an entry");
	for (size_t k = 0; !r && k + 1 < n_links; k++)
		if (!(links[k] = eq_strdup(b->ents[heir].path)))
			r = eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory removing an entry");
	if (r) {
		for (size_t k = 0; links && k + 1 < n_links; k++)
			eq_free(links[k]);
		eq_free(links);
		tar_strset_done(&paths);
		return r;
	}
	if (heir != SIZE_MAX) {
		/* The heir takes over the file: data source, metadata, xattrs. */
		size_t k = 0;
		for (size_t i = 0; i < b->n; i++) {
			struct bent *e = &b->ents[i];
			if (i != heir && i != at && e->type == EQ_ENTRY_HARDLINK && !strcmp(e->link, path)) {
				eq_free(e->link);
				e->link = links[k++];
			}
		}
		struct bent *h = &b->ents[heir], *gone = &b->ents[at];
		char *hpath = h->path;
		eq_free(h->link);
		free_xattrs(h->xattrs, h->n_xattrs);
		*h = *gone;
		h->path = hpath;
		gone->link = NULL;
		gone->xattrs = NULL;
		gone->n_xattrs = 0;
	}
	eq_free(links);
	bent_done(&b->ents[at]);
	memmove(&b->ents[at], &b->ents[at + 1], (b->n - at - 1) * sizeof(*b->ents));
	b->n--;
	tar_strset_done(&b->paths);
	b->paths = paths;
	return EQ_OK;
}

/* ---- entries found on disk --------------------------------------------- */

/*
 * Which xattrs are package content. user.* and security.* (capabilities,
 * IMA/EVM) are. LSM labels (SELinux, Smack, AppArmor) are assigned by the
 * policy of the system the files sit on, so a device rebuilding its payload
 * would never match; trusted.* is readable only with CAP_SYS_ADMIN, so the
 * bytes would depend on who builds. Of system.*, the two POSIX ACLs are:
 * images carry them (systemd-tmpfiles gives var/log/journal both), and an
 * image component that sets them must rebuild with them on the device.
 */
bool eq_payload_xattr_kept(const char *name)
{
	if (!strncmp(name, "user.", 5) || !strcmp(name, "system.posix_acl_access") ||
	    !strcmp(name, "system.posix_acl_default"))
		return true;
	if (strncmp(name, "security.", 9) != 0)
		return false;
	return strcmp(name, "security.selinux") != 0 && strncmp(name, "security.SMACK64", 16) != 0 &&
	       strcmp(name, "security.apparmor") != 0;
}

void eq_payload_xattr_digest(const struct eq_xattr *x, size_t n, uint8_t ret_sha256[EQ_SHA256_LEN])
{
	memset(ret_sha256, 0, EQ_SHA256_LEN);
	if (!n)
		return;
	struct eq_sha256 s;
	eq_sha256_init(&s);
	for (size_t i = 0; i < n; i++) {
		/* The length keeps "a"+"bc" apart from "ab"+"c". */
		uint64_t len = x[i].len;
		eq_sha256_update(&s, x[i].name, strlen(x[i].name) + 1);
		eq_sha256_update(&s, &len, sizeof(len));
		eq_sha256_update(&s, x[i].value, x[i].len);
	}
	eq_sha256_final(&s, ret_sha256);
}

struct xlist {
	struct eq_xattr *x;
	size_t n;
};

static void xlist_done(struct xlist *l)
{
	free_xattrs(l->x, l->n);
	l->x = NULL;
	l->n = 0;
}

static eq_err read_xattrs(const struct eq_payload_limits *lim, const char *full, const char *rel, struct xlist *out,
			  struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	/* XATTR_LIST_MAX: the kernel never returns a longer name list. */
	char names[65536];
	ssize_t len = llistxattr(full, names, sizeof(names));
	if (len < 0) {
		if (errno == ENOTSUP || errno == ENOSYS)
			return EQ_OK;
		return eq_error_errno(err, EQ_ERR_IO, "payload: entry '%s': llistxattr", eq_quote(q, sizeof(q), rel));
	}
	size_t count = 0;
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(names + i) + 1)
		if (eq_payload_xattr_kept(names + i))
			count++;
	if (!count)
		return EQ_OK;
	if (count > lim->max_xattrs)
		return eq_error_set(err, EQ_ERR_LIMIT, "payload: entry '%s': %zu xattrs, the limit is %zu",
				    eq_quote(q, sizeof(q), rel), count, lim->max_xattrs);
	out->x = eq_calloc(count, sizeof(*out->x));
	if (!out->x)
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for xattrs");
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(names + i) + 1) {
		const char *name = names + i;
		if (!eq_payload_xattr_kept(name) || out->n == count)
			continue;
		ssize_t vlen = lgetxattr(full, name, NULL, 0);
		if (vlen < 0)
			return eq_error_errno(err, EQ_ERR_IO, "payload: entry '%s': lgetxattr '%s'",
					      eq_quote(q, sizeof(q), rel), name);
		if ((size_t)vlen > lim->max_xattr_size)
			return eq_error_set(err, EQ_ERR_LIMIT,
					    "payload: entry '%s': xattr '%s' of %zd bytes exceeds the limit of %zu",
					    eq_quote(q, sizeof(q), rel), name, vlen, lim->max_xattr_size);
		struct eq_xattr *x = &out->x[out->n++];
		x->name = eq_strdup(name);
		x->value = eq_malloc((size_t)vlen + 1);
		if (!x->name || !x->value)
			return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for xattrs");
		ssize_t got = lgetxattr(full, name, x->value, (size_t)vlen);
		if (got != vlen)
			return eq_error_errno(err, EQ_ERR_IO, "payload: entry '%s': xattr '%s' changed while read",
					      eq_quote(q, sizeof(q), rel), name);
		x->len = (size_t)vlen;
	}
	return EQ_OK;
}

/*
 * Opens the folder holding @rel below @rootfd (O_PATH) and sets *ret_base
 * to @rel's last component. Parents resolve as if @rootfd were "/" (openat2
 * RESOLVE_IN_ROOT), the way extraction placed them, so a symlink in a slot
 * (a package's "etc2 -> /etc") never makes a device read the host's
 * /etc/shadow into a rebuilt payload; without openat2 no symlink is
 * followed at all. -1 with errno on failure.
 */
static int open_parent_in(int rootfd, const char *rel, const char **ret_base)
{
	const char *slash = strrchr(rel, '/');
	*ret_base = slash ? slash + 1 : rel;
	char *dir = eq_strndup(rel, slash ? (size_t)(slash - rel) : 0);
	if (!dir) {
		errno = ENOMEM;
		return -1;
	}
	int fd = -1;
	if (eq_open_beneath(rootfd, dir, O_PATH | O_DIRECTORY, 0, EQ_BENEATH_IN_ROOT, &fd, NULL) != EQ_OK)
		fd = -1;
	int e = errno;
	eq_free(dir);
	errno = e;
	return fd;
}

static eq_err add_found(struct eq_payload_builder *b, size_t ridx, const char *rel, int pfd, const char *base,
			const char *full, const struct stat *stp, bool *ret_isdir, struct eq_error *err);

/* Adds the file @rel below roots[@ridx] as lstat finds it. */
static eq_err add_fs(struct eq_payload_builder *b, size_t ridx, const char *rel, bool *ret_isdir, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	const char *why = tar_path_problem(rel);
	if (why)
		return eq_error_set(err, EQ_ERR_INVAL, "payload: '%s': %s", eq_quote(q, sizeof(q), rel), why);
	if (strlen(rel) > b->lim.max_path)
		return eq_error_set(err, EQ_ERR_LIMIT, "payload: entry '%s': path is longer than %zu bytes",
				    eq_quote(q, sizeof(q), rel), b->lim.max_path);
	const char *base;
	int pfd = open_parent_in(b->root_fds[ridx], rel, &base);
	if (pfd < 0) {
		if (errno == ENOENT)
			return eq_error_errno(err, EQ_ERR_NOTFOUND, "payload: '%s' not found under '%s'",
					      eq_quote(q, sizeof(q), rel), b->roots[ridx]);
		eq_err code = errno == EXDEV || errno == ELOOP ? EQ_ERR_UNSAFE
			      : errno == ENOMEM                ? EQ_ERR_NOMEM
							       : EQ_ERR_IO;
		return eq_error_errno(err, code, "payload: '%s': parent folder under '%s'", eq_quote(q, sizeof(q), rel),
				      b->roots[ridx]);
	}
	/* The entry itself is never followed: its metadata by name below
	 * the parent's descriptor, xattrs through /proc like extract's. */
	char full[64];
	snprintf(full, sizeof(full), "/proc/self/fd/%d/", pfd);
	EQ_AUTOFREE char *fullp = eq_asprintf("%s%s", full, base);
	struct stat st;
	eq_err r = EQ_OK;
	if (!fullp)
		r = eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for a path");
	else if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			r = eq_error_errno(err, EQ_ERR_NOTFOUND, "payload: '%s' not found under '%s'",
					   eq_quote(q, sizeof(q), rel), b->roots[ridx]);
		else
			r = eq_error_errno(err, EQ_ERR_IO, "payload: lstat '%s'", eq_quote(q, sizeof(q), rel));
	}
	if (r) {
		close(pfd);
		return r;
	}
	r = add_found(b, ridx, rel, pfd, base, fullp, &st, ret_isdir, err);
	close(pfd);
	return r;
}

/* add_fs() of the entry @base in @pfd (@full names it through /proc). */
static eq_err add_found(struct eq_payload_builder *b, size_t ridx, const char *rel, int pfd, const char *base,
			const char *full, const struct stat *stp, bool *ret_isdir, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	EQ_AUTOFREE char *target = NULL;
	struct stat st = *stp;
	struct eq_payload_entry e = {
		.path = rel,
		.mode = (uint32_t)(st.st_mode & 07777),
		.uid = (uint32_t)st.st_uid,
		.gid = (uint32_t)st.st_gid,
	};
	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
		e.type = EQ_ENTRY_FILE;
		e.size = (uint64_t)st.st_size;
		break;
	case S_IFDIR: e.type = EQ_ENTRY_DIR; break;
	case S_IFLNK: {
		e.type = EQ_ENTRY_SYMLINK;
		size_t cap = b->lim.max_path + 2;
		target = eq_malloc(cap);
		if (!target)
			return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for a link target");
		ssize_t n = readlinkat(pfd, base, target, cap);
		if (n < 0)
			return eq_error_errno(err, EQ_ERR_IO, "payload: readlink '%s'", eq_quote(q, sizeof(q), rel));
		if ((size_t)n >= cap - 1)
			return eq_error_set(err, EQ_ERR_LIMIT,
					    "payload: entry '%s': link target is longer than %zu bytes",
					    eq_quote(q, sizeof(q), rel), b->lim.max_path);
		target[n] = '\0';
		e.link = target;
		break;
	}
	case S_IFCHR:
	case S_IFBLK:
		e.type = S_ISCHR(st.st_mode) ? EQ_ENTRY_CHR : EQ_ENTRY_BLK;
		e.devmajor = major(st.st_rdev);
		e.devminor = minor(st.st_rdev);
		break;
	case S_IFIFO: e.type = EQ_ENTRY_FIFO; break;
	default:
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "payload: entry '%s': sockets cannot be stored",
				    eq_quote(q, sizeof(q), rel));
	}
	struct xlist xl = {0};
	eq_err r = read_xattrs(&b->lim, full, rel, &xl, err);
	if (!r) {
		e.xattrs = xl.x;
		e.n_xattrs = xl.n;
		r = add_entry(b, &e, -1, 0, ridx, &st, err);
	}
	xlist_done(&xl);
	if (!r && ret_isdir)
		*ret_isdir = e.type == EQ_ENTRY_DIR;
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Directory names are read in full and the directory closed before
 * descending, so the walk holds one descriptor whatever the depth. */
static eq_err walk(struct eq_payload_builder *b, size_t ridx, const char *rel, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	EQ_AUTOFREE char *full = rel[0] ? eq_asprintf("%s/%s", b->roots[ridx], rel) : eq_strdup(b->roots[ridx]);
	if (!full)
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for a path");
	/* Opened as add_fs() found it: below the root, never through a
	 * symlink that replaced it since. */
	int dfd = -1;
	if (!rel[0]) {
		dfd = openat(b->root_fds[ridx], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		const char *base;
		int pfd = open_parent_in(b->root_fds[ridx], rel, &base);
		if (pfd >= 0) {
			dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int e = errno;
			close(pfd);
			errno = e;
		}
	}
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		eq_err r = eq_error_errno(err, errno == ENOMEM ? EQ_ERR_NOMEM : EQ_ERR_IO, "payload: opendir '%s'",
					  eq_quote(q, sizeof(q), full));
		if (dfd >= 0)
			close(dfd);
		return r;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	eq_err r = EQ_OK;
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (!de) {
			if (errno)
				r = eq_error_errno(err, EQ_ERR_IO, "payload: readdir '%s'",
						   eq_quote(q, sizeof(q), full));
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 32;
			char **nn = eq_realloc(names, nc * sizeof(*nn));
			if (!nn) {
				r = eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory reading '%s'",
						 eq_quote(q, sizeof(q), full));
				break;
			}
			names = nn;
			cap = nc;
		}
		names[n] = rel[0] ? eq_asprintf("%s/%s", rel, de->d_name) : eq_strdup(de->d_name);
		if (!names[n]) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory reading '%s'",
					 eq_quote(q, sizeof(q), full));
			break;
		}
		n++;
	}
	closedir(d);
	if (!r && n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && !r; i++) {
		bool isdir = false;
		r = add_fs(b, ridx, names[i], &isdir, err);
		if (!r && isdir)
			r = walk(b, ridx, names[i], err);
	}
	for (size_t i = 0; i < n; i++)
		eq_free(names[i]);
	eq_free(names);
	return r;
}

static eq_err add_root(struct eq_payload_builder *b, const char *root, size_t *ret_idx, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	struct stat st;
	if (stat(root, &st) < 0)
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "payload: root '%s'",
				      eq_quote(q, sizeof(q), root));
	if (!S_ISDIR(st.st_mode))
		return eq_error_set(err, EQ_ERR_INVAL, "payload: root '%s' is not a directory",
				    eq_quote(q, sizeof(q), root));
	char **nr = eq_realloc(b->roots, (b->n_roots + 1) * sizeof(*nr));
	if (!nr)
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory");
	b->roots = nr;
	int *nf = eq_realloc(b->root_fds, (b->n_roots + 1) * sizeof(*nf));
	if (!nf)
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory");
	b->root_fds = nf;
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "payload: root '%s'", eq_quote(q, sizeof(q), root));
	b->roots[b->n_roots] = eq_strdup(root);
	if (!b->roots[b->n_roots]) {
		close(fd);
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory");
	}
	b->root_fds[b->n_roots] = fd;
	*ret_idx = b->n_roots++;
	return EQ_OK;
}

eq_err eq_payload_builder_add_tree(struct eq_payload_builder *b, const char *root, struct eq_error *err)
{
	size_t ridx;
	eq_err r = add_root(b, root, &ridx, err);
	return r ? r : walk(b, ridx, "", err);
}

eq_err eq_payload_builder_add_paths(struct eq_payload_builder *b, const char *root, const char *const *paths,
				    size_t n_paths, struct eq_error *err)
{
	size_t ridx;
	eq_err r = add_root(b, root, &ridx, err);
	for (size_t i = 0; i < n_paths && !r; i++)
		r = add_fs(b, ridx, skip_dot_slash(paths[i]), NULL, err);
	return r;
}

/* ---- writing ------------------------------------------------------------ */

struct out {
	eq_write_fn sink;
	void *ctx;
	struct eq_sha256 sha;
	uint64_t size;
	uint8_t *buf;
	size_t len;
};

static eq_err out_flush(struct out *o, struct eq_error *err)
{
	if (!o->len)
		return EQ_OK;
	eq_sha256_update(&o->sha, o->buf, o->len);
	eq_err r = o->sink(o->ctx, o->buf, o->len, err);
	if (r)
		return eq_error_prefix(err, r, "payload: writing at byte %" PRIu64, o->size);
	o->size += o->len;
	o->len = 0;
	return EQ_OK;
}

static eq_err out_put(struct out *o, const void *data, size_t len, struct eq_error *err)
{
	while (len) {
		if (o->len == OUT_BUF_LEN) {
			eq_err r = out_flush(o, err);
			if (r)
				return r;
		}
		size_t n = OUT_BUF_LEN - o->len;
		if (n > len)
			n = len;
		if (data) {
			memcpy(o->buf + o->len, data, n);
			data = (const uint8_t *)data + n;
		} else {
			memset(o->buf + o->len, 0, n);
		}
		o->len += n;
		len -= n;
	}
	return EQ_OK;
}

static size_t ndigits(size_t v)
{
	size_t d = 1;
	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

/* One "LEN KEY=VALUE\n" record; LEN counts itself. */
static eq_err pax_record(struct eq_buf *pax, const char *key, const void *val, size_t vlen, struct eq_error *err)
{
	size_t body = strlen(key) + vlen + 3;
	size_t d = ndigits(body);
	while (ndigits(body + d) != d)
		d = ndigits(body + d);
	eq_err r = eq_buf_printf(pax, err, "%zu %s=", body + d, key);
	if (!r)
		r = eq_buf_append(pax, val, vlen, err);
	if (!r)
		r = eq_buf_append(pax, "\n", 1, err);
	return r;
}

static void put_str(uint8_t *field, size_t width, const char *s)
{
	size_t n = strlen(s);
	memcpy(field, s, n < width ? n : width);
}

static void fill_header(uint8_t h[TAR_BLOCK], const char *name, uint32_t mode, uint64_t uid, uint64_t gid,
			uint64_t size, char type, const char *link, uint32_t maj, uint32_t min)
{
	memset(h, 0, TAR_BLOCK);
	put_str(h + TAR_NAME_OFF, TAR_NAME_LEN, name);
	tar_put_octal(h + TAR_MODE_OFF, TAR_ID_LEN, mode);
	tar_put_octal(h + TAR_UID_OFF, TAR_ID_LEN, uid <= TAR_OCTAL7_MAX ? uid : 0);
	tar_put_octal(h + TAR_GID_OFF, TAR_ID_LEN, gid <= TAR_OCTAL7_MAX ? gid : 0);
	tar_put_octal(h + TAR_SIZE_OFF, TAR_SIZE_LEN, size <= TAR_OCTAL11_MAX ? size : 0);
	tar_put_octal(h + TAR_MTIME_OFF, TAR_SIZE_LEN, 0);
	h[TAR_TYPE_OFF] = (uint8_t)type;
	if (link)
		put_str(h + TAR_LINK_OFF, TAR_LINK_LEN, link);
	memcpy(h + TAR_MAGIC_OFF,
	       "ustar\0"
	       "00",
	       8);
	tar_put_octal(h + TAR_DEVMAJOR_OFF, TAR_ID_LEN, maj);
	tar_put_octal(h + TAR_DEVMINOR_OFF, TAR_ID_LEN, min);
	/* Six digits, NUL, space: the spelling GNU tar and bsdtar use. */
	tar_put_octal(h + TAR_CHKSUM_OFF, 7, tar_checksum(h));
	h[TAR_CHKSUM_OFF + 7] = ' ';
}

static char type_char(enum eq_entry_type t)
{
	switch (t) {
	case EQ_ENTRY_FILE: return '0';
	case EQ_ENTRY_HARDLINK: return '1';
	case EQ_ENTRY_SYMLINK: return '2';
	case EQ_ENTRY_CHR: return '3';
	case EQ_ENTRY_BLK: return '4';
	case EQ_ENTRY_DIR: return '5';
	case EQ_ENTRY_FIFO: return '6';
	}
	return '0';
}

/* What one output header says, after hard links are resolved. */
struct hdr {
	const char *path;
	enum eq_entry_type type;
	const char *link;
	const struct bent *meta; /* mode, owner, devices, xattrs, data */
	uint64_t size;
};

static eq_err emit_header(struct out *o, const struct hdr *h, struct eq_buf *pax, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	uint8_t blk[TAR_BLOCK];
	EQ_AUTOFREE char *name = h->type == EQ_ENTRY_DIR ? eq_asprintf("%s/", h->path) : eq_strdup(h->path);
	if (!name)
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory");
	const struct bent *m = h->meta;
	bool xa = h->type != EQ_ENTRY_HARDLINK;
	eq_err r = EQ_OK;
	eq_buf_reset(pax);
	if (strlen(name) > TAR_NAME_LEN)
		r = pax_record(pax, "path", name, strlen(name), err);
	if (!r && h->link && strlen(h->link) > TAR_LINK_LEN)
		r = pax_record(pax, "linkpath", h->link, strlen(h->link), err);
	char num[24];
	if (!r && h->size > TAR_OCTAL11_MAX) {
		snprintf(num, sizeof(num), "%" PRIu64, h->size);
		r = pax_record(pax, "size", num, strlen(num), err);
	}
	if (!r && m->uid > TAR_OCTAL7_MAX) {
		snprintf(num, sizeof(num), "%" PRIu32, m->uid);
		r = pax_record(pax, "uid", num, strlen(num), err);
	}
	if (!r && m->gid > TAR_OCTAL7_MAX) {
		snprintf(num, sizeof(num), "%" PRIu32, m->gid);
		r = pax_record(pax, "gid", num, strlen(num), err);
	}
	for (size_t i = 0; xa && !r && i < m->n_xattrs; i++) {
		EQ_AUTOFREE char *key = eq_asprintf(TAR_PAX_XATTR "%s", m->xattrs[i].name);
		r = key ? pax_record(pax, key, m->xattrs[i].value, m->xattrs[i].len, err)
			: eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory");
	}
	if (r)
		return eq_error_prefix(err, r, "payload: entry '%s'", eq_quote(q, sizeof(q), h->path));
	if (pax->len) {
		fill_header(blk, TAR_PAX_NAME, 0644, 0, 0, pax->len, 'x', NULL, 0, 0);
		r = out_put(o, blk, TAR_BLOCK, err);
		if (!r)
			r = out_put(o, pax->data, pax->len, err);
		if (!r)
			r = out_put(o, NULL, (TAR_BLOCK - pax->len % TAR_BLOCK) % TAR_BLOCK, err);
		if (r)
			return r;
	}
	bool dev = h->type == EQ_ENTRY_CHR || h->type == EQ_ENTRY_BLK;
	fill_header(blk, name, m->mode, m->uid, m->gid, h->size, type_char(h->type), h->link, dev ? m->devmajor : 0,
		    dev ? m->devminor : 0);
	return out_put(o, blk, TAR_BLOCK, err);
}

static eq_err emit_data(struct eq_payload_builder *b, struct out *o, const struct hdr *h, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	const struct bent *m = h->meta;
	uint64_t left = h->size;
	int fd = m->data_fd;
	int own_fd = -1;
	eq_err r = EQ_OK;
	if (!left)
		return EQ_OK;
	if (fd < 0) {
		/* Found again the way add_fs() found it; O_NONBLOCK so a fifo
		 * swapped in meanwhile cannot block us (it fails the check). */
		const char *base;
		int pfd = open_parent_in(b->root_fds[m->root], m->path, &base);
		if (pfd >= 0) {
			own_fd = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
			int e = errno;
			close(pfd);
			errno = e;
		}
		struct stat st;
		if (own_fd < 0)
			return eq_error_errno(err, errno == ENOMEM ? EQ_ERR_NOMEM : EQ_ERR_IO,
					      "payload: entry '%s': open", eq_quote(q, sizeof(q), m->path));
		if (fstat(own_fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != h->size) {
			close(own_fd);
			return eq_error_set(err, EQ_ERR_STATE, "payload: entry '%s': file changed since it was added",
					    eq_quote(q, sizeof(q), m->path));
		}
		fd = own_fd;
	}
	uint64_t pos = m->data_offset;
	while (left && !r) {
		if (o->len == OUT_BUF_LEN && (r = out_flush(o, err)))
			break;
		size_t n = OUT_BUF_LEN - o->len;
		if (n > left)
			n = (size_t)left;
		ssize_t got = pread(fd, o->buf + o->len, n, (off_t)pos);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			r = eq_error_errno(err, EQ_ERR_IO, "payload: entry '%s': read",
					   eq_quote(q, sizeof(q), m->path));
		else if (got == 0)
			r = eq_error_set(err, EQ_ERR_STATE,
					 "payload: entry '%s': file shrank since it was added (%" PRIu64
					 " bytes missing)",
					 eq_quote(q, sizeof(q), m->path), left);
		else {
			o->len += (size_t)got;
			pos += (uint64_t)got;
			left -= (uint64_t)got;
		}
	}
	if (own_fd >= 0)
		close(own_fd);
	if (r)
		return r;
	return out_put(o, NULL, (TAR_BLOCK - h->size % TAR_BLOCK) % TAR_BLOCK, err);
}

static int cmp_bent(const void *a, const void *b)
{
	return strcmp(((const struct bent *)a)->path, ((const struct bent *)b)->path);
}

struct inokey {
	uint64_t dev, ino;
	size_t idx;
};

static int cmp_inokey(const void *a, const void *b)
{
	const struct inokey *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static size_t uf_find(size_t *parent, size_t i)
{
	while (parent[i] != i) {
		parent[i] = parent[parent[i]];
		i = parent[i];
	}
	return i;
}

static void uf_union(size_t *parent, size_t a, size_t b)
{
	a = uf_find(parent, a);
	b = uf_find(parent, b);
	if (a != b)
		parent[a > b ? a : b] = a < b ? a : b;
}

static size_t find_path(const struct eq_payload_builder *b, const char *path)
{
	size_t lo = 0, hi = b->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(b->ents[mid].path, path);
		if (!c)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

/*
 * Every set of paths naming one file (same inode on disk, or explicit hard
 * links) becomes: the first path in sort order as the file itself, the
 * others as hard links to it, so the bytes do not depend on which name a
 * walk met first. @leader[set] and @meta[set] are indexed by set root.
 */
static eq_err group_links(struct eq_payload_builder *b, size_t *parent, size_t *leader, size_t *meta,
			  struct eq_error *err)
{
	char q[TAR_QUOTE_MAX], q2[TAR_QUOTE_MAX];
	size_t nk = 0;
	for (size_t i = 0; i < b->n; i++) {
		parent[i] = i;
		leader[i] = meta[i] = SIZE_MAX;
		nk += b->ents[i].has_ino;
	}
	if (nk) {
		struct inokey *k = eq_malloc(nk * sizeof(*k));
		if (!k)
			return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for hard links");
		nk = 0;
		for (size_t i = 0; i < b->n; i++)
			if (b->ents[i].has_ino)
				k[nk++] = (struct inokey){b->ents[i].dev, b->ents[i].ino, i};
		qsort(k, nk, sizeof(*k), cmp_inokey);
		for (size_t i = 1; i < nk; i++)
			if (k[i].dev == k[i - 1].dev && k[i].ino == k[i - 1].ino)
				uf_union(parent, k[i - 1].idx, k[i].idx);
		eq_free(k);
	}
	for (size_t i = 0; i < b->n; i++) {
		if (b->ents[i].type != EQ_ENTRY_HARDLINK)
			continue;
		size_t j = find_path(b, b->ents[i].link);
		if (j == SIZE_MAX)
			return eq_error_set(err, EQ_ERR_INVAL,
					    "payload: entry '%s': hard link to '%s', which is not in the payload",
					    eq_quote(q, sizeof(q), b->ents[i].path),
					    eq_quote(q2, sizeof(q2), b->ents[i].link));
		uf_union(parent, i, j);
	}
	for (size_t i = 0; i < b->n; i++) {
		size_t r = uf_find(parent, i);
		if (leader[r] == SIZE_MAX)
			leader[r] = i;
		if (meta[r] == SIZE_MAX && b->ents[i].type != EQ_ENTRY_HARDLINK)
			meta[r] = i;
	}
	for (size_t i = 0; i < b->n; i++) {
		size_t r = uf_find(parent, i);
		if (meta[r] == SIZE_MAX)
			return eq_error_set(err, EQ_ERR_INVAL, "payload: entry '%s': hard links without a file",
					    eq_quote(q, sizeof(q), b->ents[i].path));
		if (b->ents[meta[r]].type == EQ_ENTRY_DIR && leader[r] != i)
			return eq_error_set(err, EQ_ERR_INVAL, "payload: entry '%s': hard link to a directory",
					    eq_quote(q, sizeof(q), b->ents[i].path));
	}
	return EQ_OK;
}

eq_err eq_payload_builder_write(struct eq_payload_builder *b, eq_write_fn sink, void *sink_ctx,
				uint8_t ret_sha256[EQ_SHA256_LEN], uint64_t *ret_size, struct eq_error *err)
{
	if (b->n)
		qsort(b->ents, b->n, sizeof(*b->ents), cmp_bent);
	size_t n = b->n ? b->n : 1;
	EQ_AUTOFREE size_t *parent = eq_malloc(n * sizeof(size_t));
	EQ_AUTOFREE size_t *leader = eq_malloc(n * sizeof(size_t));
	EQ_AUTOFREE size_t *meta = eq_malloc(n * sizeof(size_t));
	EQ_AUTOFREE uint8_t *buf = eq_malloc(OUT_BUF_LEN);
	if (!parent || !leader || !meta || !buf)
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for writing");
	eq_err r = group_links(b, parent, leader, meta, err);
	if (r)
		return r;
	uint64_t total = 0;
	for (size_t i = 0; i < b->n; i++) {
		const struct bent *e = &b->ents[i];
		if (e->type == EQ_ENTRY_FILE && leader[uf_find(parent, i)] == i) {
			if (e->size > b->lim.max_total - total)
				return eq_error_set(err, EQ_ERR_LIMIT,
						    "payload: total size exceeds the limit of %" PRIu64 " at '%s'",
						    b->lim.max_total, e->path);
			total += e->size;
		}
	}

	struct out o = {.sink = sink, .ctx = sink_ctx, .buf = buf};
	eq_sha256_init(&o.sha);
	struct eq_buf pax;
	eq_buf_init(&pax, SIZE_MAX / 4);
	for (size_t i = 0; i < b->n && !r; i++) {
		size_t set = uf_find(parent, i);
		const struct bent *m = &b->ents[meta[set]];
		struct hdr h = {.path = b->ents[i].path, .meta = m};
		if (leader[set] == i) {
			h.type = m->type;
			h.link = m->type == EQ_ENTRY_SYMLINK ? m->link : NULL;
			h.size = m->type == EQ_ENTRY_FILE ? m->size : 0;
		} else {
			h.type = EQ_ENTRY_HARDLINK;
			h.link = b->ents[leader[set]].path;
		}
		r = emit_header(&o, &h, &pax, err);
		if (!r && h.type == EQ_ENTRY_FILE)
			r = emit_data(b, &o, &h, err);
	}
	eq_buf_done(&pax);
	if (!r)
		r = out_put(&o, NULL, 2 * TAR_BLOCK, err);
	if (!r)
		r = out_flush(&o, err);
	if (r)
		return r;
	eq_sha256_final(&o.sha, ret_sha256);
	*ret_size = o.size;
	return EQ_OK;
}
