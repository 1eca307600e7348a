#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <mbedtls/sha256.h>

#include "eq/common.h"

_Static_assert(sizeof(mbedtls_sha256_context) <= sizeof(((struct eq_sha256 *)0)->opaque),
	       "struct eq_sha256 too small for mbedtls_sha256_context");

static mbedtls_sha256_context *ctx(struct eq_sha256 *s)
{
	return (mbedtls_sha256_context *)(void *)s->opaque;
}

void eq_sha256_init(struct eq_sha256 *s)
{
	mbedtls_sha256_init(ctx(s));
	/* Only fails for a hardware accelerator, which Debian's build has not. */
	(void)mbedtls_sha256_starts_ret(ctx(s), 0);
}

void eq_sha256_update(struct eq_sha256 *s, const void *data, size_t len)
{
	(void)mbedtls_sha256_update_ret(ctx(s), data, len);
}

void eq_sha256_final(struct eq_sha256 *s, uint8_t out[EQ_SHA256_LEN])
{
	(void)mbedtls_sha256_finish_ret(ctx(s), out);
	mbedtls_sha256_free(ctx(s));
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
