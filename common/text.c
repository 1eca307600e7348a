#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
