/*
 * Delta creation (host side): method 0 is zstd with the old payload as
 * prefix and long distance matching, optionally after the executable
 * pre-filter; method 1 (host tools only) is the bsdiff-class encoder in
 * bsdiff_create.c. The smallest candidate is kept.
 */
#include "bsdiff.h"
#include "delta_zstd.h"
#include "exec_filter.h"
#include "gz_puff.h"

#include <pthread.h>
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
	p->deflate = true;
	p->threads = 1;
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

/* The two payloads and, when deflate-aware deltas apply, their expansions
 * with gzip files puffed (the same regions whatever the filter mode, since
 * the executable filter never touches a gzip file or a tar header). */
struct inputs {
	const uint8_t *old, *new_;
	size_t old_len, new_len;
	struct eq_gzx xo, xn;
};

/* The pair a method diffs for filter @mode (and deflate expansion if
 * @deflate): borrowed from the inputs, or new copies in free_old/free_new
 * that pair_done() frees. @same is true when the filter converted nothing,
 * so the pair equals the one of mode 0. */
struct pair {
	const uint8_t *old, *new_;
	size_t old_len, new_len;
	uint8_t *free_old, *free_new;
	bool same;
};

static void pair_done(struct pair *p)
{
	eq_free(p->free_old);
	eq_free(p->free_new);
	*p = (struct pair){0};
}

static eq_err make_pair(const struct inputs *in, unsigned mode, bool deflate, struct pair *p, struct eq_error *err)
{
	*p = (struct pair){.old = deflate ? in->xo.data : in->old,
			   .new_ = deflate ? in->xn.data : in->new_,
			   .old_len = deflate ? in->xo.len : in->old_len,
			   .new_len = deflate ? in->xn.len : in->new_len};
	if (!mode)
		return EQ_OK;
	struct eq_xf_stats so, sn;
	uint8_t *fo = eq_malloc(in->old_len ? in->old_len : 1), *fn = eq_malloc(in->new_len ? in->new_len : 1);
	if (!fo || !fn) {
		eq_free(fo);
		eq_free(fn);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the filtered payloads");
	}
	memcpy(fo, in->old, in->old_len);
	memcpy(fn, in->new_, in->new_len);
	eq_xf_buffer(fo, in->old_len, true, mode, &so);
	eq_xf_buffer(fn, in->new_len, true, mode, &sn);
	eq_log(EQ_LOG_DEBUG,
	       "exec filter %u: old %llu entries, %llu x86-64 + %llu arm64 ELF, %llu conversions; new %llu conversions",
	       mode, (unsigned long long)so.entries, (unsigned long long)so.elf_x86_64,
	       (unsigned long long)so.elf_arm64, (unsigned long long)so.converted, (unsigned long long)sn.converted);
	p->same = so.converted == 0 && sn.converted == 0;
	if (deflate) {
		uint8_t *xo = eq_malloc(in->xo.len ? in->xo.len : 1), *xn = eq_malloc(in->xn.len ? in->xn.len : 1);
		if (!xo || !xn) {
			eq_free(fo);
			eq_free(fn);
			eq_free(xo);
			eq_free(xn);
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the expanded payloads");
		}
		eq_gzx_splice(&in->xo, fo, in->old_len, xo);
		eq_gzx_splice(&in->xn, fn, in->new_len, xn);
		eq_free(fo);
		eq_free(fn);
		fo = xo;
		fn = xn;
	}
	p->old = p->free_old = fo;
	p->new_ = p->free_new = fn;
	return EQ_OK;
}

/* The smallest delta body so far and how it was made. */
struct best {
	uint8_t *data;
	size_t len;
	size_t order; /* of the trial that made it: ties keep the earlier */
	unsigned method, filter, window_log;
	uint8_t xref_sha256[EQ_SHA256_LEN]; /* deflate: the expanded reference */
};

/* Keeps @cand if it is smaller than the best so far, or as small and made
 * by an earlier trial (@order), so the choice does not depend on which
 * thread finished first; frees it otherwise. */
