/*
 * Puffing (deflate stream -> byte-aligned tokens) and huffing (back to the
 * exact deflate bits) of gzip members inside payloads. The format and why
 * it reproduces streams bit for bit are in docs/internals/delta.md.
 *
 * Puffed member:
 *   u16 header length, the gzip header bytes;
 *   per block: tag (bit 0 BFINAL, bits 1-2 BTYPE), then
 *     stored:  u16 LEN, LEN bytes;
 *     dynamic: HLIT, HDIST, HCLEN (one byte each, as sent), HCLEN+4 code
 *              length code lengths in sending order, then the code length
 *              symbols as sent (16/17/18 followed by their extra value);
 *     fixed and dynamic: tokens, each a tag byte: 0x00-0x7f a run of
 *              tag+1 literal bytes that follow, 0x80 a match (u8 length-3,
 *              u16 distance-1), 0xff end of block;
 *   after the final block: u8 count, the bytes after the deflate stream.
 * Integers little-endian.
 */
#include "gz_puff.h"
#include "exec_filter.h"
#include "varint.h"

#include <stddef.h>
#include <string.h>

#define TOK_MATCH 0x80u
#define TOK_END 0xffu
#define LIT_RUN_MAX 128u

static const uint16_t len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
				      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
				      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1,    2,    3,    4,    5,    7,    9,    13,    17,    25,
				       33,   49,   65,   97,   129,  193,  257,  385,   513,   769,
				       1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
				       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
/* Order in which code length code lengths are sent (RFC 1951 3.2.7). */
static const uint8_t cl_order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};

