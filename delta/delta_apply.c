/*
 * Delta application (device side). Order matters: parse and cap the header,
 * load and verify the reference, and only then decode, so a wrong reference
 * never produces output. Output is counted against the declared size before
 * it reaches the sink, un-filtered as a stream, and hashed.
 */
#include "bsdiff.h"
#include "delta_zstd.h"
#include "exec_filter.h"
#include "gz_puff.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* Memory besides the reference and the window. Method 0: zstd's DCtx
 * (~160 KiB) and two 128 KiB block buffers, its 128 KiB stream buffers
 * here, the filter's 256 KiB, the header and read chunks: under 1 MiB.
 * Method 1 needs more (three decoders and a segment buffer, see
 * bsdiff.h); one constant covers both. */
#define APPLY_OVERHEAD EQ_BSD_APPLY_OVERHEAD

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

eq_err eq_delta_info_parse(const uint8_t *data, size_t len, struct eq_delta_info *ret_info, struct eq_error *err)
{
	if (len < EQ_DELTA_HEADER_SIZE)
		return eq_error_set(err, EQ_ERR_PARSE, "delta header is truncated: %zu of %d bytes", len,
				    EQ_DELTA_HEADER_SIZE);
	if (memcmp(data, "EQD1", 4) != 0)
		return eq_error_set(err, EQ_ERR_PARSE, "not a delta: bad magic");
	uint8_t check[EQ_SHA256_LEN];
	eq_sha256(data, 88, check);
	if (memcmp(check, data + 88, 8) != 0)
		return eq_error_set(err, EQ_ERR_PARSE, "delta header is corrupted: header checksum mismatch");
	if (data[4] != 1)
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "delta format version %u is not supported", data[4]);
	if (data[5] & ~(EQ_DELTA_FILTER_BRANCH | EQ_DELTA_FILTER_DATA | EQ_DELTA_FILTER_DEFLATE))
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "delta filter %u is not supported", data[5]);
	if (data[7] > EQ_DELTA_METHOD_BSD)
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "delta method %u is not supported", data[7]);
	if (data[6] < EQ_ZSTD_WINDOW_LOG_MIN || data[6] > 31)
		return eq_error_set(err, EQ_ERR_PARSE, "delta window log %u is outside %d..31", data[6],
				    EQ_ZSTD_WINDOW_LOG_MIN);
	struct eq_delta_info info = {
		.version = data[4],
		.method = data[7],
		.filter = data[5],
		.window_log = data[6],
		.ref_size = get64(data + 8),
		.result_size = get64(data + 48),
	};
	memcpy(info.ref_sha256, data + 16, EQ_SHA256_LEN);
	memcpy(info.result_sha256, data + 56, EQ_SHA256_LEN);
	*ret_info = info;
	return EQ_OK;
}

void eq_delta_limits_default(struct eq_delta_limits *l)
{
	l->max_window_log = (unsigned)EQ_ZSTD_WINDOW_LOG_MAX;
	l->max_ref_size = sizeof(size_t) == 4 ? (uint64_t)1 << 30 : (uint64_t)4 << 30;
	l->max_result_size = (uint64_t)4 << 30;
}

uint64_t eq_delta_apply_mem_bound(uint64_t ref_size, unsigned window_log)
{
	if (window_log > 62)
		return UINT64_MAX;
	uint64_t w = (uint64_t)1 << window_log;
	if (ref_size > UINT64_MAX - w - APPLY_OVERHEAD)
		return UINT64_MAX;
	return ref_size + w + APPLY_OVERHEAD;
}

uint64_t eq_delta_apply_mem_bound_deflate(uint64_t ref_size, uint64_t xref_size, uint64_t regions, unsigned window_log)
{
	uint64_t b = eq_delta_apply_mem_bound(ref_size, window_log);
	uint64_t extra = sizeof(struct eq_gzx_stream);
	if (regions > (UINT64_MAX - extra) / EQ_GZX_REGION_SIZE)
		return UINT64_MAX;
	extra += regions * EQ_GZX_REGION_SIZE;
	if (xref_size > UINT64_MAX - extra || b > UINT64_MAX - extra - xref_size)
		return UINT64_MAX;
	return b + xref_size + extra;
}

