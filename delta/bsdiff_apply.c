/*
 * Delta method 1, application (device side). Reads one segment's
 * compressed parts at a time into a fixed buffer, decodes the control
 * entries from the control stream and produces their output in bounded
 * chunks: diff bytes added to the reference, then extra bytes. Every
 * control value is checked against the reference and the declared result
 * size before any byte it describes is produced.
 */
#include "bsdiff.h"
#include "delta_zstd.h"

#include <string.h>
#include <zstd.h>

/* Output produced per call to the next stage. */
#define OUT_CHUNK ((size_t)1 << 17)

enum { S_CTRL, S_DIFF, S_EXTRA };
static const char *const stream_name[] = {"control", "diff", "extra"};

struct in_stream {
	ZSTD_DStream *d;
	ZSTD_inBuffer in;  /* this segment's part, inside the segment buffer */
	uint64_t part_off; /* delta byte offset of the part */
	bool ended;        /* the frame is complete (no input taken since) */
	/* Decoded bytes read ahead for varints (control, and diff runs). */
	uint8_t buf[256];
	size_t bpos, blen;
	uint64_t done; /* decoded bytes before buf[bpos] that were read ahead */
};

struct bsd_dec {
	const uint8_t *ref;
	uint64_t ref_size, result_size;
	struct in_stream s[3];
	uint8_t *seg, *out;
	uint64_t seg_off; /* delta byte offset of the current segment header */
	bool runs;        /* EQ_BSD_FLAG_DIFF_RUNS */
	/* Diff runs: what is left of the current run. */
	uint64_t zeros, lits;
};

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One decoder call; remembers whether the frame has ended, as zstd says
 * so only in the call that ends it. */
static size_t step(struct in_stream *s, ZSTD_outBuffer *out)
{
	size_t in_before = s->in.pos;
	size_t zr = ZSTD_decompressStream(s->d, out, &s->in);
	if (!ZSTD_isError(zr)) {
		if (zr == 0)
			s->ended = true;
		else if (s->in.pos != in_before)
			s->ended = false;
	}
	return zr;
}

/* A zstd error in stream @k, prefixed with where it happened. */
static eq_err stream_error(struct bsd_dec *b, int k, size_t zr, size_t in_pos, struct eq_error *err)
{
	eq_err r = eq_zstd_error(err, zr, stream_name[k]);
	(void)eq_error_prefix(err, r, "at delta byte %llu, %s stream", (unsigned long long)(b->s[k].part_off + in_pos),
			      stream_name[k]);
	return r;
}

/*
 * Decodes exactly @len bytes of stream @k into @buf. The part must hold
 * them: the encoder flushes every stream at each segment end.
 */
static eq_err pull(struct bsd_dec *b, int k, uint8_t *buf, size_t len, struct eq_error *err)
{
	struct in_stream *s = &b->s[k];
	ZSTD_outBuffer out = {buf, len, 0};
	while (out.pos < out.size) {
		size_t in_before = s->in.pos, out_before = out.pos;
		size_t zr = step(s, &out);
		if (ZSTD_isError(zr))
			return stream_error(b, k, zr, in_before, err);
		if (out.pos < out.size && ((zr == 0) || (s->in.pos == in_before && out.pos == out_before)))
			return eq_error_set(
				err, EQ_ERR_PARSE,
				"delta is truncated: %s stream of the segment at delta byte %llu ends early",
				stream_name[k], (unsigned long long)b->seg_off);
	}
	return EQ_OK;
}

/*
 * At a segment end every part must be used up; the last segment must also
 * end each frame. Any byte of output left over means the controls and the
 * streams disagree.
 */
static eq_err drain(struct bsd_dec *b, int k, bool last, struct eq_error *err)
{
	struct in_stream *s = &b->s[k];
	uint8_t extra;
	for (;;) {
		ZSTD_outBuffer out = {&extra, 1, 0};
		size_t in_before = s->in.pos;
		size_t zr = step(s, &out);
		if (ZSTD_isError(zr))
			return stream_error(b, k, zr, in_before, err);
		if (out.pos)
			return eq_error_set(err, EQ_ERR_PARSE,
					    "delta segment at byte %llu: %s stream holds more than its controls use",
					    (unsigned long long)b->seg_off, stream_name[k]);
		bool done = s->in.pos == s->in.size && (!last || s->ended);
		if (done)
			return EQ_OK;
		if (s->in.pos == in_before)
			return eq_error_set(err, EQ_ERR_PARSE, "delta segment at byte %llu: %s stream %s",
					    (unsigned long long)b->seg_off, stream_name[k],
					    s->in.pos < s->in.size ? "has bytes its controls do not use"
								   : "is truncated");
	}
}