static void fixed_lengths(uint8_t lit[288], uint8_t dist[30])
{
	for (unsigned i = 0; i < 288; i++)
		lit[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
	for (unsigned i = 0; i < 30; i++)
		dist[i] = 5;
}

/* Unused code space of the lengths: 0 complete, > 0 incomplete, < 0
 * over-subscribed. @count gets the number of codes per length. */
static int code_space(const uint8_t *len, unsigned n, uint16_t count[16])
{
	memset(count, 0, 16 * sizeof(count[0]));
	for (unsigned i = 0; i < n; i++)
		count[len[i]]++;
	int left = 1;
	for (unsigned b = 1; b < 16; b++) {
		left = left * 2 - count[b];
		if (left < 0)
			return left;
	}
	return left;
}

/* Deflate accepts an incomplete literal/length or distance code only when
 * it is a single code of one bit (RFC 1951 3.2.7; zlib's inflate too). */
static bool code_acceptable(const uint8_t *len, unsigned n)
{
	uint16_t count[16];
	int left = code_space(len, n, count);
	return left == 0 || (left > 0 && count[0] + count[1] == n);
}

/* ---- puffing ---- */

struct bitrd {
	const uint8_t *p;
	size_t len, pos;
	uint32_t buf;
	unsigned cnt; /* bits in buf, at most 23; whole bytes are read ahead */
};

static bool getbits(struct bitrd *s, unsigned n, unsigned *ret)
{
	while (s->cnt < n) {
		if (s->pos >= s->len)
			return false;
		s->buf |= (uint32_t)s->p[s->pos++] << s->cnt;
		s->cnt += 8;
	}
	*ret = s->buf & ((1u << n) - 1);
	s->buf >>= n;
	s->cnt -= n;
	return true;
}

/* Drops the bits up to the next byte boundary into *ret_pad and gives back
 * the whole bytes read ahead, so s->pos is exact again. */
static bool align_byte(struct bitrd *s, unsigned *ret_pad)
{
	if (!getbits(s, s->cnt & 7u, ret_pad))
		return false;
	s->pos -= s->cnt / 8;
	s->buf = 0;
	s->cnt = 0;
	return true;
}

static bool make_codes(const uint8_t *len, unsigned n, uint16_t *code);

/* Codes up to this long are decoded by one table lookup. */
#define FAST_BITS 9u

/* Canonical decoding table: codes per length and symbols in code order,
 * and a lookup table of (symbol << 4 | length) by the next FAST_BITS input
 * bits for the short codes (0: not there). */
struct hdec {
	uint16_t count[16];
	uint16_t sym[288];
	uint16_t fast[1u << FAST_BITS];
};

static int hdec_build(struct hdec *h, const uint8_t *len, unsigned n)
{
	uint16_t offs[16], code[288];
	int left = code_space(len, n, h->count);
	offs[1] = 0;
	for (unsigned b = 1; b < 15; b++)
		offs[b + 1] = (uint16_t)(offs[b] + h->count[b]);
	for (unsigned i = 0; i < n; i++)
		if (len[i])
			h->sym[offs[len[i]]++] = (uint16_t)i;
	memset(h->fast, 0, sizeof(h->fast));
	/* An over-subscribed code gets no fast table; callers refuse it. */
	if (!make_codes(len, n, code))
		return left;
	for (unsigned i = 0; i < n; i++)
		if (len[i] && len[i] <= FAST_BITS)
			for (unsigned k = code[i]; k < (1u << FAST_BITS); k += 1u << len[i])
				h->fast[k] = (uint16_t)(i << 4 | len[i]);
	return left;
}

/* Next symbol, or -1 at the end of input or on a code that is not in the
 * table. Short codes by the lookup table, the rest one bit at a time, most
 * significant bit first. */
static int hdec_decode(struct bitrd *s, const struct hdec *h)
{
	while (s->cnt < FAST_BITS && s->pos < s->len) {
		s->buf |= (uint32_t)s->p[s->pos++] << s->cnt;
		s->cnt += 8;
	}
	unsigned e = h->fast[s->buf & ((1u << FAST_BITS) - 1)];
	if (e && (e & 15u) <= s->cnt) {
		s->buf >>= e & 15u;
		s->cnt -= e & 15u;
		return (int)(e >> 4);
	}
	int code = 0, first = 0, index = 0;
	for (unsigned b = 1; b < 16; b++) {
		unsigned bit;
		if (!getbits(s, 1, &bit))
			return -1;
		code |= (int)bit;
		int count = h->count[b];
		if (code - first < count)
			return h->sym[index + code - first];
		index += count;
		first = (first + count) << 1;
		code <<= 1;
	}
	return -1;
}

struct pout {
	uint8_t *p;
	size_t cap, len;
	bool ok;
	uint8_t lit[LIT_RUN_MAX];
	unsigned nlit;
	const char *why; /* a reason more precise than an invalid stream */
};

static void put(struct pout *o, const void *data, size_t n)
{
	if (!o->ok || n > o->cap - o->len) {
		o->ok = false;
		return;
	}
	memcpy(o->p + o->len, data, n);
	o->len += n;
}

static void put1(struct pout *o, unsigned v)
{
	uint8_t b = (uint8_t)v;
	put(o, &b, 1);
}

static void put2(struct pout *o, unsigned v)
{
	uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
	put(o, b, 2);
}

static void flush_lits(struct pout *o)
{
	if (o->nlit) {
		put1(o, o->nlit - 1);
		put(o, o->lit, o->nlit);
		o->nlit = 0;
	}
}

/* Length of the gzip header at @in (RFC 1952), 0 if it is not one. */
static size_t gzip_header_len(const uint8_t *in, size_t len)
{
	if (len < 18 || in[0] != 0x1f || in[1] != 0x8b || in[2] != 8 || (in[3] & 0xe0))
		return 0;
	unsigned flg = in[3];
	size_t pos = 10;
	if (flg & 4) { /* FEXTRA; its length field fits: len >= 18 */
		size_t xlen = in[pos] | (size_t)in[pos + 1] << 8;
		pos += 2;
		if (len - pos < xlen)
			return 0;
		pos += xlen;
	}
	for (unsigned f = 8; f <= 16; f <<= 1) { /* FNAME, FCOMMENT */
		if (!(flg & f))
			continue;
		while (pos < len && in[pos])
			pos++;
		if (pos >= len)
			return 0;
		pos++;
	}
	if (flg & 2) { /* FHCRC */
		if (len - pos < 2)
			return 0;
		pos += 2;
	}
	return pos <= EQ_PUFF_HEADER_MAX ? pos : 0;
}

/* Tokens of one fixed or dynamic block, up to and including end-of-block. */
static bool puff_tokens(struct bitrd *s, struct pout *o, const struct hdec *lit, const struct hdec *dist,
			uint64_t *outpos)
{
	for (;;) {
		int sym = hdec_decode(s, lit);
		if (sym < 0)
			return false;
		if (sym < 256) {
			o->lit[o->nlit++] = (uint8_t)sym;
			if (o->nlit == LIT_RUN_MAX)
				flush_lits(o);
			(*outpos)++;
			continue;
		}
		if (sym == 256)
			break;
		sym -= 257;
		if (sym >= 29)
			return false;
		unsigned x, len, dx;
		if (!getbits(s, len_extra[sym], &x))
			return false;
		len = len_base[sym] + x;
		/* 258 also fits code 284 + 31, which the encoder never picks. */
		if (sym == 27 && len == 258) {
			o->why = "length 258 sent as code 284, which is not reproduced";
			return false;
		}
		int ds = hdec_decode(s, dist);
		if (ds < 0 || ds >= 30 || !getbits(s, dist_extra[ds], &dx))
			return false;
		unsigned d = dist_base[ds] + dx;
		if (d > *outpos)
			return false;
		flush_lits(o);
		put1(o, TOK_MATCH);
		put1(o, len - 3);
		put2(o, d - 1);
		*outpos += len;
		if (!o->ok)
			return false;
	}
	flush_lits(o);
	put1(o, TOK_END);
	return o->ok;
}

/* The header of a dynamic block, copied as sent; builds its decoders. */
static bool puff_dynamic_header(struct bitrd *s, struct pout *o, struct hdec *lit, struct hdec *dist)
{
	unsigned hlit, hdist, hclen, v;
	uint8_t lens[320], cl[19] = {0};
	if (!getbits(s, 5, &hlit) || !getbits(s, 5, &hdist) || !getbits(s, 4, &hclen) || hlit > 29 || hdist > 29)
		return false;
	put1(o, hlit);
	put1(o, hdist);
	put1(o, hclen);
	for (unsigned i = 0; i < hclen + 4; i++) {
		if (!getbits(s, 3, &v))
			return false;
		cl[cl_order[i]] = (uint8_t)v;
		put1(o, v);
	}
	struct hdec clh;
	if (hdec_build(&clh, cl, 19) != 0)
		return false;
	unsigned nlit = hlit + 257, total = nlit + hdist + 1, n = 0;
	while (n < total) {
		int sym = hdec_decode(s, &clh);
		if (sym < 0)
			return false;
		put1(o, (unsigned)sym);
		if (sym < 16) {
			lens[n++] = (uint8_t)sym;
			continue;
		}
		unsigned rep, val = 0;
		if (sym == 16) {
			if (n == 0 || !getbits(s, 2, &v))
				return false;
			val = lens[n - 1];
			rep = 3 + v;
		} else if (sym == 17) {
			if (!getbits(s, 3, &v))
				return false;
			rep = 3 + v;
		} else {
			if (!getbits(s, 7, &v))
				return false;
			rep = 11 + v;
		}
		put1(o, v);
		if (rep > total - n)
			return false;
		while (rep--)
			lens[n++] = (uint8_t)val;
	}
	if (lens[256] == 0 || !code_acceptable(lens, nlit) || !code_acceptable(lens + nlit, hdist + 1))
		return false;
	(void)hdec_build(lit, lens, nlit);
	(void)hdec_build(dist, lens + nlit, hdist + 1);
	return o->ok;
}

static bool puff_member(const uint8_t *in, size_t len, struct pout *o)
{
	size_t hlen = gzip_header_len(in, len);
	if (!hlen) {
		o->why = "not a gzip header";
		return false;
	}
	put2(o, (unsigned)hlen);
	put(o, in, hlen);
	struct bitrd s = {.p = in + hlen, .len = len - hlen};
	struct hdec lit, dist;
	uint8_t flit[288], fdist[30];
	uint64_t outpos = 0;
	unsigned final = 0, pad;
	while (!final) {
		unsigned type;
		if (!getbits(&s, 1, &final) || !getbits(&s, 2, &type) || type == 3)
			return false;
		put1(o, final | type << 1);
		if (type == 0) {
			unsigned slen, nlen;
			if (!align_byte(&s, &pad))
				return false;
			if (pad) {
				o->why = "non-zero padding bits before stored data";
				return false;
			}
			if (!getbits(&s, 16, &slen) || !getbits(&s, 16, &nlen) || nlen != (~slen & 0xffffu) ||
			    slen > s.len - s.pos)
				return false;
			put2(o, slen);
			put(o, s.p + s.pos, slen);
			s.pos += slen;
			outpos += slen;
			continue;
		}
		if (type == 1) {
			fixed_lengths(flit, fdist);
			(void)hdec_build(&lit, flit, 288);
			(void)hdec_build(&dist, fdist, 30);
		} else if (!puff_dynamic_header(&s, o, &lit, &dist)) {
			return false;
		}
		if (!puff_tokens(&s, o, &lit, &dist, &outpos))
			return false;
	}
	if (!align_byte(&s, &pad) || pad) {
		o->why = "non-zero padding bits after the last block";
		return false;
	}
	size_t tlen = s.len - s.pos;
	if (tlen > EQ_PUFF_TRAILER_MAX) {
		o->why = "more than 255 bytes after the deflate stream (several members?)";
		return false;
	}
	put1(o, (unsigned)tlen);
	put(o, s.p + s.pos, tlen);
	return o->ok;
}

bool eq_puff(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *ret_len, const char **ret_why)
{
	struct pout o = {.p = out, .cap = cap, .ok = true};
	bool ok = puff_member(in, len, &o);
	*ret_len = o.len;
	if (ret_why)
		*ret_why = ok      ? NULL
			   : !o.ok ? "puffed form is larger than allowed"
			   : o.why ? o.why
				   : "invalid or truncated deflate stream";
	return ok;
}

/* ---- huffing ---- */

enum {
	H_HLEN,
	H_RAW, /* ncl bytes copied as they are, then state raw_next */
	H_TAG,
	H_SLEN,
	H_SBYTES,
	H_DYN,
	H_CLEN,
	H_CLSYM,
	H_CLX,
	H_TOK,
	H_LIT,
	H_MATCH,
	H_TLEN,
	H_DONE
};

static unsigned rev(unsigned code, unsigned len)
{
	unsigned r = 0;
	while (len--) {
		r = r << 1 | (code & 1);
		code >>= 1;
	}
	return r;
}

/* Canonical codes (RFC 1951 3.2.2), bit-reversed for LSB-first output.
 * False when over-subscribed. */
static bool make_codes(const uint8_t *len, unsigned n, uint16_t *code)
{
	uint16_t count[16], next[16];
	if (code_space(len, n, count) < 0)
		return false;
	count[0] = 0;
	unsigned c = 0;
	for (unsigned b = 1; b < 16; b++) {
		c = (c + count[b - 1]) << 1;
		next[b] = (uint16_t)c;
	}
	for (unsigned i = 0; i < n; i++)
		code[i] = len[i] ? (uint16_t)rev(next[len[i]]++, len[i]) : 0;
	return true;
}

void eq_huff_init(struct eq_huff *h, eq_write_fn sink, void *sink_ctx)
{
	memset(h, 0, offsetof(struct eq_huff, out));
	h->state = H_HLEN;
	h->need = 2;
	h->sink = sink;
	h->sink_ctx = sink_ctx;
}

static eq_err huff_flush(struct eq_huff *h, struct eq_error *err)
{
	eq_err r = EQ_OK;
	if (h->out_len)
		r = h->sink(h->sink_ctx, h->out, h->out_len, err);
	h->out_len = 0;
	return r;
}

/* At most 16 bits; the caller keeps room for 8 output bytes. */
static void putbits(struct eq_huff *h, unsigned v, unsigned n)
{
	h->bits |= (uint64_t)v << h->nbits;
	h->nbits += n;
	while (h->nbits >= 8) {
		h->out[h->out_len++] = (uint8_t)h->bits;
		h->bits >>= 8;
		h->nbits -= 8;
	}
}

static void align(struct eq_huff *h)
{
	if (h->nbits)
		putbits(h, 0, 8 - h->nbits);
}

static eq_err bad(struct eq_huff *h, struct eq_error *err, const char *what)
{
	return eq_error_set(err, EQ_ERR_PARSE, "puffed gzip data is invalid at its byte %llu: %s",
			    (unsigned long long)h->pos, what);
}

static void field(struct eq_huff *h, int state, unsigned need)
{
	h->state = state;
	h->need = need;
	h->got = 0;
}

static void block_end(struct eq_huff *h)
{
	if (h->final) {
		align(h);
		field(h, H_TLEN, 1);
	} else {
		field(h, H_TAG, 1);
	}
}

static eq_err dyn_codes_done(struct eq_huff *h, struct eq_error *err)
{
	unsigned nlit = h->hlit + 257;
	if (h->lens[256] == 0 || !code_acceptable(h->lens, nlit) || !code_acceptable(h->lens + nlit, h->hdist + 1))
		return bad(h, err, "block codes are not a valid Huffman code");
	memset(h->lit_len, 0, sizeof(h->lit_len));
	memset(h->dist_len, 0, sizeof(h->dist_len));
	memcpy(h->lit_len, h->lens, nlit);
	memcpy(h->dist_len, h->lens + nlit, h->hdist + 1);
	(void)make_codes(h->lit_len, 288, h->lit_code);
	(void)make_codes(h->dist_len, 32, h->dist_code);
	field(h, H_TOK, 1);
	return EQ_OK;
}

static eq_err put_sym(struct eq_huff *h, unsigned sym, struct eq_error *err)
{
	if (!h->lit_len[sym])
		return bad(h, err, "symbol has no code in this block");
	putbits(h, h->lit_code[sym], h->lit_len[sym]);
	return EQ_OK;
}

static eq_err put_match(struct eq_huff *h, unsigned len, unsigned dist, struct eq_error *err)
{
	unsigned ls = 28, ds = 29;
	if (dist > 32768)
		return bad(h, err, "match distance is beyond 32 KiB");
	while (len_base[ls] > len)
		ls--;
	while (dist_base[ds] > dist)
		ds--;
	eq_err r = put_sym(h, 257 + ls, err);
	if (r)
		return r;
	putbits(h, len - len_base[ls], len_extra[ls]);
	if (!h->dist_len[ds])
		return bad(h, err, "distance has no code in this block");
	putbits(h, h->dist_code[ds], h->dist_len[ds]);
	putbits(h, dist - dist_base[ds], dist_extra[ds]);
	return EQ_OK;
}

/* A complete field of the current state in h->field. */
static eq_err huff_field(struct eq_huff *h, struct eq_error *err)
{
	const uint8_t *f = h->field;
	unsigned v = f[0];
	switch (h->state) {
	case H_HLEN:
		v |= (unsigned)f[1] << 8;
		if (v == 0)
			return bad(h, err, "empty gzip header");
		h->ncl = v;
		h->raw_next = H_TAG;
		field(h, H_RAW, 1);
		break;
	case H_RAW:
		h->out[h->out_len++] = (uint8_t)v;
		if (--h->ncl == 0)
			field(h, h->raw_next, 1);
		break;
	case H_TAG:
		if (v > 5)
			return bad(h, err, "unknown block type");
		putbits(h, v, 3);
		h->final = v & 1;
		if (v >> 1 == 0) {
			field(h, H_SLEN, 2);
		} else if (v >> 1 == 1) {
			uint8_t dl[30];
			fixed_lengths(h->lit_len, dl);
			memset(h->dist_len, 0, sizeof(h->dist_len));
			memcpy(h->dist_len, dl, sizeof(dl));
			(void)make_codes(h->lit_len, 288, h->lit_code);
			(void)make_codes(h->dist_len, 32, h->dist_code);
			field(h, H_TOK, 1);
		} else {
			field(h, H_DYN, 3);
		}
		break;
	case H_SLEN:
		v |= (unsigned)f[1] << 8;
		align(h);
		putbits(h, v, 16);
		putbits(h, ~v & 0xffffu, 16);
		h->ncl = v;
		if (v)
			field(h, H_SBYTES, 1);
		else
			block_end(h);
		break;
	case H_SBYTES:
		putbits(h, v, 8);
		if (--h->ncl == 0)
			block_end(h);
		break;
	case H_DYN:
		if (f[0] > 29 || f[1] > 29 || f[2] > 15)
			return bad(h, err, "dynamic block header is out of range");
		h->hlit = f[0];
		h->hdist = f[1];
		h->hclen = f[2];
		putbits(h, h->hlit, 5);
		putbits(h, h->hdist, 5);
		putbits(h, h->hclen, 4);
		memset(h->cl_lens, 0, sizeof(h->cl_lens));
		h->ncl = 0;
		field(h, H_CLEN, 1);
		break;
	case H_CLEN:
		if (v > 7)
			return bad(h, err, "code length code length is out of range");
		putbits(h, v, 3);
		h->cl_lens[cl_order[h->ncl++]] = (uint8_t)v;
		if (h->ncl == h->hclen + 4) {
			uint16_t count[16];
			if (code_space(h->cl_lens, 19, count) != 0)
				return bad(h, err, "code length code is not complete");
			(void)make_codes(h->cl_lens, 19, h->cl_code);
			h->nlen = 0;
			field(h, H_CLSYM, 1);
		}
		break;
	case H_CLSYM:
		if (v > 18 || !h->cl_lens[v])
			return bad(h, err, "code length symbol has no code");
		putbits(h, h->cl_code[v], h->cl_lens[v]);
		if (v < 16) {
			h->lens[h->nlen++] = (uint8_t)v;
			if (h->nlen == h->hlit + 257 + h->hdist + 1)
				return dyn_codes_done(h, err);
			break;
		}
		h->cl_sym = v;
		field(h, H_CLX, 1);
		break;
	case H_CLX: {
		unsigned total = h->hlit + 257 + h->hdist + 1, rep, val = 0;
		static const uint8_t xbits[3] = {2, 3, 7}, xbase[3] = {3, 3, 11};
		unsigned k = h->cl_sym - 16;
		if (v >= 1u << xbits[k])
			return bad(h, err, "repeat count is out of range");
		if (k == 0) {
			if (h->nlen == 0)
				return bad(h, err, "repeat with no previous length");
			val = h->lens[h->nlen - 1];
		}
		rep = xbase[k] + v;
		if (rep > total - h->nlen)
			return bad(h, err, "code lengths overrun the block's code count");
		putbits(h, v, xbits[k]);
		while (rep--)
			h->lens[h->nlen++] = (uint8_t)val;
		if (h->nlen == total)
			return dyn_codes_done(h, err);
		field(h, H_CLSYM, 1);
		break;
	}
	case H_TOK:
		if (v < TOK_MATCH) {
			h->ncl = v + 1;
			field(h, H_LIT, 1);
		} else if (v == TOK_MATCH) {
			field(h, H_MATCH, 3);
		} else if (v == TOK_END) {
			eq_err r = put_sym(h, 256, err);
			if (r)
				return r;
			block_end(h);
		} else {
			return bad(h, err, "unknown token");
		}
		break;
	case H_LIT: {
		eq_err r = put_sym(h, v, err);
		if (r)
			return r;
		if (--h->ncl == 0)
			field(h, H_TOK, 1);
		break;
	}
	case H_MATCH: {
		eq_err r = put_match(h, f[0] + 3u, (f[1] | (unsigned)f[2] << 8) + 1u, err);
		if (r)
			return r;
		field(h, H_TOK, 1);
		break;
	}
	case H_TLEN:
		h->ncl = v;
		h->raw_next = H_DONE;
		field(h, v ? H_RAW : H_DONE, 1);
		break;
	default: return bad(h, err, "data continues after the end of the member");
	}
	return EQ_OK;
}

eq_err eq_huff_write(struct eq_huff *h, const uint8_t *data, size_t len, struct eq_error *err)
{
	eq_err r;
	for (size_t i = 0; i < len; i++) {
		/* Runs of literals are most of a puffed text: no field dispatch. */
		while (h->state == H_LIT && i < len) {
			unsigned v = data[i];
			if (!h->lit_len[v])
				return bad(h, err, "symbol has no code in this block");
			putbits(h, h->lit_code[v], h->lit_len[v]);
			h->pos++;
			i++;
			if (--h->ncl == 0)
				field(h, H_TOK, 1);
			if (h->out_len > sizeof(h->out) - 16 && (r = huff_flush(h, err)))
				return r;
		}
		if (i == len)
			break;
		h->field[h->got++] = data[i];
		if (h->got == h->need) {
			h->got = 0;
			if ((r = huff_field(h, err)))
				return r;
		}
		h->pos++;
		/* One field writes at most 7 bytes (a match: 15+5+15+13 bits). */
		if (h->out_len > sizeof(h->out) - 16 && (r = huff_flush(h, err)))
			return r;
	}
	return huff_flush(h, err);
}

eq_err eq_huff_end(struct eq_huff *h, struct eq_error *err)
{
	if (h->state != H_DONE)
		return bad(h, err, "the member ends early");
	return huff_flush(h, err);
}

/* ---- payload expansion ---- */

/* Sink comparing huffed output with the original bytes. */
struct cmp_sink {
	const uint8_t *want;
	size_t len, pos;
	bool same;
};

static eq_err cmp_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	struct cmp_sink *c = ctx;
	(void)err;
	if (!c->same || len > c->len - c->pos || memcmp(c->want + c->pos, data, len) != 0)
		c->same = false;
	else
		c->pos += len;
	return EQ_OK;
}

