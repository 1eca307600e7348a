/*
 * Package reader: .deb, .ipk, .rpm and tarballs through libarchive, into
 * package metadata and a canonical payload builder.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eq/gen.h"

#define COPY_BUF (64u * 1024u)
/* Longest chain of hard links to hard links we follow (tar never makes
 * chains; cpio and hand-made archives may). */
#define MAX_LINK_DEPTH 32

/* One data entry, collected before it goes to the builder so that hard-link
 * groups can be put into a canonical shape first. */
struct pentry {
	char *path;
	char *link;
	enum eq_entry_type type;
	uint32_t mode, uid, gid;
	uint64_t size, offset;
	uint32_t devmajor, devminor;
	struct eq_xattr *xattrs;
	size_t n_xattrs;
};

struct eq_pkg {
	struct eq_pkg_info info;
	struct eq_payload_builder *builder;
	int spool_fd;
};

struct reader {
	struct eq_pkg *pkg;
	struct eq_payload_limits lim;
	struct pentry *ents;
	size_t n, cap;
	uint64_t spool_size;
	bool have_data, have_control;
	uint8_t buf[COPY_BUF];
};

/* ---- info ------------------------------------------------------------ */

void eq_pkg_info_done(struct eq_pkg_info *i)
{
	if (!i)
		return;
	eq_free(i->name);
	eq_free(i->version);
	eq_free(i->arch);
	eq_free(i->depends);
	eq_free(i->file);
	memset(i, 0, sizeof(*i));
}

void eq_pkg_default_taskhash(const struct eq_pkg_info *info, const uint8_t payload_sha256[EQ_SHA256_LEN],
			     char ret_hex[EQ_SHA256_HEX_LEN + 1])
{
	static const char tag[] = "eqota-taskhash-v1";
	const char *fields[] = {info->name, info->version, info->arch, info->depends};
	char payload_hex[EQ_SHA256_HEX_LEN + 1];
	struct eq_sha256 h;
	uint8_t d[EQ_SHA256_LEN];

	eq_hex_encode(payload_sha256, EQ_SHA256_LEN, payload_hex);
	eq_sha256_init(&h);
	eq_sha256_update(&h, tag, sizeof(tag) - 1);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		eq_sha256_update(&h, "", 1);
		if (fields[i])
			eq_sha256_update(&h, fields[i], strlen(fields[i]));
	}
	eq_sha256_update(&h, "", 1);
	eq_sha256_update(&h, payload_hex, EQ_SHA256_HEX_LEN);
	eq_sha256_final(&h, d);
	eq_hex_encode(d, EQ_SHA256_LEN, ret_hex);
}

/* ---- metadata -------------------------------------------------------- */

/* Name, version and arch end up in manifests and file names: no spaces,
 * no control characters, no '/'. */
static eq_err check_field(const char *what, const char *v, struct eq_error *err)
{
	size_t len = strlen(v);
	if (len == 0)
		return eq_error_set(err, EQ_ERR_PARSE, "%s: empty", what);
	if (len > EQ_PKG_FIELD_MAX)
		return eq_error_set(err, EQ_ERR_LIMIT, "%s '%.40s...': longer than %d bytes", what, v,
				    EQ_PKG_FIELD_MAX);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p <= 0x20 || *p >= 0x7f || *p == '/')
			return eq_error_set(err, EQ_ERR_PARSE, "%s '%.80s': invalid character 0x%02x", what, v,
					    (unsigned)*p);
	}
	return EQ_OK;
}

static eq_err set_str(char **dst, const char *s, size_t n, struct eq_error *err)
{
	char *c = eq_strndup(s, n);
	if (!c)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	eq_free(*dst);
	*dst = c;
	return EQ_OK;
}

/* Appends @v to the growing value *@dst, collapsing whitespace runs into
 * one space so that re-wrapping a control file does not change the
 * taskhash. */
static eq_err fold_append(struct eq_buf *b, const char *v, size_t n, struct eq_error *err)
{
	for (size_t i = 0; i < n; i++) {
		char c = v[i];
		bool ws = c == ' ' || c == '\t';
		if (ws) {
			if (b->len == 0 || b->data[b->len - 1] == ' ')
				continue;
			c = ' ';
		}
		eq_err r = eq_buf_append(b, &c, 1, err);
		if (r != EQ_OK)
			return r;
	}
	if (b->len && b->data[b->len - 1] != ' ')
		return eq_buf_append(b, " ", 1, err);
	return EQ_OK;
}

enum ctl_field { CF_PACKAGE, CF_VERSION, CF_ARCH, CF_DEPENDS, CF_PREDEPENDS, CF_N };
static const char *const ctl_names[CF_N] = {"Package", "Version", "Architecture", "Depends", "Pre-Depends"};

