/*
 * Unit tests of eq_delta's full objects, deltas and executable filter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/delta.h>

#include "../../delta/bsdiff.h"
#include "../../delta/delta_zstd.h"
#include "../../delta/exec_filter.h"
#include "../../delta/gz_puff.h"

#include <glob.h>
#include <zlib.h>
#include <zstd.h>

#define EQ_ZSTD_WINDOW_LOG_MAX_FOR_TEST 31u

/* ---- helpers: memory source and sink ---------------------------------- */

struct mem_src {
	const uint8_t *data;
	size_t len, pos, chunk;
};

static eq_err mem_read(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	(void)err;
	struct mem_src *s = ctx;
	size_t n = s->len - s->pos;
	if (n > len)
		n = len;
	if (s->chunk && n > s->chunk)
		n = s->chunk;
	memcpy(buf, s->data + s->pos, n);
	s->pos += n;
	*ret_n = n;
	return EQ_OK;
}

static eq_err mem_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	return eq_buf_append(ctx, data, len, err);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11);
}

/* Passes @d to @fn in random chunks of 1..@max_chunk bytes, as a decoder
 * hands its output over; every call must succeed. */
static void write_in_chunks(eq_write_fn fn, void *ctx, const uint8_t *d, size_t n, size_t max_chunk)
{
	struct eq_error e;
	for (size_t off = 0; off < n;) {
		size_t k = 1 + rnd() % max_chunk;
		if (k > n - off)
			k = n - off;
		assert_int_equal(fn(ctx, d + off, k, &e), EQ_OK);
		off += k;
	}
}

static char tmpdir[64];

static int setup_tmp(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/eq-test-deltas-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state)
{
	(void)state;
	struct eq_error e;
	return eq_rm_rf(tmpdir, &e) == EQ_OK ? 0 : -1;
}

static char *tmp_path(const char *name)
{
	static char p[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", tmpdir, name);
	return p[k];
}

static void write_file(const char *path, const void *d, size_t n)
{
	struct eq_error e;
	assert_int_equal(eq_file_replace_atomic(path, d, n, 0644, &e), EQ_OK);
}

/* Appends one ustar entry (regular file) to @b. */
static void tar_add(struct eq_buf *b, const char *name, const uint8_t *data, size_t len)
{
	struct eq_error e;
	uint8_t h[512];
	memset(h, 0, sizeof(h));
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", 0755);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)len);
	snprintf((char *)h + 136, 12, "%011o", 0);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (size_t i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	assert_int_equal(eq_buf_append(b, h, 512, &e), EQ_OK);
	assert_int_equal(eq_buf_append(b, data, len, &e), EQ_OK);
	static const uint8_t zero[512];
	assert_int_equal(eq_buf_append(b, zero, (512 - len % 512) % 512, &e), EQ_OK);
}

static void tar_end(struct eq_buf *b)
{
	static const uint8_t zero[1024];
	struct eq_error e;
	assert_int_equal(eq_buf_append(b, zero, sizeof(zero), &e), EQ_OK);
}

static uint8_t *read_file(const char *path, size_t *len)
{
	uint8_t *d = NULL;
	struct eq_error e;
	if (eq_file_read_all(path, (size_t)1 << 30, &d, len, &e) != EQ_OK)
		return NULL;
	return d;
}

/* Random bytes rich in E8/E9 and REX+8B/8D patterns behind an x86-64 ELF
 * header without program headers, so the whole file is "code". */
static void fake_elf(uint8_t *d, size_t n, uint16_t machine)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t r = rnd();
		static const uint8_t pick[] = {0xE8, 0xE9, 0x00, 0xFF, 0x48, 0x8B, 0x8D, 0x05, 0x15, 0xFF, 0x94, 0x90};
		d[i] = (r & 3) ? pick[(r >> 8) % sizeof(pick)] : (uint8_t)(r >> 16);
	}
	memset(d, 0, 64);
	memcpy(d, "\177ELF\2\1\1", 7);
	d[18] = (uint8_t)machine;
	d[19] = (uint8_t)(machine >> 8);
}

/* ---- full objects ------------------------------------------------------ */

static void test_object_round_trip(void **state)
{
	(void)state;
	size_t n = 3u << 20;
	uint8_t *d = eq_malloc(n);
	assert_non_null(d);
	for (size_t i = 0; i < n; i++)
		d[i] = (uint8_t)((i % 251) ^ (rnd() & 0x3));
	struct mem_src src = {d, n, 0, 7777};
	struct eq_buf z, out;
	struct eq_error e;
	eq_buf_init(&z, n * 2);
	eq_buf_init(&out, n);
	assert_int_equal(eq_object_compress(mem_read, &src, n, mem_write, &z, 3, &e), EQ_OK);
	assert_true(z.len < n);
	/* the known size is in the frame, so zstd sized its tables to it */
	assert_int_equal(ZSTD_getFrameContentSize(z.data, z.len), n);
	struct mem_src zs = {z.data, z.len, 0, 1000};
	assert_int_equal(eq_object_decompress(mem_read, &zs, mem_write, &out, n, 0, &e), EQ_OK);
	assert_int_equal(out.len, n);
	assert_memory_equal(out.data, d, n);

	/* max_out: one byte short fails with EQ_ERR_LIMIT, nothing beyond */
	eq_buf_reset(&out);
	zs.pos = 0;
	assert_int_equal(eq_object_decompress(mem_read, &zs, mem_write, &out, n - 1, 0, &e), EQ_ERR_LIMIT);
	assert_true(out.len <= n - 1);

	/* truncated */
	eq_buf_reset(&out);
	struct mem_src ts = {z.data, z.len - 10, 0, 0};
	assert_int_equal(eq_object_decompress(mem_read, &ts, mem_write, &out, n, 0, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "truncated"));

	/* empty input, bad level, bad window */
	struct mem_src es = {z.data, 0, 0, 0};
	assert_int_equal(eq_object_decompress(mem_read, &es, mem_write, &out, n, 0, &e), EQ_ERR_PARSE);
	assert_int_equal(eq_object_compress(mem_read, &src, n, mem_write, &z, 0, &e), EQ_ERR_INVAL);

	/* a source that yields more or fewer bytes than it was said to have */
	for (int delta = -1; delta <= 1; delta += 2) {
		struct eq_buf zz;
		eq_buf_init(&zz, n * 2);
		src.pos = 0;
		assert_int_equal(
			eq_object_compress(mem_read, &src, (uint64_t)((int64_t)n + delta), mem_write, &zz, 3, &e),
			EQ_ERR_VERIFY);
		assert_non_null(strstr(e.msg, "it was said to have"));
		eq_buf_done(&zz);
	}
	assert_int_equal(eq_object_decompress(mem_read, &zs, mem_write, &out, n, 40, &e), EQ_ERR_INVAL);

	/* window cap: a level-19 frame of 3 MiB has a window > 2^20 */
	eq_buf_reset(&z);
	src.pos = 0;
	assert_int_equal(eq_object_compress(mem_read, &src, EQ_OBJECT_SIZE_UNKNOWN, mem_write, &z, 19, &e), EQ_OK);
	assert_int_equal(ZSTD_getFrameContentSize(z.data, z.len), ZSTD_CONTENTSIZE_UNKNOWN);
	zs = (struct mem_src){z.data, z.len, 0, 0};
	eq_buf_reset(&out);
	assert_int_equal(eq_object_decompress(mem_read, &zs, mem_write, &out, n, 20, &e), EQ_ERR_LIMIT);
	assert_non_null(strstr(e.msg, "zstd"));

	eq_buf_done(&z);
	eq_buf_done(&out);
	eq_free(d);
}

/* manifest.json.zst is a run of frames (one per chunk of packages,
 * eqota-gen's gen_companions.c): the device decodes them as one object,
 * whatever the read sizes, with max_out and truncation over the whole. */