/* The next decoded byte of stream @k, read ahead as far as the part has
 * decoded bytes: varints vary in size. */
static eq_err stream_byte(struct bsd_dec *b, int k, uint8_t *ret, struct eq_error *err)
{
	struct in_stream *s = &b->s[k];
	if (s->bpos == s->blen) {
		ZSTD_outBuffer out = {s->buf, sizeof(s->buf), 0};
		/* Unlike pull(), take whatever is there. */
		while (out.pos == 0) {
			size_t in_before = s->in.pos;
			size_t zr = step(s, &out);
			if (ZSTD_isError(zr))
				return stream_error(b, k, zr, in_before, err);
			if (out.pos == 0 && (zr == 0 || s->in.pos == in_before))
				return eq_error_set(err, EQ_ERR_PARSE,
						    "delta is truncated: %s stream of the segment at delta byte "
						    "%llu ends early",
						    stream_name[k], (unsigned long long)b->seg_off);
		}
		s->done += s->blen;
		s->bpos = 0;
		s->blen = out.pos;
	}
	*ret = s->buf[s->bpos++];
	return EQ_OK;
}

/* Decoded bytes of stream @k taken so far. */
static uint64_t stream_pos(const struct in_stream *s)
{
	return s->done + s->bpos;
}

static eq_err stream_varint(struct bsd_dec *b, int k, uint64_t *ret, struct eq_error *err)
{
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		uint8_t c = 0;
		eq_err r = stream_byte(b, k, &c, err);
		if (r)
			return r;
		if (shift == 63 && c > 1)
			return eq_error_set(err, EQ_ERR_PARSE,
					    "delta segment at byte %llu: %s value at %s byte %llu overflows",
					    (unsigned long long)b->seg_off, stream_name[k], stream_name[k],
					    (unsigned long long)(stream_pos(&b->s[k]) - 1));
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
	}
	*ret = v;
	return EQ_OK;
}

/* @len bytes of stream @k: what was read ahead first, then decoded. */
static eq_err stream_read(struct bsd_dec *b, int k, uint8_t *buf, size_t len, struct eq_error *err)
{
	struct in_stream *s = &b->s[k];
	size_t n = s->blen - s->bpos < len ? s->blen - s->bpos : len;
	memcpy(buf, s->buf + s->bpos, n);
	s->bpos += n;
	if (n == len)
		return EQ_OK;
	s->done += s->blen;
	s->bpos = s->blen = 0;
	s->done += len - n;
	return pull(b, k, buf + n, len - n, err);
}

/*
 * The next @len diff bytes. As runs, each (zeros, count) pair is followed
 * by its count literal bytes; a run may span control entries but not a
 * segment, and a pair that describes no byte is refused: it would let a
 * few compressed bytes spin the decoder.
 */
static eq_err diff_read(struct bsd_dec *b, uint8_t *buf, size_t len, struct eq_error *err)
{
	if (!b->runs)
		return stream_read(b, S_DIFF, buf, len, err);
	for (size_t i = 0; i < len;) {
		eq_err r;
		if (b->zeros) {
			size_t n = b->zeros < len - i ? (size_t)b->zeros : len - i;
			memset(buf + i, 0, n);
			b->zeros -= n;
			i += n;
		} else if (b->lits) {
			size_t n = b->lits < len - i ? (size_t)b->lits : len - i;
			if ((r = stream_read(b, S_DIFF, buf + i, n, err)))
				return r;
			b->lits -= n;
			i += n;
		} else {
			uint64_t at = stream_pos(&b->s[S_DIFF]);
			if ((r = stream_varint(b, S_DIFF, &b->zeros, err)) ||
			    (r = stream_varint(b, S_DIFF, &b->lits, err)))
				return r;
			if (!b->zeros && !b->lits)
				return eq_error_set(err, EQ_ERR_PARSE,
						    "delta segment at byte %llu: empty diff run at diff byte %llu",
						    (unsigned long long)b->seg_off, (unsigned long long)at);
		}
	}
	return EQ_OK;
}