/* Parses the first paragraph of a deb822 control file. */
static eq_err parse_control(struct eq_pkg_info *info, const char *text, size_t len, struct eq_error *err)
{
	struct eq_buf val[CF_N];
	bool seen[CF_N] = {false};
	for (int i = 0; i < CF_N; i++)
		eq_buf_init(&val[i], EQ_PKG_DEPENDS_MAX);
	eq_err r = EQ_OK;
	int cur = -1; /* field whose continuation lines follow, -1: one we ignore */
	size_t lineno = 0;
	const char *p = text, *end = text + len;
	while (p < end && r == EQ_OK) {
		lineno++;
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *line = p;
		p = nl ? nl + 1 : end;
		size_t ll = (size_t)(le - line);
		if (ll && line[ll - 1] == '\r')
			ll--;
		bool blank = true;
		for (size_t i = 0; i < ll; i++)
			blank = blank && (line[i] == ' ' || line[i] == '\t');
		if (blank) {
			/* A blank line ends the paragraph (leading ones are skipped). */
			if (lineno > 1 && (seen[CF_PACKAGE] || cur != -1))
				break;
			continue;
		}
		if (line[0] == '#')
			continue;
		if (line[0] == ' ' || line[0] == '\t') {
			if (cur >= 0)
				r = fold_append(&val[cur], line, ll, err);
			continue;
		}
		const char *colon = memchr(line, ':', ll);
		if (!colon) {
			r = eq_error_set(err, EQ_ERR_PARSE, "control:%zu: expected 'Field: value'", lineno);
			break;
		}
		size_t nlen = (size_t)(colon - line);
		cur = -2;
		for (int i = 0; i < CF_N; i++) {
			if (strlen(ctl_names[i]) == nlen && strncasecmp(line, ctl_names[i], nlen) == 0)
				cur = i;
		}
		if (cur < 0) {
			cur = -1;
			continue;
		}
		if (seen[cur]) {
			r = eq_error_set(err, EQ_ERR_PARSE, "control:%zu: duplicate field '%s'", lineno,
					 ctl_names[cur]);
			break;
		}
		seen[cur] = true;
		r = fold_append(&val[cur], colon + 1, ll - nlen - 1, err);
		if (r == EQ_ERR_LIMIT)
			eq_error_prefix(err, r, "control: field '%s'", ctl_names[cur]);
	}
	for (int i = 0; i < CF_N && r == EQ_OK; i++) {
		while (val[i].len && val[i].data[val[i].len - 1] == ' ')
			val[i].data[--val[i].len] = '\0';
		if (i <= CF_ARCH && (!seen[i] || val[i].len == 0))
			r = eq_error_set(err, EQ_ERR_PARSE, "control: missing field '%s'", ctl_names[i]);
	}
	if (r == EQ_OK)
		r = check_field("control: Package", (char *)val[CF_PACKAGE].data, err);
	if (r == EQ_OK)
		r = check_field("control: Version", (char *)val[CF_VERSION].data, err);
	if (r == EQ_OK)
		r = check_field("control: Architecture", (char *)val[CF_ARCH].data, err);
	if (r == EQ_OK)
		r = set_str(&info->name, (char *)val[CF_PACKAGE].data, val[CF_PACKAGE].len, err);
	if (r == EQ_OK)
		r = set_str(&info->version, (char *)val[CF_VERSION].data, val[CF_VERSION].len, err);
	if (r == EQ_OK)
		r = set_str(&info->arch, (char *)val[CF_ARCH].data, val[CF_ARCH].len, err);
	if (r == EQ_OK) {
		const char *pre = val[CF_PREDEPENDS].len ? (char *)val[CF_PREDEPENDS].data : NULL;
		const char *dep = val[CF_DEPENDS].len ? (char *)val[CF_DEPENDS].data : NULL;
		char *d = eq_asprintf("%s%s%s", pre ? pre : "", pre && dep ? ", " : "", dep ? dep : "");
		if (!d) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		} else if (strlen(d) > EQ_PKG_DEPENDS_MAX) {
			eq_free(d);
			r = eq_error_set(err, EQ_ERR_LIMIT, "control: dependencies longer than %u bytes",
					 EQ_PKG_DEPENDS_MAX);
		} else {
			eq_free(info->depends);
			info->depends = d;
		}
	}
	for (int i = 0; i < CF_N; i++)
		eq_buf_done(&val[i]);
	return r;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* "NAME-VERSION-RELEASE.ARCH.rpm": the RPM header is not parsed (it needs
 * its own tag reader); rpmbuild always names its output this way. */
static eq_err names_from_rpm(struct eq_pkg_info *info, const char *path, struct eq_error *err)
{
	const char *b = base_name(path);
	if (!ends_with(b, ".rpm"))
		return eq_error_set(err, EQ_ERR_PARSE, "file name '%s' is not NAME-VERSION-RELEASE.ARCH.rpm", b);
	size_t n = strlen(b) - 4;
	const char *dot = NULL;
	for (size_t i = n; i > 0; i--) {
		if (b[i - 1] == '.') {
			dot = b + i - 1;
			break;
		}
	}
	const char *rel = NULL, *ver = NULL;
	if (dot) {
		for (const char *q = dot; q > b; q--) {
			if (q[-1] == '-') {
				if (!rel) {
					rel = q - 1;
				} else {
					ver = q - 1;
					break;
				}
			}
		}
	}
	if (!dot || !rel || !ver || ver == b)
		return eq_error_set(err, EQ_ERR_PARSE, "file name '%s' is not NAME-VERSION-RELEASE.ARCH.rpm", b);
	eq_err r = set_str(&info->name, b, (size_t)(ver - b), err);
	if (r == EQ_OK)
		r = set_str(&info->version, ver + 1, (size_t)(dot - ver - 1), err);
	if (r == EQ_OK)
		r = set_str(&info->arch, dot + 1, (size_t)(b + n - dot - 1), err);
	if (r == EQ_OK)
		r = set_str(&info->depends, "", 0, err);
	return r;
}

