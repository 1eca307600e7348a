/*
 * Slot records: the per-package file lists (docs/internals/slot-records.md).
 * The reader is strict because the installer trusts a record to say which
 * files a kept package owns and what their data hashes to.
 */
#include "records.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void eq_rec_list_init(struct eq_rec_list *l)
{
	memset(l, 0, sizeof(*l));
}

void eq_rec_list_done(struct eq_rec_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		eq_free(l->v[i].path);
		eq_free(l->v[i].link);
	}
	eq_free(l->v);
	memset(l, 0, sizeof(*l));
}

/* ---- writing -------------------------------------------------------------- */

static bool must_encode(unsigned char c)
{
	return c <= 0x20 || c == '%' || c >= 0x7f;
}

static int put_encoded(FILE *f, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (must_encode(*p)) {
			if (putc('%', f) == EOF || putc(hex[*p >> 4], f) == EOF || putc(hex[*p & 15], f) == EOF)
				return -1;
		} else if (putc(*p, f) == EOF) {
			return -1;
		}
	}
	return 0;
}

eq_err eq_rec_write_header(FILE *f, struct eq_error *err)
{
	if (fputs(EQ_REC_MAGIC "\n", f) == EOF)
		return eq_error_errno(err, EQ_ERR_IO, "writing record");
	return EQ_OK;
}

eq_err eq_rec_write_entry(FILE *f, const struct eq_rec_entry *e, struct eq_error *err)
{
	char sha[EQ_SHA256_HEX_LEN + 1] = "-";
	if (e->type == 'f')
		eq_hex_encode(e->sha256, EQ_SHA256_LEN, sha);
	int rc = fprintf(f, "%c %04" PRIo32 " %" PRIu32 " %" PRIu32 " %" PRIu64 " %s ", e->type, e->mode, e->uid,
			 e->gid, e->size, sha);
	if (rc < 0 || put_encoded(f, e->path))
		return eq_error_errno(err, EQ_ERR_IO, "writing record");
	if (e->type == 'l' || e->type == 'h') {
		if (putc(' ', f) == EOF || put_encoded(f, e->link))
			return eq_error_errno(err, EQ_ERR_IO, "writing record");
	} else if (e->type == 'c' || e->type == 'b') {
		if (fprintf(f, " %" PRIu32 ":%" PRIu32, e->devmajor, e->devminor) < 0)
			return eq_error_errno(err, EQ_ERR_IO, "writing record");
	}
	if (putc('\n', f) == EOF)
		return eq_error_errno(err, EQ_ERR_IO, "writing record");
	return EQ_OK;
}

/* ---- from a payload ------------------------------------------------------- */

static char type_char(enum eq_entry_type t)
{
	switch (t) {
	case EQ_ENTRY_FILE: return 'f';
	case EQ_ENTRY_DIR: return 'd';
	case EQ_ENTRY_SYMLINK: return 'l';
	case EQ_ENTRY_HARDLINK: return 'h';
	case EQ_ENTRY_CHR: return 'c';
	case EQ_ENTRY_BLK: return 'b';
	case EQ_ENTRY_FIFO: return 'p';
	}
	return '?';
}