static eq_err run_segment(struct bsd_dec *b, uint32_t n_ctrl, uint64_t *pos, uint64_t *produced, eq_write_fn next,
			  void *next_ctx, struct eq_error *err)
{
	eq_err r;
	for (uint32_t k = 0; k < n_ctrl; k++) {
		uint64_t at = stream_pos(&b->s[S_CTRL]), add, copy, zz;
		if ((r = stream_varint(b, S_CTRL, &add, err)) || (r = stream_varint(b, S_CTRL, &copy, err)) ||
		    (r = stream_varint(b, S_CTRL, &zz, err)))
			return r;
		int64_t seek = (int64_t)(zz >> 1) ^ -(int64_t)(zz & 1);
		uint64_t left = b->result_size - *produced;
		if (add > left || copy > left - add)
			return eq_error_set(
				err, EQ_ERR_PARSE,
				"delta segment at byte %llu, control %u (control byte %llu): %llu + %llu bytes "
				"exceed the declared result size %llu (%llu left)",
				(unsigned long long)b->seg_off, k, (unsigned long long)at, (unsigned long long)add,
				(unsigned long long)copy, (unsigned long long)b->result_size, (unsigned long long)left);
		if (add > b->ref_size - *pos)
			return eq_error_set(err, EQ_ERR_PARSE,
					    "delta segment at byte %llu, control %u (control byte %llu): %llu bytes at "
					    "reference offset %llu run past the %llu-byte reference",
					    (unsigned long long)b->seg_off, k, (unsigned long long)at,
					    (unsigned long long)add, (unsigned long long)*pos,
					    (unsigned long long)b->ref_size);
		uint64_t base = *pos + add;
		if ((seek < 0 && (uint64_t) - (seek + 1) + 1 > base) ||
		    (seek > 0 && (uint64_t)seek > b->ref_size - base))
			return eq_error_set(
				err, EQ_ERR_PARSE,
				"delta segment at byte %llu, control %u (control byte %llu): seek by %lld from "
				"%llu leaves the %llu-byte reference",
				(unsigned long long)b->seg_off, k, (unsigned long long)at, (long long)seek,
				(unsigned long long)base, (unsigned long long)b->ref_size);
		for (uint64_t done = 0; done < add;) {
			size_t n = add - done < OUT_CHUNK ? (size_t)(add - done) : OUT_CHUNK;
			if ((r = diff_read(b, b->out, n, err)))
				return r;
			const uint8_t *rp = b->ref + *pos + done;
			for (size_t i = 0; i < n; i++)
				b->out[i] = (uint8_t)(b->out[i] + rp[i]);
			if ((r = next(next_ctx, b->out, n, err)))
				return r;
			done += n;
		}
		for (uint64_t done = 0; done < copy;) {
			size_t n = copy - done < OUT_CHUNK ? (size_t)(copy - done) : OUT_CHUNK;
			if ((r = stream_read(b, S_EXTRA, b->out, n, err)) || (r = next(next_ctx, b->out, n, err)))
				return r;
			done += n;
		}
		*produced += add + copy;
		*pos = (uint64_t)((int64_t)base + seek);
	}
	if (b->s[S_CTRL].bpos != b->s[S_CTRL].blen)
		return eq_error_set(err, EQ_ERR_PARSE,
				    "delta segment at byte %llu: control stream holds more than its %u controls",
				    (unsigned long long)b->seg_off, n_ctrl);
	if (b->zeros || b->lits || b->s[S_DIFF].bpos != b->s[S_DIFF].blen)
		return eq_error_set(err, EQ_ERR_PARSE,
				    "delta segment at byte %llu: diff stream holds more than its controls use",
				    (unsigned long long)b->seg_off);
	return EQ_OK;
}

