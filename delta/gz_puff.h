/*
 * Private to eq_delta: deflate-aware deltas.
 *
 * A gzip file's compressed bytes change almost completely when its text
 * changes a little, so byte-level differs pay nearly its whole size. Before
 * a delta is made, each gzip file inside a payload is replaced by its
 * "puffed" form: its tokens (literal bytes, length/distance pairs) and block
 * structure written byte-aligned, which differs between two versions only
 * where their text differs. After the delta is applied the device
 * "huffs" the puffed form back into the exact original deflate bits. This
 * is the idea of Android's puffin; the format here is eqota's own and is
 * described in docs/internals/delta.md ("Deflate-aware deltas").
 *
 * No compressor runs on the device and no window is kept: the puffed form
 * records every token, so re-encoding is table lookups and bit packing.
 * A stream is only ever puffed when huffing it back gives its exact bytes
 * (checked every time), so what cannot be reproduced stays as it is.
 */
#ifndef EQ_GZ_PUFF_H
#define EQ_GZ_PUFF_H

#include <eq/delta.h>

/* Longest gzip header (with name, comment, extra field) that is puffed. */
#define EQ_PUFF_HEADER_MAX 65535u
/* Bytes after the deflate stream kept as they are (the gzip trailer is 8). */
#define EQ_PUFF_TRAILER_MAX 255u
/* A puffed file may be at most this many times its compressed size (plus
 * EQ_PUFF_SLACK); text puffs to about 2x, and a bound keeps the expanded
 * reference small on the device. */
#define EQ_PUFF_GROWTH_MAX 4u
#define EQ_PUFF_SLACK 4096u
/* Regions in one delta, at most: bounds the table the device holds. */
#define EQ_GZX_REGIONS_MAX 65536u
#define EQ_GZX_REGION_SIZE 24u /* bytes per region in the device's memory */
#define EQ_GZX_ENTRY_MAX 30u   /* bytes per region in the delta, at most */
#define EQ_GZX_PREAMBLE_SIZE 56u

/*
 * Puffs the gzip member @in (all @len bytes: header, deflate stream, at most
 * EQ_PUFF_TRAILER_MAX trailing bytes) into out[0, *ret_len), writing at most
 * @cap bytes. Returns false when @in is not such a member, uses a form that
 * is not reproduced exactly (non-zero padding bits, length 258 as code 284),
 * or does not fit @cap; out's content is then undefined, and *ret_why
 * (when not NULL) says why in a few words.
 */
bool eq_puff(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *ret_len, const char **ret_why);

/* Whether eq_gzx_expand() would puff the file @in: it puffs within
 * EQ_PUFF_GROWTH_MAX and huffs back to the same bytes. *ret_why says why
 * not. For statistics and tests. */
bool eq_puff_check(const uint8_t *in, size_t len, const char **ret_why);

/*
 * Streaming re-encoder of one puffed member: eq_huff_write() takes the
 * puffed bytes in any chunks and passes the deflate bytes to @sink;
 * eq_huff_end() checks that the member is complete. Errors are EQ_ERR_PARSE
 * naming the puffed byte offset. Caller-owned, no allocation; about 3 KiB.
 */
struct eq_huff {
	int state;
	unsigned need, got; /* bytes of the current field */
	uint8_t field[4];
	uint64_t pos;  /* puffed bytes consumed */
	uint64_t bits; /* pending output bits, LSB first */
	unsigned nbits;
	bool final;
	unsigned hlit, hdist, hclen, ncl, nlen, cl_sym;
	int raw_next;      /* state after a run of raw bytes */
	uint8_t lens[320]; /* code lengths: 0..285 lit/len, 286.. dist */
	uint8_t cl_lens[19];
	uint16_t cl_code[19], lit_code[288], dist_code[32];
	uint8_t lit_len[288], dist_len[32];
	size_t out_len;
	uint8_t out[2048];
	eq_write_fn sink;
	void *sink_ctx;
};

