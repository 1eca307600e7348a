/*
 * eq_hashserv against scripted servers: each case forks a child that
 * listens on a unix socket in a temporary folder and answers the way one
 * kind of server (good, broken or hostile) does. The real bitbake-hashserv
 * is the interop tests' business (tests/interop/).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <eq/gen_hashserv.h>

#define M "eqota-payload-v1"

enum behaviour {
	GOOD,
	CHUNKED_PING, /* answers ping with a chunk-stream message */
	HTTP,         /* speaks HTTP */
	SILENT_CLOSE, /* closes after the handshake (wrong version) */
	DROP_ONCE,    /* first connection: closes at the first report */
	DROP_ALWAYS,  /* every connection closes at the first report */
	JUNK_UNIHASH, /* answers a report with a malformed unihash */
	OTHER_TASK,   /* answers a report about another taskhash */
	HUGE_LINE,    /* answers with a line over the cap */
	INVOKE_ERROR, /* refuses reports with an invoke-error */
	MUTE,         /* never answers ping */
	NUL_BYTE,     /* a NUL inside an answer */
	GET_JUNK,     /* get-stream answers a malformed unihash */
	AUTH,         /* wants a login: user "u", token "t" */
	HUGE_CHUNKS,  /* a chunk-stream message over the cap */
	TRICKLE_PING, /* answers ping one byte every 100 ms */
	TRICKLE_GET,  /* answers get-stream lines one byte every 20 ms */
};

struct fx {
	char dir[64];
	char addr[128];
	pid_t pid;
};

/* ---- the scripted server (child process) ---- */

static int srv_fd;
static char srv_buf[1 << 16];
static size_t srv_len;

/* One line from the client, without its newline; NULL at EOF. */
static char *srv_line(void)
{
	static char line[1 << 16];
	for (;;) {
		char *nl = memchr(srv_buf, '\n', srv_len);
		if (nl) {
			size_t n = (size_t)(nl - srv_buf);
			memcpy(line, srv_buf, n);
			line[n] = '\0';
			memmove(srv_buf, nl + 1, srv_len - n - 1);
			srv_len -= n + 1;
			return line;
		}
		if (srv_len == sizeof(srv_buf))
			return NULL;
		ssize_t r = read(srv_fd, srv_buf + srv_len, sizeof(srv_buf) - srv_len);
		if (r <= 0)
			return NULL;
		srv_len += (size_t)r;
	}
}

static void srv_send(const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = send(srv_fd, c, n, MSG_NOSIGNAL);
		if (w <= 0)
			_exit(0);
		c += w;
		n -= (size_t)w;
	}
}

/* Sends @s one byte at a time, @ms apart: alive, but never done in time. */
static void srv_trickle(const char *s, unsigned ms)
{
	for (; *s; s++) {
		srv_send(s, 1);
		usleep(ms * 1000);
	}
}

static void srv_sendf(const char *fmt, ...) EQ_PRINTF(1, 2);
static void srv_sendf(const char *fmt, ...)
{
	char b[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	srv_send(b, (size_t)n);
}

/* The value of "key": "..." in a JSON line, copied to @out. */
static void json_str(const char *line, const char *key, char *out, size_t cap)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(line, pat);
	out[0] = '\0';
	if (!p)
		return;
	p = strchr(p + strlen(pat), '"');
	if (!p)
		return;
	const char *e = strchr(p + 1, '"');
	if (!e || (size_t)(e - p - 1) >= cap)
		return;
	memcpy(out, p + 1, (size_t)(e - p - 1));
	out[e - p - 1] = '\0';
}