static void test_object_frames(void **state)
{
	(void)state;
	const size_t part[] = {100, 70000, 1, 300000};
	size_t n = 0;
	for (size_t k = 0; k < sizeof(part) / sizeof(part[0]); k++)
		n += part[k];
	uint8_t *d = eq_malloc(n);
	assert_non_null(d);
	for (size_t i = 0; i < n; i++)
		d[i] = (uint8_t)("{\n  \"name\": \"pkg\",}"[i % 20] ^ (rnd() % 7 == 0));
	struct eq_buf z, out;
	struct eq_error e;
	eq_buf_init(&z, n * 2);
	eq_buf_init(&out, n);
	size_t at = 0, second_end = 0;
	for (size_t k = 0; k < sizeof(part) / sizeof(part[0]); k++) {
		struct mem_src src = {d + at, part[k], 0, 0};
		assert_int_equal(eq_object_compress(mem_read, &src, part[k], mem_write, &z, 19, &e), EQ_OK);
		at += part[k];
		if (k == 1)
			second_end = z.len;
	}
	const size_t reads[] = {0, 1, 7, 1000, 65536};
	for (size_t k = 0; k < sizeof(reads) / sizeof(reads[0]); k++) {
		struct mem_src zs = {z.data, z.len, 0, reads[k]};
		eq_buf_reset(&out);
		assert_int_equal(eq_object_decompress(mem_read, &zs, mem_write, &out, n, 0, &e), EQ_OK);
		assert_int_equal(out.len, n);
		assert_memory_equal(out.data, d, n);
	}
	struct mem_src zs = {z.data, z.len, 0, 0};
	eq_buf_reset(&out);
	assert_int_equal(eq_object_decompress(mem_read, &zs, mem_write, &out, n - 1, 0, &e), EQ_ERR_LIMIT);
	/* cut inside the second frame: an error, not the first frame alone */
	struct mem_src ts = {z.data, second_end - 5, 0, 0};
	eq_buf_reset(&out);
	assert_int_equal(eq_object_decompress(mem_read, &ts, mem_write, &out, n, 0, &e), EQ_ERR_PARSE);
	eq_buf_done(&z);
	eq_buf_done(&out);
	eq_free(d);
}

/* ---- filter ------------------------------------------------------------ */

static void filter_round_trip(const uint8_t *d, size_t n, unsigned mode, uint64_t *ret_converted)
{
	uint8_t *f = eq_malloc(n ? n : 1);
	assert_non_null(f);
	if (n)
		memcpy(f, d, n);
	struct eq_xf_stats st;
	eq_xf_buffer(f, n, true, mode, &st);
	if (ret_converted)
		*ret_converted = st.converted;

	/* streaming decode in odd chunk sizes equals the original */
	struct eq_buf out;
	struct eq_error e;
	eq_buf_init(&out, n + 1);
	struct eq_xf xf;
	eq_xf_init(&xf, false, mode);
	assert_int_equal(eq_xf_stream_begin(&xf, mem_write, &out, &e), EQ_OK);
	write_in_chunks(eq_xf_stream_write, &xf, f, n, 100000);
	assert_int_equal(eq_xf_stream_end(&xf, &e), EQ_OK);
	eq_xf_done(&xf);
	assert_int_equal(out.len, n);
	assert_true(n == 0 || memcmp(out.data, d, n) == 0);

	/* whole-buffer decode as well */
	eq_xf_buffer(f, n, false, mode, NULL);
	assert_true(n == 0 || memcmp(f, d, n) == 0);
	eq_buf_done(&out);
	eq_free(f);
}

static void test_filter_random(void **state)
{
	(void)state;
	for (int round = 0; round < 40; round++) {
		struct eq_buf tar;
		eq_buf_init(&tar, 64u << 20);
		int files = 1 + (int)(rnd() % 5);
		for (int k = 0; k < files; k++) {
			size_t n = rnd() % (round < 20 ? 5000 : 300000);
			uint8_t *d = eq_malloc(n + 64);
			assert_non_null(d);
			fake_elf(d, n + 64, (rnd() & 1) ? 62 : 183);
			char name[32];
			snprintf(name, sizeof(name), "f%d", k);
			tar_add(&tar, name, d, n + 64);
			eq_free(d);
		}
		tar_end(&tar);
		uint64_t conv = 0;
		for (unsigned mode = 1; mode <= 3; mode++)
			filter_round_trip(tar.data, tar.len, mode, &conv);
		assert_true(conv > 0);
		/* raw random bytes, not a tar: must pass through unchanged */
		for (size_t i = 0; i < tar.len; i++)
			tar.data[i] = (uint8_t)rnd();
		filter_round_trip(tar.data, tar.len, 3, &conv);
		assert_int_equal(conv, 0);
		eq_buf_done(&tar);
	}
	filter_round_trip(NULL, 0, 3, NULL);
}

static void test_filter_real_elf(void **state)
{
	(void)state;
	const char *files[] = {"/bin/bash", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/ls"};
	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		size_t n;
		uint8_t *d = read_file(files[k], &n);
		if (!d) {
			fprintf(stderr, "skipping missing %s\n", files[k]);
			continue;
		}
		struct eq_buf tar;
		eq_buf_init(&tar, n + (1u << 20));
		tar_add(&tar, "a", (const uint8_t *)"x", 1);
		tar_add(&tar, files[k] + 1, d, n);
		tar_end(&tar);
		uint64_t conv = 0;
		for (unsigned mode = 1; mode <= 3; mode++) {
			filter_round_trip(tar.data, tar.len, mode, &conv);
			if (conv < 500)
				fail_msg("%s mode %u: %llu conversions", files[k], mode, (unsigned long long)conv);
		}
		/* the file alone, not inside a tar: passes through */
		filter_round_trip(d, n, 3, &conv);
		assert_int_equal(conv, 0);
		eq_buf_done(&tar);
		eq_free(d);
	}
}

/* ---- deltas ------------------------------------------------------------ */

struct pair {
	struct eq_buf old_, new_;
};

/* A payload with /bin/bash (or a fake ELF) and text; the new one has code
 * inserted near the start of bash, as a security fix would. */
static void make_pair(struct pair *p, bool with_bash)
{
	size_t n = 0;
	uint8_t *bash = with_bash ? read_file("/bin/bash", &n) : NULL;
	if (!bash) {
		n = 200000;
		bash = eq_malloc(n);
		assert_non_null(bash);
		fake_elf(bash, n, 62);
	}
	uint8_t text[5000];
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (uint8_t)('a' + rnd() % 26);
	eq_buf_init(&p->old_, 64u << 20);
	eq_buf_init(&p->new_, 64u << 20);
	tar_add(&p->old_, "usr/bin/bash", bash, n);
	tar_add(&p->old_, "usr/share/doc/x", text, sizeof(text));
	tar_end(&p->old_);

	uint8_t *nb = eq_malloc(n + 64);
	assert_non_null(nb);
	size_t cut = n / 3;
	memcpy(nb, bash, cut);
	memset(nb + cut, 0x90, 64);
	memcpy(nb + cut + 64, bash + cut, n - cut);
	text[100] ^= 1;
	tar_add(&p->new_, "usr/bin/bash", nb, n + 64);
	tar_add(&p->new_, "usr/share/doc/x", text, sizeof(text));
	tar_end(&p->new_);
	eq_free(nb);
	eq_free(bash);
}

static void pair_done(struct pair *p)
{
	eq_buf_done(&p->old_);
	eq_buf_done(&p->new_);
}

static void create_delta(const struct pair *p, const struct eq_delta_params *params, struct eq_buf *delta)
{
	write_file(tmp_path("old"), p->old_.data, p->old_.len);
	write_file(tmp_path("new"), p->new_.data, p->new_.len);
	struct eq_error e;
	uint64_t size = 0;
	eq_buf_init(delta, 64u << 20);
	assert_int_equal(eq_delta_create(tmp_path("old"), tmp_path("new"), params, mem_write, delta, &size, &e), EQ_OK);
	assert_int_equal(size, delta->len);
}

static eq_err apply(const char *ref, const uint8_t *d, size_t n, struct eq_buf *out, const uint8_t *expect,
		    const struct eq_delta_limits *lim, struct eq_error *e)
{
	struct mem_src s = {d, n, 0, 4099};
	eq_buf_reset(out);
	return eq_delta_apply_limited(ref, mem_read, &s, mem_write, out, expect, lim, e);
}

static void test_delta_round_trip(void **state)
{
	(void)state;
	for (int with_bash = 0; with_bash < 2; with_bash++) {
		struct pair p;
		make_pair(&p, with_bash);
		struct eq_delta_params params;
		eq_delta_params_default(&params);
		params.level = 9;
		struct eq_buf delta, out;
		create_delta(&p, &params, &delta);
		eq_buf_init(&out, 64u << 20);
		struct eq_error e;
		uint8_t want[32];
		eq_sha256(p.new_.data, p.new_.len, want);
		assert_int_equal(apply(tmp_path("old"), delta.data, delta.len, &out, want, NULL, &e), EQ_OK);
		assert_int_equal(out.len, p.new_.len);
		assert_memory_equal(out.data, p.new_.data, out.len);
		struct eq_delta_info info;
		assert_int_equal(eq_delta_info_parse(delta.data, delta.len, &info, &e), EQ_OK);
		assert_true(delta.len < p.new_.len / 20);
		eq_log(EQ_LOG_DEBUG, "delta %zu bytes, filter %u", delta.len, info.filter);

		/* and without the filter */
		params.exec_filter = false;
		struct eq_buf d2;
		create_delta(&p, &params, &d2);
		assert_int_equal(eq_delta_info_parse(d2.data, d2.len, &info, &e), EQ_OK);
		assert_int_equal(info.filter, 0);
		assert_int_equal(apply(tmp_path("old"), d2.data, d2.len, &out, NULL, NULL, &e), EQ_OK);
		assert_memory_equal(out.data, p.new_.data, out.len);
		eq_buf_done(&d2);
		eq_buf_done(&delta);
		eq_buf_done(&out);
		pair_done(&p);
	}
}

