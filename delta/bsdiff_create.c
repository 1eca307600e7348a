/*
 * Delta method 1, creation (host only): approximate matches found through
 * a suffix array of the reference, encoded as control entries plus a diff
 * stream (mostly zero bytes where code only changed its displacements) and
 * an extra stream, each compressed with zstd.
 *
 * The scan follows the scoring that bsdiff made well known: from each new
 * position take the longest exact match in the reference; keep following
 * the previous alignment while it still explains the bytes about as well
 * (fewer than 8 bytes worse), and when switching, extend the previous
 * alignment forwards and the new one backwards as long as at least half of
 * the bytes agree.
 */
#include "bsdiff.h"
#include "varint.h"
#include "delta_zstd.h"

#include <divsufsort.h>
#include <string.h>
#include <zstd.h>

/* An alignment must beat the current one by this many matching bytes
 * before the scan switches to it: switching costs a control entry. */
#define SWITCH_MARGIN 8
/* Exact-match comparisons stop here: longer matches are walked through in
 * steps of this size, which keeps long runs of equal bytes (zero padding)
 * from making the scan quadratic. */
#define MATCH_CAP ((size_t)1 << 16)
/* The binary search orders suffixes by their first 8 KiB only: on nearly
 * identical payloads (systemd: 10 MB, 658 alignments) walking matches of
 * up to 64 KiB at every step was 60 % of the time. Among suffixes sharing
 * 8 KiB with the position the search may land on any; the two it lands
 * between are then measured to the full cap. Measured on the benchmark
 * pairs: systemd 7.3 s -> 3.4 s, every delta the same bytes but libc6's,
 * 13 bytes larger (4 KiB: 1,605 bytes larger; 32 KiB: 5.5 s). */
#define SEARCH_CAP ((size_t)1 << 13)

struct ctrl {
	uint64_t add, copy;
	int64_t seek;
};

struct eq_bsd_scan {
	struct ctrl *c;
	size_t n, cap;
	uint8_t *diff, *extra; /* each at most new_len bytes */
	size_t diff_len, extra_len;
};

/* How many of the first @n bytes of @a and @b agree, eight at a time:
 * matches run for megabytes, and every search compares along them. */
static size_t common(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
			return i + (size_t)(__builtin_clzll(x ^ y) >> 3);
#else
			return i + (size_t)(__builtin_ctzll(x ^ y) >> 3);
#endif
		}
	}
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/* How many of the @n byte pairs of @a and @b are equal (anywhere). */
static size_t count_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	const uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL;
	size_t i = 0, c = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		uint64_t z = x ^ y;
		/* The top bit of each byte of t is set where z's byte is 0. */
		uint64_t t = ~(((z & low7) + low7) | z | low7);
		c += (size_t)__builtin_popcountll(t);
	}
	for (; i < n; i++)
		c += a[i] == b[i];
	return c;
}

/* The matching prefix of @s at position @p of @old, capped, knowing that
 * the first @known bytes match. */
static size_t match_at(const uint8_t *old, size_t old_len, size_t p, const uint8_t *s, size_t s_len, size_t known)
{
	size_t n = old_len - p < s_len ? old_len - p : s_len;
	if (n > MATCH_CAP)
		n = MATCH_CAP;
	if (known > n)
		known = n;
	return known + common(old + p + known, s + known, n - known);
}

/* Where the suffixes starting with each 2-byte prefix lie in the suffix
 * array: the binary search starts inside that range, which skips its first
 * dozen steps (each a cache miss on a large reference) for every position
 * of the new payload. */
struct buckets {
	uint32_t start[65536], end[65536];
};

static void buckets_fill(struct buckets *b, const saidx_t *sa, const uint8_t *old, size_t old_len)
{
	memset(b, 0, sizeof(*b));
	for (size_t i = 0; i < old_len; i++) {
		size_t p = (size_t)sa[i];
		if (p + 1 >= old_len)
			continue; /* the one-byte suffix belongs to no bucket */
		unsigned k = (unsigned)old[p] << 8 | old[p + 1];
		if (b->end[k] == 0)
			b->start[k] = (uint32_t)i;
		b->end[k] = (uint32_t)i + 1;
	}
}