/* One connection; returns when the client leaves or the script says so. */
static void serve(enum behaviour b, int conn_no)
{
	srv_len = 0;
	if (b == HTTP) {
		srv_sendf("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
		/* Then read what the client sent until it leaves: closing with
		 * unread data resets the connection, and the client could lose
		 * the answer to a race (the test failed that way under load). */
		shutdown(srv_fd, SHUT_WR);
		while (srv_line())
			;
		return;
	}
	char *l;
	while ((l = srv_line()) && *l) /* protocol line and headers */
		;
	if (!l || b == SILENT_CLOSE)
		return;
	bool authed = false;
	while ((l = srv_line())) {
		if (strstr(l, "\"ping\"")) {
			if (b == MUTE)
				pause();
			if (b == AUTH && !authed) {
				srv_sendf("{\"invoke-error\": {\"message\": \"anonymous has no @read\"}}\n");
				return;
			}
			if (b == CHUNKED_PING) {
				char pad[40000];
				memset(pad, 'x', sizeof(pad) - 1);
				pad[sizeof(pad) - 1] = '\0';
				char msg[40100];
				int n = snprintf(msg, sizeof(msg), "{\"alive\": true, \"pad\": \"%s\"}", pad);
				srv_sendf("{\"chunk-stream\": null}\n");
				for (int i = 0; i < n; i += 32767) {
					srv_send(msg + i, (size_t)(n - i < 32767 ? n - i : 32767));
					srv_send("\n", 1);
				}
				srv_send("\n", 1);
			} else if (b == HUGE_CHUNKS) {
				srv_sendf("{\"chunk-stream\": null}\n");
				char chunk[32768];
				memset(chunk, 'y', sizeof(chunk) - 1);
				chunk[sizeof(chunk) - 1] = '\n';
				for (int i = 0; i < 40; i++)
					srv_send(chunk, sizeof(chunk));
				srv_send("\n", 1);
			} else if (b == NUL_BYTE) {
				srv_send("{\"alive\": tr\0ue}\n", 17);
			} else if (b == TRICKLE_PING) {
				srv_trickle("{\"alive\": true}\n", 100);
			} else if (b == HUGE_LINE) {
				char big[65536];
				memset(big, 'z', sizeof(big));
				for (int i = 0; i < 20; i++)
					srv_send(big, sizeof(big));
			} else {
				srv_sendf("{\"alive\": true}\n");
			}
		} else if (strstr(l, "\"auth\"")) {
			char u[64], t[64];
			json_str(l, "username", u, sizeof(u));
			json_str(l, "token", t, sizeof(t));
			if (strcmp(u, "u") || strcmp(t, "t")) {
				srv_sendf("{\"invoke-error\": {\"message\": \"Unable to authenticate as %s\"}}\n", u);
				return;
			}
			authed = true;
			srv_sendf("{\"result\": true, \"username\": \"u\", \"permissions\": [\"@read\"]}\n");
		} else if (strstr(l, "\"report\"")) {
			if (b == DROP_ALWAYS || (b == DROP_ONCE && conn_no == 0))
				return;
			if (b == INVOKE_ERROR) {
				srv_sendf(
					"{\"invoke-error\": {\"message\": \"u is not allowed to access permissions(s) @report\"}}\n");
				return;
			}
			char th[80], uh[80];
			json_str(l, "taskhash", th, sizeof(th));
			json_str(l, "unihash", uh, sizeof(uh));
			if (b == JUNK_UNIHASH)
				snprintf(uh, sizeof(uh), "%s", "not-a-hash");
			if (b == OTHER_TASK)
				th[0] = th[0] == 'a' ? 'b' : 'a';
			srv_sendf("{\"taskhash\": \"%s\", \"method\": \"" M "\", \"unihash\": \"%s\"}\n", th, uh);
		} else if (strstr(l, "\"get-stream\"")) {
			srv_sendf("\"ok\"\n");
			while ((l = srv_line()) && strcmp(l, "END")) {
				/* Known: taskhashes starting with 'a' map to themselves. */
				const char *sp = strchr(l, ' ');
				if (b == GET_JUNK)
					srv_sendf("XYZ\n");
				else if (b == TRICKLE_GET && sp) {
					char a[80];
					snprintf(a, sizeof(a), "%s\n", sp + 1);
					srv_trickle(a, 20);
				} else if (sp && sp[1] == 'a')
					srv_sendf("%s\n", sp + 1);
				else
					srv_sendf("\n");
			}
			srv_sendf("ok\n");
		} else {
			return;
		}
	}
}

static int setup_server(void **state, enum behaviour b)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/eqhs.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->addr, sizeof(f->addr), "unix://%s/s", f->dir);
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	snprintf(un.sun_path, sizeof(un.sun_path), "%s/s", f->dir);
	int ls = socket(AF_UNIX, SOCK_STREAM, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&un, sizeof(un)) || listen(ls, 8)) {
		free(f);
		return -1;
	}
	f->pid = fork();
	if (f->pid == 0) {
		alarm(20); /* never outlive a broken test */
		for (int conn = 0;; conn++) {
			srv_fd = accept(ls, NULL, NULL);
			if (srv_fd < 0)
				_exit(1);
			serve(b, conn);
			close(srv_fd);
		}
	}
	close(ls);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	kill(f->pid, SIGKILL);
	waitpid(f->pid, NULL, 0);
	char p[96];
	snprintf(p, sizeof(p), "%s/s", f->dir);
	unlink(p);
	rmdir(f->dir);
	free(f);
	return 0;
}