eq_err eq_delta_read_full(eq_read_fn src, void *ctx, uint8_t *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	size_t got = 0;
	while (got < len) {
		size_t n = 0;
		eq_err r = src(ctx, buf + got, len - got, &n, err);
		if (r)
			return r;
		if (n == 0)
			break;
		got += n;
	}
	*ret_n = got;
	return EQ_OK;
}

/*
 * The reference as a method reads it. To keep the device's anonymous memory
 * flat in the package size, it lives in files: the payload mapped
 * read-only, and the filtered and expanded images in unnamed scratch files
 * beside it, mapped shared, so their pages are page cache the kernel can
 * write back and drop. Where no scratch file can be made (a read-only or
 * full file system) the image is in memory, as before.
 */
struct refimg {
	uint8_t *p;
	size_t len;
	bool mapped;
};

static void refimg_done(struct refimg *m)
{
	if (m->mapped)
		munmap(m->p, m->len);
	else
		eq_free(m->p);
	*m = (struct refimg){0};
}

/* An unnamed file of @len bytes with its blocks allocated, so writing
 * through the mapping can never hit a full disk (SIGBUS); -1 if none. */
/* A named file unlinked at once, where O_TMPFILE is not supported. */
static int named_scratch_fd(const char *dir)
{
	char *tmpl = eq_asprintf("%s/.eq-delta-XXXXXX", dir);
	if (!tmpl)
		return -1;
	int fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd >= 0)
		(void)unlink(tmpl);
	eq_free(tmpl);
	return fd;
}

static int scratch_fd(const char *dir, size_t len)
{
#ifdef EQ_TEST_HOOKS
	/* Test hook (STYLE 27): exercise the in-memory fallback. */
	if (secure_getenv("EQ_TEST_NO_SCRATCH"))
		return -1;
#endif
#ifdef O_TMPFILE
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		fd = named_scratch_fd(dir);
#else
	int fd = named_scratch_fd(dir);
#endif
	if (fd < 0)
		return -1;
	if (posix_fallocate(fd, 0, (off_t)len) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A writable image of @len bytes: a shared mapping of a scratch file in
 * @dir, else memory. */
static eq_err refimg_scratch(const char *dir, size_t len, struct refimg *m, struct eq_error *err)
{
	*m = (struct refimg){0};
	int fd = len ? scratch_fd(dir, len) : -1;
	if (fd >= 0) {
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (p != MAP_FAILED) {
			*m = (struct refimg){p, len, true};
			return EQ_OK;
		}
	}
	eq_log(EQ_LOG_DEBUG, "no scratch file in '%s': the %zu-byte reference image is in memory", dir, len);
	m->p = eq_malloc(len ? len : 1);
	if (!m->p)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the %zu-byte reference", len);
	m->len = len;
	return EQ_OK;
}

/* Maps the reference read-only and checks its hash; EQ_ERR_VERIFY if it is
 * not the payload the delta names. */
static eq_err map_reference(const char *path, const struct eq_delta_info *info, struct refimg *m, struct eq_error *err)
{
	char want[EQ_SHA256_HEX_LEN + 1], got[EQ_SHA256_HEX_LEN + 1];
	*m = (struct refimg){0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot open reference '%s'",
				      path);
	eq_err r = EQ_OK;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		r = eq_error_errno(err, EQ_ERR_IO, "cannot stat reference '%s'", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != info->ref_size) {
		r = eq_error_set(
			err, EQ_ERR_VERIFY,
			"reference '%s' is not the payload this delta was made from: %llu bytes, expected %llu", path,
			(unsigned long long)st.st_size, (unsigned long long)info->ref_size);
		goto out;
	}
	size_t size = (size_t)info->ref_size;
	if (size) {
		void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			r = eq_error_errno(err, EQ_ERR_IO, "cannot map reference '%s'", path);
			goto out;
		}
		*m = (struct refimg){p, size, true};
	} else if (!(m->p = eq_malloc(1))) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto out;
	}
	uint8_t d[EQ_SHA256_LEN];
	eq_sha256(m->p, size, d);
	if (memcmp(d, info->ref_sha256, EQ_SHA256_LEN) != 0) {
		eq_hex_encode(d, EQ_SHA256_LEN, got);
		eq_hex_encode(info->ref_sha256, EQ_SHA256_LEN, want);
		r = eq_error_set(err, EQ_ERR_VERIFY,
				 "reference '%s' is not the payload this delta was made from: sha256 %s, expected %s",
				 path, got, want);
	}
out:
	close(fd);
	if (r)
		refimg_done(m);
	return r;
}