eq_err eq_rec_from_payload(eq_read_fn src, void *src_ctx, const struct eq_payload_limits *lim, FILE *out,
			   uint64_t *ret_entries, struct eq_error *err)
{
	struct eq_payload_reader *r = NULL;
	uint64_t n = 0;
	eq_err rc = eq_payload_reader_new(src, src_ctx, lim, &r, err);
	if (!rc)
		rc = eq_rec_write_header(out, err);
	EQ_AUTOFREE uint8_t *buf = rc ? NULL : eq_malloc(64 * 1024);
	if (!rc && !buf)
		rc = eq_error_set(err, EQ_ERR_NOMEM, "record: out of memory");
	while (!rc) {
		const struct eq_payload_entry *pe;
		rc = eq_payload_reader_next(r, &pe, err);
		if (rc || !pe)
			break;
		struct eq_rec_entry e = {
			.type = type_char(pe->type),
			.mode = pe->mode,
			.uid = pe->uid,
			.gid = pe->gid,
			.path = (char *)(uintptr_t)pe->path,
			.link = (char *)(uintptr_t)pe->link,
			.devmajor = pe->devmajor,
			.devminor = pe->devminor,
		};
		if (pe->type == EQ_ENTRY_FILE) {
			rc = eq_payload_reader_hash(r, buf, 64 * 1024, e.sha256, &e.size, err);
			if (!rc && e.size != pe->size)
				rc = eq_error_set(err, EQ_ERR_PARSE,
						  "record: '%s': read %" PRIu64 " of %" PRIu64 " bytes", pe->path,
						  e.size, pe->size);
		}
		if (!rc && (e.type == 'l' || e.type == 'h') && (!e.link || !e.link[0]))
			rc = eq_error_set(err, EQ_ERR_PARSE, "record: '%s': empty link target", pe->path);
		if (!rc)
			rc = eq_rec_write_entry(out, &e, err);
		n++;
	}
	eq_payload_reader_free(r);
	if (!rc && ret_entries)
		*ret_entries = n;
	return rc;
}

/* ---- parsing -------------------------------------------------------------- */

struct pctx {
	const char *name;
	unsigned long line;
	struct eq_error *err;
};

static eq_err perr(struct pctx *p, eq_err code, const char *fmt, ...) EQ_PRINTF(3, 4);
static eq_err perr(struct pctx *p, eq_err code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	eq_error_setv(p->err, code, fmt, ap);
	va_end(ap);
	return eq_error_prefix(p->err, code, "%s:%lu", p->name, p->line);
}


/* Decodes @s (percent-encoded, no raw bytes that must be encoded). */
static eq_err decode(struct pctx *p, const char *field, const char *s, char **ret)
{
	size_t len = strlen(s);
	char *out = eq_malloc(len + 1);
	if (!out)
		return perr(p, EQ_ERR_NOMEM, "out of memory");
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%') {
			int h = i + 2 < len ? eq_hex_digit(s[i + 1]) : -1;
			int l = h >= 0 ? eq_hex_digit(s[i + 2]) : -1;
			if (h < 0 || l < 0) {
				eq_free(out);
				return perr(p, EQ_ERR_PARSE, "%s: bad %%-escape", field);
			}
			c = (unsigned char)(h * 16 + l);
			if (!c) {
				eq_free(out);
				return perr(p, EQ_ERR_PARSE, "%s: %%00 is not allowed", field);
			}
			i += 2;
		} else if (must_encode(c)) {
			eq_free(out);
			return perr(p, EQ_ERR_PARSE, "%s: byte 0x%02x must be %%-encoded", field, c);
		}
		out[o++] = (char)c;
	}
	out[o] = '\0';
	if (!o) {
		eq_free(out);
		return perr(p, EQ_ERR_PARSE, "%s: empty", field);
	}
	if (o > EQ_REC_MAX_PATH) {
		eq_free(out);
		return perr(p, EQ_ERR_LIMIT, "%s: longer than %u bytes", field, EQ_REC_MAX_PATH);
	}
	*ret = out;
	return EQ_OK;
}

static eq_err check_rel_path(struct pctx *p, const char *field, const char *path)
{
	if (path[0] == '/')
		return perr(p, EQ_ERR_UNSAFE, "%s: '%s' is absolute", field, path);
	const char *c = path;
	for (;;) {
		const char *end = strchr(c, '/');
		size_t n = end ? (size_t)(end - c) : strlen(c);
		if (n == 0)
			return perr(p, EQ_ERR_PARSE, "%s: '%s' has an empty component", field, path);
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return perr(p, EQ_ERR_UNSAFE, "%s: '%s' has a '.' or '..' component", field, path);
		if (!end)
			return EQ_OK;
		c = end + 1;
	}
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	return eq_parse_u64(s, strlen(s), max, ret);
}

static bool parse_u32(const char *s, uint32_t *ret)
{
	uint64_t v;
	if (!parse_u64(s, UINT32_MAX, &v))
		return false;
	*ret = (uint32_t)v;
	return true;
}