static bool reproduces(const uint8_t *puffed, size_t plen, const uint8_t *orig, size_t olen)
{
	struct cmp_sink c = {.want = orig, .len = olen, .same = true};
	struct eq_huff *h = eq_malloc(sizeof(*h));
	struct eq_error e = {0};
	if (!h)
		return false;
	eq_huff_init(h, cmp_write, &c);
	bool ok = eq_huff_write(h, puffed, plen, &e) == EQ_OK && eq_huff_end(h, &e) == EQ_OK && c.same && c.pos == olen;
	eq_free(h);
	eq_error_clear(&e);
	return ok;
}

/* The largest puffed form a file of @len bytes may have; false if that
 * does not fit a size_t. */
static bool puff_cap(uint64_t len, size_t *ret)
{
	if (len > (SIZE_MAX - EQ_PUFF_SLACK) / EQ_PUFF_GROWTH_MAX)
		return false;
	*ret = (size_t)len * EQ_PUFF_GROWTH_MAX + EQ_PUFF_SLACK;
	return true;
}

bool eq_puff_check(const uint8_t *in, size_t len, const char **ret_why)
{
	static const char *const nomem = "out of memory";
	size_t cap, plen = 0;
	if (!puff_cap(len, &cap)) {
		*ret_why = "too large";
		return false;
	}
	uint8_t *p = eq_malloc(cap);
	if (!p) {
		*ret_why = nomem;
		return false;
	}
	bool ok = eq_puff(in, len, p, cap, &plen, ret_why);
	if (ok && !reproduces(p, plen, in, len)) {
		*ret_why = "huffing does not give the same bytes";
		ok = false;
	}
	eq_free(p);
	return ok;
}

