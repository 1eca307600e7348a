/*
 * Fuzz targets for eq_delta: the first input byte picks the target.
 *   even: apply the rest as a delta against a fixed small reference payload;
 *   odd:  round trip: the rest split into old and new payloads, delta
 *         created (fast level) and applied; the result must equal new, and
 *         the executable filter must invert exactly on both. Bit 1 of the
 *         selector forces method 1 (bsdiff-class) where it is built in,
 *         else the delta is the smaller of both methods.
 * Built for libFuzzer with EQ_LIBFUZZER, else with a replay main that runs
 * every file named on the command line (directories are walked one level).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/delta.h>

#include "../../delta/exec_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mem_src {
	const uint8_t *data;
	size_t len, pos;
};

static eq_err mem_read(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	(void)err;
	struct mem_src *s = ctx;
	size_t n = s->len - s->pos;
	if (n > len)
		n = len;
	memcpy(buf, s->data + s->pos, n);
	s->pos += n;
	*ret_n = n;
	return EQ_OK;
}

static eq_err mem_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	return eq_buf_append(ctx, data, len, err);
}

static char dir[64];

/* Leaves nothing behind on a normal exit (a crash keeps the files). */
static void remove_dir(void)
{
	struct eq_error e;
	eq_err r = eq_rm_rf(dir, &e);
	(void)r;
}

static const char *tmp(const char *name)
{
	static char p[3][128];
	static int k;
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/eq-fuzz-delta-%ld", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
			 (long)getpid());
		if (mkdir(dir, 0700) != 0)
			abort();
		atexit(remove_dir);
	}
	k = (k + 1) % 3;
	snprintf(p[k], sizeof(p[k]), "%s/%s", dir, name);
	return p[k];
}

static void put(const char *path, const uint8_t *d, size_t n)
{
	struct eq_error e;
	if (eq_file_replace_atomic(path, d, n, 0600, &e) != EQ_OK)
		abort();
}

static void apply_target(const uint8_t *data, size_t size)
{
	static bool ref_ready;
	static const char ref_text[] = "eqota fuzz reference payload\n";
	if (!ref_ready) {
		put(tmp("ref"), (const uint8_t *)ref_text, sizeof(ref_text) - 1);
		ref_ready = true;
	}
	struct mem_src s = {data, size, 0};
	struct eq_buf out;
	eq_buf_init(&out, 1u << 22);
	struct eq_delta_limits lim = {.max_window_log = 24, .max_result_size = 1u << 22};
	struct eq_error e;
	struct eq_delta_info info;
	eq_err r = eq_delta_apply_limited(tmp("ref"), mem_read, &s, mem_write, &out, NULL, &lim, &e);
	if (r == EQ_OK && (eq_delta_info_parse(data, size, &info, &e) != EQ_OK || out.len != info.result_size))
		abort();
	if (out.len > (1u << 22))
		abort();
	eq_buf_done(&out);
}

static void filter_check(const uint8_t *d, size_t n)
{
	uint8_t *f = malloc(n ? n : 1);
	if (!f)
		abort();
	memcpy(f, d, n);
	eq_xf_buffer(f, n, true, EQ_XF_BRANCH | EQ_XF_DATA, NULL);
	eq_xf_buffer(f, n, false, EQ_XF_BRANCH | EQ_XF_DATA, NULL);
	if (n && memcmp(f, d, n) != 0)
		abort();
	free(f);
}

static void round_trip_target(uint8_t sel, const uint8_t *data, size_t size)
{
	size_t split = size ? data[0] * size / 256 : 0;
	const uint8_t *old = data, *new_ = data + split;
	size_t old_len = split, new_len = size - split;
	filter_check(old, old_len);
	filter_check(new_, new_len);
	put(tmp("old"), old, old_len);
	put(tmp("new"), new_, new_len);
	struct eq_delta_params p;
	eq_delta_params_default(&p);
	p.level = 1;
	if (sel & 2)
		p.methods = 1u << EQ_DELTA_METHOD_BSD;
	struct eq_buf delta, out;
	eq_buf_init(&delta, 1u << 24);
	eq_buf_init(&out, 1u << 24);
	struct eq_error e;
	uint64_t dsize;
	eq_err r = eq_delta_create(tmp("old"), tmp("new"), &p, mem_write, &delta, &dsize, &e);
	if (r == EQ_ERR_UNSUPPORTED && p.methods) /* a build without method-1 creation */
		goto out;
	if (r != EQ_OK)
		abort();
	struct eq_delta_info info;
	if (eq_delta_info_parse(delta.data, delta.len, &info, &e) != EQ_OK ||
	    (p.methods && info.method != EQ_DELTA_METHOD_BSD))
		abort();
	struct mem_src s = {delta.data, delta.len, 0};
	uint8_t want[EQ_SHA256_LEN];
	eq_sha256(new_, new_len, want);
	if (eq_delta_apply(tmp("old"), mem_read, &s, mem_write, &out, want, &e) != EQ_OK)
		abort();
	if (out.len != new_len || (new_len && memcmp(out.data, new_, new_len) != 0))
		abort();
out:
	eq_buf_done(&delta);
	eq_buf_done(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > (1u << 20))
		return 0;
	if (data[0] & 1)
		round_trip_target(data[0], data + 1, size - 1);
	else
		apply_target(data + 1, size - 1);
	return 0;
}

#ifndef EQ_LIBFUZZER
/* Corpus files under bad/ are raw deltas: prefix the apply selector. */
void eq_fuzz_replay_file(const char *path, const uint8_t *data, size_t size);
void eq_fuzz_replay_file(const char *path, const uint8_t *data, size_t size)
{
	bool raw = strstr(path, ".delta") != NULL;
	uint8_t *in = malloc(size + 1);
	if (!in)
		return;
	in[0] = 0;
	memcpy(in + (raw ? 1 : 0), data, size);
	(void)LLVMFuzzerTestOneInput(in, raw ? size + 1 : size);
	free(in);
}
#endif