/* Last stage of the output chain: hash and pass on. */
struct out_stage {
	eq_write_fn sink;
	void *ctx;
	struct eq_sha256 sha;
};

static eq_err out_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	struct out_stage *o = ctx;
	eq_sha256_update(&o->sha, data, len);
	return o->sink(o->ctx, data, len, err);
}

/* Method 0: one zstd frame with the reference as prefix. Output is counted
 * against the declared size before it goes to @next. */
static eq_err apply_zstd(const uint8_t *ref, const struct eq_delta_info *ip, eq_read_fn src, void *src_ctx,
			 uint64_t body_off, eq_write_fn next, void *next_ctx, struct eq_error *err)
{
	const struct eq_delta_info info = *ip;
	eq_err r = EQ_OK;
	uint8_t *in_buf = NULL, *out_buf = NULL;
	ZSTD_DCtx *dctx = NULL;
	size_t in_cap = ZSTD_DStreamInSize(), out_cap = ZSTD_DStreamOutSize();
	in_buf = eq_malloc(in_cap);
	out_buf = eq_malloc(out_cap);
	dctx = ZSTD_createDCtx();
	if (!in_buf || !out_buf || !dctx) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the delta decoder");
		goto out;
	}
	size_t zr = ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, (int)info.window_log);
	if (!ZSTD_isError(zr))
		zr = ZSTD_DCtx_refPrefix(dctx, ref, (size_t)info.ref_size);
	if (ZSTD_isError(zr)) {
		r = eq_zstd_error(err, zr, "delta decoder setup");
		goto out;
	}

	uint64_t produced = 0, consumed = body_off;
	size_t rem = 1;
	bool eof = false;
	while (rem != 0) {
		ZSTD_inBuffer in = {in_buf, 0, 0};
		if (!eof) {
			if ((r = src(src_ctx, in_buf, in_cap, &in.size, err)))
				goto out;
			eof = in.size == 0;
		}
		/* With no input left, keep calling to flush what zstd holds. */
		do {
			ZSTD_outBuffer out = {out_buf, out_cap, 0};
			size_t before = in.pos;
			rem = ZSTD_decompressStream(dctx, &out, &in);
			if (ZSTD_isError(rem)) {
				r = eq_zstd_error(err, rem, "delta");
				(void)eq_error_prefix(err, r, "at delta byte %llu",
						      (unsigned long long)(consumed + before));
				goto out;
			}
			if (out.pos > info.result_size - produced) {
				r = eq_error_set(err, EQ_ERR_PARSE, "delta produces more than its declared %llu bytes",
						 (unsigned long long)info.result_size);
				goto out;
			}
			produced += out.pos;
			if (out.pos && (r = next(next_ctx, out_buf, out.pos, err)))
				goto out;
			if (eof && out.pos == 0 && rem != 0) {
				r = eq_error_set(err, EQ_ERR_PARSE, "delta is truncated after %llu bytes",
						 (unsigned long long)consumed);
				goto out;
			}
			if (rem == 0 && in.pos < in.size) {
				r = eq_error_set(err, EQ_ERR_PARSE, "delta has trailing data at byte %llu",
						 (unsigned long long)(consumed + in.pos));
				goto out;
			}
		} while (in.pos < in.size || (eof && rem != 0));
		consumed += in.size;
	}
	if (!eof) {
		uint8_t extra;
		size_t got = 0;
		if ((r = eq_delta_read_full(src, src_ctx, &extra, 1, &got, err)))
			goto out;
		if (got) {
			r = eq_error_set(err, EQ_ERR_PARSE, "delta has trailing data at byte %llu",
					 (unsigned long long)consumed);
			goto out;
		}
	}
	if (produced != info.result_size) {
		r = eq_error_set(err, EQ_ERR_PARSE, "delta ends after %llu of its declared %llu bytes",
				 (unsigned long long)produced, (unsigned long long)info.result_size);
		goto out;
	}
