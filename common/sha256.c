#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "eq/common.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define EQ_SHA_NI 1
#endif
#if defined(__aarch64__) && defined(__GNUC__) && !defined(__clang__)
#include <arm_neon.h>
#include <sys/auxv.h>
#define EQ_SHA_ARM 1
#endif

/*
 * SHA-256 (FIPS 180-4) of our own rather than mbedTLS's: the publisher
 * hashes every payload it reads and the device every file it installs, and
 * on x86-64 processors with the SHA extensions (Intel since Goldmont and
 * Ice Lake, AMD since Zen) and on arm64 ones with the ARMv8 cryptography
 * extension (most Cortex-A53/A72 SoCs: i.MX8, RK3399, ...; not the
 * Raspberry Pi 4's) the instructions are several times faster than any C.
 * The portable compression below runs everywhere else; the choice is made
 * per context from CPUID or the kernel's hardware capabilities, and the
 * unit tests compare both.
 */
typedef void (*sha_blocks_fn)(uint32_t h[8], const uint8_t *p, size_t n);

struct sha_ctx {
	uint32_t h[8];
	uint64_t total; /* bytes */
	sha_blocks_fn blocks;
	size_t blen;
	uint8_t buf[64];
};
_Static_assert(sizeof(struct sha_ctx) <= sizeof(((struct eq_sha256 *)0)->opaque), "struct eq_sha256 too small");

static struct sha_ctx *ctx(struct eq_sha256 *s)
{
	return (struct sha_ctx *)(void *)s->opaque;
}

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One round with the eight working variables named in place rather than
 * shifted through an array: the portable code is what devices without the
 * instructions (and emulated boards) run on every byte they install. */
#define SHA_ROUND(a, b, c, d, e, f, g, h, k, w)                                                                        \
	do {                                                                                                           \
		uint32_t t1_ = (h) + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + (((e) & (f)) ^ (~(e) & (g))) + (k) + (w); \
		(d) += t1_;                                                                                            \
		(h) = t1_ + (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + (((a) & (b)) ^ ((a) & (c)) ^ ((b) & (c)));         \
	} while (0)

static void blocks_c(uint32_t h[8], const uint8_t *p, size_t n)
{
	for (; n--; p += 64) {
		uint32_t w[16];
		for (int j = 0; j < 16; j++)
			w[j] = be32(p + 4 * j);
		uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
		for (int i = 0; i < 64; i += 8) {
			/* The schedule in a ring of 16: w[t] from w[t-16], w[t-15],
			 * w[t-7] and w[t-2]. */
			for (int j = i; i >= 16 && j < i + 8; j++) {
				uint32_t x15 = w[(j - 15) & 15], x2 = w[(j - 2) & 15];
				w[j & 15] += (ror(x15, 7) ^ ror(x15, 18) ^ (x15 >> 3)) + w[(j - 7) & 15] +
					     (ror(x2, 17) ^ ror(x2, 19) ^ (x2 >> 10));
			}
			SHA_ROUND(a, b, c, d, e, f, g, hh, K[i + 0], w[(i + 0) & 15]);
			SHA_ROUND(hh, a, b, c, d, e, f, g, K[i + 1], w[(i + 1) & 15]);
			SHA_ROUND(g, hh, a, b, c, d, e, f, K[i + 2], w[(i + 2) & 15]);
			SHA_ROUND(f, g, hh, a, b, c, d, e, K[i + 3], w[(i + 3) & 15]);
			SHA_ROUND(e, f, g, hh, a, b, c, d, K[i + 4], w[(i + 4) & 15]);
			SHA_ROUND(d, e, f, g, hh, a, b, c, K[i + 5], w[(i + 5) & 15]);
			SHA_ROUND(c, d, e, f, g, hh, a, b, K[i + 6], w[(i + 6) & 15]);
			SHA_ROUND(b, c, d, e, f, g, hh, a, K[i + 7], w[(i + 7) & 15]);
		}
		h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
	}
}
#undef SHA_ROUND

#ifdef EQ_SHA_NI
/* Four rounds per step: the schedule vector of rounds 4i..4i+3 plus their
 * constants, two SHA256RNDS2 each; the state lives as ABEF and CDGH. */
__attribute__((target("sha,sse4.1,ssse3"))) static void blocks_shani(uint32_t h[8], const uint8_t *p, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&h[0]), 0xb1); /* CDAB */
	__m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&h[4]), 0x1b);  /* EFGH */
	__m128i s0 = _mm_alignr_epi8(tmp, s1, 8);                                                     /* ABEF */
	s1 = _mm_blend_epi16(s1, tmp, 0xf0);                                                          /* CDGH */
	for (; n--; p += 64) {
		__m128i save0 = s0, save1 = s1, w[4];
		for (int i = 0; i < 4; i++)
			w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i)), bswap);
		for (int i = 0; i < 16; i++) {
			__m128i m = _mm_add_epi32(w[i & 3], _mm_loadu_si128((const __m128i *)(const void *)&K[4 * i]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, m);
			s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0e));
			if (i < 12) {
				/* w[i+4] from w[i] .. w[i+3]: sigma0, the w[j-7] words, sigma1 */
				__m128i t = _mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]);
				t = _mm_add_epi32(t, _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4));
				w[i & 3] = _mm_sha256msg2_epu32(t, w[(i + 3) & 3]);
			}
		}
		s0 = _mm_add_epi32(s0, save0);
		s1 = _mm_add_epi32(s1, save1);
	}
	tmp = _mm_shuffle_epi32(s0, 0x1b);                                          /* FEBA */
	s1 = _mm_shuffle_epi32(s1, 0xb1);                                           /* DCHG */
	_mm_storeu_si128((__m128i *)(void *)&h[0], _mm_blend_epi16(tmp, s1, 0xf0)); /* DCBA */
	_mm_storeu_si128((__m128i *)(void *)&h[4], _mm_alignr_epi8(s1, tmp, 8));    /* HGFE */
}