static eq_err out_reserve(struct eq_gzx *x, size_t n, struct eq_error *err)
{
	if (n <= x->cap - x->len)
		return EQ_OK;
	if (x->fixed)
		return eq_error_set(err, EQ_ERR_VERIFY,
				    "expanding the reference gives more than the %zu bytes the delta declares", x->cap);
	size_t want = x->len + n;
	size_t cap = x->cap ? x->cap : 1u << 16;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	uint8_t *p = eq_realloc(x->data, cap);
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the %zu-byte expanded payload", cap);
	x->data = p;
	x->cap = cap;
	return EQ_OK;
}

struct expand_ctx {
	const uint8_t *in;
	struct eq_gzx *x;
	size_t prev; /* input bytes before this are in the output */
	size_t r_cap;
};

static eq_err copy_gap(struct expand_ctx *c, size_t upto, struct eq_error *err)
{
	/* Even when empty the output has a buffer, so callers may hash it. */
	eq_err r = out_reserve(c->x, upto > c->prev ? upto - c->prev : !c->x->data, err);
	if (r)
		return r;
	if (upto == c->prev)
		return EQ_OK;
	memcpy(c->x->data + c->x->len, c->in + c->prev, upto - c->prev);
	c->x->len += upto - c->prev;
	c->prev = upto;
	return EQ_OK;
}

