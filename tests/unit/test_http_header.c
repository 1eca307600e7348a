/*
 * Unit tests for the fetcher's header parsing (agent/http_header.c): the
 * response header lines curl hands agent/fetch.c, one at a time and not
 * NUL-terminated, and the validators file. Every line is copied into a
 * buffer of exactly its length, so ASan sees a read past it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/fetch.h"
#include "../../agent/http_header.h"

/* Parses @len bytes of @s from a heap copy of exactly that size. */
static enum eq_http_line feed(struct eq_http_header *h, const char *s, size_t len)
{
	char *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	memcpy(copy, s, len);
	enum eq_http_line k = eq_http_header_parse(h, copy, len);
	free(copy);
	return k;
}

/* A string literal, NULs inside included. */
#define LINE(h, lit) feed((h), (lit), sizeof(lit) - 1)

static void validators(const char *s, size_t len, char *etag, char *lastmod, size_t cap)
{
	char *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	memcpy(copy, s, len);
	eq_http_validators_parse(copy, len, cap, etag, lastmod);
	free(copy);
}

#define VALIDATORS(lit, etag, lastmod) validators((lit), sizeof(lit) - 1, (etag), (lastmod), EQ_HTTP_VALUE_MAX)

static void test_normal(void **state)
{
	(void)state;
	struct eq_http_header h;
	eq_http_header_init(&h);
	assert_int_equal(h.status, 0);
	assert_int_equal(LINE(&h, "HTTP/1.1 200 OK\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(LINE(&h, "Date: Fri, 04 Dec 2026 20:00:00 GMT\r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "Content-Length: 1234\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_int_equal(LINE(&h, "ETag: \"5f3a-2b\"\r\n"), EQ_HTTP_LINE_ETAG);
	assert_int_equal(LINE(&h, "Last-Modified: Thu, 03 Dec 2026 10:00:00 GMT\r\n"), EQ_HTTP_LINE_LAST_MODIFIED);
	assert_int_equal(LINE(&h, "\r\n"), EQ_HTTP_LINE_END);
	assert_int_equal(h.status, 200);
	assert_true(h.has_length);
	assert_int_equal(h.length, 1234);
	assert_false(h.has_range);
	assert_string_equal(h.etag, "\"5f3a-2b\"");
	assert_string_equal(h.last_modified, "Thu, 03 Dec 2026 10:00:00 GMT");
	/* blanks around values go, blanks inside stay */
	assert_int_equal(LINE(&h, "ETag: \t W/\"a b\" \t\r\n"), EQ_HTTP_LINE_ETAG);
	assert_string_equal(h.etag, "W/\"a b\"");
	assert_int_equal(LINE(&h, "Content-Length:   77  \r\n"), EQ_HTTP_LINE_LENGTH);
	assert_int_equal(h.length, 77);
	/* HTTP/2 and a bare code */
	assert_int_equal(LINE(&h, "HTTP/2 206\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(h.status, 206);
	assert_int_equal(LINE(&h, "HTTP/1.0  404 Not Found\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(h.status, 404);
}

static void test_case_insensitive(void **state)
{
	(void)state;
	struct eq_http_header h;
	eq_http_header_init(&h);
	assert_int_equal(LINE(&h, "HTTP/1.1 200 OK\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(LINE(&h, "CONTENT-LENGTH: 5\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_int_equal(h.length, 5);
	assert_int_equal(LINE(&h, "content-length: 6\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_int_equal(h.length, 6);
	assert_int_equal(LINE(&h, "eTaG: \"x\"\r\n"), EQ_HTTP_LINE_ETAG);
	assert_string_equal(h.etag, "\"x\"");
	assert_int_equal(LINE(&h, "LAST-modified: yesterday\r\n"), EQ_HTTP_LINE_LAST_MODIFIED);
	assert_string_equal(h.last_modified, "yesterday");
	assert_int_equal(LINE(&h, "CONTENT-RANGE: BYTES 3-4/5\r\n"), EQ_HTTP_LINE_RANGE);
	assert_true(h.has_range);
	assert_int_equal(h.range_start, 3);
	/* the protocol name of a status line is case-sensitive, as curl's */
	assert_int_equal(LINE(&h, "http/1.1 500 Oops\r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(h.status, 200);
}

static void test_missing_colon(void **state)
{
	(void)state;
	struct eq_http_header h;
	eq_http_header_init(&h);
	assert_int_equal(LINE(&h, "HTTP/1.1 200 OK\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(LINE(&h, "Content-Length: 10\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_int_equal(LINE(&h, "ETag: \"a\"\r\n"), EQ_HTTP_LINE_ETAG);
	/* no colon, or a blank before it: another header, nothing changes */
	assert_int_equal(LINE(&h, "Content-Length 99\r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "Content-Length : 99\r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "ETag \"b\"\r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "Content-Lengthy: 99\r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "Content-Range bytes 0-1/2\r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "ETag\r\n"), EQ_HTTP_LINE_OTHER);
	assert_true(h.has_length);
	assert_int_equal(h.length, 10);
	assert_false(h.has_range);
	assert_string_equal(h.etag, "\"a\"");
	/* a name and a colon with no value */
	assert_int_equal(LINE(&h, "ETag:\r\n"), EQ_HTTP_LINE_ETAG);
	assert_string_equal(h.etag, "");
	assert_int_equal(LINE(&h, "Content-Length:\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_false(h.has_length);
}

/* A NUL in a value: curl refuses such a header today, but the parser must
 * not depend on it. A cut ETag ("\"a") would be sent back as another
 * validator, so the value is dropped whole (the old copy_value() kept the
 * part before the NUL). */
static void test_nul_bytes(void **state)
{
	(void)state;
	struct eq_http_header h;
	eq_http_header_init(&h);
	assert_int_equal(LINE(&h, "HTTP/1.1 200 OK\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(LINE(&h, "ETag: \"a\0b\"\r\n"), EQ_HTTP_LINE_ETAG);
	assert_string_equal(h.etag, "");
	assert_int_equal(LINE(&h, "Last-Modified: Thu\0, 03 Dec\r\n"), EQ_HTTP_LINE_LAST_MODIFIED);
	assert_string_equal(h.last_modified, "");
	assert_int_equal(LINE(&h, "ETag: \"ok\"\0\r\n"), EQ_HTTP_LINE_ETAG);
	assert_string_equal(h.etag, "");
	/* a NUL in a name: no known name */
	assert_int_equal(LINE(&h, "Content\0Length: 5\r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "\0TTP/1.1 500\r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(h.status, 200);
	/* digits end at the NUL, as at any other non-digit */
	assert_int_equal(LINE(&h, "Content-Length: 12\0 34\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_true(h.has_length);
	assert_int_equal(h.length, 12);
	assert_int_equal(LINE(&h, "Content-Length: \0 12\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_false(h.has_length);
	assert_int_equal(LINE(&h, "\0"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "\0\n"), EQ_HTTP_LINE_OTHER);
}

static void test_length_numbers(void **state)
{
	(void)state;
	struct eq_http_header h;
	eq_http_header_init(&h);
	assert_int_equal(LINE(&h, "HTTP/1.1 200 OK\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(LINE(&h, "Content-Length: 10\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_true(h.has_length);
	/* 30 digits: refused, and the earlier good one is gone too (the
	 * last Content-Length counts) */
	assert_int_equal(LINE(&h, "Content-Length: 123456789012345678901234567890\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_false(h.has_length);
	assert_int_equal(h.length, 0);
	/* the 64-bit edge, exactly */
	assert_int_equal(LINE(&h, "Content-Length: 18446744073709551615\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_true(h.has_length);
	assert_true(h.length == UINT64_MAX);
	assert_int_equal(LINE(&h, "Content-Length: 18446744073709551616\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_false(h.has_length);
	assert_int_equal(LINE(&h, "Content-Length: 00000000000000000000000000000042\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_true(h.has_length);
	assert_int_equal(h.length, 42);
	/* negative, signed, not a number */
	static const char *const bad[] = {
		"Content-Length: -1\r\n",  "Content-Length: +5\r\n", "Content-Length: abc\r\n",
		"Content-Length: \t5\r\n", "Content-Length:   \r\n", "Content-Length:\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(LINE(&h, "Content-Length: 7\r\n"), EQ_HTTP_LINE_LENGTH);
		assert_int_equal(feed(&h, bad[i], strlen(bad[i])), EQ_HTTP_LINE_LENGTH);
		if (h.has_length)
			fail_msg("'%s' gave a length of %llu", bad[i], (unsigned long long)h.length);
	}
	/* what follows the digits is not looked at, as before */
	assert_int_equal(LINE(&h, "Content-Length: 0x10\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_true(h.has_length);
	assert_int_equal(h.length, 0);
	assert_int_equal(LINE(&h, "Content-Length: 12, 12\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_int_equal(h.length, 12);
}

static void test_status_numbers(void **state)
{
	(void)state;
	struct eq_http_header h;
	eq_http_header_init(&h);
	static const struct {
		const char *line;
		long status;
	} cases[] = {
		{"HTTP/1.1 200 OK\r\n", 200},
		{"HTTP/1.1 999\r\n", 999},
		{"HTTP/1.1 1000 Big\r\n", 0},
		{"HTTP/1.1\r\n", 0},
		{"HTTP/1.1 \r\n", 0},
		{"HTTP/1.1 abc\r\n", 0},
		{"HTTP/1.1 -200\r\n", 0},
		{"HTTP/", 0},
		{"HTTP/1.1 99999999999999999999999\r\n", 0},
		{"HTTP/1.1 18446744073709551615\r\n", 0},
		{"HTTP/1.1 304", 304},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(LINE(&h, "HTTP/1.1 301 Moved\r\n"), EQ_HTTP_LINE_STATUS);
		assert_int_equal(feed(&h, cases[i].line, strlen(cases[i].line)), EQ_HTTP_LINE_STATUS);
		if (h.status != cases[i].status)
			fail_msg("'%s': status %ld, want %ld", cases[i].line, h.status, cases[i].status);
	}
	/* too short for "HTTP/" */
	assert_int_equal(LINE(&h, "HTTP"), EQ_HTTP_LINE_OTHER);
}

/* Content-Range: only START decides anything in the fetcher (a resumed
 * download must continue where the .part ends). */
static void test_content_range_start(void **state)
{
	(void)state;
	struct eq_http_header h;
	eq_http_header_init(&h);
	assert_int_equal(LINE(&h, "HTTP/1.1 206 Partial Content\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(LINE(&h, "Content-Range: bytes 0-9/10\r\n"), EQ_HTTP_LINE_RANGE);
	assert_true(h.has_range);
	assert_int_equal(h.range_start, 0);
	assert_int_equal(LINE(&h, "Content-Range:   bytes   4096-8191/8192\r\n"), EQ_HTTP_LINE_RANGE);
	assert_true(h.has_range);
	assert_int_equal(h.range_start, 4096);
	/* the unsatisfied form: no start */
	assert_int_equal(LINE(&h, "Content-Range: bytes */10\r\n"), EQ_HTTP_LINE_RANGE);
	assert_false(h.has_range);
	static const char *const bad[] = {
		"Content-Range: bytes \r\n",      "Content-Range: bytes x-9/10\r\n",
		"Content-Range: bytes -5/10\r\n", "Content-Range: bytes 123456789012345678901234567890-1/2\r\n",
		"Content-Range: bytes ",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(LINE(&h, "Content-Range: bytes 1-1/2\r\n"), EQ_HTTP_LINE_RANGE);
		assert_int_equal(feed(&h, bad[i], strlen(bad[i])), EQ_HTTP_LINE_RANGE);
		if (h.has_range)
			fail_msg("'%s' gave a range from %llu", bad[i], (unsigned long long)h.range_start);
	}
	/* another unit is ignored, and so is a missing "bytes " */
	assert_int_equal(LINE(&h, "Content-Range: bytes 5-9/10\r\n"), EQ_HTTP_LINE_RANGE);
	assert_int_equal(LINE(&h, "Content-Range: items 0-1/2\r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "Content-Range: 0-1/2\r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "Content-Range: bytes"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "Content-Range: bytes\t0-1/2\r\n"), EQ_HTTP_LINE_OTHER);
	assert_true(h.has_range);
	assert_int_equal(h.range_start, 5);
	/* a start alone is a start */
	assert_int_equal(LINE(&h, "Content-Range: bytes 7\r\n"), EQ_HTTP_LINE_RANGE);
	assert_true(h.has_range);
	assert_int_equal(h.range_start, 7);
}

/* END and TOTAL, kept as sent when every part before them parsed. */
static void test_content_range_end_total(void **state)
{
	(void)state;
	struct eq_http_header h;
	eq_http_header_init(&h);
	assert_int_equal(LINE(&h, "HTTP/1.1 206 Partial Content\r\n"), EQ_HTTP_LINE_STATUS);
	static const struct {
		const char *line;
		bool start, end, total;
		uint64_t s, e, t;
	} cases[] = {
		{"Content-Range: bytes 0-9/10\r\n", true, true, true, 0, 9, 10},
		{"Content-Range: bytes 100-199/*\r\n", true, true, false, 100, 199, 0},
		{"Content-Range: bytes */10\r\n", false, false, true, 0, 0, 10},
		{"Content-Range: bytes */*\r\n", false, false, false, 0, 0, 0},
		{"Content-Range: bytes 0-9\r\n", true, true, false, 0, 9, 0},
		{"Content-Range: bytes 0-/10\r\n", true, false, false, 0, 0, 0},
		{"Content-Range: bytes 0 - 9/10\r\n", true, false, false, 0, 0, 0},
		{"Content-Range: bytes 0-9/abc\r\n", true, true, false, 0, 9, 0},
		{"Content-Range: bytes 0-99999999999999999999/10\r\n", true, false, false, 0, 0, 0},
		{"Content-Range: bytes 0-9/99999999999999999999\r\n", true, true, false, 0, 9, 0},
		{"Content-Range: bytes 9-0/5", true, true, true, 9, 0, 5},
		{"Content-Range: bytes 18446744073709551615-18446744073709551615/18446744073709551615", true, true,
		 true, UINT64_MAX, UINT64_MAX, UINT64_MAX},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(LINE(&h, "Content-Range: bytes 1-2/3\r\n"), EQ_HTTP_LINE_RANGE);
		assert_int_equal(feed(&h, cases[i].line, strlen(cases[i].line)), EQ_HTTP_LINE_RANGE);
		if (h.has_range != cases[i].start || h.has_range_end != cases[i].end ||
		    h.has_range_total != cases[i].total || h.range_start != cases[i].s || h.range_end != cases[i].e ||
		    h.range_total != cases[i].t)
			fail_msg("'%s': got %d %d %d %llu %llu %llu", cases[i].line, h.has_range, h.has_range_end,
				 h.has_range_total, (unsigned long long)h.range_start, (unsigned long long)h.range_end,
				 (unsigned long long)h.range_total);
	}
}

static void test_value_too_long(void **state)
{
	(void)state;
	struct eq_http_header h;
	char line[EQ_HTTP_VALUE_MAX + 64];
	eq_http_header_init(&h);
	assert_int_equal(LINE(&h, "HTTP/1.1 200 OK\r\n"), EQ_HTTP_LINE_STATUS);
	/* EQ_HTTP_VALUE_MAX - 1 bytes fit */
	int n = snprintf(line, sizeof(line), "ETag: %0*d\r\n", (int)EQ_HTTP_VALUE_MAX - 1, 7);
	assert_int_equal(feed(&h, line, (size_t)n), EQ_HTTP_LINE_ETAG);
	assert_int_equal(strlen(h.etag), EQ_HTTP_VALUE_MAX - 1);
	/* one more: dropped whole, and the earlier value with it */
	n = snprintf(line, sizeof(line), "ETag: %0*d\r\n", (int)EQ_HTTP_VALUE_MAX, 7);
	assert_int_equal(feed(&h, line, (size_t)n), EQ_HTTP_LINE_ETAG);
	assert_string_equal(h.etag, "");
	n = snprintf(line, sizeof(line), "Last-Modified: %0*d\r\n", (int)EQ_HTTP_VALUE_MAX, 7);
	assert_int_equal(feed(&h, line, (size_t)n), EQ_HTTP_LINE_LAST_MODIFIED);
	assert_string_equal(h.last_modified, "");
	/* far longer: still dropped, never cut */
	size_t big = 1u << 20;
	char *huge = malloc(big);
	assert_non_null(huge);
	memcpy(huge, "ETag: ", 6);
	memset(huge + 6, 'e', big - 6);
	assert_int_equal(feed(&h, huge, big), EQ_HTTP_LINE_ETAG);
	assert_string_equal(h.etag, "");
	free(huge);
	/* blanks do not count against the room */
	n = snprintf(line, sizeof(line), "ETag:      %0*d      \r\n", (int)EQ_HTTP_VALUE_MAX - 1, 7);
	assert_int_equal(feed(&h, line, (size_t)n), EQ_HTTP_LINE_ETAG);
	assert_int_equal(strlen(h.etag), EQ_HTTP_VALUE_MAX - 1);
	/* CR or LF inside a value could inject a header line when sent back */
	assert_int_equal(LINE(&h, "ETag: \"a\rX-Evil: 1\"\r\n"), EQ_HTTP_LINE_ETAG);
	assert_string_equal(h.etag, "");
	assert_int_equal(LINE(&h, "Last-Modified: a\nb\r\n"), EQ_HTTP_LINE_LAST_MODIFIED);
	assert_string_equal(h.last_modified, "");
}

/* A redirect chain: each status line starts a response afresh, so nothing
 * of the 301 leaks into the 200 (its ETag would become the manifest's). */
static void test_status_resets(void **state)
{
	(void)state;
	struct eq_http_header h;
	eq_http_header_init(&h);
	static const char *const first[] = {
		"HTTP/1.1 301 Moved Permanently\r\n",
		"Location: /elsewhere\r\n",
		"Content-Length: 999\r\n",
		"Content-Range: bytes 5-9/10\r\n",
		"ETag: \"redirect\"\r\n",
		"Last-Modified: Mon, 01 Jan 2024 00:00:00 GMT\r\n",
		"\r\n",
	};
	for (size_t i = 0; i < sizeof(first) / sizeof(first[0]); i++)
		(void)feed(&h, first[i], strlen(first[i]));
	assert_int_equal(h.status, 301);
	assert_true(h.has_length && h.has_range && h.has_range_end && h.has_range_total);
	assert_string_equal(h.etag, "\"redirect\"");
	assert_int_equal(LINE(&h, "HTTP/1.1 200 OK\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(h.status, 200);
	assert_false(h.has_length);
	assert_false(h.has_range);
	assert_false(h.has_range_end);
	assert_false(h.has_range_total);
	assert_true(h.length == 0 && h.range_start == 0 && h.range_end == 0 && h.range_total == 0);
	assert_string_equal(h.etag, "");
	assert_string_equal(h.last_modified, "");
	/* a malformed status line resets too */
	assert_int_equal(LINE(&h, "ETag: \"b\"\r\n"), EQ_HTTP_LINE_ETAG);
	assert_int_equal(LINE(&h, "HTTP/garbage\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(h.status, 0);
	assert_string_equal(h.etag, "");
	/* 100 Continue, then the answer */
	assert_int_equal(LINE(&h, "HTTP/1.1 100 Continue\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(LINE(&h, "\r\n"), EQ_HTTP_LINE_END);
	assert_int_equal(h.status, 100);
	assert_int_equal(LINE(&h, "HTTP/1.1 304 Not Modified\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(h.status, 304);
}

static void test_no_crlf(void **state)
{
	(void)state;
	struct eq_http_header h;
	eq_http_header_init(&h);
	assert_int_equal(LINE(&h, "HTTP/1.1 200 OK"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(h.status, 200);
	assert_int_equal(LINE(&h, "Content-Length: 42"), EQ_HTTP_LINE_LENGTH);
	assert_int_equal(h.length, 42);
	assert_int_equal(LINE(&h, "ETag: \"v\""), EQ_HTTP_LINE_ETAG);
	assert_string_equal(h.etag, "\"v\"");
	assert_int_equal(LINE(&h, "Last-Modified: now\n"), EQ_HTTP_LINE_LAST_MODIFIED);
	assert_string_equal(h.last_modified, "now");
	assert_int_equal(LINE(&h, "Content-Range: bytes 1-2/3"), EQ_HTTP_LINE_RANGE);
	assert_true(h.has_range_total);
	assert_int_equal(h.range_total, 3);
	/* names cut short */
	assert_int_equal(LINE(&h, "Content-Length"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "ETag"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "Content-Length:"), EQ_HTTP_LINE_LENGTH);
	assert_false(h.has_length);
	assert_int_equal(LINE(&h, "ETag:"), EQ_HTTP_LINE_ETAG);
	assert_string_equal(h.etag, "");
	/* the end of a block: "\r\n" or "\n" only */
	assert_int_equal(LINE(&h, "\r\n"), EQ_HTTP_LINE_END);
	assert_int_equal(LINE(&h, "\n"), EQ_HTTP_LINE_END);
	assert_int_equal(LINE(&h, "\r"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, "\rX"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, ""), EQ_HTTP_LINE_OTHER);
	assert_int_equal(LINE(&h, " \r\n"), EQ_HTTP_LINE_OTHER);
	assert_int_equal(h.status, 200);
}

static void test_body_fits(void **state)
{
	(void)state;
	struct eq_http_header h;
	eq_http_header_init(&h);
	/* no status, or no length: nothing announced */
	assert_true(eq_http_header_body_fits(&h, 0, 0));
	assert_int_equal(LINE(&h, "HTTP/1.1 200 OK\r\n"), EQ_HTTP_LINE_STATUS);
	assert_true(eq_http_header_body_fits(&h, 0, 0));
	assert_int_equal(LINE(&h, "Content-Length: 100\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_true(eq_http_header_body_fits(&h, 0, 100));
	assert_false(eq_http_header_body_fits(&h, 0, 99));
	/* a 200 starts over: what the .part has does not count */
	assert_true(eq_http_header_body_fits(&h, 90, 100));
	assert_int_equal(LINE(&h, "HTTP/1.1 206 Partial Content\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(LINE(&h, "Content-Length: 100\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_true(eq_http_header_body_fits(&h, 0, 100));
	assert_true(eq_http_header_body_fits(&h, 50, 150));
	assert_false(eq_http_header_body_fits(&h, 51, 150));
	assert_false(eq_http_header_body_fits(&h, 200, 150));
	/* near 2^64 nothing wraps: have + length is 8 modulo 2^64 */
	assert_int_equal(LINE(&h, "Content-Length: 10\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_false(eq_http_header_body_fits(&h, UINT64_MAX - 1, UINT64_MAX));
	assert_int_equal(LINE(&h, "Content-Length: 18446744073709551615\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_false(eq_http_header_body_fits(&h, 1, UINT64_MAX));
	assert_true(eq_http_header_body_fits(&h, 0, UINT64_MAX));
	/* other statuses carry no body that is kept */
	static const char *const other[] = {"HTTP/1.1 304 Not Modified\r\n", "HTTP/1.1 404 Not Found\r\n",
					    "HTTP/1.1 301 Moved\r\n"};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		(void)feed(&h, other[i], strlen(other[i]));
		assert_int_equal(LINE(&h, "Content-Length: 1000000\r\n"), EQ_HTTP_LINE_LENGTH);
		assert_true(eq_http_header_body_fits(&h, 0, 1));
	}
	/* a refused length is no length */
	assert_int_equal(LINE(&h, "HTTP/1.1 200 OK\r\n"), EQ_HTTP_LINE_STATUS);
	assert_int_equal(LINE(&h, "Content-Length: 99999999999999999999999\r\n"), EQ_HTTP_LINE_LENGTH);
	assert_true(eq_http_header_body_fits(&h, 0, 1));
}

static void test_validators(void **state)
{
	(void)state;
	char etag[EQ_HTTP_VALUE_MAX], lm[EQ_HTTP_VALUE_MAX];
	/* as eq_fetch_manifest_commit() writes it */
	VALIDATORS("etag \"5f3a-2b\"\nlast-modified Thu, 03 Dec 2026 10:00:00 GMT\n", etag, lm);
	assert_string_equal(etag, "\"5f3a-2b\"");
	assert_string_equal(lm, "Thu, 03 Dec 2026 10:00:00 GMT");
	VALIDATORS("", etag, lm);
	assert_string_equal(etag, "");
	assert_string_equal(lm, "");
	/* either alone, any case, CRLF, no final newline */
	VALIDATORS("ETAG \"x\"\r\n", etag, lm);
	assert_string_equal(etag, "\"x\"");
	assert_string_equal(lm, "");
	VALIDATORS("Last-Modified   yesterday", etag, lm);
	assert_string_equal(etag, "");
	assert_string_equal(lm, "yesterday");
	/* other lines ignored, the last of a kind counts */
	VALIDATORS("garbage\netag: \"colon\"\netag \"a\"\n\n\netag \"b\"\nlast-modified\n", etag, lm);
	assert_string_equal(etag, "\"b\"");
	assert_string_equal(lm, "");
	/* a NUL or a lone CR inside: dropped, never cut */
	VALIDATORS("etag \"a\0b\"\nlast-modified x\ry\n", etag, lm);
	assert_string_equal(etag, "");
	assert_string_equal(lm, "");
	VALIDATORS("\0etag \"a\"\n", etag, lm);
	assert_string_equal(etag, "");
	/* too long for @cap */
	char small_e[4], small_l[4];
	validators("etag abc\nlast-modified abcd\n", 28, small_e, small_l, sizeof(small_e));
	assert_string_equal(small_e, "abc");
	assert_string_equal(small_l, "");
	/* a value the header parser kept is read back the same */
	struct eq_http_header h;
	eq_http_header_init(&h);
	assert_int_equal(LINE(&h, "ETag:  W/\"v 1\"\t\r\n"), EQ_HTTP_LINE_ETAG);
	char file[EQ_HTTP_VALUE_MAX + 16];
	int n = snprintf(file, sizeof(file), "etag %s\n", h.etag);
	validators(file, (size_t)n, etag, lm, sizeof(etag));
	assert_string_equal(etag, h.etag);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normal),
		cmocka_unit_test(test_case_insensitive),
		cmocka_unit_test(test_missing_colon),
		cmocka_unit_test(test_nul_bytes),
		cmocka_unit_test(test_length_numbers),
		cmocka_unit_test(test_status_numbers),
		cmocka_unit_test(test_content_range_start),
		cmocka_unit_test(test_content_range_end_total),
		cmocka_unit_test(test_value_too_long),
		cmocka_unit_test(test_status_resets),
		cmocka_unit_test(test_no_crlf),
		cmocka_unit_test(test_body_fits),
		cmocka_unit_test(test_validators),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