static bool cpu_has_sha(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3))
		return false;
	if (__get_cpuid_max(0, NULL) < 7)
		return false;
	__cpuid_count(7, 0, a, b, c, d);
	return (b & bit_SHA) != 0;
}
#endif

#ifdef EQ_SHA_ARM
/* Four rounds per step as on x86-64, the state as ABCD and EFGH: SHA256H
 * and SHA256H2 each advance one half, SHA256SU0/SU1 extend the schedule. */
__attribute__((target("+crypto"))) static void blocks_armce(uint32_t h[8], const uint8_t *p, size_t n)
{
	uint32x4_t abcd = vld1q_u32(&h[0]), efgh = vld1q_u32(&h[4]);
	for (; n--; p += 64) {
		uint32x4_t save0 = abcd, save1 = efgh, w[4];
		for (int i = 0; i < 4; i++)
			w[i] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16 * i)));
		for (int i = 0; i < 16; i++) {
			uint32x4_t m = vaddq_u32(w[i & 3], vld1q_u32(&K[4 * i]));
			uint32x4_t a = abcd;
			abcd = vsha256hq_u32(abcd, efgh, m);
			efgh = vsha256h2q_u32(efgh, a, m);
			if (i < 12)
				w[i & 3] = vsha256su1q_u32(vsha256su0q_u32(w[i & 3], w[(i + 1) & 3]), w[(i + 2) & 3],
							   w[(i + 3) & 3]);
		}
		abcd = vaddq_u32(abcd, save0);
		efgh = vaddq_u32(efgh, save1);
	}
	vst1q_u32(&h[0], abcd);
	vst1q_u32(&h[4], efgh);
}
#endif

