/*
 * Fuzz target for the report collector's input check (eq_fleet_collect,
 * gen/gen_fleet.c), the function eqota-report.cgi calls on every
 * POST body, whoever sent it.
 *
 * Input: byte 0 picks the identity the web server verified (bit 0 clear:
 * none; set: the bytes up to the first '\n' after byte 0, as a certificate
 * CN would arrive, and the body after it); the rest is the POST body.
 *
 * Beyond "no crash": what the collector accepts is one line of at most
 * 4096 bytes that eq_fleet_read() reads back as exactly one report, counted
 * under the identity when there is one and not counted without one: a
 * sender cannot store a line that is not a report, nor one that carries an
 * identity the server did not verify.
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/gen_fleet.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 8192)
		return 0;
	char ident[256];
	const char *identity = NULL;
	const char *body = (const char *)data + 1;
	size_t len = size - 1;
	if (data[0] & 1) {
		const char *nl = memchr(body, '\n', len);
		size_t il = nl ? (size_t)(nl - body) : 0;
		if (!nl || il >= sizeof(ident) || memchr(body, '\0', il))
			return 0;
		memcpy(ident, body, il);
		ident[il] = '\0';
		identity = ident;
		body = nl + 1;
		len -= il + 1;
	}
	char *line = NULL;
	struct eq_error e;
	eq_err r = eq_fleet_collect(body, len, identity, &line, &e);
	if (r != EQ_OK) {
		check(r == EQ_ERR_PARSE || r == EQ_ERR_VERIFY || r == EQ_ERR_LIMIT || r == EQ_ERR_NOMEM);
		check(e.msg[0] != '\0');
		return 0;
	}
	if (identity)
		check(eq_fleet_identity_ok(identity, strlen(identity)));
	size_t n = strlen(line);
	check(n > 0 && n <= 4096 && !strchr(line, '\n') && !strchr(line, '\r'));

	char path[] = "/tmp/eq-fuzz-collect-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		eq_free(line);
		return 0;
	}
	bool ok = write(fd, line, n) == (ssize_t)n && write(fd, "\n", 1) == 1;
	close(fd);
	eq_free(line);
	struct eq_fleet *f = NULL;
	const char *files[] = {path};
	if (ok) {
		eq_err rr = eq_fleet_read(files, 1, NULL, &f, &e);
		check(rr == EQ_OK || rr == EQ_ERR_NOMEM);
		if (rr == EQ_OK) {
			check(f->lines == 1 && f->reports == 1 && f->bad == 0);
			if (identity)
				check(f->unauthenticated == 0 && f->devices == 1);
			else
				check(f->unauthenticated == 1 && f->devices == 0);
			eq_fleet_free(f);
		}
	}
	unlink(path);
	return 0;
}