/* Longest (capped) exact match of @s in @old via binary search of @sa. */
static size_t sa_longest(const saidx_t *sa, const struct buckets *bk, const uint8_t *old, size_t old_len,
			 const uint8_t *s, size_t s_len, size_t *ret_pos)
{
	size_t lo = 0, hi = old_len - 1;
	if (s_len >= 2) {
		unsigned k = (unsigned)s[0] << 8 | s[1];
		/* An empty bucket: no match of 2 bytes; the whole array
		 * still finds the best single byte. */
		if (bk->end[k]) {
			lo = bk->start[k];
			hi = bk->end[k] - 1;
		}
	}
	/* Every suffix between lo and hi shares at least min(llo, lhi)
	 * bytes with @s (the suffixes are sorted), so each step compares
	 * from there: the decisions are memcmp()'s, without walking a long
	 * match again at every step. */
	size_t llo = match_at(old, old_len, (size_t)sa[lo], s, s_len, 0);
	size_t lhi = match_at(old, old_len, (size_t)sa[hi], s, s_len, 0);
	while (hi - lo >= 2) {
		size_t mid = lo + (hi - lo) / 2;
		size_t p = (size_t)sa[mid];
		size_t n = old_len - p < s_len ? old_len - p : s_len;
		if (n > SEARCH_CAP)
			n = SEARCH_CAP;
		size_t k = llo < lhi ? llo : lhi;
		if (k > n)
			k = n;
		size_t l = k + common(old + p + k, s + k, n - k);
		if (l < n && old[p + l] < s[l]) {
			lo = mid;
			llo = l;
		} else {
			hi = mid;
			lhi = l;
		}
	}
	size_t a = match_at(old, old_len, (size_t)sa[lo], s, s_len, llo);
	size_t b = match_at(old, old_len, (size_t)sa[hi], s, s_len, lhi);
	if (a >= b) {
		*ret_pos = (size_t)sa[lo];
		return a;
	}
	*ret_pos = (size_t)sa[hi];
	return b;
}

static eq_err push_ctrl(struct eq_bsd_scan *o, uint64_t add, uint64_t copy, int64_t seek, struct eq_error *err)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 1024;
		struct ctrl *c = eq_realloc(o->c, cap * sizeof(*c));
		if (!c)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory for delta control entries");
		o->c = c;
		o->cap = cap;
	}
	o->c[o->n++] = (struct ctrl){add, copy, seek};
	return EQ_OK;
}

