/*
 * Delta creation (host side): method 0 is zstd with the old payload as
 * prefix and long distance matching, optionally after the executable
 * pre-filter; method 1 (host tools only) is the bsdiff-class encoder in
 * bsdiff_create.c. The smallest candidate is kept.
 */
#include "bsdiff.h"
#include "delta_zstd.h"
#include "exec_filter.h"

#include <string.h>
#include <zstd.h>

/* Payloads larger than this are refused on the host (each is read whole). */
#define CREATE_MAX_PAYLOAD ((size_t)-1 / 8)

void eq_delta_params_default(struct eq_delta_params *p)
{
	p->level = 19;
	p->window_log = 0;
	p->max_window_log = EQ_DELTA_DEVICE_WINDOW_LOG;
	p->exec_filter = true;
	p->methods = 0;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void eq_delta_header_write(uint8_t out[EQ_DELTA_HEADER_SIZE], const struct eq_delta_info *info)
{
	uint8_t check[EQ_SHA256_LEN];
	memset(out, 0, EQ_DELTA_HEADER_SIZE);
	memcpy(out, "EQD1", 4);
	out[4] = (uint8_t)info->version;
	out[5] = (uint8_t)info->filter;
	out[6] = (uint8_t)info->window_log;
	out[7] = (uint8_t)info->method;
	put64(out + 8, info->ref_size);
	memcpy(out + 16, info->ref_sha256, EQ_SHA256_LEN);
	put64(out + 48, info->result_size);
	memcpy(out + 56, info->result_sha256, EQ_SHA256_LEN);
	eq_sha256(out, 88, check);
	memcpy(out + 88, check, 8);
}

/* Smallest log2 covering @n bytes, within zstd's window range. */
static unsigned window_log_for(uint64_t n)
{
	unsigned w = EQ_ZSTD_WINDOW_LOG_MIN;
	while (w < (unsigned)EQ_ZSTD_WINDOW_LOG_MAX && ((uint64_t)1 << w) < n)
		w++;
	return w;
}

static eq_err set_param(ZSTD_CCtx *c, ZSTD_cParameter k, int v, struct eq_error *err)
{
	size_t zr = ZSTD_CCtx_setParameter(c, k, v);
	return ZSTD_isError(zr) ? eq_zstd_error(err, zr, "delta compressor setup") : EQ_OK;
}

/* Compresses @src with @ref as prefix into a new buffer (caller frees). */
static eq_err compress_prefixed(const uint8_t *ref, size_t ref_len, const uint8_t *src, size_t src_len, int level,
				unsigned wlog, uint8_t **ret, size_t *ret_len, struct eq_error *err)
{
	eq_err r = EQ_OK;
	size_t cap = ZSTD_compressBound(src_len);
	uint8_t *dst = eq_malloc(cap);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	if (!dst || !c) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the delta compressor");
		goto out;
	}
	if ((r = set_param(c, ZSTD_c_compressionLevel, level, err)) ||
	    (r = set_param(c, ZSTD_c_windowLog, (int)wlog, err)) ||
	    (r = set_param(c, ZSTD_c_enableLongDistanceMatching, 1, err)) ||
	    (r = set_param(c, ZSTD_c_checksumFlag, 1, err)) || (r = set_param(c, ZSTD_c_contentSizeFlag, 1, err)))
		goto out;
	size_t zr = ZSTD_CCtx_refPrefix(c, ref, ref_len);
	if (ZSTD_isError(zr)) {
		r = eq_zstd_error(err, zr, "delta reference");
		goto out;
	}
	zr = ZSTD_compress2(c, dst, cap, src, src_len);
	if (ZSTD_isError(zr)) {
		r = eq_zstd_error(err, zr, "delta compress");
		goto out;
	}
	*ret = dst;
	*ret_len = zr;
	dst = NULL;
out:
	ZSTD_freeCCtx(c);
	eq_free(dst);
	return r;
}

/* Copies of both payloads filtered in @mode (caller frees both); *ret_same
 * is true when the filter converted nothing, so the copies equal the
 * unfiltered payloads. */