/* Each method's failure handling, on a delta forced to that method. */
static void delta_failures(unsigned method)
{
	struct pair p;
	make_pair(&p, false);
	struct eq_delta_params params;
	eq_delta_params_default(&params);
	params.level = 5;
	params.methods = 1u << method;
	struct eq_buf delta, out;
	create_delta(&p, &params, &delta);
	struct eq_delta_info info;
	{
		struct eq_error e0;
		assert_int_equal(eq_delta_info_parse(delta.data, delta.len, &info, &e0), EQ_OK);
		assert_int_equal(info.method, method);
	}
	eq_buf_init(&out, 64u << 20);
	struct eq_error e;

	/* wrong reference: same size, one byte changed; nothing written */
	p.old_.data[700] ^= 0x40;
	write_file(tmp_path("wrong"), p.old_.data, p.old_.len);
	assert_int_equal(apply(tmp_path("wrong"), delta.data, delta.len, &out, NULL, NULL, &e), EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, "not the payload this delta was made from"));
	assert_int_equal(out.len, 0);
	/* wrong size */
	write_file(tmp_path("short"), p.old_.data, p.old_.len - 1);
	assert_int_equal(apply(tmp_path("short"), delta.data, delta.len, &out, NULL, NULL, &e), EQ_ERR_VERIFY);
	assert_int_equal(out.len, 0);
	/* missing */
	assert_int_equal(apply(tmp_path("nope"), delta.data, delta.len, &out, NULL, NULL, &e), EQ_ERR_NOTFOUND);

	/* expect_sha256 mismatch */
	uint8_t bad[32] = {1};
	assert_int_equal(apply(tmp_path("old"), delta.data, delta.len, &out, bad, NULL, &e), EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, "expected"));

	/* window cap */
	struct eq_delta_limits lim = {.max_window_log = info.window_log - 1};
	assert_int_equal(apply(tmp_path("old"), delta.data, delta.len, &out, NULL, &lim, &e), EQ_ERR_LIMIT);
	assert_non_null(strstr(e.msg, "window"));
	assert_int_equal(out.len, 0);
	lim = (struct eq_delta_limits){.max_result_size = p.new_.len - 1};
	assert_int_equal(apply(tmp_path("old"), delta.data, delta.len, &out, NULL, &lim, &e), EQ_ERR_LIMIT);

	/* truncated anywhere: clean error, never more than the declared size */
	for (size_t cut = 0; cut < delta.len; cut += 1 + cut / 3) {
		eq_err r = apply(tmp_path("old"), delta.data, cut, &out, NULL, NULL, &e);
		assert_int_equal(r, EQ_ERR_PARSE);
		assert_true(out.len <= p.new_.len);
	}
	/* trailing data */
	uint8_t *longer = eq_malloc(delta.len + 1);
	assert_non_null(longer);
	memcpy(longer, delta.data, delta.len);
	longer[delta.len] = 0;
	assert_int_equal(apply(tmp_path("old"), longer, delta.len + 1, &out, NULL, NULL, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "trailing"));
	eq_free(longer);

	/* every single corrupted byte fails cleanly */
	for (size_t i = 0; i < delta.len; i += 1 + (i < 200 ? 0 : i / 50)) {
		delta.data[i] ^= 0x5A;
		eq_err r = apply(tmp_path("old"), delta.data, delta.len, &out, NULL, NULL, &e);
		delta.data[i] ^= 0x5A;
		if (r != EQ_ERR_PARSE && r != EQ_ERR_VERIFY && r != EQ_ERR_UNSUPPORTED && r != EQ_ERR_LIMIT)
			fail_msg("byte %zu: %s: %s", i, eq_err_str(r), e.msg);
		assert_true(out.len <= p.new_.len);
	}

	/* bad parameters */
	params.level = 99;
	assert_int_equal(eq_delta_create(tmp_path("old"), tmp_path("new"), &params, mem_write, &out, NULL, &e),
			 EQ_ERR_INVAL);
	eq_buf_done(&delta);
	eq_buf_done(&out);
	pair_done(&p);
}

/* Whether this build creates method-1 deltas (host tools only; every
 * build applies them). */
static bool have_bsd(void)
{
	write_file(tmp_path("probe"), "x", 1);
	struct eq_delta_params params;
	eq_delta_params_default(&params);
	params.methods = 1u << EQ_DELTA_METHOD_BSD;
	struct eq_buf d;
	eq_buf_init(&d, 1u << 16);
	struct eq_error e;
	eq_err r = eq_delta_create(tmp_path("probe"), tmp_path("probe"), &params, mem_write, &d, NULL, &e);
	eq_buf_done(&d);
	assert_true(r == EQ_OK || r == EQ_ERR_UNSUPPORTED);
	return r == EQ_OK;
}

/* Skips the case unless this build creates method-1 deltas. */
static void need_bsd(void)
{
	if (!have_bsd())
		EQ_SKIP("this build creates no method-1 (bsdiff-class) deltas: configure with -DEQ_HOST_TOOLS=ON "
			"(needs libdivsufsort-dev)");
}

static void test_delta_failures(void **state)
{
	(void)state;
	delta_failures(EQ_DELTA_METHOD_ZSTD);
}

static void test_bsd_failures(void **state)
{
	(void)state;
	need_bsd();
	delta_failures(EQ_DELTA_METHOD_BSD);
}

/* ---- method 1 (bsdiff-class) -------------------------------------------- */

/* Applies @delta to the file "old" and checks the result is @want. */
static void check_apply(const struct eq_buf *delta, const uint8_t *want, size_t want_len, size_t chunk)
{
	struct eq_buf out;
	eq_buf_init(&out, 64u << 20);
	struct eq_error e;
	uint8_t sha[32];
	eq_sha256(want, want_len, sha);
	struct mem_src s = {delta->data, delta->len, 0, chunk};
	eq_err r = eq_delta_apply_limited(tmp_path("old"), mem_read, &s, mem_write, &out, sha, NULL, &e);
	if (r != EQ_OK)
		fail_msg("apply: %s: %s", eq_err_str(r), e.msg);
	assert_int_equal(out.len, want_len);
	if (want_len)
		assert_memory_equal(out.data, want, want_len);
	eq_buf_done(&out);
}

/* Round trip of @old -> @new_ forced to method 1; also checks that the
 * same inputs give the same bytes and that the default (both methods)
 * is never larger than either. Returns the method-1 delta size. */
static size_t bsd_round_trip(const uint8_t *old, size_t old_len, const uint8_t *new_, size_t new_len, int level,
			     bool filter)
{
	struct pair p;
	eq_buf_init(&p.old_, 64u << 20);
	eq_buf_init(&p.new_, 64u << 20);
	struct eq_error e;
	assert_int_equal(eq_buf_append(&p.old_, old, old_len, &e), EQ_OK);
	assert_int_equal(eq_buf_append(&p.new_, new_, new_len, &e), EQ_OK);
	struct eq_delta_params params;
	eq_delta_params_default(&params);
	params.level = level;
	params.exec_filter = filter;
	params.methods = 1u << EQ_DELTA_METHOD_BSD;
	struct eq_buf d1, d2, d0;
	create_delta(&p, &params, &d1);
	struct eq_delta_info info;
	assert_int_equal(eq_delta_info_parse(d1.data, d1.len, &info, &e), EQ_OK);
	assert_int_equal(info.method, EQ_DELTA_METHOD_BSD);
	assert_true(eq_delta_apply_mem_bound(info.ref_size, info.window_log) < info.ref_size + ((uint64_t)64 << 20));
	check_apply(&d1, new_, new_len, 0);
	check_apply(&d1, new_, new_len, 4099);
	check_apply(&d1, new_, new_len, 1);
	create_delta(&p, &params, &d2);
	assert_int_equal(d1.len, d2.len);
	assert_memory_equal(d1.data, d2.data, d1.len);
	params.methods = 1u << EQ_DELTA_METHOD_ZSTD;
	create_delta(&p, &params, &d0);
	size_t m0 = d0.len;
	eq_buf_done(&d0);
	params.methods = 0;
	create_delta(&p, &params, &d0);
	assert_true(d0.len <= m0 && d0.len <= d1.len);
	check_apply(&d0, new_, new_len, 0);
	size_t n = d1.len;
	eq_buf_done(&d0);
	eq_buf_done(&d1);
	eq_buf_done(&d2);
	pair_done(&p);
	return n;
}

/* Copies @in with mutations a code update makes: bytes changed here and
 * there, small insertions and deletions, a block moved. */