/* "NAME_VERSION.tar.*" (split at the first '_') or "NAME-VERSION.tar.*"
 * (split at the first '-' followed by a digit); arch "all". */
static eq_err names_from_tarball(struct eq_pkg_info *info, const char *path, struct eq_error *err)
{
	static const char *const sfx[] = {".tar.gz", ".tar.xz", ".tar.zst", ".tar.bz2", ".tar.lzma",
					  ".tgz",    ".txz",    ".tbz2",    ".tar"};
	const char *b = base_name(path);
	size_t n = strlen(b);
	bool ok = false;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if (ends_with(b, sfx[i])) {
			n -= strlen(sfx[i]);
			ok = true;
			break;
		}
	}
	const char *sep = NULL;
	if (ok) {
		sep = memchr(b, '_', n);
		for (size_t i = 0; !sep && i + 1 < n; i++) {
			if (b[i] == '-' && b[i + 1] >= '0' && b[i + 1] <= '9')
				sep = b + i;
		}
	}
	if (!sep || sep == b || sep == b + n - 1)
		return eq_error_set(err, EQ_ERR_PARSE,
				    "file name '%s': expected NAME_VERSION.tar.* or NAME-VERSION.tar.*", b);
	eq_err r = set_str(&info->name, b, (size_t)(sep - b), err);
	if (r == EQ_OK)
		r = set_str(&info->version, sep + 1, (size_t)(b + n - sep - 1), err);
	if (r == EQ_OK)
		r = set_str(&info->arch, "all", 3, err);
	if (r == EQ_OK)
		r = set_str(&info->depends, "", 0, err);
	return r;
}

/* ---- archives -------------------------------------------------------- */

static eq_err arch_fail(struct archive *a, const char *what, struct eq_error *err)
{
	const char *m = archive_error_string(a);
	if (archive_errno(a) == ENOMEM)
		return eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", what);
	return eq_error_set(err, EQ_ERR_PARSE, "%s: %s", what, m ? m : "damaged archive");
}

/* Only in-process decompressors: libarchive would otherwise run external
 * programs on untrusted input when a library is missing. */
static eq_err setup_filters(struct archive *a, struct eq_error *err)
{
	int (*const fns[])(struct archive *) = {archive_read_support_filter_none, archive_read_support_filter_gzip,
						archive_read_support_filter_xz,   archive_read_support_filter_bzip2,
						archive_read_support_filter_zstd, archive_read_support_filter_lzma};
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (fns[i](a) != ARCHIVE_OK)
			return arch_fail(a, "libarchive lacks an in-process decompressor", err);
	}
	return EQ_OK;
}

struct nested {
	struct archive *outer;
	uint8_t buf[COPY_BUF];
};

/* Feeds an inner archive (data.tar.* inside the ar) straight from the
 * outer archive's member data, so a large data.tar is never held whole. */
static la_ssize_t nested_read(struct archive *inner, void *ctx, const void **buf)
{
	struct nested *n = ctx;
	la_ssize_t got = archive_read_data(n->outer, n->buf, sizeof(n->buf));
	if (got < 0) {
		const char *m = archive_error_string(n->outer);
		archive_set_error(inner, archive_errno(n->outer), "%s", m ? m : "read error");
		return -1;
	}
	*buf = n->buf;
	return got;
}

/* Normalises an archive path: drops leading "/" and "./", "." components,
 * repeated and trailing slashes; ".." is refused. "" is the root entry. */
static eq_err norm_path(const char *in, size_t max, char **ret, struct eq_error *err)
{
	size_t len = strlen(in);
	if (len > max + 2)
		return eq_error_set(err, EQ_ERR_LIMIT, "path '%.80s...': longer than %zu bytes", in, max);
	char *out = eq_malloc(len + 1);
	if (!out)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	size_t o = 0;
	const char *p = in;
	while (*p) {
		while (*p == '/')
			p++;
		const char *c = p;
		while (*p && *p != '/')
			p++;
		size_t cl = (size_t)(p - c);
		if (cl == 0 || (cl == 1 && c[0] == '.'))
			continue;
		if (cl == 2 && c[0] == '.' && c[1] == '.') {
			eq_free(out);
			return eq_error_set(err, EQ_ERR_UNSAFE, "path '%.200s': '..' component", in);
		}
		if (o)
			out[o++] = '/';
		memcpy(out + o, c, cl);
		o += cl;
	}
	out[o] = '\0';
	if (o > max) {
		eq_free(out);
		return eq_error_set(err, EQ_ERR_LIMIT, "path '%.80s...': longer than %zu bytes", in, max);
	}
	*ret = out;
	return EQ_OK;
}

