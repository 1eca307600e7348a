/*
 * Fuzz target for the fetcher's header parsing (agent/http_header.c): the
 * input is a server's response headers, split at '\n' into the lines curl
 * would hand the header callback (each with its '\n', the last maybe
 * without), fed in order; then the whole input is read as a validators
 * file. Each line is copied into a buffer of exactly its length, so a read
 * past it is an ASan report and not a silent read of the next line.
 *
 * Beyond "no crash", it checks what the fetcher relies on: the fields stay
 * consistent, a kept ETag or Last-Modified holds no CR, LF or NUL and fits,
 * it reads back the same through the validators file as
 * eq_fetch_manifest_commit() writes it, a kept Content-Length prints and
 * parses back the same, and eq_http_header_body_fits() agrees with exact
 * 128-bit arithmetic.
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/fetch.h"
#include "../../agent/http_header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_value(const char *v)
{
	size_t n = strnlen(v, EQ_HTTP_VALUE_MAX);
	if (n >= EQ_HTTP_VALUE_MAX || memchr(v, '\r', n) || memchr(v, '\n', n))
		abort();
	if (n && (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t'))
		abort();
}

static void check_fields(const struct eq_http_header *h)
{
	if (h->status < 0 || h->status > 999)
		abort();
	if ((!h->has_length && h->length) || (!h->has_range && h->range_start) || (!h->has_range_end && h->range_end) ||
	    (!h->has_range_total && h->range_total) || (h->has_range_end && !h->has_range))
		abort();
	check_value(h->etag);
	check_value(h->last_modified);
}

/* The validators file as eq_fetch_manifest_commit() writes it must read
 * back to the values it was written from. */
static void check_validators_round_trip(const char *etag, const char *lastmod)
{
	static char file[2 * EQ_HTTP_VALUE_MAX + 64];
	char e[EQ_HTTP_VALUE_MAX], l[EQ_HTTP_VALUE_MAX];
	int n = snprintf(file, sizeof(file), "%s%s%s%s%s%s", etag[0] ? "etag " : "", etag, etag[0] ? "\n" : "",
			 lastmod[0] ? "last-modified " : "", lastmod, lastmod[0] ? "\n" : "");
	if (n < 0 || (size_t)n >= sizeof(file))
		abort();
	eq_http_validators_parse(file, (size_t)n, sizeof(e), e, l);
	if (strcmp(e, etag) != 0 || strcmp(l, lastmod) != 0)
		abort();
}

static void check_body_fits(const struct eq_http_header *h)
{
	const uint64_t haves[] = {0, 1, h->length, UINT64_MAX};
	const uint64_t caps[] = {0, h->length, h->length - 1, h->length + 1, UINT64_MAX};
	for (size_t i = 0; i < sizeof(haves) / sizeof(haves[0]); i++)
		for (size_t j = 0; j < sizeof(caps) / sizeof(caps[0]); j++) {
			bool checked = (h->status == 200 || h->status == 206) && h->has_length;
			unsigned __int128 start = h->status == 206 ? haves[i] : 0;
			bool want = !checked || start + h->length <= caps[j];
			if (eq_http_header_body_fits(h, haves[i], caps[j]) != want)
				abort();
		}
}

static void check_line(const struct eq_http_header *h, enum eq_http_line kind, const char *line, size_t len)
{
	check_fields(h);
	switch (kind) {
	case EQ_HTTP_LINE_STATUS:
		if (len < 5 || memcmp(line, "HTTP/", 5) != 0 || h->has_length || h->has_range || h->has_range_total ||
		    h->etag[0] || h->last_modified[0])
			abort();
		break;
	case EQ_HTTP_LINE_END:
		if (!(len == 1 && line[0] == '\n') && !(len == 2 && line[0] == '\r' && line[1] == '\n'))
			abort();
		check_body_fits(h);
		break;
	case EQ_HTTP_LINE_LENGTH:
		if (h->has_length) {
			char again[64];
			struct eq_http_header b;
			eq_http_header_init(&b);
			int n = snprintf(again, sizeof(again), "Content-Length: %" PRIu64 "\r\n", h->length);
			if (eq_http_header_parse(&b, again, (size_t)n) != EQ_HTTP_LINE_LENGTH || !b.has_length ||
			    b.length != h->length)
				abort();
		}
		break;
	case EQ_HTTP_LINE_ETAG:
	case EQ_HTTP_LINE_LAST_MODIFIED: check_validators_round_trip(h->etag, h->last_modified); break;
	case EQ_HTTP_LINE_RANGE:
	case EQ_HTTP_LINE_OTHER: break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1u << 20))
		return 0;
	const char *s = (const char *)data, *end = s + size;
	struct eq_http_header h;
	eq_http_header_init(&h);
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t len = (size_t)((nl ? nl + 1 : end) - s);
		char *line = malloc(len);
		if (!line)
			abort();
		memcpy(line, s, len);
		enum eq_http_line kind = eq_http_header_parse(&h, line, len);
		check_line(&h, kind, line, len);
		free(line);
		s += len;
	}
	char etag[EQ_HTTP_VALUE_MAX], lastmod[EQ_HTTP_VALUE_MAX];
	eq_http_validators_parse((const char *)data, size, sizeof(etag), etag, lastmod);
	check_value(etag);
	check_value(lastmod);
	check_validators_round_trip(etag, lastmod);
	return 0;
}