void eq_huff_init(struct eq_huff *h, eq_write_fn sink, void *sink_ctx);
eq_err eq_huff_write(struct eq_huff *h, const uint8_t *data, size_t len, struct eq_error *err) EQ_MUST_CHECK;
eq_err eq_huff_end(struct eq_huff *h, struct eq_error *err) EQ_MUST_CHECK;

/* One puffed gzip file in an expanded payload. */
struct eq_gzx_region {
	uint64_t off;  /* where its puffed form starts in the expanded payload */
	uint64_t xlen; /* puffed length */
	uint64_t clen; /* original (compressed) length */
};

/* An expanded payload. eq_gzx_done() frees both arrays (data only when
 * eq_gzx_expand() allocated it). */
struct eq_gzx {
	uint8_t *data;
	size_t len, cap;
	bool fixed; /* data is the caller's buffer, sized by the delta's declaration */
	struct eq_gzx_region *r;
	size_t n;
};

/*
 * Expands @in (a payload) into @x: every regular file of the tar that is a
 * single gzip member puffing within EQ_PUFF_GROWTH_MAX and reproduced
 * exactly by eq_huff is replaced by its puffed form; everything else is
 * copied. Deterministic: the publisher and the device expand the same
 * reference to the same bytes. With @buf the expansion is written there
 * (the caller's, @buf_len bytes, which the device knows from the delta)
 * and EQ_ERR_VERIFY is returned if it would not fit; with @buf NULL the
 * output is allocated and grows. EQ_ERR_NOMEM, EQ_ERR_LIMIT past
 * EQ_GZX_REGIONS_MAX.
 */
eq_err eq_gzx_expand(const uint8_t *in, size_t len, uint8_t *buf, size_t buf_len, struct eq_gzx *x,
		     struct eq_error *err) EQ_MUST_CHECK;

/* Builds into @out (x->len bytes) the expansion of @filtered, a copy of the
 * payload @x was expanded from in which only non-gzip files differ (the
 * executable filter's output). */
void eq_gzx_splice(const struct eq_gzx *x, const uint8_t *filtered, size_t filtered_len, uint8_t *out);

void eq_gzx_done(struct eq_gzx *x);

/*
 * Streaming inverse: takes the expanded bytes and passes the original
 * payload bytes to @sink, huffing each region of @r (n of them, checked by
 * eq_gzx_regions_check()). eq_gzx_stream_end() checks every region was
 * complete.
 */
struct eq_gzx_stream {
	const struct eq_gzx_region *r;
	size_t n, i;
	uint64_t pos;        /* expanded bytes seen */
	uint64_t region_out; /* bytes the current region has produced */
	struct eq_huff h;
	eq_write_fn sink;
	void *sink_ctx;
};

void eq_gzx_stream_init(struct eq_gzx_stream *s, const struct eq_gzx_region *r, size_t n, eq_write_fn sink,
			void *sink_ctx);
eq_err eq_gzx_stream_write(void *ctx, const void *data, size_t len, struct eq_error *err) EQ_MUST_CHECK;
eq_err eq_gzx_stream_end(struct eq_gzx_stream *s, struct eq_error *err) EQ_MUST_CHECK;

/*
 * The region table as the delta carries it: per region three LEB128
 * varints, the gap from the previous region's end (or 0) to its offset,
 * its puffed length and its original length. Encode writes at most
 * EQ_GZX_ENTRY_MAX bytes per region to @out and returns the count; decode
 * must use all @len bytes for exactly @n regions (EQ_ERR_PARSE naming the
 * entry). The table's consistency is checked by eq_gzx_regions_check().
 */
size_t eq_gzx_table_encode(const struct eq_gzx_region *r, size_t n, uint8_t *out);
eq_err eq_gzx_table_decode(const uint8_t *in, size_t len, struct eq_gzx_region *r, size_t n,
			   struct eq_error *err) EQ_MUST_CHECK;

/* Checks a region table read from a delta against the expanded result size
 * @xlen and the original result size @len: sorted, inside, consistent.
 * EQ_ERR_PARSE naming the entry. */
eq_err eq_gzx_regions_check(const struct eq_gzx_region *r, size_t n, uint64_t xlen, uint64_t len,
			    struct eq_error *err) EQ_MUST_CHECK;

#endif