static eq_err filtered_pair(const uint8_t *old, size_t old_len, const uint8_t *new_, size_t new_len, unsigned mode,
			    uint8_t **ret_old, uint8_t **ret_new, bool *ret_same, struct eq_error *err)
{
	struct eq_xf_stats so, sn;
	uint8_t *fo = eq_malloc(old_len ? old_len : 1), *fn = eq_malloc(new_len ? new_len : 1);
	if (!fo || !fn) {
		eq_free(fo);
		eq_free(fn);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the filtered payloads");
	}
	memcpy(fo, old, old_len);
	memcpy(fn, new_, new_len);
	eq_xf_buffer(fo, old_len, true, mode, &so);
	eq_xf_buffer(fn, new_len, true, mode, &sn);
	eq_log(EQ_LOG_DEBUG,
	       "exec filter %u: old %llu entries, %llu x86-64 + %llu arm64 ELF, %llu conversions; new %llu conversions",
	       mode, (unsigned long long)so.entries, (unsigned long long)so.elf_x86_64,
	       (unsigned long long)so.elf_arm64, (unsigned long long)so.converted, (unsigned long long)sn.converted);
	*ret_old = fo;
	*ret_new = fn;
	*ret_same = so.converted == 0 && sn.converted == 0;
	return EQ_OK;
}

/* The smallest delta body so far and how it was made. */
struct best {
	uint8_t *data;
	size_t len;
	unsigned method, filter, window_log;
};

/* Keeps @cand if it is smaller than the best so far (ties keep the
 * earlier one, so the choice is deterministic); frees it otherwise. */
static void consider(struct best *b, uint8_t *cand, size_t len, unsigned method, unsigned filter, unsigned wlog)
{
	eq_log(EQ_LOG_DEBUG, "delta: method %u filter %u: %zu bytes (best so far %zu)", method, filter, len,
	       b->data ? b->len : 0);
	if (b->data && len >= b->len) {
		eq_free(cand);
		return;
	}
	eq_free(b->data);
	*b = (struct best){cand, len, method, filter, wlog};
}

/* Method 0 with filter @mode; skipped when the filter changes nothing. */
static eq_err try_zstd(const uint8_t *old, size_t old_len, const uint8_t *new_, size_t new_len, unsigned mode,
		       int level, unsigned wlog, struct best *b, struct eq_error *err)
{
	uint8_t *fo = NULL, *fn = NULL, *cand = NULL;
	size_t cand_len = 0;
	bool same = false;
	eq_err r = EQ_OK;
	if (mode && (r = filtered_pair(old, old_len, new_, new_len, mode, &fo, &fn, &same, err)))
		return r;
	if (!same)
		r = compress_prefixed(mode ? fo : old, old_len, mode ? fn : new_, new_len, level, wlog, &cand,
				      &cand_len, err);
	if (!r && cand)
		consider(b, cand, cand_len, EQ_DELTA_METHOD_ZSTD, mode, wlog);
	eq_free(fo);
	eq_free(fn);
	return r;
}

#ifdef EQ_DELTA_CREATE_BSD
/* Method 1 with filter @mode; skipped when a filter changes nothing. */
static eq_err try_bsd(const uint8_t *old, size_t old_len, const uint8_t *new_, size_t new_len, unsigned mode, int level,
		      struct best *b, struct eq_error *err)
{
	uint8_t *fo = NULL, *fn = NULL, *cand = NULL;
	size_t cand_len = 0;
	unsigned wlog = 0;
	bool same = false;
	eq_err r = EQ_OK;
	if (mode && (r = filtered_pair(old, old_len, new_, new_len, mode, &fo, &fn, &same, err)))
		return r;
	if (!same)
		r = eq_bsd_create(mode ? fo : old, old_len, mode ? fn : new_, new_len, level, &cand, &cand_len, &wlog,
				  err);
	if (!r && cand)
		consider(b, cand, cand_len, EQ_DELTA_METHOD_BSD, mode, wlog);
	eq_free(fo);
	eq_free(fn);
	return r;
}
#endif

