/*
 * Executable pre-filter for deltas: see exec_filter.h for what it does and
 * why it is exactly invertible; docs/internals/delta.md for the format.
 */
#include "exec_filter.h"

#include <assert.h>
#include <string.h>

enum { XF_HEADER, XF_HEAD, XF_DATA, XF_PASS };
enum { XK_OTHER, XK_REG, XK_PAX };

#define TAR_BLOCK 512u

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Octal field (NUL/space terminated, leading spaces allowed) or the GNU
 * base-256 form; false if neither. */
static bool tar_number(const uint8_t *p, size_t n, uint64_t *ret)
{
	uint64_t v = 0;
	if (p[0] & 0x80) {
		if (p[0] != 0x80)
			return false; /* negative or too large */
		for (size_t i = 1; i < n; i++) {
			if (v >> 56)
				return false;
			v = v << 8 | p[i];
		}
		*ret = v;
		return true;
	}
	size_t i = 0;
	while (i < n && p[i] == ' ')
		i++;
	size_t digits = 0;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++, digits++) {
		if (v >> 60)
			return false;
		v = v << 3 | (uint64_t)(p[i] - '0');
	}
	if (i < n && p[i] != '\0' && p[i] != ' ')
		return false;
	if (digits == 0)
		return false;
	*ret = v;
	return true;
}