static uint8_t *mutate(const uint8_t *in, size_t n, size_t *ret_len)
{
	uint8_t *out = eq_malloc(n + n / 8 + 4096);
	assert_non_null(out);
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		uint32_t r = rnd() % 1000;
		if (r < 5 && i + 64 < n) {
			i += rnd() % 64; /* deletion */
		} else if (r < 10) {
			for (uint32_t k = rnd() % 64; k; k--) /* insertion */
				out[o++] = (uint8_t)rnd();
		} else if (r < 60) {
			out[o++] = (uint8_t)(in[i++] + 1 + rnd() % 4); /* changed byte */
		} else {
			size_t run = 1 + rnd() % 200;
			if (run > n - i)
				run = n - i;
			memcpy(out + o, in + i, run);
			o += run;
			i += run;
		}
	}
	if (o > 3000) { /* move a block to the front */
		uint8_t tmp[1000];
		memcpy(tmp, out + o - 1000, 1000);
		memmove(out + 1000, out, o - 1000);
		memcpy(out, tmp, 1000);
	}
	*ret_len = o;
	return out;
}

static void test_bsd_round_trip(void **state)
{
	(void)state;
	need_bsd();
	/* random data with mutations, and degenerate sizes */
	size_t n = 300000, m;
	uint8_t *old = eq_malloc(n);
	assert_non_null(old);
	for (size_t i = 0; i < n; i++)
		old[i] = (uint8_t)(i % 7 == 0 ? rnd() : rnd() % 16);
	uint8_t *new_ = mutate(old, n, &m);
	size_t sz = bsd_round_trip(old, n, new_, m, 3, false);
	assert_true(sz < m / 2);
	(void)bsd_round_trip(old, n, old, n, 3, false);
	(void)bsd_round_trip(old, 0, new_, m, 3, false);
	(void)bsd_round_trip(old, n, new_, 0, 3, false);
	(void)bsd_round_trip(old, 0, new_, 0, 3, false);
	(void)bsd_round_trip(old, 1, new_, 1, 3, false);
	eq_free(new_);
	eq_free(old);

	/* real ELF files in tars, with the filter: bash and libc.so.6 (more
	 * than one segment of output) */
	static const char *const files[] = {"/bin/bash", "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/libc.so.6",
					    "/lib/aarch64-linux-gnu/libc.so.6"};
	int done = 0;
	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		size_t fl;
		uint8_t *f = read_file(files[k], &fl);
		if (!f)
			continue;
		uint8_t *g = mutate(f, fl, &m);
		struct eq_buf a, b;
		eq_buf_init(&a, 64u << 20);
		eq_buf_init(&b, 64u << 20);
		tar_add(&a, "usr/lib/x", f, fl);
		tar_end(&a);
		tar_add(&b, "usr/lib/x", g, m);
		tar_end(&b);
		sz = bsd_round_trip(a.data, a.len, b.data, b.len, 3, true);
		eq_log(EQ_LOG_DEBUG, "%s: method 1 delta %zu of %zu bytes", files[k], sz, b.len);
		assert_true(sz < b.len / 4);
		eq_buf_done(&a);
		eq_buf_done(&b);
		eq_free(f);
		eq_free(g);
		done++;
	}
	assert_true(done >= 2);
}

/* Filter trials on several threads give the bytes one thread gives: the
 * best is chosen by size, then by trial order, never by which finished
 * first. Both with method 0's trials and with method 1's (a window budget
 * too small for method 0). */
static void test_delta_threads(void **state)
{
	(void)state;
	need_bsd();
	size_t fl, m;
	uint8_t *f = read_file("/bin/bash", &fl);
	if (!f)
		EQ_SKIP("no /bin/bash to make a pair from");
	uint8_t *g = mutate(f, fl, &m);
	struct pair p;
	eq_buf_init(&p.old_, 64u << 20);
	eq_buf_init(&p.new_, 64u << 20);
	tar_add(&p.old_, "usr/bin/x", f, fl);
	tar_end(&p.old_);
	tar_add(&p.new_, "usr/bin/x", g, m);
	tar_end(&p.new_);
	static const unsigned threads[] = {1, 2, 4, EQ_DELTA_MAX_THREADS};
	for (int small_window = 0; small_window < 2; small_window++) {
		struct eq_buf d[4];
		for (size_t k = 0; k < 4; k++) {
			struct eq_delta_params params;
			eq_delta_params_default(&params);
			params.level = 5;
			params.threads = threads[k];
			if (small_window)
				params.max_window_log = 10; /* zstd's smallest window */
			create_delta(&p, &params, &d[k]);
			assert_int_equal(d[k].len, d[0].len);
			assert_memory_equal(d[k].data, d[0].data, d[0].len);
		}
		struct eq_delta_info info;
		struct eq_error e;
		assert_int_equal(eq_delta_info_parse(d[0].data, d[0].len, &info, &e), EQ_OK);
		assert_int_equal(info.method, small_window ? EQ_DELTA_METHOD_BSD : info.method);
		for (size_t k = 0; k < 4; k++)
			eq_buf_done(&d[k]);
	}
	pair_done(&p);
	eq_free(f);
	eq_free(g);
}

static void test_bsd_limits(void **state)
{
	(void)state;
	need_bsd();
	/* Changes all over, so that every stream needs more than the
	 * smallest window. */
	struct pair p;
	size_t n = 300000, m;
	eq_buf_init(&p.old_, 64u << 20);
	eq_buf_init(&p.new_, 64u << 20);
	uint8_t *rand_old = eq_malloc(n);
	assert_non_null(rand_old);
	for (size_t i = 0; i < n; i++)
		rand_old[i] = (uint8_t)(i % 7 == 0 ? rnd() : rnd() % 16);
	uint8_t *mut = mutate(rand_old, n, &m);
	for (size_t i = 0; i < m; i += 10)
		mut[i] = (uint8_t)(mut[i] + 1 + rnd() % 4);
	assert_int_equal(eq_buf_append(&p.old_, rand_old, n, NULL), EQ_OK);
	assert_int_equal(eq_buf_append(&p.new_, mut, m, NULL), EQ_OK);
	eq_free(mut);
	eq_free(rand_old);
	struct eq_delta_params params;
	eq_delta_params_default(&params);
	params.level = 3;
	params.methods = 1u << EQ_DELTA_METHOD_BSD;
	struct eq_buf delta, out;
	create_delta(&p, &params, &delta);
	eq_buf_init(&out, 64u << 20);
	struct eq_error e;
	struct eq_delta_info info;
	assert_int_equal(eq_delta_info_parse(delta.data, delta.len, &info, &e), EQ_OK);
	/* the stream windows are capped and the header's log covers them */
	assert_true(info.window_log <= EQ_ZSTD_WINDOW_LOG_MAX_FOR_TEST);
	for (int k = 0; k < 3; k++)
		assert_true(delta.data[EQ_DELTA_HEADER_SIZE + k] <= 24 &&
			    delta.data[EQ_DELTA_HEADER_SIZE + k] <= info.window_log);
	struct eq_delta_limits lim = {.max_window_log = info.window_log - 1};
	assert_int_equal(apply(tmp_path("old"), delta.data, delta.len, &out, NULL, &lim, &e), EQ_ERR_LIMIT);
	assert_int_equal(out.len, 0);
	lim.max_window_log = info.window_log;
	assert_int_equal(apply(tmp_path("old"), delta.data, delta.len, &out, NULL, &lim, &e), EQ_OK);

	/* a stream window above what the preamble allows: zstd refuses (the
	 * largest stream's, which needs more than the smallest window) */
	int big = 0;
	for (int k = 1; k < 3; k++)
		if (delta.data[EQ_DELTA_HEADER_SIZE + k] > delta.data[EQ_DELTA_HEADER_SIZE + big])
			big = k;
	assert_true(delta.data[EQ_DELTA_HEADER_SIZE + big] > 10);
	delta.data[EQ_DELTA_HEADER_SIZE + big] = 10;
	eq_err r = apply(tmp_path("old"), delta.data, delta.len, &out, NULL, NULL, &e);
	assert_true(r == EQ_ERR_LIMIT || r == EQ_ERR_PARSE);
	delta.data[EQ_DELTA_HEADER_SIZE + big] = (uint8_t)(info.window_log + 1);
	assert_int_equal(apply(tmp_path("old"), delta.data, delta.len, &out, NULL, NULL, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "window log"));
	eq_buf_done(&delta);
	eq_buf_done(&out);
	pair_done(&p);
}

/* ---- method 1 decoder, on hand-built deltas ------------------------------ */

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A method-1 delta of one segment against @ref: @ctrl holds raw varint
 * controls (@n_ctrl of them), @diff the raw diff stream (bytes, or runs
 * when @flags says so), @extra the extra bytes; the result is @want. */