/* Fills @o with control entries, diff and extra bytes for @new_. */
static eq_err scan(const saidx_t *sa, const struct buckets *bk, const uint8_t *old, size_t old_len, const uint8_t *new_,
		   size_t new_len, struct eq_bsd_scan *o, struct eq_error *err)
{
	size_t pos_scan = 0, len = 0, pos = 0, last_scan = 0, last_pos = 0;
	ptrdiff_t last_off = 0;
	eq_err r;
	while (pos_scan < new_len) {
		size_t old_score = 0;
		size_t sc = pos_scan += len;
		while (pos_scan < new_len) {
			len = old_len ? sa_longest(sa, bk, old, old_len, new_ + pos_scan, new_len - pos_scan, &pos) : 0;
			/* Score the previous alignment over the same stretch:
			 * the bytes of [sc, pos_scan + len) whose old
			 * counterpart exists and is equal. */
			size_t end = pos_scan + len;
			if (sc < end) {
				ptrdiff_t from = (ptrdiff_t)sc + last_off, to = (ptrdiff_t)end + last_off;
				ptrdiff_t lo_ = from < 0 ? 0 : from,
					  hi_ = to > (ptrdiff_t)old_len ? (ptrdiff_t)old_len : to;
				if (lo_ < hi_)
					old_score +=
						count_equal(old + lo_, new_ + (lo_ - last_off), (size_t)(hi_ - lo_));
				sc = end;
			}
			if ((len == old_score && len != 0) || len > old_score + SWITCH_MARGIN)
				break;
			ptrdiff_t j = (ptrdiff_t)pos_scan + last_off;
			if (j >= 0 && (size_t)j < old_len && old[j] == new_[pos_scan])
				old_score--;
			pos_scan++;
		}
		if (len == old_score && pos_scan != new_len)
			continue;

		/* Extend the previous alignment forwards while half matches. */
		size_t len_f = 0;
		{
			ptrdiff_t s = 0, best = 0;
			for (size_t i = 0; last_scan + i < pos_scan && last_pos + i < old_len;) {
				if (old[last_pos + i] == new_[last_scan + i])
					s++;
				i++;
				if (s * 2 - (ptrdiff_t)i > best * 2 - (ptrdiff_t)len_f) {
					best = s;
					len_f = i;
				}
			}
		}
		/* And the new one backwards. */
		size_t len_b = 0;
		if (pos_scan < new_len) {
			ptrdiff_t s = 0, best = 0;
			for (size_t i = 1; pos_scan >= last_scan + i && pos >= i; i++) {
				if (old[pos - i] == new_[pos_scan - i])
					s++;
				if (s * 2 - (ptrdiff_t)i > best * 2 - (ptrdiff_t)len_b) {
					best = s;
					len_b = i;
				}
			}
		}
		/* Where they overlap, split at the point that keeps most matches. */
		if (last_scan + len_f > pos_scan - len_b) {
			size_t overlap = (last_scan + len_f) - (pos_scan - len_b);
			ptrdiff_t s = 0, best = 0;
			size_t keep = 0;
			for (size_t i = 0; i < overlap; i++) {
				if (new_[last_scan + len_f - overlap + i] == old[last_pos + len_f - overlap + i])
					s++;
				if (new_[pos_scan - len_b + i] == old[pos - len_b + i])
					s--;
				if (s > best) {
					best = s;
					keep = i + 1;
				}
			}
			len_f = len_f + keep - overlap;
			len_b -= keep;
		}

		for (size_t i = 0; i < len_f; i++)
			o->diff[o->diff_len + i] = (uint8_t)(new_[last_scan + i] - old[last_pos + i]);
		o->diff_len += len_f;
		size_t copy = (pos_scan - len_b) - (last_scan + len_f);
		memcpy(o->extra + o->extra_len, new_ + last_scan + len_f, copy);
		o->extra_len += copy;
		int64_t seek = (int64_t)(pos - len_b) - (int64_t)(last_pos + len_f);
		if ((r = push_ctrl(o, len_f, copy, seek, err)))
			return r;
		last_scan = pos_scan - len_b;
		last_pos = pos - len_b;
		last_off = (ptrdiff_t)pos - (ptrdiff_t)pos_scan;
	}
	return EQ_OK;
}


static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Smallest log2 covering @n bytes within [10, EQ_BSD_WINDOW_LOG_MAX]. */
static unsigned stream_window_log(uint64_t n)
{
	unsigned w = EQ_ZSTD_WINDOW_LOG_MIN;
	while (w < EQ_BSD_WINDOW_LOG_MAX && ((uint64_t)1 << w) < n)
		w++;
	return w;
}

struct stream {
	ZSTD_CCtx *c;
	const uint8_t *data;
	size_t len, pos;
	unsigned wlog;
};