#define SETUP(name, b)                                                                                                 \
	static int setup_##name(void **state)                                                                          \
	{                                                                                                              \
		return setup_server(state, b);                                                                         \
	}
SETUP(good, GOOD)
SETUP(chunked, CHUNKED_PING)
SETUP(http, HTTP)
SETUP(silent, SILENT_CLOSE)
SETUP(drop_once, DROP_ONCE)
SETUP(drop_always, DROP_ALWAYS)
SETUP(junk, JUNK_UNIHASH)
SETUP(other_task, OTHER_TASK)
SETUP(huge_line, HUGE_LINE)
SETUP(invoke_error, INVOKE_ERROR)
SETUP(mute, MUTE)
SETUP(nul, NUL_BYTE)
SETUP(get_junk, GET_JUNK)
SETUP(auth, AUTH)
SETUP(huge_chunks, HUGE_CHUNKS)
SETUP(trickle_ping, TRICKLE_PING)
SETUP(trickle_get, TRICKLE_GET)

static const char *hx(char c, int n, char out[65])
{
	for (int i = 0; i < 64; i++)
		out[i] = "0123456789abcdef"[(n >> ((i % 8) * 4)) & 0xf];
	out[0] = c;
	out[64] = '\0';
	return out;
}

/* Opens @f's server, expecting @want; on failure the message must hold @msg. */
static struct eq_hashserv *open_expect(struct fx *f, const struct eq_hashserv_opts *o, eq_err want, const char *msg)
{
	struct eq_hashserv *h = NULL;
	struct eq_error e;
	eq_error_clear(&e);
	eq_err r = eq_hashserv_open(f->addr, o, &h, &e);
	if (r != want)
		fail_msg("open: got %d (%s), want %d", r, e.msg, want);
	if (r && !strstr(e.msg, msg))
		fail_msg("'%s' lacks '%s'", e.msg, msg);
	if (r && !strstr(e.msg, f->dir))
		fail_msg("'%s' does not name the address", e.msg);
	return h;
}

static void report_expect(struct fx *f, eq_err want, const char *msg)
{
	struct eq_hashserv *h = open_expect(f, NULL, EQ_OK, NULL);
	char t[2][65], o[65];
	struct eq_hashserv_report v[2] = {{.taskhash = hx('a', 1, t[0]), .outhash = hx('c', 9, o), .pn = "bash"},
					  {.taskhash = hx('a', 2, t[1]), .outhash = o, .pv = "5.2"}};
	struct eq_error e;
	eq_error_clear(&e);
	eq_err r = eq_hashserv_report_many(h, M, v, 2, &e);
	if (r != want)
		fail_msg("report: got %d (%s), want %d", r, e.msg, want);
	if (r && !strstr(e.msg, msg))
		fail_msg("'%s' lacks '%s'", e.msg, msg);
	if (!r) {
		assert_string_equal(v[0].ret_unihash, t[0]);
		assert_string_equal(v[1].ret_unihash, t[1]);
	}
	eq_hashserv_close(h);
}

static void test_good(void **state)
{
	struct fx *f = *state;
	struct eq_hashserv *h = open_expect(f, NULL, EQ_OK, NULL);
	struct eq_error e;
	assert_int_equal(eq_hashserv_ping(h, &e), EQ_OK);
	/* 3000 in one stream: pipelined both ways without a deadlock. */
	enum { N = 3000 };
	static char th[N][65];
	static const char *p[N];
	static char got[N][65];
	for (int i = 0; i < N; i++)
		p[i] = hx(i % 2 ? 'a' : 'b', i, th[i]);
	if (eq_hashserv_get_many(h, M, p, N, got, &e))
		fail_msg("%s", e.msg);
	for (int i = 0; i < N; i++)
		assert_string_equal(got[i], i % 2 ? th[i] : "");
	char u[65];
	/* This server closes on report-equiv, as bitbake-hashserv does on a
	 * message it does not know: one retry, then a network error. */
	assert_int_equal(eq_hashserv_report_equiv(h, M, th[1], th[1], u, &e), EQ_ERR_NETWORK);
	/* ... and the next call reconnects. */
	assert_int_equal(eq_hashserv_ping(h, &e), EQ_OK);
	eq_hashserv_close(h);
	report_expect(f, EQ_OK, NULL);
}