static void hand_delta(struct eq_buf *d, const uint8_t *ref, size_t ref_len, const uint8_t *want, size_t want_len,
		       uint8_t flags, const uint8_t *ctrl, size_t ctrl_len, uint32_t n_ctrl, const uint8_t *diff,
		       size_t diff_len, const uint8_t *extra, size_t extra_len)
{
	struct eq_delta_info info = {.version = 1, .method = EQ_DELTA_METHOD_BSD, .window_log = 12};
	info.ref_size = ref_len;
	info.result_size = want_len;
	eq_sha256(ref, ref_len, info.ref_sha256);
	eq_sha256(want, want_len, info.result_sha256);
	eq_buf_init(d, 1u << 20);
	uint8_t hdr[EQ_DELTA_HEADER_SIZE];
	eq_delta_header_write(hdr, &info);
	assert_int_equal(eq_buf_append(d, hdr, sizeof(hdr), NULL), EQ_OK);
	uint8_t pre[EQ_BSD_PREAMBLE_SIZE] = {10, 10, 10, flags};
	assert_int_equal(eq_buf_append(d, pre, sizeof(pre), NULL), EQ_OK);
	const uint8_t *src[3] = {ctrl, diff, extra};
	size_t len[3] = {ctrl_len, diff_len, extra_len};
	uint8_t part[3][4096];
	size_t plen[3];
	for (int k = 0; k < 3; k++) {
		ZSTD_CCtx *c = ZSTD_createCCtx();
		assert_non_null(c);
		ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 10);
		ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
		plen[k] = ZSTD_compress2(c, part[k], sizeof(part[k]), len[k] ? (const void *)src[k] : (const void *)"",
					 len[k]);
		assert_false(ZSTD_isError(plen[k]));
		ZSTD_freeCCtx(c);
	}
	uint8_t sh[EQ_BSD_SEG_HEADER_SIZE];
	put_le32(sh, n_ctrl);
	for (int k = 0; k < 3; k++)
		put_le32(sh + 4 + 4 * k, (uint32_t)plen[k]);
	assert_int_equal(eq_buf_append(d, sh, sizeof(sh), NULL), EQ_OK);
	for (int k = 0; k < 3; k++)
		assert_int_equal(eq_buf_append(d, part[k], plen[k], NULL), EQ_OK);
}

/* Applies the hand-built delta against @ref; returns the result code and
 * leaves the message in @e. */
static eq_err hand_apply(const struct eq_buf *d, const uint8_t *ref, size_t ref_len, struct eq_buf *out,
			 struct eq_error *e)
{
	write_file(tmp_path("href"), ref, ref_len);
	return apply(tmp_path("href"), d->data, d->len, out, NULL, NULL, e);
}

/*
 * The diff stream both ways: byte per byte (deltas made before runs, which
 * devices must still apply) and as runs, spanning control entries; then
 * every way a run can disagree with the controls.
 */
static void test_bsd_diff_runs(void **state)
{
	(void)state;
	uint8_t ref[64], want[64];
	for (size_t i = 0; i < sizeof(ref); i++)
		ref[i] = (uint8_t)(i * 7 + 1);
	/* two entries of 30 added bytes each, no extra, no seek */
	memcpy(want, ref, sizeof(ref));
	want[3] = (uint8_t)(want[3] + 5);
	want[4] = (uint8_t)(want[4] + 9);
	want[40] = (uint8_t)(want[40] + 1);
	want[59] = (uint8_t)(want[59] + 2);
	const uint8_t ctrl[] = {30, 0, 0, 30, 0, 0};
	uint8_t raw[60] = {0};
	raw[3] = 5, raw[4] = 9, raw[40] = 1, raw[59] = 2;
	struct eq_buf d, out;
	eq_buf_init(&out, 1u << 20);
	struct eq_error e;

	hand_delta(&d, ref, 60, want, 60, 0, ctrl, sizeof(ctrl), 2, raw, sizeof(raw), NULL, 0);
	if (hand_apply(&d, ref, 60, &out, &e) != EQ_OK)
		fail_msg("byte-per-byte diff: %s", e.msg);
	assert_int_equal(out.len, 60);
	assert_memory_equal(out.data, want, 60);
	eq_buf_done(&d);

	/* runs: 3 zeros, 2 literals; 35 zeros, 1; 18 zeros, 1 (across the
	 * entries' boundary at 30) */
	const uint8_t runs[] = {3, 2, 5, 9, 35, 1, 1, 18, 1, 2};
	hand_delta(&d, ref, 60, want, 60, EQ_BSD_FLAG_DIFF_RUNS, ctrl, sizeof(ctrl), 2, runs, sizeof(runs), NULL, 0);
	if (hand_apply(&d, ref, 60, &out, &e) != EQ_OK)
		fail_msg("diff runs: %s", e.msg);
	assert_int_equal(out.len, 60);
	assert_memory_equal(out.data, want, 60);
	eq_buf_done(&d);

	/* the same runs read as bytes: the controls and the stream disagree */
	hand_delta(&d, ref, 60, want, 60, 0, ctrl, sizeof(ctrl), 2, runs, sizeof(runs), NULL, 0);
	assert_int_equal(hand_apply(&d, ref, 60, &out, &e), EQ_ERR_PARSE);
	eq_buf_done(&d);

	struct {
		const char *what, *msg;
		uint8_t flags;
		uint8_t runs[12];
		size_t n;
	} bad[] = {
		{"an empty run", "empty diff run at diff byte 4", 1, {3, 2, 5, 9, 0, 0, 35, 1, 1, 18, 1, 2}, 12},
		{"a run past the segment's bytes", "diff stream holds more", 1, {3, 2, 5, 9, 35, 1, 1, 19, 1, 2}, 10},
		{"runs short of the segment's bytes", "ends early", 1, {3, 2, 5, 9, 35, 1, 1, 17, 1, 2}, 10},
		{"a run left over", "diff stream holds more", 1, {3, 2, 5, 9, 35, 1, 1, 18, 1, 2, 1, 0}, 12},
		{"literals missing", "ends early", 1, {3, 2, 5, 9, 35, 1, 1, 17, 2, 2}, 10},
		{"a varint that overflows",
		 "overflows",
		 1,
		 {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		 10},
		{"an unknown flag", "unknown method-1 flags 0x03", 3, {3, 2, 5, 9, 35, 1, 1, 18, 1, 2}, 10},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hand_delta(&d, ref, 60, want, 60, bad[i].flags, ctrl, sizeof(ctrl), 2, bad[i].runs, bad[i].n, NULL, 0);
		eq_err r = hand_apply(&d, ref, 60, &out, &e);
		if (r == EQ_OK || !strstr(e.msg, bad[i].msg))
			fail_msg("%s: got %s: %s (want \"%s\")", bad[i].what, eq_err_str(r), e.msg, bad[i].msg);
		/* (a stream found too long after the last byte: the caller
		 * discards what it got on any error) */
		assert_true(out.len <= 60);
		eq_buf_done(&d);
	}
	eq_buf_done(&out);
}

static void test_mem_bound(void **state)
{
	(void)state;
	assert_int_equal(eq_delta_apply_mem_bound(1000, 20), 1000 + (1u << 20) + (4u << 20));
	assert_true(eq_delta_apply_mem_bound(UINT64_MAX - 5, 31) == UINT64_MAX);
	assert_true(eq_delta_apply_mem_bound(0, 63) == UINT64_MAX);
}

/* ---- bad-input corpus: tests/data/bad/delta/<case>.delta + .expect ----- */

static eq_err err_from_name(const char *name)
{
	for (int c = 0; c < EQ_ERR__COUNT; c++) {
		static const char *const names[] = {"EQ_OK",           "EQ_ERR_NOMEM",       "EQ_ERR_IO",
						    "EQ_ERR_PARSE",    "EQ_ERR_VERIFY",      "EQ_ERR_NETWORK",
						    "EQ_ERR_LIMIT",    "EQ_ERR_STATE",       "EQ_ERR_INVAL",
						    "EQ_ERR_NOTFOUND", "EQ_ERR_UNSUPPORTED", "EQ_ERR_EXPIRED",
						    "EQ_ERR_UNSAFE"};
		if ((size_t)c < sizeof(names) / sizeof(names[0]) && strcmp(names[c], name) == 0)
			return (eq_err)c;
	}
	return EQ_ERR__COUNT;
}

/* ---- deflate-aware deltas: puff, huff, expansion ----------------------- */

/* A gzip member of @d made by zlib with these parameters (caller frees). */
static uint8_t *zgzip(const uint8_t *d, size_t n, int level, int wbits, int memlevel, int strategy, size_t *ret)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	assert_int_equal(deflateInit2(&z, level, Z_DEFLATED, wbits + 16, memlevel, strategy), Z_OK);
	size_t cap = deflateBound(&z, (uLong)n) + 64;
	uint8_t *out = eq_malloc(cap);
	assert_non_null(out);
	z.next_in = (Bytef *)(uintptr_t)d;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*ret = z.total_out;
	deflateEnd(&z);
	return out;
}