static void consider(struct best *b, uint8_t *cand, size_t len, size_t order, unsigned method, unsigned filter,
		     unsigned wlog, const struct pair *pr)
{
	eq_log(EQ_LOG_DEBUG, "delta: method %u filter %u: %zu bytes (best so far %zu)", method, filter, len,
	       b->data ? b->len : 0);
	if (b->data && (len > b->len || (len == b->len && order >= b->order))) {
		eq_free(cand);
		return;
	}
	eq_free(b->data);
	*b = (struct best){cand, len, order, method, filter, wlog, {0}};
	if (filter & EQ_DELTA_FILTER_DEFLATE)
		eq_sha256(pr->old, pr->old_len, b->xref_sha256);
}

static unsigned filter_of(unsigned mode, bool deflate)
{
	return mode | (deflate ? EQ_DELTA_FILTER_DEFLATE : 0);
}

/* The zstd levels at which filters are compared (see eq_delta_create()).
 * Method 1's streams (diff bytes, mostly zero, and new bytes) rank the
 * same at level 3 as at 19 on the benchmark pairs; method 0's prefix
 * matching needs level 9 to rank filters as level 19 does. */
#define DELTA_TRIAL_LEVEL 9
#define DELTA_BSD_TRIAL_LEVEL 3
/* A method's final run is skipped when its best trial is more than this
 * percentage of the other method's (see eq_delta_create()). */
#define DELTA_FINAL_MARGIN 115

/* One way of making the delta: a method, a filter mode, with or without
 * the deflate expansion, at a level. */
struct trial {
	unsigned method, mode, wlog;
	bool deflate;
	int level;
};

/* Trials run on up to @threads threads; each result is merged under the
 * lock as soon as it is made, so at most @threads pairs are held at once
 * besides the best. */
struct trials {
	const struct inputs *in;
	const struct trial *v;
	size_t base; /* order of v[0] among all candidates of the delta */
	struct best *best;
	struct keep *keep; /* method 1: the smallest trial's scan */
	/* Method 0's smallest trial, ranked as in consider(). */
	size_t zstd_len, zstd_order;
	unsigned zstd_filter;
	eq_err r;
	struct eq_error *err;
	pthread_mutex_t mu;
};

/* The method-1 trial whose encoding was smallest: its scan is encoded again
 * at the full level. */
struct keep {
	struct pair pr;
	struct eq_bsd_scan *scan;
	size_t len, order;
	unsigned filter;
};

static void keep_done(struct keep *k)
{
#ifdef EQ_DELTA_CREATE_BSD
	eq_bsd_scan_free(k->scan);
#endif
	pair_done(&k->pr);
	*k = (struct keep){0};
}

static void run_trial(void *ctx, size_t i)
{
	struct trials *ts = ctx;
	const struct trial *t = &ts->v[i];
	/* After a failure the remaining trials are not worth their time. */
	pthread_mutex_lock(&ts->mu);
	bool stop = ts->r != EQ_OK;
	pthread_mutex_unlock(&ts->mu);
	if (stop)
		return;
	struct pair pr;
	struct eq_bsd_scan *sc = NULL;
	uint8_t *cand = NULL;
	size_t len = 0;
	unsigned wlog = t->wlog;
	struct eq_error e;
	eq_error_clear(&e);
	double t0 = eq_now_s();
	eq_err r = make_pair(ts->in, t->mode, t->deflate, &pr, &e);
	if (!r && !pr.same) {
		if (t->method == EQ_DELTA_METHOD_ZSTD)
			r = compress_prefixed(pr.old, pr.old_len, pr.new_, pr.new_len, t->level, t->wlog, &cand, &len,
					      &e);
#ifdef EQ_DELTA_CREATE_BSD
		else if (!(r = eq_bsd_scan(pr.old, pr.old_len, pr.new_, pr.new_len, &sc, &e)))
			r = eq_bsd_encode(sc, t->level, &cand, &len, &wlog, &e);
#endif
	}
	eq_log(EQ_LOG_DEBUG, "delta: trial method %u filter %u level %d: %.3f s", t->method,
	       filter_of(t->mode, t->deflate), t->level, eq_now_s() - t0);
	pthread_mutex_lock(&ts->mu);
	if (r && !ts->r) {
		ts->r = r;
		if (ts->err)
			*ts->err = e;
	}
	if (!r && cand) {
		struct keep *k = ts->keep;
		bool kept = sc && k && (!k->scan || len < k->len || (len == k->len && i < k->order));
		if (t->method == EQ_DELTA_METHOD_ZSTD &&
		    (!ts->zstd_len || len < ts->zstd_len || (len == ts->zstd_len && i < ts->zstd_order))) {
			ts->zstd_len = len;
			ts->zstd_order = i;
			ts->zstd_filter = filter_of(t->mode, t->deflate);
		}
		consider(ts->best, cand, len, ts->base + i, t->method, filter_of(t->mode, t->deflate), wlog, &pr);
		cand = NULL;
		if (kept) {
			keep_done(k);
			*k = (struct keep){pr, sc, len, i, filter_of(t->mode, t->deflate)};
			sc = NULL;
			pr = (struct pair){0};
		}
	}
	pthread_mutex_unlock(&ts->mu);
	eq_free(cand);
#ifdef EQ_DELTA_CREATE_BSD
	eq_bsd_scan_free(sc);
#endif
	pair_done(&pr);
}