static void test_bad_addresses(void **state)
{
	(void)state;
	const char *bad[] = {"",      "localhost", "host:", "host:0", "host:65536", "host:12a",
			     "a:b:c", "[::1]9",    "[::1",  ":80",    "unix://"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct eq_hashserv *h = NULL;
		struct eq_error e;
		eq_err r = eq_hashserv_open(bad[i], NULL, &h, &e);
		if (r != EQ_ERR_INVAL)
			fail_msg("'%s': got %d (%s)", bad[i], r, e.msg);
	}
	struct eq_hashserv *h = NULL;
	struct eq_error e;
	assert_int_equal(eq_hashserv_open("ws://example.org:8686", NULL, &h, &e), EQ_ERR_UNSUPPORTED);
	assert_non_null(strstr(e.msg, "WebSocket"));
	assert_int_equal(eq_hashserv_open("unix:///nonexistent/eq.sock", NULL, &h, &e), EQ_ERR_NETWORK);
	assert_non_null(strstr(e.msg, "/nonexistent/eq.sock"));
}

static void test_chunked(void **state)
{
	struct fx *f = *state;
	eq_hashserv_close(open_expect(f, NULL, EQ_OK, NULL));
}

static void test_http(void **state)
{
	open_expect(*state, NULL, EQ_ERR_UNSUPPORTED, "to ping: not a bitbake-hashserv");
}

static void test_silent(void **state)
{
	open_expect(*state, NULL, EQ_ERR_UNSUPPORTED, "closed the connection after the OEHASHEQUIV 1.1 handshake");
}

static void test_drop_once(void **state)
{
	report_expect(*state, EQ_OK, NULL);
}

static void test_drop_always(void **state)
{
	report_expect(*state, EQ_ERR_NETWORK, "closed the connection");
}

static void test_junk(void **state)
{
	report_expect(*state, EQ_ERR_PARSE, "with unihash 'not-a-hash'");
}

static void test_other_task(void **state)
{
	report_expect(*state, EQ_ERR_PARSE, "another taskhash");
}

static void test_huge_line(void **state)
{
	open_expect(*state, NULL, EQ_ERR_LIMIT, "longer than 1048576 bytes");
}

static void test_huge_chunks(void **state)
{
	open_expect(*state, NULL, EQ_ERR_LIMIT, "longer than 1048576 bytes");
}

static void test_invoke_error(void **state)
{
	report_expect(*state, EQ_ERR_STATE, "is not allowed to access permissions(s) @report");
}

static void test_mute(void **state)
{
	struct eq_hashserv_opts o = {.timeout_ms = 300};
	open_expect(*state, &o, EQ_ERR_NETWORK, "no answer from hashserv");
}

/*
 * A server that trickles its answer (16 bytes, one every 100 ms) must not
 * keep the client past its deadline (400 ms): bytes do not extend it.
 */
static void test_trickle_ping(void **state)
{
	struct eq_hashserv_opts o = {.timeout_ms = 400};
	double t0 = eq_now_s();
	open_expect(*state, &o, EQ_ERR_NETWORK, "within 400 ms");
	assert_true(eq_now_s() - t0 < 1.2);
}

/* In stream mode each answer is a line: 65 bytes, one every 20 ms. */
static void test_trickle_get(void **state)
{
	struct fx *f = *state;
	struct eq_hashserv_opts o = {.timeout_ms = 400};
	struct eq_hashserv *h = open_expect(f, &o, EQ_OK, NULL);
	char t[65], got[1][65];
	const char *p[1] = {hx('a', 1, t)};
	struct eq_error e;
	eq_error_clear(&e);
	double t0 = eq_now_s();
	assert_int_equal(eq_hashserv_get_many(h, M, p, 1, got, &e), EQ_ERR_NETWORK);
	assert_true(eq_now_s() - t0 < 1.0);
	assert_non_null(strstr(e.msg, "no answer from hashserv"));
	assert_non_null(strstr(e.msg, f->dir));
	assert_non_null(strstr(e.msg, "400 ms"));
	eq_hashserv_close(h);
}