/* Changelog-like text: @entries entries, the first numbered @first. */
static void changelog(struct eq_buf *b, unsigned first, unsigned entries)
{
	static const char *const what[] = {"openssl",        "memory safety",         "the TLS 1.3 handshake",
					   "X.509 parsing",  "a timing side channel", "PKCS#12 files",
					   "the CMS decoder"};
	struct eq_error e;
	for (unsigned i = first + entries; i-- > first;) {
		assert_int_equal(eq_buf_printf(b, &e, "pkg (3.0.%u-1) bookworm-security; urgency=medium\n\n", i),
				 EQ_OK);
		for (unsigned k = 0; k < 3 + i % 4; k++)
			assert_int_equal(eq_buf_printf(b, &e, "  * Fix CVE-2024-%04u in %s (closes: #%u).\n",
						       (i * 7 + k) % 10000, what[(i + k) % 7], 100000 + i * 13 + k),
					 EQ_OK);
		assert_int_equal(
			eq_buf_printf(b, &e, "\n -- Maintainer <m@example.org>  Mon, %02u Jan 2024 10:00:00 +0000\n\n",
				      1 + i % 28),
			EQ_OK);
	}
}

static eq_err huff_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	return eq_huff_write(ctx, data, len, err);
}

/* Puffs and huffs @gz; true when it is puffed and reproduced exactly. */
static bool puff_round_trip_why(const uint8_t *gz, size_t n, size_t *ret_plen, const char **ret_why)
{
	size_t cap = n * EQ_PUFF_GROWTH_MAX + EQ_PUFF_SLACK, plen = 0;
	uint8_t *pf = eq_malloc(cap);
	assert_non_null(pf);
	bool ok = eq_puff(gz, n, pf, cap, &plen, ret_why);
	if (ok) {
		struct eq_buf out;
		eq_buf_init(&out, n + 1);
		struct eq_huff h;
		struct eq_error e;
		eq_huff_init(&h, mem_write, &out);
		write_in_chunks(huff_write, &h, pf, plen, 7000);
		assert_int_equal(eq_huff_end(&h, &e), EQ_OK);
		assert_int_equal(out.len, n);
		assert_memory_equal(out.data, gz, n);
		eq_buf_done(&out);
	}
	if (ret_plen)
		*ret_plen = plen;
	eq_free(pf);
	return ok;
}

static bool puff_round_trip(const uint8_t *gz, size_t n, size_t *ret_plen)
{
	return puff_round_trip_why(gz, n, ret_plen, NULL);
}

/* Not puffed, for the reason @why. */
static void puff_refused(const uint8_t *gz, size_t n, const char *why)
{
	const char *got = NULL;
	assert_false(puff_round_trip_why(gz, n, NULL, &got));
	assert_non_null(got);
	if (!strstr(got, why))
		fail_msg("refused because '%s', expected '%s'", got, why);
}

static void test_puff_zlib(void **state)
{
	(void)state;
	struct eq_buf text;
	eq_buf_init(&text, 1u << 24);
	changelog(&text, 1, 300);
	uint8_t rnd_data[20000];
	for (size_t i = 0; i < sizeof(rnd_data); i++)
		rnd_data[i] = (uint8_t)rnd();
	const struct {
		const uint8_t *d;
		size_t n;
	} in[] = {{text.data, text.len}, {rnd_data, sizeof(rnd_data)}, {rnd_data, 0}};
	static const int levels[] = {0, 1, 6, 9};
	static const int strategies[] = {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED};
	static const int wbits[] = {9, 15};
	static const int memlevels[] = {1, 9};
	unsigned cases = 0;
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		for (size_t l = 0; l < 4; l++)
			for (size_t s = 0; s < 5; s++)
				for (size_t w = 0; w < 2; w++)
					for (size_t m = 0; m < 2; m++) {
						size_t n;
						uint8_t *gz = zgzip(in[i].d, in[i].n, levels[l], wbits[w], memlevels[m],
								    strategies[s], &n);
						if (!puff_round_trip(gz, n, NULL))
							fail_msg("input %zu level %d strategy %d wbits %d memlevel %d "
								 "not puffed",
								 i, levels[l], strategies[s], wbits[w], memlevels[m]);
						cases++;
						eq_free(gz);
					}
	assert_int_equal(cases, 3 * 4 * 5 * 2 * 2);
	eq_buf_done(&text);
}

/* GNU gzip -9n output as Debian's dh_compress makes it, which zlib does not
 * reproduce: the files of this machine's /usr/share/doc and man pages. */
static void test_puff_system_files(void **state)
{
	(void)state;
	glob_t g;
	if (glob("/usr/share/doc/*/changelog*.gz", 0, NULL, &g) != 0 ||
	    glob("/usr/share/man/man1/*.gz", GLOB_APPEND, NULL, &g) != 0) {
		globfree(&g);
		EQ_SKIP("no gzip files under /usr/share/doc or /usr/share/man/man1 on this machine");
	}
	unsigned done = 0;
	for (size_t i = 0; i < g.gl_pathc && done < 400; i += 1 + g.gl_pathc / 400) {
		size_t n;
		uint8_t *d = read_file(g.gl_pathv[i], &n);
		if (!d)
			continue;
		if (!puff_round_trip(d, n, NULL))
			fail_msg("%s is not puffed and reproduced", g.gl_pathv[i]);
		done++;
		eq_free(d);
	}
	globfree(&g);
	assert_true(done > 10);
}

/* What is not reproduced exactly is not puffed. */
static void test_puff_refuses(void **state)
{
	(void)state;
	struct eq_buf text;
	eq_buf_init(&text, 1u << 24);
	changelog(&text, 1, 20);
	size_t n, plen;
	uint8_t *gz = zgzip(text.data, text.len, 9, 15, 8, Z_DEFAULT_STRATEGY, &n);
	assert_true(puff_round_trip(gz, n, &plen));
	uint8_t *big = eq_malloc(n + 300);
	assert_non_null(big);
	memcpy(big, gz, n);
	memset(big + n, 0, 300);
	assert_true(puff_round_trip(big, n + 100, NULL)); /* 108 trailing bytes are kept */
	puff_refused(big, n + 300, "more than 255 bytes after");
	puff_refused(gz, n - 20, "invalid or truncated");
	size_t cap = plen - 1, got;
	const char *why;
	uint8_t *pf = eq_malloc(plen);
	assert_non_null(pf);
	assert_false(eq_puff(gz, n, pf, cap, &got, &why));
	assert_string_equal(why, "puffed form is larger than allowed");
	big[0] = 0x1e;
	puff_refused(big, n, "not a gzip header");
	eq_free(gz);
	eq_free(pf);

	/* a stored block whose alignment bits are not zero */
	gz = zgzip(text.data, 1000, 0, 15, 8, Z_DEFAULT_STRATEGY, &n);
	assert_true(puff_round_trip(gz, n, NULL));
	assert_int_equal(gz[10] & 7, 1); /* BFINAL, stored */
	gz[10] |= 0x40;
	puff_refused(gz, n, "non-zero padding bits before stored data");
	eq_free(gz);

	/* non-zero padding after the last block: set each unused bit of the
	 * last deflate byte in turn; the stream still inflates */
	unsigned refused = 0;
	gz = zgzip(text.data, text.len, 9, 15, 8, Z_FIXED, &n);
	for (unsigned b = 7; b > 0; b--) {
		gz[n - 9] ^= (uint8_t)(1u << b);
		const char *reason = NULL;
		if (!puff_round_trip_why(gz, n, NULL, &reason) && strstr(reason, "padding bits after the last block"))
			refused++;
		gz[n - 9] ^= (uint8_t)(1u << b);
	}
	assert_true(refused > 0);
	eq_free(gz);

	/* length 258 sent as code 284 + 31 (fixed codes, by hand): literal
	 * 'a', then length 258 at distance 1, then end of block */
	uint8_t hand[32] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3};
	size_t bit = 10 * 8;
#define PUTBIT(v)                                                                                                      \
	do {                                                                                                           \
		hand[bit / 8] |= (uint8_t)(((v)&1u) << (bit % 8));                                                     \
		bit++;                                                                                                 \
	} while (0)
	PUTBIT(1); /* BFINAL */
	PUTBIT(1); /* BTYPE 01, least significant bit first */
	PUTBIT(0);
	static const struct {
		unsigned code, len;
		bool huffman; /* most significant bit first */
	} seq[] = {{0x30 + 'a', 8, true}, {0xc0 + 4, 8, true}, {31, 5, false}, {0, 5, true}, {0, 7, true}};
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		for (unsigned k = 0; k < seq[i].len; k++)
			PUTBIT(seq[i].huffman ? seq[i].code >> (seq[i].len - 1 - k) : seq[i].code >> k);