out:
	ZSTD_freeDCtx(dctx);
	eq_free(in_buf);
	eq_free(out_buf);
	return r;
}

/* What the preamble of a deflate-aware delta declares. */
struct gzx_pre {
	uint64_t xref_size, xresult_size;
	uint8_t xref_sha256[EQ_SHA256_LEN];
	struct eq_gzx_region *r;
	size_t n;
	size_t bytes; /* preamble and table, for byte offsets in messages */
};

static eq_err read_gzx_preamble(eq_read_fn src, void *src_ctx, const struct eq_delta_info *info,
				const struct eq_delta_limits *lim, struct gzx_pre *g, struct eq_error *err)
{
	uint8_t p[EQ_GZX_PREAMBLE_SIZE];
	size_t n = 0;
	eq_err r = eq_delta_read_full(src, src_ctx, p, sizeof(p), &n, err);
	if (r)
		return r;
	if (n < sizeof(p))
		return eq_error_set(err, EQ_ERR_PARSE, "delta is truncated in its gzip preamble at byte %zu",
				    EQ_DELTA_HEADER_SIZE + n);
	g->xref_size = get64(p);
	g->xresult_size = get64(p + 8);
	memcpy(g->xref_sha256, p + 16, EQ_SHA256_LEN);
	uint32_t count = get32(p + 48), table = get32(p + 52);
	if (g->xref_size > lim->max_ref_size || g->xref_size > SIZE_MAX / 2)
		return eq_error_set(err, EQ_ERR_LIMIT,
				    "expanded delta reference of %llu bytes exceeds the limit of %llu",
				    (unsigned long long)g->xref_size, (unsigned long long)lim->max_ref_size);
	if (g->xresult_size > lim->max_result_size)
		return eq_error_set(err, EQ_ERR_LIMIT, "expanded delta result of %llu bytes exceeds the limit of %llu",
				    (unsigned long long)g->xresult_size, (unsigned long long)lim->max_result_size);
	if (count > EQ_GZX_REGIONS_MAX)
		return eq_error_set(err, EQ_ERR_LIMIT, "delta names %lu gzip regions, the limit is %u",
				    (unsigned long)count, EQ_GZX_REGIONS_MAX);
	if (table > (uint64_t)count * EQ_GZX_ENTRY_MAX)
		return eq_error_set(err, EQ_ERR_PARSE, "gzip region table of %lu bytes is too long for %lu entries",
				    (unsigned long)table, (unsigned long)count);
	g->n = count;
	g->r = eq_calloc(g->n ? g->n : 1, sizeof(*g->r));
	uint8_t *t = eq_malloc(table ? table : 1);
	if (!g->r || !t) {
		eq_free(t);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory for %zu gzip regions", g->n);
	}
	r = eq_delta_read_full(src, src_ctx, t, table, &n, err);
	if (!r && n < table)
		r = eq_error_set(err, EQ_ERR_PARSE, "delta is truncated in its gzip region table");
	if (!r)
		r = eq_gzx_table_decode(t, table, g->r, g->n, err);
	eq_free(t);
	if (r)
		return r;
	g->bytes = EQ_GZX_PREAMBLE_SIZE + table;
	return eq_gzx_regions_check(g->r, g->n, g->xresult_size, info->result_size, err);
}