/* Runs trials @v[0..@n) on up to @threads threads (this one included);
 * their candidates are numbered from *@order on, which moves past them.
 * Method 0's smallest trial, if any ran, goes to *@zstd_len and
 * *@zstd_filter (when not NULL). */
static eq_err run_trials(const struct inputs *in, const struct trial *v, size_t n, size_t *order, unsigned threads,
			 struct best *best, struct keep *keep, size_t *zstd_len, unsigned *zstd_filter,
			 struct eq_error *err)
{
	struct trials ts = {.in = in, .v = v, .base = *order, .best = best, .keep = keep, .err = err};
	*order += n;
	pthread_mutex_init(&ts.mu, NULL);
	eq_parallel(n, threads, run_trial, &ts);
	pthread_mutex_destroy(&ts.mu);
	if (zstd_len && ts.zstd_len) {
		*zstd_len = ts.zstd_len;
		*zstd_filter = ts.zstd_filter;
	}
	return ts.r;
}

/* The two final runs, method 0 ([0]) and method 1 ([1]), made at once. */
struct finals {
	const struct inputs *in;
	const struct keep *keep;
	struct trial t; /* method 0's */
	int level;
	bool run[2];
	struct pair pr; /* method 0's pair, for consider() */
	struct {
		uint8_t *data;
		size_t len;
		unsigned wlog;
	} out[2];
	eq_err r[2];
	struct eq_error e[2];
};

