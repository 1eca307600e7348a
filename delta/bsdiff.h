/*
 * Private to eq_delta: delta method 1, "bsdiff-class with zstd".
 *
 * The new payload is described against the reference as a sequence of
 * control entries (add, copy, seek): take @add bytes of the reference at the
 * current reference position and add the next @add bytes of the diff stream
 * to them (byte-wise, modulo 256), then take @copy bytes of the extra stream
 * verbatim, then move the reference position by @add + @seek. The three
 * streams (control as varints, diff, extra) are each one zstd frame, cut
 * into segments so that the decoder holds at most one segment's compressed
 * bytes: layout in docs/internals/delta.md.
 */
#ifndef EQ_DELTA_BSDIFF_H
#define EQ_DELTA_BSDIFF_H

#include <eq/delta.h>

/* Bytes of the method-1 preamble after the EQD1 header: the window logs of
 * the control, diff and extra streams, then a flags byte. */
#define EQ_BSD_PREAMBLE_SIZE 4
/* Preamble flag: the diff stream holds runs, (zeros, literal count,
 * literals), instead of one byte per added byte. Level 19 spent most of a
 * small delta's time on the long zero stretches; as runs the stream
 * compresses 10x faster and smaller (docs/internals/delta.md). Deltas made
 * before the flag existed have it clear and still decode. */
#define EQ_BSD_FLAG_DIFF_RUNS 1u
/* Segment header: u32 control count, u32 compressed sizes of the control,
 * diff and extra parts, little-endian. */
#define EQ_BSD_SEG_HEADER_SIZE 16
/* Output bytes a segment describes, at most (the encoder cuts there). */
#define EQ_BSD_SEG_OUT ((size_t)1 << 20)
/* Raw control bytes per segment, at most (the encoder cuts there). */
#define EQ_BSD_SEG_CTRL ((size_t)1 << 16)
/* Compressed bytes of one segment's three parts, at most: the decoder's
 * buffer. The encoder's worst case is zstd's bound of the limits above. */
#define EQ_BSD_SEG_IN_MAX (((size_t)3 << 19) + ((size_t)1 << 16))
/* Largest stream window the encoder uses, so devices decode with little
 * memory whatever the payload size. */
#define EQ_BSD_WINDOW_LOG_MAX 20u
/* Memory besides the reference and the three stream windows: three zstd
 * DStreams (context ~160 KiB, input buffer 128 KiB, 2 blocks of window
 * slack each), the segment buffer, the output chunk, the filter's 256 KiB. */
#define EQ_BSD_APPLY_OVERHEAD ((uint64_t)4 << 20)

#ifdef EQ_DELTA_CREATE_BSD
/*
 * Encodes @new_ against @old (both already filtered as the header will say)
 * into a new buffer (caller frees with eq_free) holding everything after the
 * EQD1 header. *ret_window_log receives the header's window log: the
 * smallest power of two covering the three stream windows together.
 * EQ_ERR_UNSUPPORTED if @old is too large for a 32-bit suffix array.
 */
/* Method 1 in two steps, so that filters can be compared at a fast level
 * and only the winner is compressed hard: the scan (suffix array and
 * matches; *ret is new, free with eq_bsd_scan_free()), then its encoding
 * at zstd @level (*ret malloc'ed). */
struct eq_bsd_scan;
eq_err eq_bsd_scan(const uint8_t *old, size_t old_len, const uint8_t *new_, size_t new_len, struct eq_bsd_scan **ret,
		   struct eq_error *err) EQ_MUST_CHECK;
eq_err eq_bsd_encode(const struct eq_bsd_scan *s, int level, uint8_t **ret, size_t *ret_len, unsigned *ret_window_log,
		     struct eq_error *err) EQ_MUST_CHECK;
void eq_bsd_scan_free(struct eq_bsd_scan *s);
#endif

/*
 * Decodes the method-1 body read from @src (positioned after the header,
 * @consumed bytes into the delta) against the loaded, filtered reference
 * and passes exactly info->result_size bytes to @next, then checks that the
 * delta ends. Errors name the byte offset in the delta.
 */
eq_err eq_bsd_apply(const uint8_t *ref, const struct eq_delta_info *info, eq_read_fn src, void *src_ctx,
		    uint64_t consumed, eq_write_fn next, void *next_ctx, struct eq_error *err) EQ_MUST_CHECK;

#endif
