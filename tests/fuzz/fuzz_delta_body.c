/*
 * Fuzz target for the delta decoders themselves (both methods, with the
 * executable filter), past the header: a mutated delta almost never keeps
 * its header checksum or names the right reference, so fuzz_delta's apply
 * side mostly stops in eq_delta_info_parse(). Here the harness writes the
 * header itself, for a fixed reference it keeps in a temporary file, and
 * the fuzzer's bytes reach the zstd / bsdiff-class body decoders.
 *
 * Input layout:
 *   [0]     bit 0: method (0 zstd, 1 bsdiff-class); bits 1-2: filter mask;
 *           bit 3: deflate-aware (the body starts with the gzip preamble,
 *           whose expanded reference size and hash the harness fills in,
 *           so the region table and the re-encoder are reached)
 *   [1]     window log, EQ_ZSTD_WINDOW_LOG_MIN + [1] % 9 (10..18: the
 *           reference is 8 KiB, a larger window only costs time)
 *   [2..5]  declared result size, little-endian, modulo RESULT_MAX + 1
 *   [6..]   the body, as after the 96-byte header
 * The replay main also takes whole deltas (*.delta, e.g.
 * tests/data/bad/delta) and turns their header fields into this layout.
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/delta.h>

#include "../../delta/delta_zstd.h"
#include "../../delta/exec_filter.h"
#include "../../delta/gz_puff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PREFIX 6u
#define RESULT_MAX (1u << 22)
#define REF_SIZE 8192u

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

static eq_err count_sink(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	(void)data;
	(void)err;
	*(uint64_t *)ctx += len;
	return EQ_OK;
}

static char ref_path[64];
static uint8_t ref_sha[EQ_SHA256_LEN];
/* The reference has no gzip file, so its expansion is the filtered
 * reference: one hash per filter mode. */
static uint8_t xref_sha[4][EQ_SHA256_LEN];

/* Text and bytes that look like x86-64 calls, so that copies and the
 * filter both have something to match; the same on every run. */
static void make_reference(void)
{
	static uint8_t ref[REF_SIZE];
	uint32_t x = 12345;
	for (size_t i = 0; i < REF_SIZE; i++) {
		x = x * 1103515245u + 12345u;
		ref[i] = (i / 512) % 2 ? (uint8_t) "eqota reference payload\n"[i % 24] : (uint8_t)(x >> 16);
		if (i % 64 == 0)
			ref[i] = 0xe8;
	}
	snprintf(ref_path, sizeof(ref_path), "%s/eq-fuzz-delta-body-%ld.ref",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (long)getpid());
	struct eq_error e;
	if (eq_file_replace_atomic(ref_path, ref, sizeof(ref), 0600, &e) != EQ_OK)
		abort();
	eq_sha256(ref, sizeof(ref), ref_sha);
	for (unsigned m = 0; m < 4; m++) {
		static uint8_t f[REF_SIZE];
		memcpy(f, ref, sizeof(f));
		eq_xf_buffer(f, sizeof(f), true, m, NULL);
		eq_sha256(f, sizeof(f), xref_sha[m]);
	}
}

static void remove_reference(void)
{
	if (ref_path[0])
		unlink(ref_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < PREFIX || size > (1u << 20))
		return 0;
	if (!ref_path[0]) {
		make_reference();
		atexit(remove_reference);
	}
	struct eq_delta_info info = {
		.version = 1,
		.method = data[0] & 1u,
		.filter = (data[0] >> 1) & (EQ_DELTA_FILTER_BRANCH | EQ_DELTA_FILTER_DATA),
		.window_log = EQ_ZSTD_WINDOW_LOG_MIN + data[1] % 9u,
		.ref_size = REF_SIZE,
		.result_size = ((uint32_t)data[2] | (uint32_t)data[3] << 8 | (uint32_t)data[4] << 16 |
				(uint32_t)data[5] << 24) %
			       (RESULT_MAX + 1u),
	};
	memcpy(info.ref_sha256, ref_sha, EQ_SHA256_LEN);
	size_t body = size - PREFIX;
	uint8_t *delta = malloc(EQ_DELTA_HEADER_SIZE + body);
	if (!delta)
		abort();
	eq_delta_header_write(delta, &info);
	memcpy(delta + EQ_DELTA_HEADER_SIZE, data + PREFIX, body);
	if ((data[0] & 8u) && body >= EQ_GZX_PREAMBLE_SIZE) {
		info.filter |= EQ_DELTA_FILTER_DEFLATE;
		eq_delta_header_write(delta, &info);
		uint8_t *pre = delta + EQ_DELTA_HEADER_SIZE;
		for (int i = 0; i < 8; i++)
			pre[i] = (uint8_t)((uint64_t)REF_SIZE >> (8 * i));
		memcpy(pre + 16, xref_sha[info.filter & 3u], EQ_SHA256_LEN);
	}
	struct eq_delta_info back;
	struct eq_error e;
	/* The header we wrote must parse, or the decoders are not reached. */
	if (eq_delta_info_parse(delta, EQ_DELTA_HEADER_SIZE, &back, &e) != EQ_OK)
		abort();
	struct mem_src s = {delta, EQ_DELTA_HEADER_SIZE + body, 0};
	struct eq_delta_limits lim = {.max_window_log = 18, .max_ref_size = REF_SIZE, .max_result_size = RESULT_MAX};
	uint64_t out = 0;
	eq_err r = eq_delta_apply_limited(ref_path, mem_read, &s, count_sink, &out, NULL, &lim, &e);
	/* Success means exactly the declared size came out, never more. */
	if ((r == EQ_OK && out != info.result_size) || out > info.result_size)
		abort();
	free(delta);
	return 0;
}

#ifndef EQ_LIBFUZZER
/* A whole delta (*.delta): its method, filter, window and size fields
 * become the prefix, its body follows. */
void eq_fuzz_replay_file(const char *path, const uint8_t *data, size_t size);
void eq_fuzz_replay_file(const char *path, const uint8_t *data, size_t size)
{
	size_t n = strlen(path);
	if (n < 6 || strcmp(path + n - 6, ".delta") != 0 || size < EQ_DELTA_HEADER_SIZE) {
		(void)LLVMFuzzerTestOneInput(data, size);
		return;
	}
	size_t body = size - EQ_DELTA_HEADER_SIZE;
	uint8_t *in = malloc(PREFIX + body);
	if (!in)
		abort();
	in[0] = (uint8_t)((data[7] & 1u) | (data[5] & 7u) << 1);
	in[1] = (uint8_t)(data[6] >= EQ_ZSTD_WINDOW_LOG_MIN ? (data[6] - EQ_ZSTD_WINDOW_LOG_MIN) % 9 : 0);
	memcpy(in + 2, data + 48, 4);
	memcpy(in + PREFIX, data + EQ_DELTA_HEADER_SIZE, body);
	(void)LLVMFuzzerTestOneInput(in, PREFIX + body);
	free(in);
}
#endif