static eq_err stream_init(struct stream *s, const uint8_t *data, size_t len, int level, struct eq_error *err)
{
	s->data = data;
	s->len = len;
	s->pos = 0;
	s->wlog = stream_window_log(len);
	s->c = ZSTD_createCCtx();
	if (!s->c)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the delta compressor");
	size_t zr = ZSTD_CCtx_setParameter(s->c, ZSTD_c_compressionLevel, level);
	if (!ZSTD_isError(zr))
		zr = ZSTD_CCtx_setParameter(s->c, ZSTD_c_windowLog, (int)s->wlog);
	if (!ZSTD_isError(zr))
		zr = ZSTD_CCtx_setParameter(s->c, ZSTD_c_enableLongDistanceMatching, 1);
	if (!ZSTD_isError(zr))
		zr = ZSTD_CCtx_setParameter(s->c, ZSTD_c_checksumFlag, 1);
	if (!ZSTD_isError(zr))
		zr = ZSTD_CCtx_setPledgedSrcSize(s->c, len);
	return ZSTD_isError(zr) ? eq_zstd_error(err, zr, "delta stream compressor setup") : EQ_OK;
}

/* Compresses the next @n bytes of @s, flushing (or ending the frame), and
 * appends the output to @out. */
static eq_err stream_part(struct stream *s, size_t n, bool last, struct eq_buf *out, struct eq_error *err)
{
	uint8_t chunk[1 << 16];
	/* An empty old or new file has no buffer: NULL + 0 is undefined. */
	ZSTD_inBuffer in = {n ? s->data + s->pos : NULL, n, 0};
	s->pos += n;
	size_t left;
	do {
		ZSTD_outBuffer ob = {chunk, sizeof(chunk), 0};
		left = ZSTD_compressStream2(s->c, &ob, &in, last ? ZSTD_e_end : ZSTD_e_flush);
		if (ZSTD_isError(left))
			return eq_zstd_error(err, left, "delta stream compress");
		eq_err r = eq_buf_append(out, chunk, ob.pos, err);
		if (r)
			return r;
	} while (left != 0 || in.pos < in.size);
	return EQ_OK;
}

/* One segment's limits on the streams: [begin, end) of entries and bytes. */
struct seg {
	size_t c0, c1; /* control bytes */
	size_t d1, e1; /* diff and extra ends */
	uint32_t n_ctrl;
};

/*
 * Serialises the controls as varints, splitting entries so that no
 * segment describes more than EQ_BSD_SEG_OUT output bytes or holds more
 * than EQ_BSD_SEG_CTRL control bytes; records the segment ends. A segment
 * is closed only when another entry follows, so the last one always holds
 * the end of the output (the decoder relies on that).
 */
static eq_err pack_controls(const struct eq_bsd_scan *o, struct eq_buf *ctrl, struct seg **ret_segs, size_t *ret_n,
			    struct eq_error *err)
{
	struct eq_buf segs;
	eq_buf_init(&segs, SIZE_MAX / 2);
	struct seg cur = {0};
	size_t seg_out = 0, d = 0, e = 0;
	eq_err r = EQ_OK;
	uint8_t v[30];
	for (size_t k = 0; k < o->n; k++) {
		struct ctrl c = o->c[k];
		for (;;) {
			if (seg_out == EQ_BSD_SEG_OUT || ctrl->len - cur.c0 >= EQ_BSD_SEG_CTRL) {
				cur.c1 = ctrl->len;
				cur.d1 = d;
				cur.e1 = e;
				if ((r = eq_buf_append(&segs, &cur, sizeof(cur), err)))
					goto out;
				cur = (struct seg){.c0 = ctrl->len};
				seg_out = 0;
			}
			size_t room = EQ_BSD_SEG_OUT - seg_out;
			struct ctrl part = c;
			if (c.add > room)
				part = (struct ctrl){room, 0, 0};
			else if (c.add + c.copy > room)
				part = (struct ctrl){c.add, room - c.add, 0};
			size_t n = eq_uvarint_put(v, part.add);
			n += eq_uvarint_put(v + n, part.copy);
			n += eq_uvarint_put(v + n, ((uint64_t)part.seek << 1) ^ (part.seek < 0 ? UINT64_MAX : 0));
			if ((r = eq_buf_append(ctrl, v, n, err)))
				goto out;
			cur.n_ctrl++;
			seg_out += part.add + part.copy;
			d += part.add;
			e += part.copy;
			if (part.add == c.add && part.copy == c.copy)
				break;
			c.add -= part.add;
			c.copy -= part.copy;
		}
	}
	cur.c1 = ctrl->len;
	cur.d1 = d;
	cur.e1 = e;
	if ((r = eq_buf_append(&segs, &cur, sizeof(cur), err)))
		goto out;
	*ret_n = segs.len / sizeof(struct seg);
	*ret_segs = (struct seg *)eq_buf_steal(&segs, NULL);
out:
	eq_buf_done(&segs);
	return r;
}

