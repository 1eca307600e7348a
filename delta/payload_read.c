/*
 * The payload reader: a streaming pull parser over any POSIX tar the
 * writer produces (plus what GNU tar and dpkg-deb produce), and the helpers
 * payload_write.c and payload_extract.c share with it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "payload_tar.h"

/* ---- small shared helpers ---------------------------------------------- */

eq_err eq_fd_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	return eq_write_all(*(const int *)ctx, data, len, err);
}

eq_err eq_mem_read(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	struct eq_mem_src *m = ctx;
	(void)err;
	size_t n = m->len - m->pos < len ? m->len - m->pos : len;
	if (n)
		memcpy(buf, m->data + m->pos, n);
	m->pos += n;
	*ret_n = n;
	return EQ_OK;
}

eq_err eq_buf_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	return eq_buf_append(ctx, data, len, err);
}

eq_err eq_fd_read(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	for (;;) {
		ssize_t n = read(*(const int *)ctx, buf, len);
		if (n >= 0) {
			*ret_n = (size_t)n;
			return EQ_OK;
		}
		if (errno != EINTR)
			return eq_error_errno(err, EQ_ERR_IO, "read");
	}
}

void eq_payload_limits_default(struct eq_payload_limits *l)
{
	l->max_entries = 1000000;
	l->max_path = 4096;
	l->max_file_size = 4ull << 30;
	l->max_total = 64ull << 30;
	l->max_xattr_size = 64u << 10;
	l->max_xattrs = 64;
}

void eq_payload_limits_resolve(const struct eq_payload_limits *in, struct eq_payload_limits *out)
{
	struct eq_payload_limits d;
	eq_payload_limits_default(&d);
	*out = d;
	if (!in)
		return;
	if (in->max_entries)
		out->max_entries = in->max_entries;
	if (in->max_path)
		out->max_path = in->max_path;
	if (in->max_file_size)
		out->max_file_size = in->max_file_size;
	if (in->max_total)
		out->max_total = in->max_total;
	if (in->max_xattr_size)
		out->max_xattr_size = in->max_xattr_size;
	if (in->max_xattrs)
		out->max_xattrs = in->max_xattrs;
}

unsigned tar_checksum(const uint8_t block[TAR_BLOCK])
{
	unsigned sum = 0;
	for (size_t i = 0; i < TAR_BLOCK; i++) {
		if (i >= TAR_CHKSUM_OFF && i < TAR_CHKSUM_OFF + TAR_CHKSUM_LEN)
			sum += ' ';
		else
			sum += block[i];
	}
	return sum;
}

/* Historic tars summed signed chars; GNU tar still accepts both sums. */
static unsigned tar_checksum_signed(const uint8_t block[TAR_BLOCK])
{
	int sum = 0;
	for (size_t i = 0; i < TAR_BLOCK; i++) {
		if (i >= TAR_CHKSUM_OFF && i < TAR_CHKSUM_OFF + TAR_CHKSUM_LEN)
			sum += ' ';
		else
			sum += (signed char)block[i];
	}
	return (unsigned)sum;
}

void tar_put_octal(uint8_t *field, size_t width, uint64_t v)
{
	field[width - 1] = '\0';
	for (size_t i = width - 1; i > 0; i--) {
		field[i - 1] = (uint8_t)('0' + (v & 7u));
		v >>= 3;
	}
}

const char *tar_path_problem(const char *path)
{
	if (!path[0])
		return "empty path";
	if (path[0] == '/')
		return "absolute path";
	const char *p = path;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0)
			return "empty path component";
		if (n == 1 && p[0] == '.')
			return "'.' path component";
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return "'..' path component";
		if (!slash)
			return NULL;
		p = slash + 1;
	}
}

static size_t strhash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return (size_t)h;
}

void tar_strset_init(struct tar_strset *s)
{
	s->slots = NULL;
	s->cap = 0;
	s->n = 0;
}