/* Replaces the (filtered) reference image by its expansion, which must be
 * the one the publisher diffed against. */
static eq_err expand_reference(struct refimg *img, const char *dir, const struct gzx_pre *g, struct eq_error *err)
{
	struct refimg xi;
	struct eq_gzx x;
	eq_err r = refimg_scratch(dir, (size_t)g->xref_size, &xi, err);
	if (r)
		return r;
	if ((r = eq_gzx_expand(img->p, img->len, xi.p, xi.len, &x, err))) {
		refimg_done(&xi);
		return eq_error_prefix(err, r, "expanding the reference's gzip files");
	}
	uint8_t d[EQ_SHA256_LEN];
	eq_sha256(xi.p, x.len, d);
	if (x.len != g->xref_size || memcmp(d, g->xref_sha256, EQ_SHA256_LEN) != 0) {
		r = eq_error_set(err, EQ_ERR_VERIFY,
				 "expanding the reference's gzip files gives %zu bytes that differ from the %llu the "
				 "delta was made against (a different eqota version made it?)",
				 x.len, (unsigned long long)g->xref_size);
		eq_gzx_done(&x);
		refimg_done(&xi);
		return r;
	}
	eq_gzx_done(&x);
	refimg_done(img);
	*img = xi;
	return EQ_OK;
}

eq_err eq_delta_apply(const char *ref_path, eq_read_fn src, void *src_ctx, eq_write_fn sink, void *sink_ctx,
		      const uint8_t expect_sha256[EQ_SHA256_LEN], struct eq_error *err)
{
	return eq_delta_apply_limited(ref_path, src, src_ctx, sink, sink_ctx, expect_sha256, NULL, err);
}

eq_err eq_delta_apply_limited(const char *ref_path, eq_read_fn src, void *src_ctx, eq_write_fn sink, void *sink_ctx,
			      const uint8_t expect_sha256[EQ_SHA256_LEN], const struct eq_delta_limits *limits,
			      struct eq_error *err)
{
	struct eq_delta_limits lim;
	eq_delta_limits_default(&lim);
	if (limits) {
		if (limits->max_window_log)
			lim.max_window_log = limits->max_window_log;
		if (limits->max_ref_size)
			lim.max_ref_size = limits->max_ref_size;
		if (limits->max_result_size)
			lim.max_result_size = limits->max_result_size;
	}
	uint8_t hdr[EQ_DELTA_HEADER_SIZE];
	size_t n = 0;
	eq_err r = eq_delta_read_full(src, src_ctx, hdr, sizeof(hdr), &n, err);
	if (r)
		return r;
	struct eq_delta_info info;
	if ((r = eq_delta_info_parse(hdr, n, &info, err)))
		return r;
	if (info.window_log > lim.max_window_log)
		return eq_error_set(err, EQ_ERR_LIMIT, "delta needs a 2^%u-byte window, the limit is 2^%u",
				    info.window_log, lim.max_window_log);
	if (info.ref_size > lim.max_ref_size || info.ref_size > SIZE_MAX / 2)
		return eq_error_set(err, EQ_ERR_LIMIT, "delta reference of %llu bytes exceeds the limit of %llu",
				    (unsigned long long)info.ref_size, (unsigned long long)lim.max_ref_size);
	if (info.result_size > lim.max_result_size)
		return eq_error_set(err, EQ_ERR_LIMIT, "delta result of %llu bytes exceeds the limit of %llu",
				    (unsigned long long)info.result_size, (unsigned long long)lim.max_result_size);