#undef PUTBIT
	size_t hn = (bit + 7) / 8 + 8;
	puff_refused(hand, hn, "length 258 sent as code 284");
	/* while zlib inflates it: 259 times 'a' */
	uint8_t raw[300];
	z_stream z;
	memset(&z, 0, sizeof(z));
	assert_int_equal(inflateInit2(&z, -15), Z_OK);
	z.next_in = hand + 10;
	z.avail_in = (uInt)(hn - 18);
	z.next_out = raw;
	z.avail_out = sizeof(raw);
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	assert_int_equal(z.total_out, 259);
	assert_int_equal(raw[258], 'a');
	inflateEnd(&z);
	eq_free(big);
	eq_buf_done(&text);
}

static void test_huff_errors(void **state)
{
	(void)state;
	/* header: 10 bytes of a gzip header; final fixed block is tag 3 */
#define GZH 10, 0, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3
	static const struct {
		uint8_t d[40];
		size_t n;
		const char *msg;
	} cases[] = {
		{{0, 0}, 2, "empty gzip header"},
		{{GZH, 7}, 13, "unknown block type"},
		{{GZH, 3, 0x90}, 14, "unknown token"},
		{{GZH, 3, 0x80, 0, 0x3f, 0x9c}, 17, "beyond 32 KiB"},
		{{GZH, 3, 0xff, 0, 1}, 16, "continues after the end"},
		{{GZH, 5, 0, 0, 0, 1, 0, 0, 0}, 20, "code length code is not complete"},
		{{GZH, 5, 0, 0, 0, 1, 1, 0, 0, 16, 9}, 22, "repeat count is out of range"},
		{{GZH, 5, 0, 0, 0, 1, 1, 0, 0, 16, 0}, 22, "repeat with no previous length"},
		{{GZH, 5, 0, 0, 0, 1, 1, 0, 0, 3}, 21, "code length symbol has no code"},
		{{GZH, 5, 30, 0, 0}, 16, "out of range"},
		{{GZH, 3}, 13, "ends early"},
	};
#undef GZH
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct eq_buf out;
		eq_buf_init(&out, 1u << 20);
		struct eq_huff h;
		struct eq_error e;
		eq_error_clear(&e);
		eq_huff_init(&h, mem_write, &out);
		eq_err r = eq_huff_write(&h, cases[i].d, cases[i].n, &e);
		if (!r)
			r = eq_huff_end(&h, &e);
		if (r != EQ_ERR_PARSE || !strstr(e.msg, cases[i].msg))
			fail_msg("case %zu: got %s '%s', expected '%s'", i, eq_err_str(r), e.msg, cases[i].msg);
		eq_buf_done(&out);
	}
}

/* A payload with gzip files (one corrupt), expanded and re-encoded. */
static void test_gzx_payload(void **state)
{
	(void)state;
	struct eq_buf text, tar, out;
	struct eq_error e;
	eq_buf_init(&text, 1u << 24);
	eq_buf_init(&tar, 1u << 24);
	changelog(&text, 1, 200);
	size_t n1, n2;
	uint8_t *g1 = zgzip(text.data, text.len, 9, 15, 8, Z_DEFAULT_STRATEGY, &n1);
	uint8_t *g2 = zgzip(text.data, 5000, 1, 15, 8, Z_FIXED, &n2);
	tar_add(&tar, "usr/share/doc/a.txt", text.data, 3000);
	tar_add(&tar, "usr/share/doc/changelog.gz", g1, n1);
	uint8_t bad[64] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff};
	tar_add(&tar, "usr/share/doc/bad.gz", bad, sizeof(bad));
	tar_add(&tar, "usr/share/man/man1/x.1.gz", g2, n2);
	tar_end(&tar);

	struct eq_gzx x;
	assert_int_equal(eq_gzx_expand(tar.data, tar.len, NULL, 0, &x, &e), EQ_OK);
	assert_int_equal(x.n, 2);
	assert_int_equal(x.r[0].clen, n1);
	assert_int_equal(x.r[1].clen, n2);
	assert_int_equal(eq_gzx_regions_check(x.r, x.n, x.len, tar.len, &e), EQ_OK);
	/* the same bytes into a buffer of exactly the declared size */
	struct eq_gzx y;
	uint8_t *buf = eq_malloc(x.len);
	assert_non_null(buf);
	assert_int_equal(eq_gzx_expand(tar.data, tar.len, buf, x.len, &y, &e), EQ_OK);
	assert_int_equal(y.len, x.len);
	assert_memory_equal(buf, x.data, x.len);
	eq_gzx_done(&y); /* the buffer stays the caller's */
	assert_int_equal(eq_gzx_expand(tar.data, tar.len, buf, x.len - 1, &y, &e), EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, "more than the"));
	eq_free(buf);
	/* splicing the unchanged payload gives the expansion */
	uint8_t *sp = eq_malloc(x.len);
	assert_non_null(sp);
	eq_gzx_splice(&x, tar.data, tar.len, sp);
	assert_memory_equal(sp, x.data, x.len);
	eq_free(sp);

	/* streaming inverse, in uneven chunks */
	eq_buf_init(&out, 1u << 24);
	struct eq_gzx_stream st;
	eq_gzx_stream_init(&st, x.r, x.n, mem_write, &out);
	write_in_chunks(eq_gzx_stream_write, &st, x.data, x.len, 9000);
	assert_int_equal(eq_gzx_stream_end(&st, &e), EQ_OK);
	assert_int_equal(out.len, tar.len);
	assert_memory_equal(out.data, tar.data, tar.len);

	/* ending inside a region */
	eq_buf_reset(&out);
	eq_gzx_stream_init(&st, x.r, x.n, mem_write, &out);
	assert_int_equal(eq_gzx_stream_write(&st, x.data, (size_t)x.r[1].off + 5, &e), EQ_OK);
	assert_int_equal(eq_gzx_stream_end(&st, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "inside gzip region 1"));
	/* a region whose declared size is not what it re-encodes to */
	struct eq_gzx_region r2[2] = {x.r[0], x.r[1]};
	r2[0].clen--;
	eq_buf_reset(&out);
	eq_gzx_stream_init(&st, r2, 2, mem_write, &out);
	assert_int_equal(eq_gzx_stream_write(&st, x.data, x.len, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "re-encodes to more than"));

	/* bad tables */
	assert_int_equal(eq_gzx_regions_check(r2, 2, x.len, tar.len, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "do not add up"));
	r2[0] = x.r[1];
	r2[1] = x.r[0];
	assert_int_equal(eq_gzx_regions_check(r2, 2, x.len, tar.len, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "region 1"));
	r2[0] = x.r[0];
	r2[0].xlen = x.len;
	assert_int_equal(eq_gzx_regions_check(r2, 1, x.len, tar.len, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "outside"));

	eq_gzx_done(&x);
	eq_free(g1);
	eq_free(g2);
	eq_buf_done(&out);
	eq_buf_done(&tar);
	eq_buf_done(&text);
}