static void pentry_done(struct pentry *e)
{
	eq_free(e->path);
	eq_free(e->link);
	for (size_t i = 0; i < e->n_xattrs; i++) {
		eq_free(e->xattrs[i].name);
		eq_free(e->xattrs[i].value);
	}
	eq_free(e->xattrs);
}

static eq_err spool_data(struct reader *rd, struct archive *a, struct pentry *e, struct eq_error *err)
{
	e->offset = rd->spool_size;
	uint64_t n = 0;
	for (;;) {
		la_ssize_t got = archive_read_data(a, rd->buf, sizeof(rd->buf));
		if (got < 0)
			return arch_fail(a, "reading data", err);
		if (got == 0)
			break;
		n += (uint64_t)got;
		if (n > rd->lim.max_file_size)
			return eq_error_set(err, EQ_ERR_LIMIT, "file larger than %llu bytes",
					    (unsigned long long)rd->lim.max_file_size);
		if (rd->spool_size + (uint64_t)got > rd->lim.max_total)
			return eq_error_set(err, EQ_ERR_LIMIT, "package data larger than %llu bytes",
					    (unsigned long long)rd->lim.max_total);
		eq_err r = eq_write_all(rd->pkg->spool_fd, rd->buf, (size_t)got, err);
		if (r != EQ_OK) {
			eq_error_prefix(err, r, "spool file");
			return r;
		}
		rd->spool_size += (uint64_t)got;
	}
	e->size = n;
	return EQ_OK;
}

static eq_err take_xattrs(struct reader *rd, struct archive_entry *ae, struct pentry *e, struct eq_error *err)
{
	int count = archive_entry_xattr_reset(ae);
	if (count <= 0)
		return EQ_OK;
	if ((size_t)count > rd->lim.max_xattrs)
		return eq_error_set(err, EQ_ERR_LIMIT, "more than %zu xattrs", rd->lim.max_xattrs);
	e->xattrs = eq_calloc((size_t)count, sizeof(*e->xattrs));
	if (!e->xattrs)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	const char *name;
	const void *value;
	size_t size;
	while (e->n_xattrs < (size_t)count && archive_entry_xattr_next(ae, &name, &value, &size) == ARCHIVE_OK) {
		if (size > rd->lim.max_xattr_size)
			return eq_error_set(err, EQ_ERR_LIMIT, "xattr '%.80s': larger than %zu bytes", name,
					    rd->lim.max_xattr_size);
		/* libarchive's pax writer records each xattr twice (LIBARCHIVE.xattr
		 * and SCHILY.xattr) and its reader returns both copies. */
		bool dup = false;
		for (size_t k = 0; k < e->n_xattrs && !dup; k++) {
			const struct eq_xattr *o = &e->xattrs[k];
			if (strcmp(o->name, name) != 0)
				continue;
			if (o->len != size || (size && memcmp(o->value, value, size) != 0))
				return eq_error_set(err, EQ_ERR_PARSE, "xattr '%.80s': two different values", name);
			dup = true;
		}
		if (dup)
			continue;
		struct eq_xattr *x = &e->xattrs[e->n_xattrs++];
		x->name = eq_strdup(name);
		x->value = eq_malloc(size ? size : 1);
		if (!x->name || !x->value)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		if (size)
			memcpy(x->value, value, size);
		x->len = size;
	}
	return EQ_OK;
}