static eq_err expand_file(void *ctx, uint64_t start, uint64_t size, struct eq_error *err)
{
	struct expand_ctx *c = ctx;
	const uint8_t *d = c->in + start;
	if (size < 18 || d[0] != 0x1f || d[1] != 0x8b || d[2] != 8)
		return EQ_OK;
	size_t cap;
	if (!puff_cap(size, &cap))
		return EQ_OK;
	eq_err r = copy_gap(c, (size_t)start, err);
	if (r)
		return r;
	struct eq_gzx *x = c->x;
	if (x->fixed) {
		if (cap > x->cap - x->len)
			cap = x->cap - x->len;
	} else if ((r = out_reserve(x, cap, err))) {
		return r;
	}
	size_t plen = 0;
	if (!eq_puff(d, (size_t)size, x->data + x->len, cap, &plen, NULL) ||
	    !reproduces(x->data + x->len, plen, d, (size_t)size))
		return EQ_OK;
	if (x->n == EQ_GZX_REGIONS_MAX)
		return eq_error_set(err, EQ_ERR_LIMIT, "payload has more than %u gzip files", EQ_GZX_REGIONS_MAX);
	if (x->n == c->r_cap) {
		size_t nc = c->r_cap ? c->r_cap * 2 : 64;
		struct eq_gzx_region *nr = eq_realloc(x->r, nc * sizeof(*nr));
		if (!nr)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the gzip region table");
		x->r = nr;
		c->r_cap = nc;
	}
	x->r[x->n++] = (struct eq_gzx_region){.off = x->len, .xlen = plen, .clen = size};
	x->len += plen;
	c->prev = (size_t)(start + size);
	return EQ_OK;
}