static void run_final(void *ctx, size_t k)
{
	struct finals *f = ctx;
	if (!f->run[k])
		return;
	eq_error_clear(&f->e[k]);
	if (k == 0) {
		f->out[0].wlog = f->t.wlog;
		f->r[0] = make_pair(f->in, f->t.mode, f->t.deflate, &f->pr, &f->e[0]);
		if (!f->r[0])
			f->r[0] = compress_prefixed(f->pr.old, f->pr.old_len, f->pr.new_, f->pr.new_len, f->level,
						    f->t.wlog, &f->out[0].data, &f->out[0].len, &f->e[0]);
	}
#ifdef EQ_DELTA_CREATE_BSD
	else {
		f->r[1] = eq_bsd_encode(f->keep->scan, f->level, &f->out[1].data, &f->out[1].len, &f->out[1].wlog,
					&f->e[1]);
	}
#endif
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The preamble of a deflate-aware delta and its region table. */
static eq_err write_gzx_preamble(const struct inputs *in, const struct best *b, eq_write_fn sink, void *sink_ctx,
				 uint64_t *ret_size, struct eq_error *err)
{
	uint8_t pre[EQ_GZX_PREAMBLE_SIZE] = {0};
	uint8_t *t = eq_malloc(in->xn.n * EQ_GZX_ENTRY_MAX + 1);
	if (!t)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the gzip region table");
	size_t tlen = eq_gzx_table_encode(in->xn.r, in->xn.n, t);
	put64(pre, in->xo.len);
	put64(pre + 8, in->xn.len);
	memcpy(pre + 16, b->xref_sha256, EQ_SHA256_LEN);
	put32(pre + 48, (uint32_t)in->xn.n);
	put32(pre + 52, (uint32_t)tlen);
	eq_err r = sink(sink_ctx, pre, sizeof(pre), err);
	if (!r)
		r = sink(sink_ctx, t, tlen, err);
	eq_free(t);
	*ret_size = sizeof(pre) + tlen;
	return r;
}

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
	struct inputs in = {0};
	struct keep keep = {0}; /* method 1's best trial */
	const unsigned all_modes = EQ_XF_BRANCH | EQ_XF_DATA;

	if ((r = eq_file_read_all(old_path, CREATE_MAX_PAYLOAD, &old, &old_len, err)) ||
	    (r = eq_file_read_all(new_path, CREATE_MAX_PAYLOAD, &new_, &new_len, err)))
		goto out;
	eq_sha256(old, old_len, info.ref_sha256);
	eq_sha256(new_, new_len, info.result_sha256);
	info.ref_size = old_len;
	info.result_size = new_len;
	in.old = old;
	in.new_ = new_;
	in.old_len = old_len;
	in.new_len = new_len;
	/* Deflate-aware when the new payload has a gzip file to re-encode;
	 * both forms are tried for method 0, method 1 follows its choice. */
	bool can_deflate = false;
	if (p->deflate) {
		if ((r = eq_gzx_expand(old, old_len, NULL, 0, &in.xo, err)) ||
		    (r = eq_gzx_expand(new_, new_len, NULL, 0, &in.xn, err)))
			goto out;
		can_deflate = in.xn.n > 0;
		eq_log(EQ_LOG_DEBUG, "deflate: old %zu gzip files, %zu -> %zu bytes; new %zu, %zu -> %zu bytes",
		       in.xo.n, old_len, in.xo.len, in.xn.n, new_len, in.xn.len);
	}
	unsigned wlog = p->window_log ? p->window_log : window_log_for((uint64_t)old_len + new_len);
	unsigned xwlog = p->window_log ? p->window_log : window_log_for((uint64_t)in.xo.len + in.xn.len);

	unsigned zstd_filter = EQ_DELTA_FILTER_NONE;
	bool zstd_ran = false, zstd_ran_deflate = false;
	/* The filters are compared at a fast level and only the winner is
	 * compressed at @p->level: eight level-19 runs with a megabytes-long
	 * prefix made delta creation several times slower than bsdiff, and
	 * the order of the filters hardly ever changes with the level. Every
	 * trial stays a candidate, so the smallest delta still wins. */
	const int trial_level = p->level > DELTA_TRIAL_LEVEL ? DELTA_TRIAL_LEVEL : p->level;
	const unsigned threads = p->threads < 1                      ? 1
				 : p->threads > EQ_DELTA_MAX_THREADS ? EQ_DELTA_MAX_THREADS
								     : p->threads;
	const bool bsd = (methods & 1u << EQ_DELTA_METHOD_BSD) != 0;
#ifndef EQ_DELTA_CREATE_BSD
	(void)bsd;
#endif
	struct trial tv[8];
	size_t nt = 0, order = 0;
	for (int d = can_deflate ? 1 : 0; d >= 0; d--) {
		unsigned w = d ? xwlog : wlog;
		/* A window beyond the device budget rules method 0 out, when
		 * method 1 can stand in. */
		bool fits = !(p->max_window_log && w > p->max_window_log);
		if (!fits && bsd)
			continue;
		if (!(methods & 1u << EQ_DELTA_METHOD_ZSTD))
			continue;
		zstd_ran = true;
		zstd_ran_deflate |= d;
		for (unsigned mode = 0; mode <= (p->exec_filter ? all_modes : 0); mode++)
			tv[nt++] = (struct trial){EQ_DELTA_METHOD_ZSTD, mode, w, d, trial_level};
	}
	size_t zstd_trial_len = 0, bsd_trial_len = 0;
	int bsd_level = p->level;
#ifndef EQ_DELTA_CREATE_BSD
	(void)zstd_ran; /* method 1's choice of filter, on the host */
	(void)zstd_ran_deflate;
#endif
	if (nt && (r = run_trials(&in, tv, nt, &order, threads, &best, NULL, &zstd_trial_len, &zstd_filter, err)))
		goto out;
#ifdef EQ_DELTA_CREATE_BSD
	if (bsd) {
		/* Method 0's best filter nearly always suits method 1 too, and
		 * each method-1 run costs a suffix array: try only that one and
		 * none (all modes when method 0 was not run). */
		bool d = can_deflate && (!zstd_ran_deflate || (zstd_filter & EQ_DELTA_FILTER_DEFLATE));
		bsd_level = p->level > DELTA_BSD_TRIAL_LEVEL ? DELTA_BSD_TRIAL_LEVEL : p->level;
		nt = 0;
		for (unsigned mode = 0; mode <= (p->exec_filter ? all_modes : 0); mode++)
			if (mode == 0 || mode == (zstd_filter & all_modes) || !zstd_ran)
				tv[nt++] = (struct trial){EQ_DELTA_METHOD_BSD, mode, 0, d, bsd_level};
		if ((r = run_trials(&in, tv, nt, &order, threads, &best, &keep, NULL, NULL, err)))
			goto out;
	}
	bsd_trial_len = keep.scan ? keep.len : 0;
#endif
	/*
	 * The winners' final runs at the full level: the seconds of a delta
	 * (level 19 with a prefix of megabytes). A method whose best trial is
	 * clearly bigger than the other's is not run again: from trial to
	 * full level method 0 shrinks by 13..21 % and method 1 by 5..10 % on
	 * the benchmark pairs where both run, so a trial 15 % bigger never
	 * won; closer ones run both (libexpat1: 8 % apart, method 1 won by
	 * 2 %). Both finals run at once.
	 */
	struct finals f = {.in = &in, .keep = &keep, .level = p->level};
	f.run[0] = zstd_trial_len && trial_level < p->level &&
		   (!bsd_trial_len || zstd_trial_len * 100 <= bsd_trial_len * DELTA_FINAL_MARGIN);
	f.run[1] = bsd_trial_len && bsd_level < p->level &&
		   (!zstd_trial_len || bsd_trial_len * 100 <= zstd_trial_len * DELTA_FINAL_MARGIN);
	if (f.run[0]) {
		bool d = (zstd_filter & EQ_DELTA_FILTER_DEFLATE) != 0;
		f.t = (struct trial){EQ_DELTA_METHOD_ZSTD, zstd_filter & all_modes, d ? xwlog : wlog, d, p->level};
	}
	eq_parallel(2, threads, run_final, &f);
	for (int k = 0; k < 2; k++) {
		if (!r && f.r[k]) {
			r = f.r[k];
			if (err)
				*err = f.e[k];
		}
		if (!r && f.out[k].data)
			consider(&best, f.out[k].data, f.out[k].len, order++,
				 k ? EQ_DELTA_METHOD_BSD : EQ_DELTA_METHOD_ZSTD, k ? keep.filter : zstd_filter,
				 f.out[k].wlog, k ? &keep.pr : &f.pr);
		else
			eq_free(f.out[k].data);
	}
	pair_done(&f.pr);
	if (r)
		goto out;
	info.method = best.method;
	info.filter = best.filter;
	info.window_log = best.window_log;

	uint8_t hdr[EQ_DELTA_HEADER_SIZE];
	uint64_t pre_size = 0;
	eq_delta_header_write(hdr, &info);
	if ((r = sink(sink_ctx, hdr, sizeof(hdr), err)))
		goto out;
	if ((info.filter & EQ_DELTA_FILTER_DEFLATE) &&
	    (r = write_gzx_preamble(&in, &best, sink, sink_ctx, &pre_size, err)))
		goto out;
	if ((r = sink(sink_ctx, best.data, best.len, err)))
		goto out;
	if (ret_size)
		*ret_size = sizeof(hdr) + pre_size + best.len;
out:
	keep_done(&keep);
	eq_gzx_done(&in.xo);
	eq_gzx_done(&in.xn);
	eq_free(old);
	eq_free(new_);
	eq_free(best.data);
	return r;
}