static eq_err add_one(struct reader *rd, struct archive *a, struct archive_entry *ae, struct pentry *e,
		      struct eq_error *err)
{
	const char *hl = archive_entry_hardlink(ae);
	eq_err r;
	if (hl) {
		e->type = EQ_ENTRY_HARDLINK;
		r = norm_path(hl, rd->lim.max_path, &e->link, err);
		if (r != EQ_OK) {
			eq_error_prefix(err, r, "hard link target");
			return r;
		}
		if (!e->link[0])
			return eq_error_set(err, EQ_ERR_PARSE, "hard link to the root directory");
		/* cpio (rpm) stores a link group's data with its last member. */
		if (archive_entry_size(ae) > 0) {
			r = spool_data(rd, a, e, err);
			if (r != EQ_OK)
				return r;
		}
	} else {
		switch (archive_entry_filetype(ae)) {
		case AE_IFREG:
			e->type = EQ_ENTRY_FILE;
			r = spool_data(rd, a, e, err);
			if (r != EQ_OK)
				return r;
			break;
		case AE_IFDIR: e->type = EQ_ENTRY_DIR; break;
		case AE_IFLNK: {
			const char *t = archive_entry_symlink(ae);
			if (!t || !*t)
				return eq_error_set(err, EQ_ERR_PARSE, "symlink without target");
			if (strlen(t) > rd->lim.max_path)
				return eq_error_set(err, EQ_ERR_LIMIT, "symlink target longer than %zu bytes",
						    rd->lim.max_path);
			e->type = EQ_ENTRY_SYMLINK;
			e->link = eq_strdup(t);
			if (!e->link)
				return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
		case AE_IFCHR:
		case AE_IFBLK:
			e->type = archive_entry_filetype(ae) == AE_IFCHR ? EQ_ENTRY_CHR : EQ_ENTRY_BLK;
			e->devmajor = (uint32_t)archive_entry_rdevmajor(ae);
			e->devminor = (uint32_t)archive_entry_rdevminor(ae);
			break;
		case AE_IFIFO: e->type = EQ_ENTRY_FIFO; break;
		default:
			return eq_error_set(err, EQ_ERR_UNSUPPORTED, "unsupported file type 0%o",
					    (unsigned)archive_entry_filetype(ae));
		}
	}
	la_int64_t uid = archive_entry_uid(ae), gid = archive_entry_gid(ae);
	if (uid < 0 || uid > (la_int64_t)UINT32_MAX || gid < 0 || gid > (la_int64_t)UINT32_MAX)
		return eq_error_set(err, EQ_ERR_PARSE, "owner %lld:%lld out of range", (long long)uid, (long long)gid);
	e->uid = (uint32_t)uid;
	e->gid = (uint32_t)gid;
	e->mode = (uint32_t)archive_entry_perm(ae) & 07777u;
	return take_xattrs(rd, ae, e, err);
}

/* Adds every entry of the (data) archive @a; @where names it in errors. */
static eq_err add_entries(struct reader *rd, struct archive *a, const char *where, struct eq_error *err)
{
	for (;;) {
		struct archive_entry *ae;
		int rc = archive_read_next_header(a, &ae);
		if (rc == ARCHIVE_EOF)
			return EQ_OK;
		/* A warning means lost metadata (a dropped xattr, say); a payload
		 * missing it would be published as if it were the package. */
		if (rc != ARCHIVE_OK)
			return arch_fail(a, where, err);
		const char *raw = archive_entry_pathname(ae);
		if (!raw)
			return eq_error_set(err, EQ_ERR_PARSE, "%s: entry %zu: no path", where, rd->n + 1);
		char *path = NULL;
		eq_err r = norm_path(raw, rd->lim.max_path, &path, err);
		if (r != EQ_OK) {
			eq_error_prefix(err, r, "%s", where);
			return r;
		}
		if (!path[0]) {
			eq_free(path);
			continue;
		}
		if (rd->n >= rd->lim.max_entries) {
			eq_free(path);
			return eq_error_set(err, EQ_ERR_LIMIT, "%s: more than %llu entries", where,
					    (unsigned long long)rd->lim.max_entries);
		}
		if (rd->n == rd->cap) {
			size_t ncap = rd->cap ? rd->cap * 2 : 64;
			struct pentry *ne = eq_realloc(rd->ents, ncap * sizeof(*ne));
			if (!ne) {
				eq_free(path);
				return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			}
			rd->ents = ne;
			rd->cap = ncap;
		}
		struct pentry *e = &rd->ents[rd->n++];
		memset(e, 0, sizeof(*e));
		e->path = path;
		r = add_one(rd, a, ae, e, err);
		if (r != EQ_OK) {
			eq_error_prefix(err, r, "%s: '%.200s'", where, path);
			return r;
		}
	}
}

/* Opens an inner archive over the outer archive's current member. */
static eq_err open_nested(struct archive *outer, struct nested *n, struct archive **ret, const char *member,
			  struct eq_error *err)
{
	struct archive *in = archive_read_new();
	if (!in)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	n->outer = outer;
	eq_err r = setup_filters(in, err);
	if (r == EQ_OK && archive_read_support_format_tar(in) != ARCHIVE_OK)
		r = arch_fail(in, member, err);
	if (r == EQ_OK && archive_read_open(in, n, NULL, nested_read, NULL) != ARCHIVE_OK)
		r = arch_fail(in, member, err);
	if (r != EQ_OK) {
		archive_read_free(in);
		return r;
	}
	*ret = in;
	return EQ_OK;
}

static eq_err read_control_member(struct reader *rd, struct archive *outer, const char *member, struct eq_error *err)
{
	struct nested *n = eq_malloc(sizeof(*n));
	if (!n)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	struct archive *in = NULL;
	struct eq_buf text;
	eq_buf_init(&text, EQ_PKG_CONTROL_MAX);
	eq_err r = open_nested(outer, n, &in, member, err);
	bool found = false;
	while (r == EQ_OK && !found) {
		struct archive_entry *ae;
		int rc = archive_read_next_header(in, &ae);
		if (rc == ARCHIVE_EOF)
			break;
		if (rc != ARCHIVE_OK) {
			r = arch_fail(in, member, err);
			break;
		}
		const char *p = archive_entry_pathname(ae);
		while (p && (p[0] == '.' || p[0] == '/') && (p[0] == '/' || p[1] == '/'))
			p += p[0] == '/' ? 1 : 2;
		if (!p || strcmp(p, "control") != 0 || archive_entry_filetype(ae) != AE_IFREG)
			continue;
		found = true;
		for (;;) {
			la_ssize_t got = archive_read_data(in, rd->buf, sizeof(rd->buf));
			if (got < 0) {
				r = arch_fail(in, member, err);
				break;
			}
			if (got == 0)
				break;
			r = eq_buf_append(&text, rd->buf, (size_t)got, err);
			if (r != EQ_OK) {
				eq_error_prefix(err, r, "%s: control", member);
				break;
			}
		}
	}
	if (r == EQ_OK && !found)
		r = eq_error_set(err, EQ_ERR_NOTFOUND, "%s: no control file", member);
	/* An empty control member leaves text.data NULL (a fuzz finding):
	 * memchr and pointer arithmetic on NULL are undefined even for 0 bytes. */
	const char *ctl = text.len ? (const char *)text.data : "";
	if (r == EQ_OK && memchr(ctl, '\0', text.len))
		r = eq_error_set(err, EQ_ERR_PARSE, "%s: control: NUL byte", member);
	if (r == EQ_OK)
		r = parse_control(&rd->pkg->info, ctl, text.len, err);
	eq_buf_done(&text);
	archive_read_free(in);
	eq_free(n);
	return r;
}

static eq_err read_data_member(struct reader *rd, struct archive *outer, const char *member, struct eq_error *err)
{
	struct nested *n = eq_malloc(sizeof(*n));
	if (!n)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	struct archive *in = NULL;
	eq_err r = open_nested(outer, n, &in, member, err);
	if (r == EQ_OK)
		r = add_entries(rd, in, member, err);
	archive_read_free(in);
	eq_free(n);
	return r;
}

static bool member_is(const char *name, const char *stem)
{
	size_t l = strlen(stem);
	return strncmp(name, stem, l) == 0 && (name[l] == '\0' || name[l] == '.');
}

/* .deb / .ipk container: debian-binary, control.tar.*, data.tar.* */
static eq_err walk_container(struct reader *rd, struct archive *a, struct eq_error *err)
{
	for (;;) {
		struct archive_entry *ae;
		int rc = archive_read_next_header(a, &ae);
		if (rc == ARCHIVE_EOF)
			break;
		if (rc != ARCHIVE_OK)
			return arch_fail(a, "container", err);
		const char *name = archive_entry_pathname(ae);
		if (!name)
			continue;
		while (name[0] == '.' && name[1] == '/')
			name += 2;
		eq_err r = EQ_OK;
		if (strcmp(name, "debian-binary") == 0) {
			la_ssize_t got = archive_read_data(a, rd->buf, 16);
			if (got < 0)
				return arch_fail(a, name, err);
			if (got < 2 || rd->buf[0] != '2' || rd->buf[1] != '.')
				return eq_error_set(err, EQ_ERR_UNSUPPORTED,
						    "debian-binary: format version is not 2.x");
		} else if (member_is(name, "control.tar")) {
			if (rd->have_control)
				return eq_error_set(err, EQ_ERR_PARSE, "%s: second control member", name);
			rd->have_control = true;
			r = read_control_member(rd, a, name, err);
		} else if (member_is(name, "data.tar")) {
			if (rd->have_data)
				return eq_error_set(err, EQ_ERR_PARSE, "%s: second data member", name);
			rd->have_data = true;
			r = read_data_member(rd, a, name, err);
		}
		if (r != EQ_OK)
			return r;
	}
	if (!rd->have_control)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "no control.tar member");
	if (!rd->have_data)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "no data.tar member");
	return EQ_OK;
}