void tar_strset_done(struct tar_strset *s)
{
	eq_free(s->slots);
	tar_strset_init(s);
}

bool tar_strset_has(const struct tar_strset *s, const char *key)
{
	if (!s->cap)
		return false;
	for (size_t i = strhash(key) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
		if (!s->slots[i])
			return false;
		if (!strcmp(s->slots[i], key))
			return true;
	}
}

static void strset_put(const char **slots, size_t cap, const char *key)
{
	size_t i = strhash(key) & (cap - 1);
	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = key;
}

eq_err tar_strset_add(struct tar_strset *s, const char *key, bool *ret_added, struct eq_error *err)
{
	if (tar_strset_has(s, key)) {
		*ret_added = false;
		return EQ_OK;
	}
	/* Kept at most half full so probe chains stay short. */
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		const char **slots = eq_calloc(cap, sizeof(*slots));
		if (!slots)
			return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for a path set of %zu", cap);
		for (size_t i = 0; i < s->cap; i++)
			if (s->slots[i])
				strset_put(slots, cap, s->slots[i]);
		eq_free(s->slots);
		s->slots = slots;
		s->cap = cap;
	}
	strset_put(s->slots, s->cap, key);
	s->n++;
	*ret_added = true;
	return EQ_OK;
}

/* ---- reader ------------------------------------------------------------- */

#define SCRATCH_LEN 16384u

struct eq_payload_reader {
	eq_read_fn src;
	void *src_ctx;
	struct eq_payload_limits lim;
	uint64_t off;       /* bytes consumed so far */
	uint64_t entry_off; /* offset of the header being parsed */
	uint64_t n_entries;
	uint64_t total;
	uint64_t remaining; /* data bytes of the current entry not consumed */
	uint64_t pad;       /* zero padding after them */
	bool readable;      /* the current entry is a regular file */
	bool done;
	bool failed;
	bool hashing;
	struct eq_sha256 sha;
	uint8_t block[TAR_BLOCK];
	uint8_t *scratch;
	char errname[TAR_NAME_LEN + 1];

	struct eq_payload_entry ent;
	char *path;
	char *link;
	/* Data of the extended headers of the current entry; the xattrs and
	 * the pax path/linkpath point into it. */
	uint8_t *pax;
	char *gnu_name;
	char *gnu_link;
	const char *pax_path;
	const char *pax_link;
	bool has_pax_size, has_pax_uid, has_pax_gid;
	uint64_t pax_size;
	uint32_t pax_uid, pax_gid;
	struct eq_xattr *xattrs;
	size_t n_xattrs;
};

eq_err eq_payload_reader_new(eq_read_fn src, void *src_ctx, const struct eq_payload_limits *limits,
			     struct eq_payload_reader **ret, struct eq_error *err)
{
	struct eq_payload_reader *r = eq_calloc(1, sizeof(*r));
	if (!r)
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for a reader");
	r->src = src;
	r->src_ctx = src_ctx;
	eq_payload_limits_resolve(limits, &r->lim);
	r->scratch = eq_malloc(SCRATCH_LEN);
	r->xattrs = eq_calloc(r->lim.max_xattrs, sizeof(*r->xattrs));
	if (!r->scratch || !r->xattrs) {
		eq_payload_reader_free(r);
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for a reader");
	}
	*ret = r;
	return EQ_OK;
}

static void clear_entry(struct eq_payload_reader *r)
{
	eq_free(r->path);
	eq_free(r->link);
	eq_free(r->pax);
	eq_free(r->gnu_name);
	eq_free(r->gnu_link);
	r->path = r->link = r->gnu_name = r->gnu_link = NULL;
	r->pax = NULL;
	r->pax_path = r->pax_link = NULL;
	r->has_pax_size = r->has_pax_uid = r->has_pax_gid = false;
	r->n_xattrs = 0;
	r->errname[0] = '\0';
}

