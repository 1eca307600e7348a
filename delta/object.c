/*
 * Full objects: a payload compressed as one zstd frame (with the XXH64
 * content checksum), written and read as streams so neither side needs the
 * payload in memory.
 */
#include "delta_zstd.h"

#include <inttypes.h>
#include <zstd.h>
#include <zstd_errors.h>

eq_err eq_zstd_error(struct eq_error *err, size_t code, const char *what)
{
	/* if-chain, not switch: -Wswitch-enum would demand every zstd code */
	ZSTD_ErrorCode z = ZSTD_getErrorCode(code);
	eq_err c = EQ_ERR_PARSE;
	if (z == ZSTD_error_memory_allocation)
		c = EQ_ERR_NOMEM;
	else if (z == ZSTD_error_frameParameter_windowTooLarge)
		c = EQ_ERR_LIMIT;
	else if (z == ZSTD_error_checksum_wrong)
		c = EQ_ERR_VERIFY;
	else if (z == ZSTD_error_parameter_unsupported || z == ZSTD_error_parameter_outOfBound ||
		 z == ZSTD_error_frameParameter_unsupported)
		c = EQ_ERR_UNSUPPORTED;
	return eq_error_set(err, c, "%s: zstd: %s", what, ZSTD_getErrorName(code));
}

eq_err eq_object_compress(eq_read_fn src, void *src_ctx, uint64_t src_size, eq_write_fn sink, void *sink_ctx, int level,
			  struct eq_error *err)
{
	if (level < 1 || level > ZSTD_maxCLevel())
		return eq_error_set(err, EQ_ERR_INVAL, "compression level %d is outside 1..%d", level,
				    ZSTD_maxCLevel());
	eq_err r = EQ_OK;
	size_t in_cap = ZSTD_CStreamInSize(), out_cap = ZSTD_CStreamOutSize();
	uint8_t *in_buf = eq_malloc(in_cap), *out_buf = eq_malloc(out_cap);
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	if (!in_buf || !out_buf || !cctx) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the compressor");
		goto out;
	}
	size_t zr = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
	if (!ZSTD_isError(zr))
		zr = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	/* A device decodes with a window buffer of this size; 2 MiB costs
	 * little ratio on package payloads and keeps installs small. */
	if (!ZSTD_isError(zr))
		zr = ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, EQ_OBJECT_WINDOW_LOG);
	if (!ZSTD_isError(zr) && src_size != EQ_OBJECT_SIZE_UNKNOWN)
		zr = ZSTD_CCtx_setPledgedSrcSize(cctx, src_size);
	if (ZSTD_isError(zr)) {
		r = eq_zstd_error(err, zr, "compressor setup");
		goto out;
	}
	uint64_t total = 0;
	for (bool last = false; !last;) {
		size_t n = 0;
		r = src(src_ctx, in_buf, in_cap, &n, err);
		if (r)
			goto out;
		last = n == 0;
		total += n;
		if (src_size != EQ_OBJECT_SIZE_UNKNOWN && (total > src_size || (last && total != src_size))) {
			r = eq_error_set(err, EQ_ERR_VERIFY,
					 "the source to compress yields %s%" PRIu64 " bytes, not the %" PRIu64
					 " it was said to have",
					 total > src_size ? "more than " : "", total > src_size ? src_size : total,
					 src_size);
			goto out;
		}
		ZSTD_inBuffer in = {in_buf, n, 0};
		ZSTD_EndDirective mode = last ? ZSTD_e_end : ZSTD_e_continue;
		for (;;) {
			ZSTD_outBuffer out = {out_buf, out_cap, 0};
			size_t rem = ZSTD_compressStream2(cctx, &out, &in, mode);
			if (ZSTD_isError(rem)) {
				r = eq_zstd_error(err, rem, "compress");
				goto out;
			}
			if (out.pos) {
				r = sink(sink_ctx, out_buf, out.pos, err);
				if (r)
					goto out;
			}
			if (last ? rem == 0 : in.pos == in.size)
				break;
		}
	}