/*
 * The diff bytes [from, to) as runs (EQ_BSD_FLAG_DIFF_RUNS): pairs of
 * varints (zero bytes, literal bytes), each followed by its literals,
 * which are the nonzero bytes up to the next zero. Appended to @out.
 */
static eq_err diff_runs(const uint8_t *d, size_t from, size_t to, struct eq_buf *out, struct eq_error *err)
{
	uint8_t v[20];
	for (size_t i = from; i < to;) {
		size_t z = i;
		while (z < to && !d[z])
			z++;
		size_t l = z;
		while (l < to && d[l])
			l++;
		size_t n = eq_uvarint_put(v, z - i);
		n += eq_uvarint_put(v + n, l - z);
		eq_err r = eq_buf_append(out, v, n, err);
		if (!r)
			r = eq_buf_append(out, d + z, l - z, err);
		if (r)
			return r;
		i = l;
	}
	return EQ_OK;
}

static eq_err encode(const struct eq_bsd_scan *o, int level, bool runs, struct eq_buf *out, unsigned *ret_window_log,
		     struct eq_error *err)
{
	struct eq_buf ctrl, rdiff, part[3];
	eq_buf_init(&ctrl, SIZE_MAX / 2);
	eq_buf_init(&rdiff, SIZE_MAX / 2);
	for (int i = 0; i < 3; i++)
		eq_buf_init(&part[i], EQ_BSD_SEG_IN_MAX);
	struct stream st[3] = {{0}};
	struct seg *segs = NULL;
	size_t n_segs = 0;
	eq_err r;
	if ((r = pack_controls(o, &ctrl, &segs, &n_segs, err)))
		goto out;
	/* As runs, each segment's diff bytes are coded on their own and its
	 * diff part ends where its runs do. */
	if (runs)
		for (size_t s = 0, from = 0; s < n_segs; s++) {
			size_t to = segs[s].d1;
			if ((r = diff_runs(o->diff, from, to, &rdiff, err)))
				goto out;
			segs[s].d1 = rdiff.len;
			from = to;
		}
	if ((r = stream_init(&st[0], ctrl.data, ctrl.len, level, err)) ||
	    (r = stream_init(&st[1], runs ? rdiff.data : o->diff, runs ? rdiff.len : o->diff_len, level, err)) ||
	    (r = stream_init(&st[2], o->extra, o->extra_len, level, err)))
		goto out;
	uint8_t pre[EQ_BSD_PREAMBLE_SIZE] = {(uint8_t)st[0].wlog, (uint8_t)st[1].wlog, (uint8_t)st[2].wlog,
					     runs ? EQ_BSD_FLAG_DIFF_RUNS : 0};
	if ((r = eq_buf_append(out, pre, sizeof(pre), err)))
		goto out;
	size_t prev_c = 0, prev_d = 0, prev_e = 0;
	for (size_t s = 0; s < n_segs; s++) {
		bool last = s + 1 == n_segs;
		for (int i = 0; i < 3; i++)
			eq_buf_reset(&part[i]);
		if ((r = stream_part(&st[0], segs[s].c1 - prev_c, last, &part[0], err)) ||
		    (r = stream_part(&st[1], segs[s].d1 - prev_d, last, &part[1], err)) ||
		    (r = stream_part(&st[2], segs[s].e1 - prev_e, last, &part[2], err)))
			goto out;
		prev_c = segs[s].c1;
		prev_d = segs[s].d1;
		prev_e = segs[s].e1;
		if (part[0].len + part[1].len + part[2].len > EQ_BSD_SEG_IN_MAX) {
			r = eq_error_set(err, EQ_ERR_LIMIT, "delta segment %zu compresses to %zu bytes, more than %zu",
					 s, part[0].len + part[1].len + part[2].len, EQ_BSD_SEG_IN_MAX);
			goto out;
		}
		uint8_t h[EQ_BSD_SEG_HEADER_SIZE];
		put32(h, segs[s].n_ctrl);
		for (int i = 0; i < 3; i++)
			put32(h + 4 + 4 * i, (uint32_t)part[i].len);
		if ((r = eq_buf_append(out, h, sizeof(h), err)))
			goto out;
		for (int i = 0; i < 3; i++)
			if ((r = eq_buf_append(out, part[i].data, part[i].len, err)))
				goto out;
	}
	uint64_t total = 0;
	for (int i = 0; i < 3; i++)
		total += (uint64_t)1 << st[i].wlog;
	unsigned w = EQ_ZSTD_WINDOW_LOG_MIN;
	while (((uint64_t)1 << w) < total)
		w++;
	*ret_window_log = w;
out:
	for (int i = 0; i < 3; i++) {
		ZSTD_freeCCtx(st[i].c);
		eq_buf_done(&part[i]);
	}
	eq_buf_done(&ctrl);
	eq_buf_done(&rdiff);
	eq_free(segs);
	return r;
}