eq_err eq_gzx_expand(const uint8_t *in, size_t len, uint8_t *buf, size_t buf_len, struct eq_gzx *x,
		     struct eq_error *err)
{
	*x = (struct eq_gzx){.data = buf, .cap = buf ? buf_len : 0, .fixed = buf != NULL};
	struct expand_ctx c = {.in = in, .x = x};
	eq_err r = eq_xf_each_file(in, len, expand_file, &c, err);
	if (!r)
		r = copy_gap(&c, len, err);
	if (r)
		eq_gzx_done(x);
	return r;
}

void eq_gzx_splice(const struct eq_gzx *x, const uint8_t *filtered, size_t filtered_len, uint8_t *out)
{
	size_t in_pos = 0, out_pos = 0;
	for (size_t i = 0; i < x->n; i++) {
		const struct eq_gzx_region *g = &x->r[i];
		size_t gap = (size_t)g->off - out_pos;
		memcpy(out + out_pos, filtered + in_pos, gap);
		memcpy(out + g->off, x->data + g->off, (size_t)g->xlen);
		in_pos += gap + (size_t)g->clen;
		out_pos = (size_t)(g->off + g->xlen);
	}
	memcpy(out + out_pos, filtered + in_pos, filtered_len - in_pos);
}

void eq_gzx_done(struct eq_gzx *x)
{
	if (!x->fixed)
		eq_free(x->data);
	eq_free(x->r);
	*x = (struct eq_gzx){0};
}