/* A pair whose changelog.gz gained an entry, as in a security update. */
static void make_gz_pair(struct pair *p)
{
	struct eq_buf t1, t2;
	eq_buf_init(&t1, 1u << 24);
	eq_buf_init(&t2, 1u << 24);
	changelog(&t1, 1, 400);
	changelog(&t2, 1, 401);
	size_t n1, n2;
	uint8_t *g1 = zgzip(t1.data, t1.len, 9, 15, 8, Z_DEFAULT_STRATEGY, &n1);
	uint8_t *g2 = zgzip(t2.data, t2.len, 9, 15, 8, Z_DEFAULT_STRATEGY, &n2);
	eq_buf_init(&p->old_, 64u << 20);
	eq_buf_init(&p->new_, 64u << 20);
	tar_add(&p->old_, "usr/share/doc/pkg/README", t1.data, 2000);
	tar_add(&p->old_, "usr/share/doc/pkg/changelog.Debian.gz", g1, n1);
	tar_end(&p->old_);
	tar_add(&p->new_, "usr/share/doc/pkg/README", t1.data, 2000);
	tar_add(&p->new_, "usr/share/doc/pkg/changelog.Debian.gz", g2, n2);
	tar_end(&p->new_);
	eq_free(g1);
	eq_free(g2);
	eq_buf_done(&t1);
	eq_buf_done(&t2);
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void test_delta_deflate(void **state)
{
	(void)state;
	struct pair p;
	make_gz_pair(&p);
	struct eq_delta_params params;
	eq_delta_params_default(&params);
	struct eq_buf delta, plain, out;
	struct eq_error e;
	eq_buf_init(&out, 64u << 20);
	for (unsigned m = 0; m < 2; m++) {
		if (m == EQ_DELTA_METHOD_BSD && !have_bsd())
			continue;
		params.methods = 1u << m;
		params.deflate = true;
		create_delta(&p, &params, &delta);
		params.deflate = false;
		create_delta(&p, &params, &plain);
		struct eq_delta_info info;
		assert_int_equal(eq_delta_info_parse(delta.data, delta.len, &info, &e), EQ_OK);
		assert_true(info.filter & EQ_DELTA_FILTER_DEFLATE);
		assert_int_equal(info.method, m);
		eq_log(EQ_LOG_DEBUG, "method %u: deflate-aware %zu bytes, plain %zu", m, delta.len, plain.len);
		assert_true(delta.len * 4 < plain.len);
		uint8_t want[32];
		eq_sha256(p.new_.data, p.new_.len, want);
		assert_int_equal(apply(tmp_path("old"), delta.data, delta.len, &out, want, NULL, &e), EQ_OK);
		assert_int_equal(out.len, p.new_.len);
		assert_memory_equal(out.data, p.new_.data, out.len);

		/* a damaged preamble or table, each refused with its reason */
		uint8_t *d = eq_malloc(delta.len);
		assert_non_null(d);
		const size_t pre = EQ_DELTA_HEADER_SIZE;
		/* one region: its table is 3 varints */
		const uint64_t tlen = delta.data[pre + 52] | (uint64_t)delta.data[pre + 53] << 8;
		assert_int_equal(delta.data[pre + 48], 1);
		assert_true(tlen >= 3 && tlen < EQ_GZX_ENTRY_MAX);
		struct {
			size_t off;
			uint64_t v;
			size_t len;
			eq_err want;
			const char *msg;
		} bad[] = {
			{pre + 16, 0x55, 0, EQ_ERR_VERIFY, "differ from the"},
			{pre + 48, EQ_GZX_REGIONS_MAX + 1u, 0, EQ_ERR_LIMIT, "gzip regions, the limit"},
			{pre, (uint64_t)1 << 40, 0, EQ_ERR_LIMIT, "expanded delta reference"},
			{pre + 48, 1 | (uint64_t)31 << 32, 0, EQ_ERR_PARSE, "too long for 1 entries"},
			{pre + 48, 1 | (tlen + 1) << 32, 0, EQ_ERR_PARSE, "bytes after its 1 entries"},
			{pre + 48, 1 | (uint64_t)1 << 32, 0, EQ_ERR_PARSE, "entry 0 is truncated"},
			{0, 0, pre + 58, EQ_ERR_PARSE, "truncated in its gzip region table"},
			{0, 0, pre + 20, EQ_ERR_PARSE, "truncated in its gzip preamble"},
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			memcpy(d, delta.data, delta.len);
			size_t len = bad[i].len ? bad[i].len : delta.len;
			if (!bad[i].len)
				put_le64(d + bad[i].off, bad[i].v);
			eq_error_clear(&e);
			eq_err r = apply(tmp_path("old"), d, len, &out, want, NULL, &e);
			if (r != bad[i].want || !strstr(e.msg, bad[i].msg))
				fail_msg("method %u case %zu: got %s '%s', expected '%s'", m, i, eq_err_str(r), e.msg,
					 bad[i].msg);
		}
		/* a table that decodes but does not fit the payload */
		struct eq_gzx_region g[1];
		uint8_t t[2 * EQ_GZX_ENTRY_MAX];
		assert_int_equal(eq_gzx_table_decode(delta.data + pre + 56, tlen, g, 1, &e), EQ_OK);
		for (int k = 0; k < 2; k++) {
			struct eq_gzx_region h = g[0];
			if (k == 0)
				h.clen++;
			else
				h.xlen = (uint64_t)1 << 40;
			size_t tl = eq_gzx_table_encode(&h, 1, t);
			struct eq_buf d2;
			eq_buf_init(&d2, 64u << 20);
			assert_int_equal(eq_buf_append(&d2, delta.data, pre + 56, &e), EQ_OK);
			put_le64(d2.data + pre + 48, 1 | (uint64_t)tl << 32);
			assert_int_equal(eq_buf_append(&d2, t, tl, &e), EQ_OK);
			assert_int_equal(
				eq_buf_append(&d2, delta.data + pre + 56 + tlen, delta.len - pre - 56 - tlen, &e),
				EQ_OK);
			assert_int_equal(apply(tmp_path("old"), d2.data, d2.len, &out, want, NULL, &e), EQ_ERR_PARSE);
			assert_non_null(strstr(e.msg, k == 0 ? "do not add up" : "outside"));
			eq_buf_done(&d2);
		}
		/* Damage anywhere after the header is caught, or changes bits
		 * that do not matter (a zstd frame's window size): the result
		 * is then still the exact payload. */
		unsigned caught = 0;
		for (size_t i = 0; i < 200; i++) {
			memcpy(d, delta.data, delta.len);
			size_t at = pre + rnd() % (delta.len - pre);
			d[at] ^= (uint8_t)(1 + rnd() % 255);
			if (apply(tmp_path("old"), d, delta.len, &out, want, NULL, &e) != EQ_OK)
				caught++;
			else
				assert_memory_equal(out.data, p.new_.data, p.new_.len);
		}
		assert_true(caught > 190);
		eq_free(d);
		eq_buf_done(&delta);
		eq_buf_done(&plain);
	}
	/* a limit on the reference covers its expansion */
	params.methods = 1u << EQ_DELTA_METHOD_ZSTD;
	params.deflate = true;
	create_delta(&p, &params, &delta);
	struct eq_delta_limits lim = {.max_ref_size = p.old_.len + 1};
	assert_int_equal(apply(tmp_path("old"), delta.data, delta.len, &out, NULL, &lim, &e), EQ_ERR_LIMIT);
	assert_non_null(strstr(e.msg, "expanded delta reference"));
	eq_buf_done(&delta);
	eq_buf_done(&out);
	pair_done(&p);
}

/* Where no scratch file can be made the reference images are in memory:
 * the same result. */
#ifdef EQ_TEST_HOOKS
static void test_delta_no_scratch(void **state)
{
	(void)state;
	struct pair p;
	make_gz_pair(&p);
	struct eq_delta_params params;
	eq_delta_params_default(&params);
	params.methods = 1u << EQ_DELTA_METHOD_ZSTD;
	struct eq_buf delta, out;
	struct eq_error e;
	create_delta(&p, &params, &delta);
	eq_buf_init(&out, 64u << 20);
	assert_int_equal(setenv("EQ_TEST_NO_SCRATCH", "1", 1), 0);
	eq_err r = apply(tmp_path("old"), delta.data, delta.len, &out, NULL, NULL, &e);
	unsetenv("EQ_TEST_NO_SCRATCH");
	assert_int_equal(r, EQ_OK);
	assert_int_equal(out.len, p.new_.len);
	assert_memory_equal(out.data, p.new_.data, out.len);
	eq_buf_done(&delta);
	eq_buf_done(&out);
	pair_done(&p);
}
#else
EQ_HOOKS_MISSING(test_delta_no_scratch)
#endif

static void test_bad_corpus(void **state)
{
	(void)state;
	const char *data = secure_getenv("EQ_TEST_DATA");
	char dir[1024], path[1400], ref[1100];
	snprintf(dir, sizeof(dir), "%s/bad/delta", data ? data : "tests/data");
	snprintf(ref, sizeof(ref), "%s/reference.tar", dir);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int cases = 0;
	struct dirent *de;
	struct eq_buf out;
	eq_buf_init(&out, 1u << 24);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 7 || strcmp(de->d_name + l - 6, ".delta") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%.*s.expect", dir, (int)(l - 6), de->d_name);
		size_t el;
		char *expect = (char *)read_file(path, &el);
		assert_non_null(expect);
		char *nl = strchr(expect, '\n');
		assert_non_null(nl);
		*nl = '\0';
		char *sub = nl + 1;
		char *nl2 = strchr(sub, '\n');
		if (nl2)
			*nl2 = '\0';
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		size_t n;
		uint8_t *delta = read_file(path, &n);
		assert_non_null(delta);
		struct eq_error e;
		eq_error_clear(&e);
		eq_err r = apply(ref, delta, n, &out, NULL, NULL, &e);
		if (r != err_from_name(expect) || !strstr(e.msg, sub))
			fail_msg("%s: got %s '%s', expected %s '%s'", de->d_name, eq_err_str(r), e.msg, expect, sub);
		cases++;
		eq_free(delta);
		eq_free(expect);
	}
	closedir(d);
	eq_buf_done(&out);
	assert_true(cases >= 8);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object_round_trip),
		cmocka_unit_test(test_object_frames),
		cmocka_unit_test(test_filter_random),
		cmocka_unit_test(test_filter_real_elf),
		cmocka_unit_test_setup_teardown(test_delta_round_trip, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_delta_failures, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_bsd_failures, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_bsd_round_trip, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_bsd_limits, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_bsd_diff_runs, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_delta_threads, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_mem_bound),
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_puff_zlib),
		cmocka_unit_test(test_puff_system_files),
		cmocka_unit_test(test_puff_refuses),
		cmocka_unit_test(test_huff_errors),
		cmocka_unit_test(test_gzx_payload),
		cmocka_unit_test_setup_teardown(test_delta_deflate, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_delta_no_scratch, setup_tmp, teardown_tmp),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