eq_err eq_bsd_apply(const uint8_t *ref, const struct eq_delta_info *info, eq_read_fn src, void *src_ctx,
		    uint64_t consumed, eq_write_fn next, void *next_ctx, struct eq_error *err)
{
	struct bsd_dec b = {.ref = ref, .ref_size = info->ref_size, .result_size = info->result_size};
	eq_err r;
	uint8_t pre[EQ_BSD_PREAMBLE_SIZE];
	size_t n = 0;
	if ((r = eq_delta_read_full(src, src_ctx, pre, sizeof(pre), &n, err)))
		return r;
	if (n < sizeof(pre))
		return eq_error_set(err, EQ_ERR_PARSE, "delta is truncated after %llu bytes",
				    (unsigned long long)(consumed + n));
	uint64_t windows = 0;
	for (int k = 0; k < 3; k++) {
		if (pre[k] < EQ_ZSTD_WINDOW_LOG_MIN || pre[k] > info->window_log)
			return eq_error_set(err, EQ_ERR_PARSE,
					    "delta byte %llu: %s stream window log %u is outside %d..%u",
					    (unsigned long long)(consumed + (uint64_t)k), stream_name[k], pre[k],
					    EQ_ZSTD_WINDOW_LOG_MIN, info->window_log);
		windows += (uint64_t)1 << pre[k];
	}
	/* The header's window log is the budget for all three windows. */
	if (windows > (uint64_t)1 << info->window_log)
		return eq_error_set(err, EQ_ERR_PARSE, "delta byte %llu: stream windows exceed the header's 2^%u",
				    (unsigned long long)consumed, info->window_log);
	if (pre[3] & ~EQ_BSD_FLAG_DIFF_RUNS)
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "delta byte %llu: unknown method-1 flags 0x%02x",
				    (unsigned long long)(consumed + 3), pre[3]);
	b.runs = (pre[3] & EQ_BSD_FLAG_DIFF_RUNS) != 0;
	consumed += sizeof(pre);

	b.seg = eq_malloc(EQ_BSD_SEG_IN_MAX);
	b.out = eq_malloc(OUT_CHUNK);
	if (!b.seg || !b.out) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the delta decoder");
		goto out;
	}
	for (int k = 0; k < 3; k++) {
		b.s[k].d = ZSTD_createDStream();
		if (!b.s[k].d) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the delta decoder");
			goto out;
		}
		size_t zr = ZSTD_DCtx_setParameter(b.s[k].d, ZSTD_d_windowLogMax, pre[k]);
		if (ZSTD_isError(zr)) {
			r = eq_zstd_error(err, zr, "delta decoder setup");
			goto out;
		}
	}

	uint64_t produced = 0, pos = 0;
	bool last;
	do {
		uint8_t h[EQ_BSD_SEG_HEADER_SIZE];
		if ((r = eq_delta_read_full(src, src_ctx, h, sizeof(h), &n, err)))
			goto out;
		if (n < sizeof(h)) {
			r = eq_error_set(err, EQ_ERR_PARSE, "delta is truncated after %llu bytes",
					 (unsigned long long)(consumed + n));
			goto out;
		}
		b.seg_off = consumed;
		uint64_t total = (uint64_t)get32(h + 4) + get32(h + 8) + get32(h + 12);
		if (total > EQ_BSD_SEG_IN_MAX) {
			r = eq_error_set(err, EQ_ERR_PARSE,
					 "delta segment at byte %llu declares %llu bytes, more than %zu",
					 (unsigned long long)consumed, (unsigned long long)total, EQ_BSD_SEG_IN_MAX);
			goto out;
		}
		consumed += sizeof(h);
		if ((r = eq_delta_read_full(src, src_ctx, b.seg, (size_t)total, &n, err)))
			goto out;
		if (n < total) {
			r = eq_error_set(err, EQ_ERR_PARSE, "delta is truncated after %llu bytes",
					 (unsigned long long)(consumed + n));
			goto out;
		}
		size_t off = 0;
		for (int k = 0; k < 3; k++) {
			size_t len = get32(h + 4 + 4 * k);
			b.s[k].in = (ZSTD_inBuffer){b.seg + off, len, 0};
			b.s[k].part_off = consumed + off;
			off += len;
		}
		consumed += total;
		if ((r = run_segment(&b, get32(h), &pos, &produced, next, next_ctx, err)))
			goto out;
		/* The encoder closes a segment only when more output follows. */
		last = produced == info->result_size;
		for (int k = 0; k < 3; k++)
			if ((r = drain(&b, k, last, err)))
				goto out;
	} while (!last);

	uint8_t extra;
	if ((r = eq_delta_read_full(src, src_ctx, &extra, 1, &n, err)))
		goto out;
	if (n)
		r = eq_error_set(err, EQ_ERR_PARSE, "delta has trailing data at byte %llu",
				 (unsigned long long)consumed);
out:
	for (int k = 0; k < 3; k++)
		ZSTD_freeDStream(b.s[k].d);
	eq_free(b.seg);
	eq_free(b.out);
	return r;
}