/* ---- hard links ------------------------------------------------------ */

static ssize_t find_path(const struct pentry *ents, const size_t *order, size_t n, const char *path)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(path, ents[order[mid]].path);
		if (c == 0)
			return (ssize_t)order[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

struct link_sort {
	const struct pentry *ents;
	const size_t *root;
};

static int cmp_by_path(const void *a, const void *b, void *ctx)
{
	const struct link_sort *ls = ctx;
	return strcmp(ls->ents[*(const size_t *)a].path, ls->ents[*(const size_t *)b].path);
}

static int cmp_by_group(const void *a, const void *b, void *ctx)
{
	const struct link_sort *ls = ctx;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	if (ls->root[x] != ls->root[y])
		return (ls->root[x] > ls->root[y]) - (ls->root[x] < ls->root[y]);
	return strcmp(ls->ents[x].path, ls->ents[y].path);
}

/* Gives one group (@g[0..m), sorted by path) its canonical shape. */
static eq_err canon_group(struct pentry *ents, const size_t *g, size_t m, size_t rt, struct eq_error *err)
{
	size_t best = g[0];
	size_t data = rt;
	if (!ents[rt].size) {
		for (size_t k = 0; k < m; k++) {
			if (ents[g[k]].size) {
				data = g[k];
				break;
			}
		}
	}
	uint64_t off = ents[data].offset, size = ents[data].size;
	uint32_t mode = ents[rt].mode, uid = ents[rt].uid, gid = ents[rt].gid;
	for (size_t k = 0; k < m; k++) {
		struct pentry *e = &ents[g[k]];
		if (g[k] == best) {
			e->type = EQ_ENTRY_FILE;
			e->offset = off;
			e->size = size;
			eq_free(e->link);
			e->link = NULL;
			/* The inode's metadata is on the entry that held it. */
			e->mode = mode;
			e->uid = uid;
			e->gid = gid;
			continue;
		}
		char *l = eq_strdup(ents[best].path);
		if (!l)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		eq_free(e->link);
		e->link = l;
		e->type = EQ_ENTRY_HARDLINK;
		e->size = 0;
		e->offset = 0;
	}
	return EQ_OK;
}

/*
 * Puts every hard-link group into one shape, whatever the archive did:
 * the group's smallest path (strcmp order) holds the data and every other
 * member links to it. tar links later names to the first one archived,
 * cpio keeps the data on the last: both must give the same payload.
 */
static eq_err canon_links(struct reader *rd, struct eq_error *err)
{
	size_t n = rd->n;
	struct pentry *ents = rd->ents;
	bool any = false;
	for (size_t i = 0; i < n && !any; i++)
		any = ents[i].type == EQ_ENTRY_HARDLINK;
	if (!any)
		return EQ_OK;
	size_t *order = eq_malloc(n * sizeof(*order));
	size_t *root = eq_malloc(n * sizeof(*root));
	bool *in_group = eq_calloc(n, sizeof(*in_group));
	eq_err r = EQ_OK;
	if (!order || !root || !in_group) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto out;
	}
	struct link_sort ls = {.ents = ents, .root = root};
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), cmp_by_path, &ls);
	for (size_t i = 0; i < n && r == EQ_OK; i++) {
		size_t cur = i;
		for (int depth = 0; ents[cur].type == EQ_ENTRY_HARDLINK; depth++) {
			ssize_t t = find_path(ents, order, n, ents[cur].link);
			if (t < 0 || depth >= MAX_LINK_DEPTH || (size_t)t == i) {
				r = eq_error_set(err, EQ_ERR_PARSE, "'%.200s': hard link to %s '%.200s'", ents[i].path,
						 t < 0 ? "missing" : "itself through", ents[cur].link);
				break;
			}
			cur = (size_t)t;
		}
		if (r == EQ_OK && cur != i && ents[cur].type != EQ_ENTRY_FILE)
			r = eq_error_set(err, EQ_ERR_PARSE, "'%.200s': hard link to a non-regular file", ents[i].path);
		root[i] = cur;
		if (cur != i)
			in_group[i] = in_group[cur] = true;
	}
	if (r != EQ_OK)
		goto out;
	/* Reuse order[] for the group members, sorted by group then path. */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (in_group[i])
			order[m++] = i;
	}
	qsort_r(order, m, sizeof(*order), cmp_by_group, &ls);
	for (size_t k = 0; k < m && r == EQ_OK;) {
		size_t rt = root[order[k]], e = k;
		while (e < m && root[order[e]] == rt)
			e++;
		r = canon_group(ents, order + k, e - k, rt, err);
		k = e;
	}
