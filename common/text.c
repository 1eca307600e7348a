#include <assert.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "eq/common.h"

static bool parse(const char *s, size_t len, uint64_t max, bool zeros, uint64_t *ret)
{
	if (len == 0 || (!zeros && len > 1 && s[0] == '0'))
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (d > max || v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*ret = v;
	return true;
}

bool eq_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *ret)
{
	return parse(s, len, max, false, ret);
}

bool eq_parse_u64_padded(const char *s, size_t len, uint64_t max, uint64_t *ret)
{
	return parse(s, len, max, true, ret);
}

const char *eq_quote_n(char *out, size_t size, const char *s, size_t len)
{
	assert(size >= 4);
	size_t room = size - 4, i = 0;
	for (; i < len && i < room; i++) {
		unsigned char c = (unsigned char)s[i];
		out[i] = c >= 0x20 && c < 0x7f && c != '\'' ? (char)c : '?';
	}
	if (i < len) {
		memcpy(out + i, "...", 3);
		i += 3;
	}
	out[i] = '\0';
	return out;
}

const char *eq_quote(char *out, size_t size, const char *s)
{
	if (!s)
		s = "";
	/* strnlen: past the room only "is there more" matters. */
	return eq_quote_n(out, size, s, strnlen(s, size - 3));
}

const char *eq_format_size(uint64_t v, enum eq_size_round round, char out[EQ_SIZE_STR_MAX])
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	unsigned u = 0;
	uint64_t div = 1;
	while (u < 4 && v / div >= 1024) {
		div *= 1024;
		u++;
	}
	if (u == 0) {
		snprintf(out, EQ_SIZE_STR_MAX, "%" PRIu64 " B", v);
		return out;
	}
	/* Tenths in integers: a double cannot hold every uint64_t. */
	uint64_t whole = v / div, r = v % div;
	uint64_t tenth = r * 10 / div, rest = r * 10 % div;
	if ((round == EQ_SIZE_UP && rest) || (round == EQ_SIZE_NEAREST && rest * 2 >= div))
		tenth++;
	if (tenth == 10) {
		whole++;
		tenth = 0;
	}
	snprintf(out, EQ_SIZE_STR_MAX, "%" PRIu64 ".%" PRIu64 " %s", whole, tenth, unit[u]);
	return out;
}