	struct refimg ref = {0};
	char *dir = NULL;
	const unsigned xmode = info.filter & (EQ_DELTA_FILTER_BRANCH | EQ_DELTA_FILTER_DATA);
	const bool deflate = info.filter & EQ_DELTA_FILTER_DEFLATE;
	struct eq_xf xf;
	eq_xf_init(&xf, false, xmode);
	struct eq_gzx_stream *gs = NULL;
	struct gzx_pre g = {0};
	struct out_stage os = {.sink = sink, .ctx = sink_ctx};
	eq_sha256_init(&os.sha);
	/* What the method decodes: the expanded payloads when deflate-aware. */
	struct eq_delta_info body = info;

	if (deflate) {
		if ((r = read_gzx_preamble(src, src_ctx, &info, &lim, &g, err)))
			goto out;
		body.ref_size = g.xref_size;
		body.result_size = g.xresult_size;
	}
	if ((r = map_reference(ref_path, &info, &ref, err)))
		goto out;
	const char *slash = strrchr(ref_path, '/');
	dir = slash ? eq_strndup(ref_path, slash == ref_path ? 1 : (size_t)(slash - ref_path)) : eq_strdup(".");
	if (!dir) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* Output chain, last stage first: hash, un-filter, re-encode gzip. */
	eq_write_fn next = out_write;
	void *next_ctx = &os;
	if (xmode) {
		/* filtered in a scratch copy: the payload file stays as it is */
		struct refimg f;
		if ((r = refimg_scratch(dir, ref.len, &f, err)))
			goto out;
		memcpy(f.p, ref.p, ref.len);
		refimg_done(&ref);
		ref = f;
		eq_xf_buffer(ref.p, ref.len, true, xmode, NULL);
		if ((r = eq_xf_stream_begin(&xf, next, next_ctx, err)))
			goto out;
		next = eq_xf_stream_write;
		next_ctx = &xf;
	}
	if (deflate) {
		if ((r = expand_reference(&ref, dir, &g, err)))
			goto out;
		gs = eq_malloc(sizeof(*gs));
		if (!gs) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the gzip re-encoder");
			goto out;
		}
		eq_gzx_stream_init(gs, g.r, g.n, next, next_ctx);
		next = eq_gzx_stream_write;
		next_ctx = gs;
	}

	if (info.method == EQ_DELTA_METHOD_BSD)
		r = eq_bsd_apply(ref.p, &body, src, src_ctx, EQ_DELTA_HEADER_SIZE + g.bytes, next, next_ctx, err);
	else
		r = apply_zstd(ref.p, &body, src, src_ctx, EQ_DELTA_HEADER_SIZE + g.bytes, next, next_ctx, err);
	if (r)
		goto out;
	if (deflate && (r = eq_gzx_stream_end(gs, err)))
		goto out;
	if (xmode && (r = eq_xf_stream_end(&xf, err)))
		goto out;
	uint8_t d[EQ_SHA256_LEN];
	eq_sha256_final(&os.sha, d);
	if (memcmp(d, info.result_sha256, EQ_SHA256_LEN) != 0) {
		r = eq_error_set(err, EQ_ERR_VERIFY, "delta result does not match the sha256 recorded in the delta");
		goto out;
	}
	if (expect_sha256 && memcmp(d, expect_sha256, EQ_SHA256_LEN) != 0) {
		char got[EQ_SHA256_HEX_LEN + 1], want[EQ_SHA256_HEX_LEN + 1];
		eq_hex_encode(d, EQ_SHA256_LEN, got);
		eq_hex_encode(expect_sha256, EQ_SHA256_LEN, want);
		r = eq_error_set(err, EQ_ERR_VERIFY, "delta result has sha256 %s, expected %s", got, want);
		goto out;
	}
out:
	eq_xf_done(&xf);
	eq_free(gs);
	eq_free(g.r);
	eq_free(dir);
	refimg_done(&ref);
	return r;
}