out:
	eq_free(order);
	eq_free(root);
	eq_free(in_group);
	return r;
}

/* ---- eq_pkg_read ----------------------------------------------------- */

static eq_err open_spool(int *ret_fd, struct eq_error *err)
{
	const char *dir = secure_getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/var/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC | O_EXCL, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		/* Filesystems without O_TMPFILE: a named file, unlinked at once. */
		char *tmpl = eq_asprintf("%s/eqota-spool-XXXXXX", dir);
		if (!tmpl)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		fd = mkostemp(tmpl, O_CLOEXEC);
		if (fd >= 0)
			(void)unlink(tmpl);
		eq_free(tmpl);
	}
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot create a spool file in '%s'", dir);
	*ret_fd = fd;
	return EQ_OK;
}

enum kind { K_AR, K_RPM, K_TAR };

static eq_err sniff(int fd, enum kind *ret, struct eq_error *err)
{
	uint8_t m[8] = {0};
	ssize_t got;
	do
		got = pread(fd, m, sizeof(m), 0);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return eq_error_errno(err, EQ_ERR_IO, "read");
	if (got == 0)
		return eq_error_set(err, EQ_ERR_PARSE, "empty file");
	if (got == 8 && memcmp(m, "!<arch>\n", 8) == 0)
		*ret = K_AR;
	else if (got >= 4 && m[0] == 0xed && m[1] == 0xab && m[2] == 0xee && m[3] == 0xdb)
		*ret = K_RPM;
	else
		*ret = K_TAR;
	return EQ_OK;
}