eq_err eq_delta_create(const char *old_path, const char *new_path, const struct eq_delta_params *p, eq_write_fn sink,
		       void *sink_ctx, uint64_t *ret_size, struct eq_error *err)
{
	struct eq_delta_params def;
	if (!p) {
		eq_delta_params_default(&def);
		p = &def;
	}
	if (p->level < 1 || p->level > ZSTD_maxCLevel())
		return eq_error_set(err, EQ_ERR_INVAL, "delta level %d is outside 1..%d", p->level, ZSTD_maxCLevel());
	if (p->window_log != 0 &&
	    (p->window_log < EQ_ZSTD_WINDOW_LOG_MIN || p->window_log > (unsigned)EQ_ZSTD_WINDOW_LOG_MAX))
		return eq_error_set(err, EQ_ERR_INVAL, "delta window log %u is outside %d..%d", p->window_log,
				    EQ_ZSTD_WINDOW_LOG_MIN, EQ_ZSTD_WINDOW_LOG_MAX);
	const unsigned known = 1u << EQ_DELTA_METHOD_ZSTD | 1u << EQ_DELTA_METHOD_BSD;
#ifdef EQ_DELTA_CREATE_BSD
	const unsigned built = known;
#else
	const unsigned built = 1u << EQ_DELTA_METHOD_ZSTD;
#endif
	unsigned methods = p->methods ? p->methods : built;
	if (methods & ~known)
		return eq_error_set(err, EQ_ERR_INVAL, "delta methods mask 0x%x names unknown methods", methods);
	if (!(methods & built))
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "delta methods mask 0x%x: none is built in", methods);
	methods &= built;

	eq_err r;
	uint8_t *old = NULL, *new_ = NULL;
	size_t old_len = 0, new_len = 0;
	struct best best = {0};
	struct eq_delta_info info = {.version = 1};
	const unsigned all_modes = EQ_XF_BRANCH | EQ_XF_DATA;

	if ((r = eq_file_read_all(old_path, CREATE_MAX_PAYLOAD, &old, &old_len, err)) ||
	    (r = eq_file_read_all(new_path, CREATE_MAX_PAYLOAD, &new_, &new_len, err)))
		goto out;
	eq_sha256(old, old_len, info.ref_sha256);
	eq_sha256(new_, new_len, info.result_sha256);
	info.ref_size = old_len;
	info.result_size = new_len;
	unsigned wlog = p->window_log ? p->window_log : window_log_for((uint64_t)old_len + new_len);

	unsigned zstd_mode = EQ_DELTA_FILTER_NONE;
#ifdef EQ_DELTA_CREATE_BSD
	/* A window beyond the device budget rules method 0 out, when method 1
	 * can stand in. */
	if (p->max_window_log && wlog > p->max_window_log && (methods & 1u << EQ_DELTA_METHOD_BSD))
		methods &= ~(1u << EQ_DELTA_METHOD_ZSTD);
#endif
	if (methods & 1u << EQ_DELTA_METHOD_ZSTD) {
		for (unsigned mode = 0; mode <= (p->exec_filter ? all_modes : 0); mode++)
			if ((r = try_zstd(old, old_len, new_, new_len, mode, p->level, wlog, &best, err)))
				goto out;
		zstd_mode = best.filter;
	}
#ifdef EQ_DELTA_CREATE_BSD
	if (methods & 1u << EQ_DELTA_METHOD_BSD) {
		/* Method 0's best filter mode nearly always suits method 1 too,
		 * and each method-1 run costs a suffix array: try only that one
		 * and none (all modes when method 0 was not run). */
		for (unsigned mode = 0; mode <= (p->exec_filter ? all_modes : 0); mode++) {
			bool wanted = mode == 0 || mode == zstd_mode || !(methods & 1u << EQ_DELTA_METHOD_ZSTD);
			if (wanted && (r = try_bsd(old, old_len, new_, new_len, mode, p->level, &best, err)))
				goto out;
		}
	}
#else
	(void)zstd_mode;
#endif
	info.method = best.method;
	info.filter = best.filter;
	info.window_log = best.window_log;

	uint8_t hdr[EQ_DELTA_HEADER_SIZE];
	eq_delta_header_write(hdr, &info);
	if ((r = sink(sink_ctx, hdr, sizeof(hdr), err)) || (r = sink(sink_ctx, best.data, best.len, err)))
		goto out;
	if (ret_size)
		*ret_size = sizeof(hdr) + best.len;
out:
	eq_free(old);
	eq_free(new_);
	eq_free(best.data);
	return r;
}