static int cmp_path_entry(const void *key, const void *elem)
{
	return strcmp(key, ((const struct eq_rec_entry *)elem)->path);
}

static eq_err parse_line(struct pctx *p, char *line, struct eq_rec_list *l)
{
	char *f[9] = {0};
	size_t nf = 0;
	for (char *c = line;;) {
		if (nf == 9)
			return perr(p, EQ_ERR_PARSE, "more than 8 fields");
		f[nf++] = c;
		char *sp = strchr(c, ' ');
		if (!sp)
			break;
		*sp = '\0';
		c = sp + 1;
	}
	if (nf < 7)
		return perr(p, EQ_ERR_PARSE, "%zu fields, expected 7 or 8 (TYPE MODE UID GID SIZE SHA256 PATH)", nf);
	struct eq_rec_entry e = {0};
	if (strlen(f[0]) != 1 || !strchr("fdlhcbp", f[0][0]))
		return perr(p, EQ_ERR_PARSE, "TYPE: '%.8s' is not one of f d l h c b p", f[0]);
	e.type = f[0][0];
	if (strlen(f[1]) != 4 || strspn(f[1], "01234567") != 4)
		return perr(p, EQ_ERR_PARSE, "MODE: '%.16s' is not 4 octal digits", f[1]);
	e.mode = (uint32_t)strtoul(f[1], NULL, 8);
	if (!parse_u32(f[2], &e.uid))
		return perr(p, EQ_ERR_PARSE, "UID: '%.24s' is not a 32-bit decimal number", f[2]);
	if (!parse_u32(f[3], &e.gid))
		return perr(p, EQ_ERR_PARSE, "GID: '%.24s' is not a 32-bit decimal number", f[3]);
	if (!parse_u64(f[4], UINT64_MAX, &e.size))
		return perr(p, EQ_ERR_PARSE, "SIZE: '%.24s' is not a decimal number", f[4]);
	if (e.type == 'f') {
		if (!eq_is_sha256_hex(f[5]) || !eq_hex_decode(f[5], e.sha256, EQ_SHA256_LEN))
			return perr(p, EQ_ERR_PARSE, "SHA256: expected 64 lower-case hex digits for a file");
	} else {
		if (strcmp(f[5], "-"))
			return perr(p, EQ_ERR_PARSE, "SHA256: must be '-' for type %c", e.type);
		if (e.size)
			return perr(p, EQ_ERR_PARSE, "SIZE: must be 0 for type %c", e.type);
	}
	bool want_extra = strchr("lhcb", e.type) != NULL;
	if (want_extra && nf != 8)
		return perr(p, EQ_ERR_PARSE, "type %c needs an 8th field (%s)", e.type,
			    e.type == 'l'   ? "link target"
			    : e.type == 'h' ? "hard link target"
					    : "MAJOR:MINOR");
	if (!want_extra && nf != 7)
		return perr(p, EQ_ERR_PARSE, "type %c has no 8th field", e.type);
	eq_err r = decode(p, "PATH", f[6], &e.path);
	if (!r)
		r = check_rel_path(p, "PATH", e.path);
	if (!r && l->n && strcmp(l->v[l->n - 1].path, e.path) >= 0)
		r = perr(p, EQ_ERR_PARSE, "PATH: '%s' is not after '%s' (entries are sorted and unique)", e.path,
			 l->v[l->n - 1].path);
	if (!r && (e.type == 'l' || e.type == 'h'))
		r = decode(p, e.type == 'l' ? "link target" : "hard link target", f[7], &e.link);
	if (!r && e.type == 'h') {
		r = check_rel_path(p, "hard link target", e.link);
		const struct eq_rec_entry *t =
			r || !l->n ? NULL : bsearch(e.link, l->v, l->n, sizeof(*l->v), cmp_path_entry);
		if (!r && (!t || t->type != 'f'))
			r = perr(p, EQ_ERR_PARSE, "hard link target '%s' is not an earlier file of this list", e.link);
	}
	if (!r && (e.type == 'c' || e.type == 'b')) {
		char *colon = strchr(f[7], ':');
		if (colon)
			*colon = '\0';
		if (!colon || !parse_u32(f[7], &e.devmajor) || !parse_u32(colon + 1, &e.devminor))
			r = perr(p, EQ_ERR_PARSE, "device: expected MAJOR:MINOR");
	}
	if (!r && l->n == EQ_REC_MAX_ENTRIES)
		r = perr(p, EQ_ERR_LIMIT, "more than %u entries", EQ_REC_MAX_ENTRIES);
	if (!r && l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 64;
		struct eq_rec_entry *nv = eq_realloc(l->v, nc * sizeof(*nv));
		if (!nv)
			r = perr(p, EQ_ERR_NOMEM, "out of memory");
		else {
			l->v = nv;
			l->cap = nc;
		}
	}
	if (r) {
		eq_free(e.path);
		eq_free(e.link);
		return r;
	}
	l->v[l->n++] = e;
	return EQ_OK;
}

