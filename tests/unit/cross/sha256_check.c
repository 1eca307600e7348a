/*
 * eq_sha256 on a foreign architecture (tests/unit/cross/sha256-arm64.sh
 * runs it under qemu-user): the accelerated and the portable compression
 * against fixed vectors and each other, on every length to 300 and a few
 * large ones, whole and in uneven pieces. Prints the implementation; exits
 * 1 on the first difference, naming the length.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eq/common.h"

/* sha256.c's file helper reports through this; nothing here calls it. */
eq_err eq_error_errno(struct eq_error *err, eq_err code, const char *fmt, ...)
{
	(void)err;
	(void)fmt;
	return code;
}

static void hex(const uint8_t d[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void pieces(const uint8_t *p, size_t len, uint8_t d[32])
{
	struct eq_sha256 s;
	eq_sha256_init(&s);
	for (size_t off = 0, step = 1; off < len; off += step, step = step * 3 % 1021 + 1)
		eq_sha256_update(&s, p + off, off + step > len ? len - off : step);
	eq_sha256_final(&s, d);
}

int main(int argc, char **argv)
{
	static uint8_t big[1000000];
	static const struct {
		const char *msg, *hex;
	} nist[] = {
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	};
	uint8_t d[32], p[32];
	char h[65];
	const char *impl = eq_sha256_impl();
	printf("sha256: %s\n", impl);
	if (argc > 1 && strcmp(impl, argv[1]) != 0) {
		fprintf(stderr, "expected the implementation '%s'\n", argv[1]);
		return 1;
	}
	for (size_t i = 0; i < sizeof(nist) / sizeof(nist[0]); i++) {
		eq_sha256(nist[i].msg, strlen(nist[i].msg), d);
		hex(d, h);
		if (strcmp(h, nist[i].hex) != 0) {
			fprintf(stderr, "%s: '%s' hashes to %s, FIPS 180-4 says %s\n", impl, nist[i].msg, h,
				nist[i].hex);
			return 1;
		}
	}
	memset(big, 'a', sizeof(big));
	pieces(big, sizeof(big), d);
	hex(d, h);
	if (strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") != 0) {
		fprintf(stderr, "%s: a million 'a' hash to %s\n", impl, h);
		return 1;
	}
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof(big); i++) {
		x = x * 1103515245u + 12345u;
		big[i] = (uint8_t)(x >> 16);
	}
	size_t lens[310], nl = 0;
	for (size_t l = 0; l <= 300; l++)
		lens[nl++] = l;
	lens[nl++] = 4095, lens[nl++] = 4096, lens[nl++] = 65537, lens[nl++] = sizeof(big);
	for (size_t k = 0; k < nl; k++) {
		eq_sha256(big, lens[k], d);
		setenv("EQ_TEST_SHA256_PORTABLE", "1", 1);
		pieces(big, lens[k], p);
		unsetenv("EQ_TEST_SHA256_PORTABLE");
		if (memcmp(d, p, 32) != 0) {
			fprintf(stderr, "%s and the portable code differ at length %zu\n", impl, lens[k]);
			return 1;
		}
	}
	/* The rate, for the log: what a slot's install pays per byte kept. */
	for (int portable = 0; portable < 2; portable++) {
		if (portable)
			setenv("EQ_TEST_SHA256_PORTABLE", "1", 1);
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < 16; i++)
			eq_sha256(big, sizeof(big), d);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		printf("%s: %.1f MB/s\n", eq_sha256_impl(), 16.0 / s);
	}
	return 0;
}