out:
	ZSTD_freeCCtx(cctx);
	eq_free(in_buf);
	eq_free(out_buf);
	return r;
}

eq_err eq_object_decompress(eq_read_fn src, void *src_ctx, eq_write_fn sink, void *sink_ctx, uint64_t max_out,
			    unsigned max_window_log, struct eq_error *err)
{
	if (max_window_log == 0)
		max_window_log = EQ_OBJECT_WINDOW_LOG_DEFAULT;
	if (max_window_log < EQ_ZSTD_WINDOW_LOG_MIN || max_window_log > EQ_ZSTD_WINDOW_LOG_MAX)
		return eq_error_set(err, EQ_ERR_INVAL, "window log %u is outside %d..%d", max_window_log,
				    EQ_ZSTD_WINDOW_LOG_MIN, EQ_ZSTD_WINDOW_LOG_MAX);
	eq_err r = EQ_OK;
	size_t in_cap = ZSTD_DStreamInSize(), out_cap = ZSTD_DStreamOutSize();
	uint8_t *in_buf = eq_malloc(in_cap), *out_buf = eq_malloc(out_cap);
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	if (!in_buf || !out_buf || !dctx) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the decompressor");
		goto out;
	}
	size_t zr = ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, (int)max_window_log);
	if (ZSTD_isError(zr)) {
		r = eq_zstd_error(err, zr, "decompressor setup");
		goto out;
	}
	uint64_t produced = 0, consumed = 0;
	size_t frame_rem = 1; /* nonzero while inside a frame */
	bool any = false;
	for (;;) {
		size_t n = 0;
		r = src(src_ctx, in_buf, in_cap, &n, err);
		if (r)
			goto out;
		if (n == 0)
			break;
		any = true;
		ZSTD_inBuffer in = {in_buf, n, 0};
		while (in.pos < in.size) {
			ZSTD_outBuffer out = {out_buf, out_cap, 0};
			size_t before = in.pos;
			frame_rem = ZSTD_decompressStream(dctx, &out, &in);
			if (ZSTD_isError(frame_rem)) {
				r = eq_zstd_error(err, frame_rem, "object");
				eq_error_prefix(err, r, "at compressed byte %llu",
						(unsigned long long)(consumed + before));
				goto out;
			}
			if (out.pos > max_out - produced) {
				r = eq_error_set(err, EQ_ERR_LIMIT,
						 "object decompresses to more than the limit of %llu bytes",
						 (unsigned long long)max_out);
				goto out;
			}
			produced += out.pos;
			if (out.pos) {
				r = sink(sink_ctx, out_buf, out.pos, err);
				if (r)
					goto out;
			}
		}
		consumed += n;
	}
	/* Flush what the decoder still holds (it can buffer a full block). */
	while (any && frame_rem != 0) {
		ZSTD_inBuffer in = {NULL, 0, 0};
		ZSTD_outBuffer out = {out_buf, out_cap, 0};
		frame_rem = ZSTD_decompressStream(dctx, &out, &in);
		if (ZSTD_isError(frame_rem)) {
			r = eq_zstd_error(err, frame_rem, "object");
			goto out;
		}
		if (out.pos > max_out - produced) {
			r = eq_error_set(err, EQ_ERR_LIMIT, "object decompresses to more than the limit of %llu bytes",
					 (unsigned long long)max_out);
			goto out;
		}
		produced += out.pos;
		if (out.pos) {
			r = sink(sink_ctx, out_buf, out.pos, err);
			if (r)
				goto out;
		} else if (frame_rem != 0) {
			r = eq_error_set(err, EQ_ERR_PARSE, "object is truncated after %llu compressed bytes",
					 (unsigned long long)consumed);
			goto out;
		}
	}
	if (!any)
		r = eq_error_set(err, EQ_ERR_PARSE, "object is empty");
out:
	ZSTD_freeDCtx(dctx);
	eq_free(in_buf);
	eq_free(out_buf);
	return r;
}
