/*
 * Fuzz target for deflate-aware deltas (delta/gz_puff.c). Input layout:
 *   [0] % 3 == 0: the rest is a gzip member: if eq_puff() takes it, huffing
 *                 the puffed form must give the member back exactly;
 *   [0] % 3 == 1: the rest is a puffed member from an untrusted delta:
 *                 eq_huff_write() must fail cleanly or produce output;
 *   [0] % 3 == 2: the rest is a payload: it is expanded, the region table
 *                 must pass eq_gzx_regions_check() and the streaming
 *                 inverse must give the payload back exactly.
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main.
 */
#include <stdlib.h>
#include <string.h>

#include <eq/delta.h>

#include "../../delta/gz_puff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct cmp {
	const uint8_t *want;
	size_t len, pos;
};

static eq_err cmp_write(void *ctx, const void *d, size_t n, struct eq_error *err)
{
	struct cmp *c = ctx;
	(void)err;
	if (n > c->len - c->pos || memcmp(c->want + c->pos, d, n) != 0)
		abort();
	c->pos += n;
	return EQ_OK;
}

static eq_err count_write(void *ctx, const void *d, size_t n, struct eq_error *err)
{
	(void)d;
	(void)err;
	*(size_t *)ctx += n;
	return EQ_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 20))
		return 0;
	const uint8_t *in = data + 1;
	size_t n = size - 1;
	struct eq_error e;
	static struct eq_huff h;
	if (data[0] % 3 == 0) {
		size_t cap = n * EQ_PUFF_GROWTH_MAX + EQ_PUFF_SLACK, plen;
		uint8_t *pf = malloc(cap);
		if (!pf)
			abort();
		if (eq_puff(in, n, pf, cap, &plen, NULL)) {
			struct cmp c = {in, n, 0};
			eq_huff_init(&h, cmp_write, &c);
			if (eq_huff_write(&h, pf, plen, &e) != EQ_OK || eq_huff_end(&h, &e) != EQ_OK || c.pos != n)
				abort();
		}
		free(pf);
	} else if (data[0] % 3 == 1) {
		size_t out = 0;
		eq_huff_init(&h, count_write, &out);
		/* Either way the output stays within what the input can say:
		 * a field writes at most 7 bytes, headers and stored data 1:1. */
		eq_err r = eq_huff_write(&h, in, n, &e);
		if (r == EQ_OK)
			r = eq_huff_end(&h, &e);
		if (out > 7 * n + 8)
			abort();
		(void)r;
	} else {
		struct eq_gzx x;
		if (eq_gzx_expand(in, n, NULL, 0, &x, &e) != EQ_OK)
			return 0;
		if (eq_gzx_regions_check(x.r, x.n, x.len, n, &e) != EQ_OK)
			abort();
		struct cmp c = {in, n, 0};
		static struct eq_gzx_stream st;
		eq_gzx_stream_init(&st, x.r, x.n, cmp_write, &c);
		if (eq_gzx_stream_write(&st, x.data, x.len, &e) != EQ_OK || eq_gzx_stream_end(&st, &e) != EQ_OK ||
		    c.pos != n)
			abort();
		eq_gzx_done(&x);
	}
	return 0;
}