static void test_nul(void **state)
{
	open_expect(*state, NULL, EQ_ERR_PARSE, "NUL byte");
}

static void test_get_junk(void **state)
{
	struct fx *f = *state;
	struct eq_hashserv *h = open_expect(f, NULL, EQ_OK, NULL);
	char t[65], got[1][65];
	const char *p[1] = {hx('a', 1, t)};
	struct eq_error e;
	assert_int_equal(eq_hashserv_get_many(h, M, p, 1, got, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "'XYZ' for taskhash"));
	eq_hashserv_close(h);
}

static void test_auth(void **state)
{
	struct fx *f = *state;
	open_expect(f, NULL, EQ_ERR_STATE, "anonymous has no @read");
	struct eq_hashserv_opts bad = {.username = "u", .token = "wrong"};
	open_expect(f, &bad, EQ_ERR_VERIFY, "Unable to authenticate as u");
	struct eq_hashserv_opts good = {.username = "u", .token = "t"};
	struct eq_hashserv *h = open_expect(f, &good, EQ_OK, NULL);
	struct eq_error e;
	assert_int_equal(eq_hashserv_ping(h, &e), EQ_OK);
	eq_hashserv_close(h);
}

static void test_bad_arguments(void **state)
{
	struct fx *f = *state;
	struct eq_hashserv *h = open_expect(f, NULL, EQ_OK, NULL);
	struct eq_error e;
	char t[65], got[1][65];
	const char *p[1] = {"ABC"};
	assert_int_equal(eq_hashserv_get_many(h, M, p, 1, got, &e), EQ_ERR_INVAL);
	p[0] = hx('a', 1, t);
	assert_int_equal(eq_hashserv_get_many(h, "two words", p, 1, got, &e), EQ_ERR_INVAL);
	struct eq_hashserv_report v = {.taskhash = t, .outhash = "short"};
	assert_int_equal(eq_hashserv_report_many(h, M, &v, 1, &e), EQ_ERR_INVAL);
	char longpn[2000];
	memset(longpn, 'p', sizeof(longpn) - 1);
	longpn[sizeof(longpn) - 1] = '\0';
	struct eq_hashserv_report w = {.taskhash = t, .outhash = t, .pn = longpn};
	assert_int_equal(eq_hashserv_report_many(h, M, &w, 1, &e), EQ_ERR_INVAL);
	eq_hashserv_close(h);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_good, setup_good, teardown),
		cmocka_unit_test(test_bad_addresses),
		cmocka_unit_test_setup_teardown(test_chunked, setup_chunked, teardown),
		cmocka_unit_test_setup_teardown(test_http, setup_http, teardown),
		cmocka_unit_test_setup_teardown(test_silent, setup_silent, teardown),
		cmocka_unit_test_setup_teardown(test_drop_once, setup_drop_once, teardown),
		cmocka_unit_test_setup_teardown(test_drop_always, setup_drop_always, teardown),
		cmocka_unit_test_setup_teardown(test_junk, setup_junk, teardown),
		cmocka_unit_test_setup_teardown(test_other_task, setup_other_task, teardown),
		cmocka_unit_test_setup_teardown(test_huge_line, setup_huge_line, teardown),
		cmocka_unit_test_setup_teardown(test_huge_chunks, setup_huge_chunks, teardown),
		cmocka_unit_test_setup_teardown(test_invoke_error, setup_invoke_error, teardown),
		cmocka_unit_test_setup_teardown(test_mute, setup_mute, teardown),
		cmocka_unit_test_setup_teardown(test_nul, setup_nul, teardown),
		cmocka_unit_test_setup_teardown(test_trickle_ping, setup_trickle_ping, teardown),
		cmocka_unit_test_setup_teardown(test_trickle_get, setup_trickle_get, teardown),
		cmocka_unit_test_setup_teardown(test_get_junk, setup_get_junk, teardown),
		cmocka_unit_test_setup_teardown(test_auth, setup_auth, teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup_good, teardown),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