void eq_payload_reader_free(struct eq_payload_reader *r)
{
	if (!r)
		return;
	clear_entry(r);
	eq_free(r->scratch);
	eq_free(r->xattrs);
	eq_free(r);
}

void tar_reader_hash_enable(struct eq_payload_reader *r)
{
	r->hashing = true;
	eq_sha256_init(&r->sha);
}

void tar_reader_hash_final(struct eq_payload_reader *r, uint8_t out[EQ_SHA256_LEN])
{
	eq_sha256_final(&r->sha, out);
}

uint64_t tar_reader_entry_offset(const struct eq_payload_reader *r)
{
	return r->entry_off;
}

static eq_err rfail(struct eq_payload_reader *r, struct eq_error *err, eq_err code, const char *fmt, ...)
	EQ_PRINTF(4, 5);
static eq_err rfail(struct eq_payload_reader *r, struct eq_error *err, eq_err code, const char *fmt, ...)
{
	char q[TAR_QUOTE_MAX];
	va_list ap;
	va_start(ap, fmt);
	eq_error_setv(err, code, fmt, ap);
	va_end(ap);
	r->failed = true;
	if (!r->errname[0])
		return eq_error_prefix(err, code, "payload: at byte %" PRIu64, r->entry_off);
	return eq_error_prefix(err, code, "payload: entry '%s' at byte %" PRIu64, eq_quote(q, sizeof(q), r->errname),
			       r->entry_off);
}

static void set_errname(struct eq_payload_reader *r, const char *name, size_t len)
{
	if (len > sizeof(r->errname) - 1)
		len = sizeof(r->errname) - 1;
	memcpy(r->errname, name, len);
	r->errname[len] = '\0';
}

/* Reads until @len bytes or the end of the source; *ret_got says how many. */
static eq_err read_exact(struct eq_payload_reader *r, void *buf, size_t len, size_t *ret_got, struct eq_error *err)
{
	size_t got = 0;
	while (got < len) {
		size_t n = 0;
		eq_err e = r->src(r->src_ctx, (uint8_t *)buf + got, len - got, &n, err);
		if (e) {
			r->failed = true;
			return eq_error_prefix(err, e, "payload: at byte %" PRIu64, r->off + got);
		}
		if (n == 0)
			break;
		if (n > len - got)
			n = len - got;
		got += n;
	}
	if (r->hashing)
		eq_sha256_update(&r->sha, buf, got);
	r->off += got;
	*ret_got = got;
	return EQ_OK;
}

/* Consumes @n bytes whose content does not matter (data nobody read, padding). */
static eq_err skip(struct eq_payload_reader *r, uint64_t n, struct eq_error *err)
{
	while (n) {
		size_t chunk = n < SCRATCH_LEN ? (size_t)n : SCRATCH_LEN;
		size_t got;
		eq_err e = read_exact(r, r->scratch, chunk, &got, err);
		if (e)
			return e;
		if (got < chunk)
			return rfail(r, err, EQ_ERR_PARSE, "truncated data: %" PRIu64 " more bytes expected", n - got);
		n -= got;
	}
	return EQ_OK;
}

/*
 * A numeric header field: octal digits after optional leading spaces, ended
 * by NUL or space, or GNU's base-256 form (first byte 0x80) for big values.
 * An all-NUL field reads as 0, as old writers leave unused fields empty.
 */
static bool parse_num(const uint8_t *f, size_t width, uint64_t *ret)
{
	uint64_t v = 0;
	if (f[0] == 0x80) {
		for (size_t i = 1; i < width; i++) {
			if (v >> 56)
				return false;
			v = (v << 8) | f[i];
		}
		*ret = v;
		return true;
	}
	size_t i = 0;
	while (i < width && f[i] == ' ')
		i++;
	for (; i < width && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 61)
			return false;
		v = (v << 3) | (uint64_t)(f[i] - '0');
	}
	for (; i < width; i++)
		if (f[i] != '\0' && f[i] != ' ')
			return false;
	*ret = v;
	return true;
}

