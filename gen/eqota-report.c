/*
 * eqota-report.cgi: the report collector (docs/fleet.md, "Collecting
 * reports"). A CGI program: the web server runs it once per POST with the
 * request in the environment and the body on stdin. It checks the body
 * with eq_fleet_collect() (the same check `eqota-gen fleet` applies to every
 * line), adds "auth": the name of the TLS client certificate the server
 * verified, and appends the result as one line under an exclusive flock.
 *
 *   EQOTA_REPORTS          the file to append to (default
 *                          /var/lib/eqota-reports/reports.jsonl)
 *   EQOTA_REQUIRE_CLIENT_CERT=1
 *                          refuse (403) a report without a verified client
 *                          certificate instead of storing it without "auth"
 *   SSL_CLIENT_VERIFY, SSL_CLIENT_S_DN_CN
 *                          set by the web server's TLS module (lighttpd
 *                          mod_openssl with ssl.verifyclient.*, Apache
 *                          mod_ssl with SSLOptions +StdEnvVars); a client
 *                          cannot set them: request headers arrive as HTTP_*.
 *
 * The environment is the CGI interface itself, hence getenv of these names
 * (through secure_getenv, which is empty in a setuid run).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <eq/gen_fleet.h>

#define BODY_MAX 4096u

static int reply(const char *status, const char *text)
{
	printf("Status: %s\r\nContent-Type: text/plain\r\n\r\n%s\n", status, text);
	return 0;
}

static const char *env(const char *name)
{
	const char *v = secure_getenv(name);
	return v && *v ? v : NULL;
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

int main(void)
{
	const char *out = env("EQOTA_REPORTS");
	if (!out)
		out = "/var/lib/eqota-reports/reports.jsonl";
	const char *method = env("REQUEST_METHOD");
	if (!method || strcmp(method, "POST") != 0)
		return reply("405 Method Not Allowed", "POST one eqota report");
	const char *cl = env("CONTENT_LENGTH");
	uint64_t cl_len;
	if (!cl || !eq_parse_u64(cl, strlen(cl), 999999, &cl_len))
		return reply("411 Length Required", "a Content-Length is needed");
	size_t len = (size_t)cl_len;
	if (len < 2 || len > BODY_MAX)
		return reply("413 Payload Too Large", "a report is 2 to 4096 bytes");

	/* Who sent it: only a certificate the server verified names a device. */
	const char *identity = NULL;
	const char *verify = env("SSL_CLIENT_VERIFY");
	if (verify && !strcmp(verify, "SUCCESS")) {
		identity = env("SSL_CLIENT_S_DN_CN");
		if (!identity || !eq_fleet_identity_ok(identity, strlen(identity)))
			return reply("403 Forbidden", "the client certificate's CN is not a device identity "
						      "(1 to 128 printable ASCII characters, no quote or backslash)");
	} else if (env("EQOTA_REQUIRE_CLIENT_CERT")) {
		return reply("403 Forbidden", "reports need a verified client certificate");
	}

	char body[BODY_MAX];
	size_t got = 0;
	while (got < len) {
		ssize_t r = read(STDIN_FILENO, body + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got != len)
		return reply("400 Bad Request", "the body is shorter than its Content-Length");

	struct eq_error e;
	char *line = NULL;
	eq_err r = eq_fleet_collect(body, len, identity, &line, &e);
	if (r == EQ_ERR_NOMEM)
		return reply("500 Internal Server Error", "out of memory");
	if (r)
		return reply(r == EQ_ERR_LIMIT ? "413 Payload Too Large" : "400 Bad Request", eq_error_msg(&e));

	/* One write of one whole line, one writer at a time: a stored line
	 * never splits or interleaves with another. */
	int fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	bool ok = fd >= 0 && flock(fd, LOCK_EX) == 0;
	size_t n = strlen(line);
	if (ok) {
		char *buf = eq_malloc(n + 1);
		ok = buf != NULL;
		if (ok) {
			memcpy(buf, line, n);
			buf[n] = '\n';
			ok = write_all(fd, buf, n + 1);
			eq_free(buf);
		}
	}
	if (fd >= 0)
		close(fd);
	eq_free(line);
	if (!ok) {
		fprintf(stderr, "eqota-report.cgi: cannot append to '%s': %s\n", out, strerror(errno));
		return reply("500 Internal Server Error", "cannot append to the report file");
	}
	printf("Status: 204 No Content\r\n\r\n");
	return 0;
}