/* ---- streaming inverse ---- */

static eq_err region_out(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	struct eq_gzx_stream *s = ctx;
	const struct eq_gzx_region *g = &s->r[s->i];
	if (len > g->clen - s->region_out)
		return eq_error_set(err, EQ_ERR_PARSE, "gzip region %zu re-encodes to more than its %llu bytes", s->i,
				    (unsigned long long)g->clen);
	s->region_out += len;
	return s->sink(s->sink_ctx, data, len, err);
}

void eq_gzx_stream_init(struct eq_gzx_stream *s, const struct eq_gzx_region *r, size_t n, eq_write_fn sink,
			void *sink_ctx)
{
	*s = (struct eq_gzx_stream){.r = r, .n = n, .sink = sink, .sink_ctx = sink_ctx};
	eq_huff_init(&s->h, region_out, s);
}

eq_err eq_gzx_stream_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	struct eq_gzx_stream *s = ctx;
	const uint8_t *p = data;
	eq_err r;
	while (len) {
		const struct eq_gzx_region *g = s->i < s->n ? &s->r[s->i] : NULL;
		if (g && s->pos >= g->off) {
			uint64_t left = g->off + g->xlen - s->pos;
			size_t take = len < left ? len : (size_t)left;
			if ((r = eq_huff_write(&s->h, p, take, err)))
				return eq_error_prefix(err, r, "gzip region %zu", s->i);
			s->pos += take;
			p += take;
			len -= take;
			if (s->pos == g->off + g->xlen) {
				if ((r = eq_huff_end(&s->h, err)))
					return eq_error_prefix(err, r, "gzip region %zu", s->i);
				if (s->region_out != g->clen)
					return eq_error_set(
						err, EQ_ERR_PARSE, "gzip region %zu re-encodes to %llu bytes, not %llu",
						s->i, (unsigned long long)s->region_out, (unsigned long long)g->clen);
				s->i++;
				s->region_out = 0;
				eq_huff_init(&s->h, region_out, s);
			}
			continue;
		}
		size_t take = len;
		if (g && g->off - s->pos < take)
			take = (size_t)(g->off - s->pos);
		if ((r = s->sink(s->sink_ctx, p, take, err)))
			return r;
		s->pos += take;
		p += take;
		len -= take;
	}
	return EQ_OK;
}

