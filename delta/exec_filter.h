/*
 * Private to eq_delta: the executable pre-filter applied to payloads before
 * a delta is made and undone after it is applied.
 *
 * The filter walks the payload as a POSIX tar and, inside regular files that
 * start with an ELF64 little-endian header for EM_X86_64 or EM_AARCH64,
 * rewrites relative targets as absolute ones (branches: x86-64 E8/E9 rel32,
 * AArch64 BL imm26; data references: x86-64 RIP-relative disp32 of common
 * load/lea/call-indirect forms, AArch64 ADRP imm21), only inside PT_LOAD segments with PF_X
 * (the whole file after the ELF header when there are no program headers).
 * Positions are counted from the start of each file's data.
 *
 * It is length-preserving and exactly invertible: every decision (where a
 * header is, whether a file is ELF, which ranges are code, whether an
 * instruction is converted) depends only on bytes the filter never changes
 * or on a range check that holds before and after conversion alike. So the
 * same walk over the filtered bytes finds the same places and decode undoes
 * encode byte for byte, even when the input is not a tar at all.
 */
#ifndef EQ_EXEC_FILTER_H
#define EQ_EXEC_FILTER_H

#include <eq/delta.h>

/* What to convert; the delta header's filter byte is this mask. */
#define EQ_XF_BRANCH 0x1u /* x86-64 E8/E9 rel32, AArch64 BL */
#define EQ_XF_DATA 0x2u   /* x86-64 RIP-relative disp32, AArch64 ADRP */

/* Bytes of a file's start examined for the ELF and program headers. */
#define EQ_XF_HEAD_MAX (64u * 1024u)
/* pax extended header data parsed for a "size" record, at most. */
#define EQ_XF_PAX_MAX (64u * 1024u)
/* Bytes the streaming form keeps in memory, at most. */
#define EQ_XF_STREAM_BUF (256u * 1024u)
#define EQ_XF_MAX_RANGES 16

struct eq_xf_range {
	uint64_t start, end; /* absolute stream offsets, end exclusive */
};

enum eq_xf_arch { EQ_XF_ARCH_NONE, EQ_XF_ARCH_X86_64, EQ_XF_ARCH_ARM64 };

/* Counters, for tests and the debug log. */
struct eq_xf_stats {
	uint64_t entries;
	uint64_t elf_x86_64, elf_arm64;
	uint64_t converted; /* instructions rewritten */
};

/*
 * Walker state. Caller-owned; eq_xf_init() cannot fail. The streaming
 * functions allocate an internal buffer freed by eq_xf_done().
 */
struct eq_xf {
	bool encode;
	unsigned mode; /* EQ_XF_BRANCH | EQ_XF_DATA */
	int state;
	uint64_t cur; /* absolute offset: every byte before it is final */
	uint64_t data_start, data_end, next_hdr;
	int kind;
	bool have_pax_size;
	uint64_t pax_size;
	enum eq_xf_arch arch;
	unsigned n_ranges, ri;
	struct eq_xf_range r[EQ_XF_MAX_RANGES];
	uint64_t fpos;
	uint64_t guard_end; /* last byte read by an x86 candidate left alone */
	struct eq_xf_stats stats;
	/* streaming */
	uint8_t *buf;
	size_t len;
	uint64_t base;
	eq_write_fn sink;
	void *sink_ctx;
};

void eq_xf_init(struct eq_xf *f, bool encode, unsigned mode);
void eq_xf_done(struct eq_xf *f);

/* Filters (@encode) or un-filters a whole payload in place. */
void eq_xf_buffer(uint8_t *data, size_t len, bool encode, unsigned mode, struct eq_xf_stats *ret_stats);

/*
 * Streaming form: eq_xf_stream_begin() sets the sink; eq_xf_stream_write()
 * takes any amount of input and passes finished bytes to the sink, holding
 * back at most EQ_XF_STREAM_BUF bytes; eq_xf_stream_end() flushes the rest.
 */
eq_err eq_xf_stream_begin(struct eq_xf *f, eq_write_fn sink, void *sink_ctx, struct eq_error *err) EQ_MUST_CHECK;
eq_err eq_xf_stream_write(void *ctx, const void *data, size_t len, struct eq_error *err) EQ_MUST_CHECK;
eq_err eq_xf_stream_end(struct eq_xf *f, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Calls @fn for each regular file of the tar in @data whose data lies
 * wholly inside it, with the data's offset and size, in order. Walks by the
 * same rules as the filter and stops where it would. Returns @fn's first
 * error.
 */
typedef eq_err (*eq_xf_file_fn)(void *ctx, uint64_t start, uint64_t size, struct eq_error *err);
eq_err eq_xf_each_file(const uint8_t *data, size_t len, eq_xf_file_fn fn, void *ctx,
		       struct eq_error *err) EQ_MUST_CHECK;

#endif
