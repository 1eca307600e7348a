/*
 * Header lines of HTTP responses and the validators file (see
 * http_header.h). Every read is bounded by the length given: curl's header
 * lines are not NUL-terminated, and the fuzz target hands over anything.
 */
#include <assert.h>
#include <string.h>

#include "http_header.h"

static char ascii_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether @s (@len bytes) starts with the lower-case @prefix in any case;
 * then *ret_value points just past it. ASCII only: a locale must not change
 * which header a line is. */
static bool ci_prefix(const char *s, size_t len, const char *prefix, const char **ret_value)
{
	size_t pl = strlen(prefix);
	if (len < pl)
		return false;
	for (size_t i = 0; i < pl; i++)
		if (ascii_lower(s[i]) != prefix[i])
			return false;
	*ret_value = s + pl;
	return true;
}

/* Copies the value [v, end) without surrounding blanks and line end, or ""
 * when it does not fit or holds CR, LF or NUL: a stored validator can never
 * inject a header line, and is never a cut (so different) one. */
static void copy_value(char *dst, size_t dst_len, const char *v, const char *end)
{
	assert(dst_len > 0);
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t n = (size_t)(end - v);
	if (n >= dst_len || memchr(v, '\r', n) || memchr(v, '\n', n) || memchr(v, '\0', n)) {
		dst[0] = '\0';
		return;
	}
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* Decimal digits at *s (at least one), refused when the number does not fit
 * in 64 bits; *s moves past them. Nothing is skipped. */
static bool digits(const char **s, const char *end, uint64_t *ret)
{
	const char *p = *s;
	uint64_t n = 0;
	if (p >= end || *p < '0' || *p > '9')
		return false;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (n > (UINT64_MAX - d) / 10u)
			return false;
		n = n * 10u + d;
	}
	*s = p;
	*ret = n;
	return true;
}

/* Spaces, then digits; what follows the digits is not looked at. */
static bool parse_u64(const char *s, const char *end, uint64_t *ret)
{
	while (s < end && *s == ' ')
		s++;
	return digits(&s, end, ret);
}

static void clear(struct eq_http_header *h)
{
	h->status = 0;
	h->has_length = h->has_range = h->has_range_end = h->has_range_total = false;
	h->length = h->range_start = h->range_end = h->range_total = 0;
	h->etag[0] = h->last_modified[0] = '\0';
}

void eq_http_header_init(struct eq_http_header *h)
{
	clear(h);
}

/* After "bytes ": "START-END/TOTAL", "START-END/" then "*", or "*" then
 * "/TOTAL" (a 416). Each part is kept only when every part before it
 * parsed. */
static void parse_range(struct eq_http_header *h, const char *v, const char *end)
{
	h->has_range = h->has_range_end = h->has_range_total = false;
	h->range_start = h->range_end = h->range_total = 0;
	while (v < end && *v == ' ')
		v++;
	if (digits(&v, end, &h->range_start)) {
		h->has_range = true;
		if (v >= end || *v != '-')
			return;
		v++;
		if (!digits(&v, end, &h->range_end))
			return;
		h->has_range_end = true;
	} else if (v < end && *v == '*') {
		v++;
	} else {
		return;
	}
	if (v < end && *v == '/') {
		v++;
		h->has_range_total = digits(&v, end, &h->range_total);
	}
}

enum eq_http_line eq_http_header_parse(struct eq_http_header *h, const char *line, size_t len)
{
	const char *end = line + len, *v;
	if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
		const char *sp = memchr(line, ' ', len);
		uint64_t st = 0;
		clear(h);
		h->status = sp && parse_u64(sp + 1, end, &st) && st < 1000u ? (long)st : 0;
		return EQ_HTTP_LINE_STATUS;
	}
	if (ci_prefix(line, len, "content-length:", &v)) {
		h->has_length = parse_u64(v, end, &h->length);
		if (!h->has_length)
			h->length = 0;
		return EQ_HTTP_LINE_LENGTH;
	}
	if (ci_prefix(line, len, "content-range:", &v)) {
		while (v < end && *v == ' ')
			v++;
		if (!ci_prefix(v, (size_t)(end - v), "bytes ", &v))
			return EQ_HTTP_LINE_OTHER;
		parse_range(h, v, end);
		return EQ_HTTP_LINE_RANGE;
	}
	if (ci_prefix(line, len, "etag:", &v)) {
		copy_value(h->etag, sizeof(h->etag), v, end);
		return EQ_HTTP_LINE_ETAG;
	}
	if (ci_prefix(line, len, "last-modified:", &v)) {
		copy_value(h->last_modified, sizeof(h->last_modified), v, end);
		return EQ_HTTP_LINE_LAST_MODIFIED;
	}
	if ((len == 2 && line[0] == '\r' && line[1] == '\n') || (len == 1 && line[0] == '\n'))
		return EQ_HTTP_LINE_END;
	return EQ_HTTP_LINE_OTHER;
}

bool eq_http_header_body_fits(const struct eq_http_header *h, uint64_t have, uint64_t cap)
{
	if ((h->status != 200 && h->status != 206) || !h->has_length)
		return true;
	uint64_t start = h->status == 206 ? have : 0;
	return start <= cap && h->length <= cap - start;
}

void eq_http_validators_parse(const char *data, size_t len, size_t cap, char *ret_etag, char *ret_last_modified)
{
	assert(cap > 0);
	ret_etag[0] = ret_last_modified[0] = '\0';
	const char *s = data, *end = data + len, *v;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end;
		if (ci_prefix(s, (size_t)(le - s), "etag ", &v))
			copy_value(ret_etag, cap, v, le);
		else if (ci_prefix(s, (size_t)(le - s), "last-modified ", &v))
			copy_value(ret_last_modified, cap, v, le);
		s = nl ? nl + 1 : end;
	}
}