static sha_blocks_fn pick_blocks(void)
{
#ifdef EQ_TEST_HOOKS
	/* Test hook: the portable code on a machine with the instructions. */
	if (secure_getenv("EQ_TEST_SHA256_PORTABLE"))
		return blocks_c;
#endif
#ifdef EQ_SHA_NI
	/* Atomic: publish hashes on several threads, and every one of them
	 * may be the first to ask. */
	static atomic_int has = -1;
	int h = atomic_load_explicit(&has, memory_order_relaxed);
	if (h < 0) {
		h = cpu_has_sha();
		atomic_store_explicit(&has, h, memory_order_relaxed);
	}
	if (h)
		return blocks_shani;
#endif
#ifdef EQ_SHA_ARM
	/* getauxval() reads the auxiliary vector, no system call. */
	if (getauxval(AT_HWCAP) & HWCAP_SHA2)
		return blocks_armce;
#endif
	return blocks_c;
}

const char *eq_sha256_impl(void)
{
	sha_blocks_fn f = pick_blocks();
#ifdef EQ_SHA_ARM
	if (f == blocks_armce)
		return "ARMv8 cryptography extension";
#endif
	return f == blocks_c ? "portable" : "x86-64 SHA extensions";
}

void eq_sha256_init(struct eq_sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	struct sha_ctx *c = ctx(s);
	memcpy(c->h, iv, sizeof(iv));
	c->total = 0;
	c->blen = 0;
	c->blocks = pick_blocks();
}

void eq_sha256_update(struct eq_sha256 *s, const void *data, size_t len)
{
	struct sha_ctx *c = ctx(s);
	const uint8_t *p = data;
	c->total += len;
	if (c->blen) {
		size_t take = 64 - c->blen < len ? 64 - c->blen : len;
		memcpy(c->buf + c->blen, p, take);
		c->blen += take;
		p += take;
		len -= take;
		if (c->blen < 64)
			return;
		c->blocks(c->h, c->buf, 1);
		c->blen = 0;
	}
	if (len >= 64) {
		c->blocks(c->h, p, len / 64);
		p += len & ~(size_t)63;
		len &= 63;
	}
	if (len) {
		memcpy(c->buf, p, len);
		c->blen = len;
	}
}

void eq_sha256_final(struct eq_sha256 *s, uint8_t out[EQ_SHA256_LEN])
{
	struct sha_ctx *c = ctx(s);
	uint64_t bits = c->total * 8;
	uint8_t pad[72] = {0x80};
	size_t padlen = (c->blen < 56 ? 56 : 120) - c->blen;
	for (int i = 0; i < 8; i++)
		pad[padlen + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
	eq_sha256_update(s, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(c->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)c->h[i];
	}
	memset(c, 0, sizeof(*c));
}

void eq_sha256(const void *data, size_t len, uint8_t out[EQ_SHA256_LEN])
{
	struct eq_sha256 s;
	eq_sha256_init(&s);
	eq_sha256_update(&s, data, len);
	eq_sha256_final(&s, out);
}

eq_err eq_sha256_file(const char *path, uint8_t out[EQ_SHA256_LEN], uint64_t *ret_size, struct eq_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot open '%s'", path);
	struct eq_sha256 s;
	eq_sha256_init(&s);
	uint8_t buf[65536];
	uint64_t total = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			eq_err r = eq_error_errno(err, EQ_ERR_IO, "cannot read '%s'", path);
			close(fd);
			eq_sha256_final(&s, buf);
			return r;
		}
		if (n == 0)
			break;
		eq_sha256_update(&s, buf, (size_t)n);
		total += (uint64_t)n;
	}
	close(fd);
	eq_sha256_final(&s, out);
	if (ret_size)
		*ret_size = total;
	return EQ_OK;
}

void eq_hex_encode(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

int eq_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool eq_hex_decode(const char *hex, uint8_t *out, size_t len)
{
	if (strlen(hex) != 2 * len)
		return false;
	for (size_t i = 0; i < len; i++) {
		int hi = eq_hex_digit(hex[2 * i]), lo = eq_hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

bool eq_is_sha256_hex(const char *s)
{
	size_t i;
	for (i = 0; s[i]; i++) {
		if (i >= EQ_SHA256_HEX_LEN)
			return false;
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return i == EQ_SHA256_HEX_LEN;
}