/* GNU tar, libarchive, Python's tarfile and dpkg-deb write pax numbers
 * without leading zeros; one that has them is refused, as elsewhere. */
static bool parse_decimal(const char *s, size_t len, uint64_t max, uint64_t *ret)
{
	return eq_parse_u64(s, len, max, ret);
}

static bool all_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* Room for the records an entry may legitimately need under the limits. */
static uint64_t pax_cap(const struct eq_payload_limits *l)
{
	uint64_t per_xattr = (uint64_t)l->max_xattr_size + 300;
	return 2 * ((uint64_t)l->max_path + 32) + (uint64_t)l->max_xattrs * per_xattr + 1024;
}

/* Reads an extended header's data plus padding into a new buffer. */
static eq_err read_meta(struct eq_payload_reader *r, uint64_t size, uint64_t cap, const char *what, uint8_t **ret,
			struct eq_error *err)
{
	if (size > cap)
		return rfail(r, err, EQ_ERR_LIMIT, "%s of %" PRIu64 " bytes exceeds the limit of %" PRIu64, what, size,
			     cap);
	uint8_t *d = eq_malloc((size_t)size + 1);
	if (!d)
		return rfail(r, err, EQ_ERR_NOMEM, "out of memory for %s of %" PRIu64 " bytes", what, size);
	size_t got;
	eq_err e = read_exact(r, d, (size_t)size, &got, err);
	if (!e && got < size)
		e = rfail(r, err, EQ_ERR_PARSE, "truncated %s", what);
	if (!e)
		e = skip(r, (TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK, err);
	if (e) {
		eq_free(d);
		return e;
	}
	d[size] = '\0';
	*ret = d;
	return EQ_OK;
}

static eq_err parse_pax(struct eq_payload_reader *r, uint8_t *d, size_t len, struct eq_error *err)
{
	size_t p = 0;
	while (p < len) {
		char *rec = (char *)d + p;
		size_t digits = 0;
		uint64_t rlen = 0;
		while (p + digits < len && rec[digits] >= '0' && rec[digits] <= '9')
			digits++;
		/* The shortest record is "N k=\n". */
		if (digits == 0 || p + digits >= len || rec[digits] != ' ' ||
		    !parse_decimal(rec, digits, len - p, &rlen) || rlen < digits + 4 || rec[rlen - 1] != '\n')
			return rfail(r, err, EQ_ERR_PARSE, "pax record at offset %zu has a bad length", p);
		char *key = rec + digits + 1;
		char *end = rec + rlen - 1;
		char *eq = memchr(key, '=', (size_t)(end - key));
		if (!eq || eq == key)
			return rfail(r, err, EQ_ERR_PARSE, "pax record at offset %zu has no keyword", p);
		*eq = '\0';
		*end = '\0';
		char *val = eq + 1;
		size_t vlen = (size_t)(end - val);
		uint64_t v;
		if (!strcmp(key, "path") || !strcmp(key, "linkpath")) {
			if (memchr(val, '\0', vlen))
				return rfail(r, err, EQ_ERR_PARSE, "pax %s contains a NUL byte", key);
			if (vlen > r->lim.max_path + 1)
				return rfail(r, err, EQ_ERR_LIMIT, "pax %s is longer than %zu bytes", key,
					     r->lim.max_path);
			if (key[0] == 'p') {
				r->pax_path = val;
				set_errname(r, val, vlen);
			} else {
				r->pax_link = val;
			}
		} else if (!strcmp(key, "size")) {
			if (!parse_decimal(val, vlen, UINT64_MAX, &v))
				return rfail(r, err, EQ_ERR_PARSE, "pax size is not a decimal number");
			r->pax_size = v;
			r->has_pax_size = true;
		} else if (!strcmp(key, "uid") || !strcmp(key, "gid")) {
			if (!parse_decimal(val, vlen, UINT32_MAX, &v))
				return rfail(r, err, EQ_ERR_PARSE, "pax %s is not a decimal number below 2^32", key);
			if (key[0] == 'u') {
				r->pax_uid = (uint32_t)v;
				r->has_pax_uid = true;
			} else {
				r->pax_gid = (uint32_t)v;
				r->has_pax_gid = true;
			}
		} else if (!strncmp(key, TAR_PAX_XATTR, strlen(TAR_PAX_XATTR))) {
			char *name = key + strlen(TAR_PAX_XATTR);
			if (!name[0])
				return rfail(r, err, EQ_ERR_PARSE, "pax record at offset %zu has an empty xattr name",
					     p);
			if (r->n_xattrs >= r->lim.max_xattrs)
				return rfail(r, err, EQ_ERR_LIMIT, "more than %zu xattrs", r->lim.max_xattrs);
			if (vlen > r->lim.max_xattr_size)
				return rfail(r, err, EQ_ERR_LIMIT, "xattr '%s' of %zu bytes exceeds the limit of %zu",
					     name, vlen, r->lim.max_xattr_size);
			for (size_t i = 0; i < r->n_xattrs; i++)
				if (!strcmp(r->xattrs[i].name, name))
					return rfail(r, err, EQ_ERR_PARSE, "xattr '%s' appears twice", name);
			r->xattrs[r->n_xattrs++] =
				(struct eq_xattr){.name = name, .value = (uint8_t *)val, .len = vlen};
		}
		/* Other keywords (mtime, atime, uname, charset, ...) carry
		 * nothing the payload keeps, so they are ignored as POSIX asks. */
		p += (size_t)rlen;
	}
	return EQ_OK;
}

static char *field_str(const uint8_t *f, size_t width)
{
	return eq_strndup((const char *)f, strnlen((const char *)f, width));
}

/* Leading "./" and trailing '/' are spelling, not content (dpkg-deb writes
 * "./usr/"), so they are dropped in place. */
static void normalise(char *p)
{
	size_t skipn = 0;
	while (p[skipn] == '.' && p[skipn + 1] == '/') {
		skipn += 2;
		while (p[skipn] == '/')
			skipn++;
	}
	size_t len = strlen(p + skipn);
	memmove(p, p + skipn, len + 1);
	while (len > 1 && p[len - 1] == '/')
		p[--len] = '\0';
	if (!strcmp(p, "."))
		p[0] = '\0';
}

static eq_err build_path(struct eq_payload_reader *r, struct eq_error *err)
{
	const uint8_t *b = r->block;
	if (r->pax_path) {
		r->path = eq_strdup(r->pax_path);
	} else if (r->gnu_name) {
		r->path = eq_steal_ptr(r->gnu_name);
	} else {
		size_t plen = strnlen((const char *)b + TAR_PREFIX_OFF, TAR_PREFIX_LEN);
		size_t nlen = strnlen((const char *)b + TAR_NAME_OFF, TAR_NAME_LEN);
		bool ustar = !memcmp(b + TAR_MAGIC_OFF, "ustar\0", 6);
		if (!ustar)
			plen = 0; /* GNU's old format keeps other data there */
		r->path = eq_malloc(plen + nlen + 2);
		if (r->path) {
			size_t o = 0;
			if (plen) {
				memcpy(r->path, b + TAR_PREFIX_OFF, plen);
				r->path[plen] = '/';
				o = plen + 1;
			}
			memcpy(r->path + o, b + TAR_NAME_OFF, nlen);
			r->path[o + nlen] = '\0';
		}
	}
	if (!r->path)
		return rfail(r, err, EQ_ERR_NOMEM, "out of memory for the path");
	set_errname(r, r->path, strlen(r->path));
	normalise(r->path);
	if (strlen(r->path) > r->lim.max_path)
		return rfail(r, err, EQ_ERR_LIMIT, "path is longer than %zu bytes", r->lim.max_path);
	return EQ_OK;
}

static eq_err build_link(struct eq_payload_reader *r, struct eq_error *err)
{
	if (r->pax_link)
		r->link = eq_strdup(r->pax_link);
	else if (r->gnu_link)
		r->link = eq_steal_ptr(r->gnu_link);
	else
		r->link = field_str(r->block + TAR_LINK_OFF, TAR_LINK_LEN);
	if (!r->link)
		return rfail(r, err, EQ_ERR_NOMEM, "out of memory for the link target");
	/* A hard link names another entry, spelt like entry paths; a symlink's
	 * target is content and kept verbatim. */
	if (r->ent.type == EQ_ENTRY_HARDLINK)
		normalise(r->link);
	if (!r->link[0])
		return rfail(r, err, EQ_ERR_PARSE, "empty link target");
	if (strlen(r->link) > r->lim.max_path)
		return rfail(r, err, EQ_ERR_LIMIT, "link target is longer than %zu bytes", r->lim.max_path);
	return EQ_OK;
}

static bool map_type(uint8_t t, enum eq_entry_type *ret)
{
	switch (t) {
	case '0':
	case '\0':
	case '7': *ret = EQ_ENTRY_FILE; return true;
	case '1': *ret = EQ_ENTRY_HARDLINK; return true;
	case '2': *ret = EQ_ENTRY_SYMLINK; return true;
	case '3': *ret = EQ_ENTRY_CHR; return true;
	case '4': *ret = EQ_ENTRY_BLK; return true;
	case '5': *ret = EQ_ENTRY_DIR; return true;
	case '6': *ret = EQ_ENTRY_FIFO; return true;
	default: return false;
	}
}

/* Reads one 512-byte header; EQ_OK with *ret_end set at the end marker. */
static eq_err read_header(struct eq_payload_reader *r, bool *ret_end, struct eq_error *err)
{
	size_t got;
	r->entry_off = r->off;
	eq_err e = read_exact(r, r->block, TAR_BLOCK, &got, err);
	if (e)
		return e;
	if (got == 0)
		return rfail(r, err, EQ_ERR_PARSE, "unexpected end of payload: no end-of-archive marker");
	if (got < TAR_BLOCK)
		return rfail(r, err, EQ_ERR_PARSE, "truncated header: %zu of %u bytes", got, TAR_BLOCK);
	*ret_end = false;
	if (all_zero(r->block, TAR_BLOCK)) {
		e = read_exact(r, r->block, TAR_BLOCK, &got, err);
		if (e)
			return e;
		if (got < TAR_BLOCK)
			return rfail(r, err, EQ_ERR_PARSE, "truncated end-of-archive marker");
		if (!all_zero(r->block, TAR_BLOCK))
			return rfail(r, err, EQ_ERR_PARSE, "zero block followed by data");
		*ret_end = true;
		return EQ_OK;
	}
	if (!r->errname[0])
		set_errname(r, (const char *)r->block + TAR_NAME_OFF,
			    strnlen((const char *)r->block + TAR_NAME_OFF, TAR_NAME_LEN));
	uint64_t sum;
	if (!parse_num(r->block + TAR_CHKSUM_OFF, TAR_CHKSUM_LEN, &sum))
		return rfail(r, err, EQ_ERR_PARSE, "checksum field is not octal");
	if (sum != tar_checksum(r->block) && sum != tar_checksum_signed(r->block))
		return rfail(r, err, EQ_ERR_PARSE, "header checksum %" PRIu64 " does not match %u", sum,
			     tar_checksum(r->block));
	if (memcmp(r->block + TAR_MAGIC_OFF, "ustar", 5) != 0)
		return rfail(r, err, EQ_ERR_UNSUPPORTED, "not a ustar header (bad magic)");
	return EQ_OK;
}

static eq_err next_header(struct eq_payload_reader *r, struct eq_error *err)
{
	bool seen_x = false;
	for (;;) {
		bool end = false;
		eq_err e = read_header(r, &end, err);
		if (e)
			return e;
		if (end) {
			r->done = true;
			return EQ_OK;
		}
		const uint8_t *b = r->block;
		uint8_t t = b[TAR_TYPE_OFF];
		uint64_t size, v;
		if (!parse_num(b + TAR_SIZE_OFF, TAR_SIZE_LEN, &size))
			return rfail(r, err, EQ_ERR_PARSE, "size field is not octal");
		if (!parse_num(b + TAR_MTIME_OFF, TAR_SIZE_LEN, &v))
			return rfail(r, err, EQ_ERR_PARSE, "mtime field is not octal");

		if (t == 'x') {
			if (seen_x)
				return rfail(r, err, EQ_ERR_PARSE, "two extended headers for one entry");
			seen_x = true;
			e = read_meta(r, size, pax_cap(&r->lim), "extended header", &r->pax, err);
			if (!e)
				e = parse_pax(r, r->pax, (size_t)size, err);
			if (e)
				return e;
			continue;
		}
		if (t == 'g') {
			/* Global headers set defaults we never use; only bounded. */
			if (size > pax_cap(&r->lim))
				return rfail(r, err, EQ_ERR_LIMIT, "global header of %" PRIu64 " bytes is too big",
					     size);
			e = skip(r, size + (TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK, err);
			if (e)
				return e;
			continue;
		}
		if (t == 'L' || t == 'K') {
			char **dst = t == 'L' ? &r->gnu_name : &r->gnu_link;
			uint8_t *d = NULL;
			if (*dst)
				return rfail(r, err, EQ_ERR_PARSE, "two GNU long %s headers",
					     t == 'L' ? "name" : "link");
			e = read_meta(r, size, r->lim.max_path + 1, "GNU long name", &d, err);
			if (e)
				return e;
			*dst = (char *)d;
			if (t == 'L')
				set_errname(r, *dst, strlen(*dst));
			continue;
		}

		struct eq_payload_entry *ent = &r->ent;
		if (!map_type(t, &ent->type))
			return rfail(r, err, EQ_ERR_UNSUPPORTED, "unsupported entry type '%c'",
				     t >= 0x20 && t < 0x7f ? t : '?');
		e = build_path(r, err);
		if (e)
			return e;
		if (!r->path[0]) {
			if (ent->type == EQ_ENTRY_DIR) {
				/* The archive's root ("./" from dpkg-deb) is no entry. */
				e = skip(r, size + (TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK, err);
				if (e)
					return e;
				clear_entry(r);
				seen_x = false;
				continue;
			}
			return rfail(r, err, EQ_ERR_PARSE, "empty path");
		}
		if (r->has_pax_size)
			size = r->pax_size;
		if (size > r->lim.max_file_size)
			return rfail(r, err, EQ_ERR_LIMIT, "size %" PRIu64 " exceeds the limit of %" PRIu64, size,
				     r->lim.max_file_size);
		if (!parse_num(b + TAR_MODE_OFF, TAR_ID_LEN, &v))
			return rfail(r, err, EQ_ERR_PARSE, "mode field is not octal");
		ent->mode = (uint32_t)(v & 07777);
		if (!parse_num(b + TAR_UID_OFF, TAR_ID_LEN, &v) || v > UINT32_MAX)
			return rfail(r, err, EQ_ERR_PARSE, "uid field is not octal");
		ent->uid = r->has_pax_uid ? r->pax_uid : (uint32_t)v;
		if (!parse_num(b + TAR_GID_OFF, TAR_ID_LEN, &v) || v > UINT32_MAX)
			return rfail(r, err, EQ_ERR_PARSE, "gid field is not octal");
		ent->gid = r->has_pax_gid ? r->pax_gid : (uint32_t)v;
		ent->devmajor = ent->devminor = 0;
		if (ent->type == EQ_ENTRY_CHR || ent->type == EQ_ENTRY_BLK) {
			if (!parse_num(b + TAR_DEVMAJOR_OFF, TAR_ID_LEN, &v) || v > UINT32_MAX)
				return rfail(r, err, EQ_ERR_PARSE, "devmajor field is not octal");
			ent->devmajor = (uint32_t)v;
			if (!parse_num(b + TAR_DEVMINOR_OFF, TAR_ID_LEN, &v) || v > UINT32_MAX)
				return rfail(r, err, EQ_ERR_PARSE, "devminor field is not octal");
			ent->devminor = (uint32_t)v;
		}
		ent->link = NULL;
		if (ent->type == EQ_ENTRY_SYMLINK || ent->type == EQ_ENTRY_HARDLINK) {
			e = build_link(r, err);
			if (e)
				return e;
			ent->link = r->link;
		}
		if (r->n_entries >= r->lim.max_entries)
			return rfail(r, err, EQ_ERR_LIMIT, "more than %" PRIu64 " entries", r->lim.max_entries);
		r->n_entries++;
		r->readable = ent->type == EQ_ENTRY_FILE;
		if (r->readable) {
			if (size > r->lim.max_total - r->total)
				return rfail(r, err, EQ_ERR_LIMIT, "total size exceeds the limit of %" PRIu64,
					     r->lim.max_total);
			r->total += size;
		}
		ent->size = r->readable ? size : 0;
		ent->path = r->path;
		ent->xattrs = r->n_xattrs ? r->xattrs : NULL;
		ent->n_xattrs = r->n_xattrs;
		r->remaining = size;
		r->pad = (TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK;
		return EQ_OK;
	}
}

eq_err eq_payload_reader_next(struct eq_payload_reader *r, const struct eq_payload_entry **ret_entry,
			      struct eq_error *err)
{
	if (r->failed)
		return eq_error_set(err, EQ_ERR_STATE, "payload: reader used after an error");
	eq_err e = skip(r, r->remaining + r->pad, err);
	if (e)
		return e;
	r->remaining = r->pad = 0;
	r->readable = false;
	if (r->done) {
		*ret_entry = NULL;
		return EQ_OK;
	}
	clear_entry(r);
	e = next_header(r, err);
	if (e)
		return e;
	*ret_entry = r->done ? NULL : &r->ent;
	return EQ_OK;
}

eq_err eq_payload_reader_read(struct eq_payload_reader *r, void *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	if (r->failed)
		return eq_error_set(err, EQ_ERR_STATE, "payload: reader used after an error");
	if (!r->readable || r->remaining == 0 || len == 0) {
		*ret_n = 0;
		return EQ_OK;
	}
	size_t want = r->remaining < len ? (size_t)r->remaining : len;
	size_t got;
	eq_err e = read_exact(r, buf, want, &got, err);
	if (e)
		return e;
	if (got < want)
		return rfail(r, err, EQ_ERR_PARSE, "truncated data: %" PRIu64 " more bytes expected",
			     r->remaining - got);
	r->remaining -= got;
	*ret_n = got;
	return EQ_OK;
}

eq_err eq_payload_reader_hash(struct eq_payload_reader *r, void *buf, size_t len, uint8_t ret_sha256[EQ_SHA256_LEN],
			      uint64_t *ret_n, struct eq_error *err)
{
	struct eq_sha256 s;
	uint64_t total = 0;
	eq_err rc;
	eq_sha256_init(&s);
	for (;;) {
		size_t n;
		rc = eq_payload_reader_read(r, buf, len, &n, err);
		if (rc || !n)
			break;
		eq_sha256_update(&s, buf, n);
		total += n;
	}
	eq_sha256_final(&s, ret_sha256);
	if (ret_n)
		*ret_n = total;
	return rc;
}