eq_err eq_rec_parse(FILE *f, const char *name, struct eq_rec_list *ret, struct eq_error *err)
{
	struct pctx p = {.name = name, .line = 0, .err = err};
	struct eq_rec_list l;
	eq_rec_list_init(&l);
	EQ_AUTOFREE char *buf = eq_malloc(EQ_REC_MAX_LINE + 1);
	if (!buf)
		return eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", name);
	eq_err r = EQ_OK;
	while (!r) {
		size_t len = 0;
		int c;
		p.line++;
		while ((c = getc(f)) != EOF && c != '\n') {
			if (len == EQ_REC_MAX_LINE) {
				r = perr(&p, EQ_ERR_LIMIT, "line longer than %u bytes", EQ_REC_MAX_LINE);
				break;
			}
			if (c == '\0') {
				r = perr(&p, EQ_ERR_PARSE, "NUL byte");
				break;
			}
			buf[len++] = (char)c;
		}
		if (r)
			break;
		if (c == EOF) {
			if (ferror(f)) {
				r = eq_error_errno(err, EQ_ERR_IO, "%s: read", name);
				break;
			}
			if (!len) {
				if (p.line == 1)
					r = perr(&p, EQ_ERR_PARSE, "empty file, expected '%s'", EQ_REC_MAGIC);
				break;
			}
			r = perr(&p, EQ_ERR_PARSE, "last line has no newline (truncated?)");
			break;
		}
		buf[len] = '\0';
		if (p.line == 1) {
			if (strcmp(buf, EQ_REC_MAGIC))
				r = perr(&p, EQ_ERR_PARSE, "expected '%s'", EQ_REC_MAGIC);
			continue;
		}
		r = parse_line(&p, buf, &l);
	}
	if (r) {
		eq_rec_list_done(&l);
		return r;
	}
	*ret = l;
	return EQ_OK;
}

eq_err eq_rec_load_at(int dirfd, const char *path, struct eq_rec_list *ret, struct eq_error *err)
{
	/* A record lives in eqota's own folder of a slot: a symlink or a
	 * special file there was put by someone else (a package), and reading
	 * through it could read the host's files or block on a fifo. */
	int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		return eq_error_set(err, EQ_ERR_UNSAFE, "'%s' is a symlink, refusing to follow it", path);
	if (fd < 0)
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot open '%s'", path);
	struct stat st;
	if (fstat(fd, &st) != 0) {
		eq_err r = eq_error_errno(err, EQ_ERR_IO, "cannot stat '%s'", path);
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return eq_error_set(err, EQ_ERR_UNSAFE, "'%s' is not a regular file", path);
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		eq_err r = eq_error_errno(err, EQ_ERR_NOMEM, "cannot read '%s'", path);
		close(fd);
		return r;
	}
	const char *base = strrchr(path, '/');
	eq_err r = eq_rec_parse(f, base ? base + 1 : path, ret, err);
	fclose(f);
	return r;
}

eq_err eq_rec_load(const char *path, struct eq_rec_list *ret, struct eq_error *err)
{
	return eq_rec_load_at(AT_FDCWD, path, ret, err);
}