eq_err eq_gzx_stream_end(struct eq_gzx_stream *s, struct eq_error *err)
{
	if (s->i < s->n)
		return eq_error_set(err, EQ_ERR_PARSE, "expanded payload ends inside gzip region %zu", s->i);
	return EQ_OK;
}


size_t eq_gzx_table_encode(const struct eq_gzx_region *r, size_t n, uint8_t *out)
{
	size_t len = 0;
	uint64_t end = 0;
	for (size_t i = 0; i < n; i++) {
		len += eq_uvarint_put(out + len, r[i].off - end);
		len += eq_uvarint_put(out + len, r[i].xlen);
		len += eq_uvarint_put(out + len, r[i].clen);
		end = r[i].off + r[i].xlen;
	}
	return len;
}

static bool get_varint(const uint8_t *in, size_t len, size_t *pos, uint64_t *ret)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64 && *pos < len; shift += 7) {
		uint8_t b = in[(*pos)++];
		if (shift == 63 && b > 1)
			return false;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

eq_err eq_gzx_table_decode(const uint8_t *in, size_t len, struct eq_gzx_region *r, size_t n, struct eq_error *err)
{
	size_t pos = 0;
	uint64_t end = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t gap, xlen, clen;
		if (!get_varint(in, len, &pos, &gap) || !get_varint(in, len, &pos, &xlen) ||
		    !get_varint(in, len, &pos, &clen))
			return eq_error_set(err, EQ_ERR_PARSE, "gzip region table entry %zu is truncated or malformed",
					    i);
		if (gap > UINT64_MAX - end || xlen > UINT64_MAX - end - gap)
			return eq_error_set(err, EQ_ERR_PARSE, "gzip region table entry %zu: offset overflows", i);
		r[i] = (struct eq_gzx_region){.off = end + gap, .xlen = xlen, .clen = clen};
		end = r[i].off + xlen;
	}
	if (pos != len)
		return eq_error_set(err, EQ_ERR_PARSE, "gzip region table has %zu bytes after its %zu entries",
				    len - pos, n);
	return EQ_OK;
}

eq_err eq_gzx_regions_check(const struct eq_gzx_region *r, size_t n, uint64_t xlen, uint64_t len, struct eq_error *err)
{
	uint64_t end = 0, sum_x = 0, sum_c = 0;
	for (size_t i = 0; i < n; i++) {
		const struct eq_gzx_region *g = &r[i];
		if (g->xlen == 0 || g->clen == 0 || g->off < end || g->off > xlen || g->xlen > xlen - g->off)
			return eq_error_set(err, EQ_ERR_PARSE,
					    "gzip region %zu (offset %llu, %llu bytes) is out of order or outside the "
					    "%llu-byte expanded payload",
					    i, (unsigned long long)g->off, (unsigned long long)g->xlen,
					    (unsigned long long)xlen);
		end = g->off + g->xlen;
		sum_x += g->xlen;
		if (g->clen > UINT64_MAX - sum_c)
			return eq_error_set(err, EQ_ERR_PARSE, "gzip region %zu: sizes overflow", i);
		sum_c += g->clen;
	}
	if (xlen - sum_x > UINT64_MAX - sum_c || xlen - sum_x + sum_c != len)
		return eq_error_set(err, EQ_ERR_PARSE,
				    "gzip regions do not add up: %llu expanded bytes do not give the %llu-byte payload",
				    (unsigned long long)xlen, (unsigned long long)len);
	return EQ_OK;
}
