/*
 * HTTP response headers as the fetcher reads them (private to eq_agent).
 * Pure functions, no libcurl: agent/fetch.c feeds each header line curl
 * hands its CURLOPT_HEADERFUNCTION to eq_http_header_parse(), and reads its
 * saved validators file with eq_http_validators_parse(); the unit test
 * (tests/unit/test_http_header.c) and the fuzz target
 * (tests/fuzz/fuzz_http_header.c) call the same functions.
 *
 * Every input is untrusted bytes with a length: not NUL-terminated, maybe
 * without CR/LF, maybe with NULs. A number that is malformed or does not fit
 * in 64 bits is refused (its field reads as absent), a value that does not
 * fit its buffer or holds CR, LF or NUL is dropped whole: a cut validator
 * would be another validator.
 */
#ifndef EQ_AGENT_HTTP_HEADER_H
#define EQ_AGENT_HTTP_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for an ETag or Last-Modified value, NUL included: a value of
 * EQ_HTTP_VALUE_MAX - 1 bytes is kept, a longer one is dropped. */
#define EQ_HTTP_VALUE_MAX 1024u

/*
 * What the header lines of the current response said. Caller-owned, no
 * pointers inside (nothing to free). A status line ("HTTP/...") starts a
 * new response and clears every field, so after a redirect chain only the
 * last response's fields remain. Fields the response did not send (or sent
 * malformed) are false / 0 / "".
 */
struct eq_http_header {
	/* status code of the last status line: 0..999, 0 when the code is
	 * missing, not a number or 1000 and over */
	long status;
	/* Content-Length: leading spaces, then decimal digits; what follows
	 * the digits is ignored */
	bool has_length;
	uint64_t length;
	/* Content-Range: "bytes START-END/TOTAL". has_range once START parses
	 * (the one field the fetcher checks); range_end once "-END" follows it,
	 * range_total once "/TOTAL" follows END, or follows "bytes *" (the
	 * form of a 416). The numbers are as sent, not checked against each
	 * other. A Content-Range in another unit is ignored. */
	bool has_range, has_range_end, has_range_total;
	uint64_t range_start, range_end, range_total;
	/* ETag and Last-Modified values without surrounding blanks and line
	 * end; "" when absent or dropped (see the top of this file) */
	char etag[EQ_HTTP_VALUE_MAX];
	char last_modified[EQ_HTTP_VALUE_MAX];
};

/* What one line was, as eq_http_header_parse() saw it. */
enum eq_http_line {
	EQ_HTTP_LINE_OTHER,         /* another field, or no header line: ignored */
	EQ_HTTP_LINE_STATUS,        /* "HTTP/..." (case matters): every field cleared */
	EQ_HTTP_LINE_LENGTH,        /* Content-Length */
	EQ_HTTP_LINE_RANGE,         /* Content-Range in bytes */
	EQ_HTTP_LINE_ETAG,          /* ETag */
	EQ_HTTP_LINE_LAST_MODIFIED, /* Last-Modified */
	EQ_HTTP_LINE_END,           /* "\r\n" or "\n": the end of a header block */
};

/* Clears @h (no response seen yet). Cannot fail. */
void eq_http_header_init(struct eq_http_header *h);

/*
 * Reads one header line of @len bytes at @line (its CR/LF, if any,
 * included) into @h and says what it was. Field names are matched without
 * regard to case and must be followed directly by ':'. A field that comes
 * twice: the last one counts, even when it is malformed (so a refused
 * Content-Length after a good one leaves none). Never reads outside
 * @line[0..@len).
 */
enum eq_http_line eq_http_header_parse(struct eq_http_header *h, const char *line, size_t len);

/*
 * Whether the body @h announces fits under @cap bytes, checked at the end
 * of a header block before a byte of the body arrives. Only a 200 or 206
 * with a Content-Length can fail: a 200 body starts the file over, a 206
 * body comes after the @have bytes already stored. No arithmetic wraps, so
 * lengths near 2^64 are refused, not let through.
 */
bool eq_http_header_body_fits(const struct eq_http_header *h, uint64_t have, uint64_t cap);

/*
 * Reads the fetcher's validators file (@len bytes at @data, as
 * eq_fetch_manifest_commit() writes it: "etag VALUE\n" and
 * "last-modified VALUE\n" lines, keywords in any case) into @ret_etag and
 * @ret_last_modified, caller's buffers of @cap (>= 1) bytes each, always
 * written; a missing, oversize or damaged value leaves "" (a damaged file
 * only costs a full download). Other lines are ignored; the last line of a
 * kind counts.
 */
void eq_http_validators_parse(const char *data, size_t len, size_t cap, char *ret_etag, char *ret_last_modified);

#endif