void eq_bsd_scan_free(struct eq_bsd_scan *o)
{
	if (!o)
		return;
	eq_free(o->c);
	eq_free(o->diff);
	eq_free(o->extra);
	eq_free(o);
}

eq_err eq_bsd_scan(const uint8_t *old, size_t old_len, const uint8_t *new_, size_t new_len, struct eq_bsd_scan **ret,
		   struct eq_error *err)
{
	if (old_len >= (size_t)INT32_MAX)
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "reference of %zu bytes is too large for method 1",
				    old_len);
	eq_err r = EQ_OK;
	struct eq_bsd_scan *o = eq_calloc(1, sizeof(*o));
	saidx_t *sa = eq_malloc((old_len ? old_len : 1) * sizeof(*sa));
	struct buckets *bk = NULL;
	if (o) {
		o->diff = eq_malloc(new_len ? new_len : 1);
		o->extra = eq_malloc(new_len ? new_len : 1);
	}
	if (!o || !sa || !o->diff || !o->extra) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the suffix array");
		goto out;
	}
	if (old_len && divsufsort(old, sa, (saidx_t)old_len) != 0) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "suffix array construction failed");
		goto out;
	}
	if (!(bk = eq_malloc(sizeof(*bk)))) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the suffix array");
		goto out;
	}
	buckets_fill(bk, sa, old, old_len);
	if ((r = scan(sa, bk, old, old_len, new_, new_len, o, err)))
		goto out;
	eq_log(EQ_LOG_DEBUG, "delta method 1: %zu controls, %zu diff bytes, %zu extra bytes", o->n, o->diff_len,
	       o->extra_len);
	*ret = o;
	o = NULL;
out:
	eq_free(sa);
	eq_free(bk);
	eq_bsd_scan_free(o);
	return r;
}

eq_err eq_bsd_encode(const struct eq_bsd_scan *o, int level, uint8_t **ret, size_t *ret_len, unsigned *ret_window_log,
		     struct eq_error *err)
{
	struct eq_buf out;
	eq_buf_init(&out, SIZE_MAX / 2);
	eq_err r = encode(o, level, true, &out, ret_window_log, err);
	/* Runs can take half as much room again as the bytes they code; a
	 * segment that no longer fits the decoder's buffer that way is
	 * coded byte for byte, as before the flag. */
	if (r == EQ_ERR_LIMIT) {
		eq_buf_reset(&out);
		eq_error_clear(err);
		r = encode(o, level, false, &out, ret_window_log, err);
	}
	if (!r)
		*ret = eq_buf_steal(&out, ret_len);
	eq_buf_done(&out);
	return r;
}