static bool tar_header_ok(const uint8_t *h)
{
	uint64_t want;
	if (!tar_number(h + 148, 8, &want))
		return false;
	uint64_t sum = 0;
	for (size_t i = 0; i < TAR_BLOCK; i++)
		sum += (i >= 148 && i < 156) ? ' ' : h[i];
	return sum == want;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Finds a "size" record in pax extended header data ("LEN key=value\n"). */
static void pax_parse_size(struct eq_xf *f, const uint8_t *p, size_t n)
{
	size_t off = 0;
	while (off < n) {
		size_t len = 0, i = off;
		while (i < n && p[i] >= '0' && p[i] <= '9' && len < n) {
			len = len * 10 + (size_t)(p[i] - '0');
			i++;
		}
		if (i >= n || p[i] != ' ' || len == 0 || len > n - off)
			return;
		const uint8_t *kv = p + i + 1;
		size_t kvlen = off + len - (i + 1);
		if (kvlen >= 6 && memcmp(kv, "size=", 5) == 0 && kv[kvlen - 1] == '\n') {
			uint64_t v = 0;
			size_t j = 5;
			for (; j < kvlen - 1 && kv[j] >= '0' && kv[j] <= '9'; j++) {
				if (v > (UINT64_MAX - 9) / 10)
					return;
				v = v * 10 + (uint64_t)(kv[j] - '0');
			}
			if (j == kvlen - 1 && j > 5) {
				f->pax_size = v;
				f->have_pax_size = true;
			}
		}
		off += len;
	}
}

static void add_range(struct eq_xf *f, uint64_t start, uint64_t end)
{
	if (start >= end || f->n_ranges >= EQ_XF_MAX_RANGES)
		return;
	f->r[f->n_ranges].start = start;
	f->r[f->n_ranges].end = end;
	f->n_ranges++;
}

/* Sorts (few entries: insertion sort) and merges overlapping ranges. */
static void normalize_ranges(struct eq_xf *f)
{
	for (unsigned i = 1; i < f->n_ranges; i++) {
		struct eq_xf_range t = f->r[i];
		unsigned j = i;
		while (j > 0 && f->r[j - 1].start > t.start) {
			f->r[j] = f->r[j - 1];
			j--;
		}
		f->r[j] = t;
	}
	unsigned o = 0;
	for (unsigned i = 0; i < f->n_ranges; i++) {
		if (o > 0 && f->r[i].start <= f->r[o - 1].end) {
			if (f->r[i].end > f->r[o - 1].end)
				f->r[o - 1].end = f->r[i].end;
		} else {
			f->r[o++] = f->r[i];
		}
	}
	f->n_ranges = o;
}

/*
 * Decides how to filter the regular file whose data starts at @d (@avail
 * bytes of it in memory, @size in total). Returns false if more bytes are
 * needed first. Only bytes the filter never changes are read: the ELF
 * header and program header table, which every code range starts after.
 */
static bool decide_file(struct eq_xf *f, const uint8_t *d, uint64_t avail, uint64_t size, bool final)
{
	f->n_ranges = 0;
	f->arch = EQ_XF_ARCH_NONE;
	if (size < 64)
		return true;
	if (avail < 64)
		return final;
	if (memcmp(d, "\177ELF", 4) != 0 || d[4] != 2 /* ELFCLASS64 */ || d[5] != 1 /* little endian */)
		return true;
	uint16_t machine = rd16(d + 18);
	if (machine == 62)
		f->arch = EQ_XF_ARCH_X86_64;
	else if (machine == 183)
		f->arch = EQ_XF_ARCH_ARM64;
	else
		return true;

	uint64_t phoff = rd64(d + 32);
	uint16_t phentsize = rd16(d + 54), phnum = rd16(d + 56);
	uint64_t head_max = size < EQ_XF_HEAD_MAX ? size : EQ_XF_HEAD_MAX;
	bool phdrs_ok = phnum > 0 && phentsize == 56 && phoff >= 64 && phoff <= head_max &&
			(uint64_t)phnum * 56 <= head_max - phoff;
	uint64_t ds = f->data_start;
	/* cppcheck-suppress knownConditionTrueFalse ; phdrs_ok depends on the file's bytes */
	if (!phdrs_ok) {
		/* Relocatable objects (kernel modules) have no program headers:
		 * everything after the ELF header may be code. */
		add_range(f, ds + 64, ds + size);
		return true;
	}
	uint64_t hdr_end = phoff + (uint64_t)phnum * 56;
	if (avail < hdr_end) {
		if (!final)
			return false;
		f->arch = EQ_XF_ARCH_NONE;
		return true;
	}
	for (unsigned i = 0; i < phnum; i++) {
		const uint8_t *ph = d + phoff + (uint64_t)i * 56;
		if (rd32(ph) != 1 /* PT_LOAD */ || !(rd32(ph + 4) & 1) /* PF_X */)
			continue;
		uint64_t off = rd64(ph + 8), filesz = rd64(ph + 32);
		if (off >= size)
			continue;
		uint64_t end = filesz > size - off ? size : off + filesz;
		if (off < hdr_end)
			off = hdr_end;
		add_range(f, ds + off, ds + end);
	}
	normalize_ranges(f);
	return true;
}

/* Second bytes after a REX prefix that take a ModRM with a RIP-relative
 * form and no immediate: mov load/store, lea, cmp, add, sub, movsxd. None is
 * E8/E9, which keeps pattern bytes out of any later operand (see below). */
static bool x86_rex_op(uint8_t b)
{
	return b == 0x8B || b == 0x8D || b == 0x89 || b == 0x3B || b == 0x39 || b == 0x03 || b == 0x2B || b == 0x63;
}

/*
 * Recognises a candidate at @p with @n bytes left in the code range:
 * E8/E9 rel32 (branches); FF 15/25 (call/jmp [rip+d]), 8B/8D /r with
 * ModRM mod=00 rm=101 and REX + the ops above (data references). Returns
 * the instruction length and the operand offset in *ret_k, or 0.
 */
static unsigned x86_match(const uint8_t *p, uint64_t n, unsigned mode, unsigned *ret_k)
{
	if ((mode & EQ_XF_BRANCH) && (p[0] & 0xFE) == 0xE8) {
		*ret_k = 1;
		return n >= 5 ? 5 : 0;
	}
	if (!(mode & EQ_XF_DATA) || n < 6)
		return 0;
	if ((p[0] == 0xFF && (p[1] == 0x15 || p[1] == 0x25)) ||
	    ((p[0] == 0x8B || p[0] == 0x8D) && (p[1] & 0xC7) == 0x05)) {
		*ret_k = 2;
		return 6;
	}
	if (n >= 7 && (p[0] & 0xF0) == 0x40 && x86_rex_op(p[1]) && (p[2] & 0xC7) == 0x05) {
		*ret_k = 3;
		return 7;
	}
	return 0;
}

/*
 * x86-64: rel32 operands whose top byte is 0x00 or 0xFF (|rel| < 2^24,
 * which excludes most false positives) become the absolute target (file
 * offset of the instruction's end plus rel), kept as a 25-bit sign-extended
 * value so that the decoder sees the same top-byte property and undoes
 * exactly the same places.
 *
 * A candidate left alone guards the bytes it read: no later conversion may
 * change them, or the decoder, reaching that candidate first, would decide
 * differently. (xz's x86 filter keeps a mask of recent opcode bytes for the
 * same reason.) Pattern bytes themselves can never be in a later operand:
 * a later candidate starts at least one byte further and its operand one
 * byte after that, and the only 3-byte pattern (REX) cannot have E8/E9 as
 * its second byte.
 *
 * Returns the offset of the first byte not yet examined: the scan stops
 * where fewer than 7 bytes are in memory (@avail_end) unless the range
 * (@r_end) ends first.
 */
static uint64_t x86_run(struct eq_xf *f, uint8_t *buf, uint64_t base, uint64_t from, uint64_t r_end, uint64_t avail_end)
{
	uint64_t i = from;
	while (i + 5 <= r_end) {
		uint64_t n = r_end - i;
		if (n > 7)
			n = 7;
		if (i + n > avail_end)
			break;
		uint8_t *p = buf + (i - base);
		unsigned k = 0;
		unsigned len = x86_match(p, n, f->mode, &k);
		if (len == 0) {
			i++;
			continue;
		}
		if ((p[len - 1] != 0x00 && p[len - 1] != 0xFF) || i + k <= f->guard_end) {
			if (i + len - 1 > f->guard_end)
				f->guard_end = i + len - 1;
			i++;
			continue;
		}
		uint32_t v = rd32(p + k);
		uint32_t pos = (uint32_t)(i - f->data_start + len);
		uint32_t w = f->encode ? v + pos : v - pos;
		/* sign-extend bit 24 into the top byte */
		w &= 0x01FFFFFFu;
		if (w & 0x01000000u)
			w |= 0xFF000000u;
		wr32(p + k, w);
		f->stats.converted++;
		i += len;
	}
	return i;
}

/*
 * AArch64, on 4-byte aligned file offsets: BL's imm26 (word offset) becomes
 * absolute modulo 2^26, a bijection; ADRP's imm21 (page offset) is
 * converted only within +-2^17 pages, stored sign-extended from 18 bits, so
 * the decoder's range check selects the same instructions.
 */
static uint64_t arm64_run(struct eq_xf *f, uint8_t *buf, uint64_t base, uint64_t from, uint64_t to)
{
	uint64_t rel = from - f->data_start;
	uint64_t i = from + ((4 - (rel & 3)) & 3);
	for (; i + 4 <= to; i += 4) {
		uint8_t *p = buf + (i - base);
		uint32_t insn = rd32(p);
		uint32_t pc = (uint32_t)(i - f->data_start);
		if ((f->mode & EQ_XF_BRANCH) && (insn & 0xFC000000u) == 0x94000000u) {
			uint32_t imm = insn & 0x03FFFFFFu;
			uint32_t w = f->encode ? imm + (pc >> 2) : imm - (pc >> 2);
			wr32(p, (insn & 0xFC000000u) | (w & 0x03FFFFFFu));
			f->stats.converted++;
		} else if ((f->mode & EQ_XF_DATA) && (insn & 0x9F000000u) == 0x90000000u) {
			uint32_t imm = ((insn >> 29) & 3u) | ((insn >> 3) & 0x001FFFFCu);
			/* sign-extend the 21-bit field; convert only |imm| < 2^17 */
			uint32_t s = (imm & 0x00100000u) ? imm | 0xFFE00000u : imm;
			if (s + 0x00020000u >= 0x00040000u)
				continue;
			uint32_t w = f->encode ? s + (pc >> 12) : s - (pc >> 12);
			w &= 0x0003FFFFu;
			if (w & 0x00020000u)
				w |= 0xFFFC0000u;
			w &= 0x001FFFFFu;
			insn = (insn & 0x9F00001Fu) | (w & 3u) << 29 | (w & 0x001FFFFCu) << 3;
			wr32(p, insn);
			f->stats.converted++;
		}
	}
	return i;
}

/*
 * Processes the bytes buf[0, avail) at absolute offset @base; bytes before
 * f->cur are final. Returns when more input is needed or all is done.
 */
static void xf_step(struct eq_xf *f, uint8_t *buf, size_t avail, uint64_t base, bool final)
{
	uint64_t end = base + avail;
	for (;;) {
		switch (f->state) {
		case XF_HEADER: {
			if (end - f->cur < TAR_BLOCK) {
				if (!final)
					return;
				f->state = XF_PASS;
				break;
			}
			const uint8_t *h = buf + (f->cur - base);
			uint64_t size;
			if (all_zero(h, TAR_BLOCK) || !tar_header_ok(h) || !tar_number(h + 124, 12, &size)) {
				/* end of archive, or not a tar we understand */
				f->state = XF_PASS;
				break;
			}
			uint8_t type = h[156];
			f->kind = XK_OTHER;
			if (type == 'x')
				f->kind = XK_PAX;
			else if (type == '0' || type == '\0' || type == '7')
				f->kind = XK_REG;
			if (type != 'x' && type != 'g') {
				if (f->have_pax_size)
					size = f->pax_size;
				f->have_pax_size = false;
			}
			f->stats.entries++;
			f->cur += TAR_BLOCK;
			if (size > UINT64_MAX - f->cur - 2 * TAR_BLOCK) {
				f->state = XF_PASS;
				break;
			}
			f->data_start = f->cur;
			f->data_end = f->cur + size;
			f->next_hdr = f->data_end + ((TAR_BLOCK - (size % TAR_BLOCK)) % TAR_BLOCK);
			f->n_ranges = 0;
			f->arch = EQ_XF_ARCH_NONE;
			f->state = XF_HEAD;
			break;
		}
		case XF_HEAD: {
			uint64_t size = f->data_end - f->data_start;
			uint64_t have = end - f->data_start;
			const uint8_t *d = buf + (f->data_start - base);
			if (f->kind == XK_PAX && size <= EQ_XF_PAX_MAX) {
				if (have < size && !final)
					return;
				if (have >= size)
					pax_parse_size(f, d, (size_t)size);
			} else if (f->kind == XK_REG) {
				if (!decide_file(f, d, have, size, final))
					return;
				if (f->arch == EQ_XF_ARCH_X86_64)
					f->stats.elf_x86_64++;
				else if (f->arch == EQ_XF_ARCH_ARM64)
					f->stats.elf_arm64++;
				else
					f->n_ranges = 0;
			}
			f->ri = 0;
			f->fpos = f->n_ranges ? f->r[0].start : 0;
			f->state = XF_DATA;
			break;
		}
		case XF_DATA:
			while (f->ri < f->n_ranges) {
				const struct eq_xf_range *r = &f->r[f->ri];
				if (f->fpos < r->start)
					f->fpos = r->start;
				uint64_t to = r->end < end ? r->end : end;
				if (f->fpos < to) {
					if (f->arch == EQ_XF_ARCH_X86_64)
						f->fpos = x86_run(f, buf, base, f->fpos, r->end, end);
					else
						f->fpos = arm64_run(f, buf, base, f->fpos, to);
				}
				/* an instruction that would cross the range end is never
				 * converted, so the tail of a range is final as is */
				unsigned insn = f->arch == EQ_XF_ARCH_X86_64 ? 5 : 4;
				if (f->fpos + insn > r->end || f->fpos >= r->end) {
					f->ri++;
					continue;
				}
				/* alignment may put fpos past the data we have; the
				 * bytes skipped over are not instructions */
				f->cur = f->fpos < end ? f->fpos : end;
				if (!final)
					return;
				f->state = XF_PASS; /* truncated inside code */
				break;
			}
			if (f->state != XF_DATA)
				break;
			if (f->next_hdr > end) {
				if (f->cur < end)
					f->cur = end;
				if (!final)
					return;
				f->state = XF_PASS;
				break;
			}
			f->cur = f->next_hdr;
			f->state = XF_HEADER;
			break;
		case XF_PASS:
		default: f->cur = end; return;
		}
	}
}

void eq_xf_init(struct eq_xf *f, bool encode, unsigned mode)
{
	memset(f, 0, sizeof(*f));
	f->encode = encode;
	f->mode = mode;
	f->state = XF_HEADER;
}

void eq_xf_done(struct eq_xf *f)
{
	if (!f)
		return;
	eq_free(f->buf);
	f->buf = NULL;
}

void eq_xf_buffer(uint8_t *data, size_t len, bool encode, unsigned mode, struct eq_xf_stats *ret_stats)
{
	struct eq_xf f;
	eq_xf_init(&f, encode, mode);
	xf_step(&f, data, len, 0, true);
	assert(f.cur == len);
	if (ret_stats)
		*ret_stats = f.stats;
}

eq_err eq_xf_stream_begin(struct eq_xf *f, eq_write_fn sink, void *sink_ctx, struct eq_error *err)
{
	f->buf = eq_malloc(EQ_XF_STREAM_BUF);
	if (!f->buf)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory for the executable filter buffer");
	f->sink = sink;
	f->sink_ctx = sink_ctx;
	f->len = 0;
	f->base = 0;
	return EQ_OK;
}

/* Hands the final bytes to the sink and moves the rest to the front. */
static eq_err flush_final(struct eq_xf *f, struct eq_error *err)
{
	size_t done = (size_t)(f->cur - f->base);
	assert(done <= f->len);
	if (done == 0)
		return EQ_OK;
	eq_err r = f->sink(f->sink_ctx, f->buf, done, err);
	if (r)
		return r;
	memmove(f->buf, f->buf + done, f->len - done);
	f->len -= done;
	f->base += done;
	return EQ_OK;
}

eq_err eq_xf_stream_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	struct eq_xf *f = ctx;
	const uint8_t *in = data;
	while (len > 0) {
		size_t n = EQ_XF_STREAM_BUF - f->len;
		if (n > len)
			n = len;
		memcpy(f->buf + f->len, in, n);
		f->len += n;
		in += n;
		len -= n;
		xf_step(f, f->buf, f->len, f->base, false);
		/* Every wait needs at most max(EQ_XF_HEAD_MAX, EQ_XF_PAX_MAX)
		 * bytes past f->cur, so a full buffer always makes progress. */
		assert(f->len < EQ_XF_STREAM_BUF || f->cur > f->base);
		eq_err r = flush_final(f, err);
		if (r)
			return r;
	}
	return EQ_OK;
}

