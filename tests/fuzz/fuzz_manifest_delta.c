/*
 * Fuzz target for the device's manifest-delta glue
 * (agent/manifest_unpack.c): the agent rebuilds the manifest the timestamp
 * names from a delta against its cached manifest, or from the compressed
 * manifest, and a server or anything between can send any bytes as either.
 * Invariant: a result is accepted only when it hashes to the expected
 * SHA-256 and fits the expected size (and, when the expectation is the
 * hash of bytes the input gives, equals them); a refused one leaves the
 * outputs untouched and nothing allocated. Built for libFuzzer with
 * EQ_LIBFUZZER, else with the replay main.
 *
 * Input: FLAGS (bit 0: compressed manifest, not a delta; bit 1: the
 * expected hash is 32 literal bytes, not the hash of TARGET; bit 2: no
 * cached manifest), MAX (4 bytes little-endian, % 1 MiB), REFLEN (4 bytes,
 * % 1 MiB) and the cached manifest, then 32 bytes of hash or TLEN (4 bytes)
 * and TARGET, then the body (the rest).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/common.h>

#include "../../agent/manifest_unpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP (1u << 20)

struct in {
	const uint8_t *p;
	size_t n;
};

static uint32_t take_u32(struct in *in)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < 4 && in->n; i++, in->p++, in->n--)
		v |= (uint32_t)in->p[0] << (8 * i);
	return v;
}

static const uint8_t *take(struct in *in, size_t *len)
{
	if (*len > in->n)
		*len = in->n;
	const uint8_t *p = in->p;
	in->p += *len;
	in->n -= *len;
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct in in = {data + 1, size - 1};
	uint8_t flags = data[0];
	size_t max = take_u32(&in) % CAP;
	size_t rl = take_u32(&in) % CAP;
	const uint8_t *ref = take(&in, &rl);
	uint8_t want[EQ_SHA256_LEN];
	const uint8_t *target = NULL;
	size_t tl = 0;
	if (flags & 2) {
		size_t wl = sizeof(want);
		const uint8_t *w = take(&in, &wl);
		memset(want, 0, sizeof(want));
		memcpy(want, w, wl);
	} else {
		tl = take_u32(&in) % CAP;
		target = take(&in, &tl);
		eq_sha256(target, tl, want);
	}
	char path[] = "/tmp/eq-fuzz-mdelta.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		abort();
	if (write(fd, ref, rl) != (ssize_t)rl || close(fd) != 0)
		abort();
	if (flags & 4)
		unlink(path);

	uint8_t sentinel;
	uint8_t *out = &sentinel;
	size_t out_len = 12345;
	struct eq_error e;
	eq_err r = eq_manifest_unpack(flags & 1 ? EQ_MPACK_ZST : EQ_MPACK_DELTA, path, in.p, in.n, max, want, &out,
				      &out_len, &e);
	unlink(path);
	if (r != EQ_OK) {
		if (out != &sentinel || out_len != 12345) {
			fprintf(stderr, "fuzz_manifest_delta: refused (%s) but wrote the outputs\n", e.msg);
			abort();
		}
		return 0;
	}
	uint8_t h[EQ_SHA256_LEN];
	eq_sha256(out, out_len, h);
	if (memcmp(h, want, sizeof(h)) != 0 || out_len > max ||
	    (target && (out_len != tl || memcmp(out, target, tl)))) {
		fprintf(stderr, "fuzz_manifest_delta: accepted %zu bytes that are not the expected manifest\n",
			out_len);
		abort();
	}
	eq_free(out);
	return 0;
}