static eq_err read_archive(struct reader *rd, int fd, const char *path, struct eq_error *err)
{
	enum kind k = K_AR; /* always set by sniff() on success */
	eq_err r = sniff(fd, &k, err);
	if (r != EQ_OK)
		return r;
	bool ipk = ends_with(base_name(path), ".ipk");
	struct archive *a = archive_read_new();
	if (!a)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	int rc = ARCHIVE_OK;
	switch (k) {
	case K_AR:
		rc = archive_read_support_format_ar(a);
		if (rc == ARCHIVE_OK)
			rc = archive_read_support_filter_none(a);
		break;
	case K_RPM:
		rc = archive_read_support_filter_rpm(a);
		if (rc == ARCHIVE_OK)
			r = setup_filters(a, err);
		if (rc == ARCHIVE_OK && r == EQ_OK)
			rc = archive_read_support_format_cpio(a);
		break;
	case K_TAR:
		r = setup_filters(a, err);
		if (r == EQ_OK)
			rc = archive_read_support_format_tar(a);
		break;
	}
	if (r == EQ_OK && rc != ARCHIVE_OK)
		r = arch_fail(a, "libarchive setup", err);
	if (r == EQ_OK && archive_read_open_fd(a, fd, COPY_BUF) != ARCHIVE_OK)
		r = arch_fail(a, "open", err);
	if (r == EQ_OK) {
		struct eq_pkg_info *info = &rd->pkg->info;
		if (k == K_AR || (k == K_TAR && ipk)) {
			info->format = ipk ? EQ_PKG_IPK : EQ_PKG_DEB;
			r = walk_container(rd, a, err);
		} else if (k == K_RPM) {
			info->format = EQ_PKG_RPM;
			r = names_from_rpm(info, path, err);
			if (r == EQ_OK)
				r = add_entries(rd, a, "payload", err);
		} else {
			info->format = EQ_PKG_TARBALL;
			r = names_from_tarball(info, path, err);
			if (r == EQ_OK)
				r = add_entries(rd, a, "tar", err);
		}
	}
	archive_read_free(a);
	if (r == EQ_OK) {
		struct eq_pkg_info *info = &rd->pkg->info;
		r = check_field("name", info->name, err);
		if (r == EQ_OK)
			r = check_field("version", info->version, err);
		if (r == EQ_OK)
			r = check_field("architecture", info->arch, err);
	}
	return r;
}

static eq_err build_payload(struct reader *rd, struct eq_error *err)
{
	eq_err r = canon_links(rd, err);
	if (r != EQ_OK)
		return r;
	r = eq_payload_builder_new(&rd->lim, &rd->pkg->builder, err);
	for (size_t i = 0; i < rd->n && r == EQ_OK; i++) {
		const struct pentry *p = &rd->ents[i];
		struct eq_payload_entry e = {
			.path = p->path,
			.type = p->type,
			.mode = p->mode,
			.uid = p->uid,
			.gid = p->gid,
			.size = p->type == EQ_ENTRY_FILE ? p->size : 0,
			.link = p->link,
			.devmajor = p->devmajor,
			.devminor = p->devminor,
			.xattrs = p->xattrs,
			.n_xattrs = p->n_xattrs,
		};
		r = eq_payload_builder_add(rd->pkg->builder, &e, rd->pkg->spool_fd, p->offset, err);
	}
	return r;
}

eq_err eq_pkg_read(const char *path, const struct eq_payload_limits *limits, struct eq_pkg **ret, struct eq_error *err)
{
	struct reader *rd = eq_calloc(1, sizeof(*rd));
	struct eq_pkg *pkg = eq_calloc(1, sizeof(*pkg));
	if (!rd || !pkg) {
		eq_free(rd);
		eq_free(pkg);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	pkg->spool_fd = -1;
	rd->pkg = pkg;
	eq_payload_limits_resolve(limits, &rd->lim);
	int fd = -1;
	eq_err r = set_str(&pkg->info.file, path, strlen(path), err);
	if (r == EQ_OK) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			r = eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot open");
	}
	if (r == EQ_OK)
		r = open_spool(&pkg->spool_fd, err);
	if (r == EQ_OK)
		r = read_archive(rd, fd, path, err);
	if (r == EQ_OK)
		r = build_payload(rd, err);
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < rd->n; i++)
		pentry_done(&rd->ents[i]);
	eq_free(rd->ents);
	eq_free(rd);
	if (r != EQ_OK) {
		eq_error_prefix(err, r, "%s", path);
		eq_pkg_free(pkg);
		return r;
	}
	*ret = pkg;
	return EQ_OK;
}

void eq_pkg_free(struct eq_pkg *p)
{
	if (!p)
		return;
	eq_payload_builder_free(p->builder);
	if (p->spool_fd >= 0)
		close(p->spool_fd);
	eq_pkg_info_done(&p->info);
	eq_free(p);
}

const struct eq_pkg_info *eq_pkg_get_info(const struct eq_pkg *p)
{
	return &p->info;
}

struct eq_payload_builder *eq_pkg_get_builder(struct eq_pkg *p)
{
	return p->builder;
}

eq_err eq_pkg_write_payload(struct eq_pkg *p, eq_write_fn sink, void *sink_ctx, uint8_t ret_sha256[EQ_SHA256_LEN],
			    uint64_t *ret_size, struct eq_error *err)
{
	eq_err r = eq_payload_builder_write(p->builder, sink, sink_ctx, ret_sha256, ret_size, err);
	if (r != EQ_OK)
		eq_error_prefix(err, r, "%s: payload", p->info.file);
	return r;
}