eq_err eq_xf_stream_end(struct eq_xf *f, struct eq_error *err)
{
	xf_step(f, f->buf, f->len, f->base, true);
	assert(f->cur == f->base + f->len);
	return flush_final(f, err);
}

eq_err eq_xf_each_file(const uint8_t *data, size_t len, eq_xf_file_fn fn, void *ctx, struct eq_error *err)
{
	/* The same header rules as xf_step(), over a whole buffer. */
	struct eq_xf f;
	eq_xf_init(&f, true, 0);
	uint64_t cur = 0;
	while (len - cur >= TAR_BLOCK) {
		const uint8_t *h = data + cur;
		uint64_t size;
		if (all_zero(h, TAR_BLOCK) || !tar_header_ok(h) || !tar_number(h + 124, 12, &size))
			break;
		uint8_t type = h[156];
		if (type != 'x' && type != 'g') {
			if (f.have_pax_size)
				size = f.pax_size;
			f.have_pax_size = false;
		}
		cur += TAR_BLOCK;
		if (size > len - cur)
			break;
		if (type == 'x' && size <= EQ_XF_PAX_MAX) {
			pax_parse_size(&f, data + cur, (size_t)size);
		} else if (type == '0' || type == '\0' || type == '7') {
			eq_err r = fn(ctx, cur, size, err);
			if (r)
				return r;
		}
		uint64_t pad = (TAR_BLOCK - (size % TAR_BLOCK)) % TAR_BLOCK;
		if (pad > len - cur - size)
			break;
		cur += size + pad;
	}
	return EQ_OK;
}
