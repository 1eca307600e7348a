/*
 * A client for BitBake's hash equivalence server (bitbake-hashserv,
 * lib/hashserv in openembedded/bitbake), protocol OEHASHEQUIV 1.1:
 *   - the client opens with "OEHASHEQUIV 1.1", "needs-headers: false" and
 *     an empty line;
 *   - then one JSON message per line; a message of max_chunk (32 KiB) or
 *     more goes as {"chunk-stream": null}, its text cut into lines, and an
 *     empty line (only the server's answers can be that long);
 *   - {"get-stream": null} answered "ok" switches to stream mode: one
 *     "METHOD TASKHASH" line in, one unihash line (empty: unknown) out,
 *     until "END", answered with a plain "ok" line;
 *   - an error is {"invoke-error": {"message": ...}}, after which the server
 *     closes the connection.
 * Everything the server sends is hostile until checked: line and message
 * sizes are capped, every answer is matched to its request, and a unihash
 * must be 64 lower-case hex digits before it can reach a manifest.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <eq/gen_hashserv.h>
#include <eq/gen_store.h>

#define PROTO_LINE "OEHASHEQUIV 1.1"
#define MAX_CHUNK (32u * 1024u)
/* Requests of one call, framed: a report is under 2 KiB, a get line 320 bytes. */
#define OUT_MAX (256u * 1024u * 1024u)

struct eq_hashserv {
	char *addr; /* NULL for eq_hashserv_open_fd() */
	int fd;
	bool own_fd; /* false for eq_hashserv_open_fd(): the caller closes it */
	unsigned timeout_ms;
	char *username, *token;
	struct eq_buf in; /* received, not yet consumed: bytes [in_off, in.len) */
	size_t in_off;
	bool dropped; /* the last failure was the connection going away */
};

const char *eq_hashserv_addr(const struct eq_hashserv *h)
{
	return h->addr ? h->addr : "(connected socket)";
}

static void disconnect(struct eq_hashserv *h)
{
	if (h->fd >= 0 && h->own_fd)
		close(h->fd);
	h->fd = -1;
	eq_buf_reset(&h->in);
	h->in_off = 0;
}

void eq_hashserv_close(struct eq_hashserv *h)
{
	if (!h)
		return;
	disconnect(h);
	eq_buf_done(&h->in);
	eq_free(h->addr);
	eq_free(h->username);
	if (h->token) {
		memset(h->token, 0, strlen(h->token));
		eq_free(h->token);
	}
	eq_free(h);
}

static eq_err dropped(struct eq_hashserv *h, struct eq_error *err, const char *what)
{
	h->dropped = true;
	disconnect(h);
	return eq_error_set(err, EQ_ERR_NETWORK, "hashserv %s closed the connection %s", eq_hashserv_addr(h), what);
}

/* The timeout as a person reads it: "30 s", or "300 ms" for tests. */
static const char *timeout_str(const struct eq_hashserv *h, char buf[32])
{
	if (h->timeout_ms % 1000 == 0)
		snprintf(buf, 32, "%u s", h->timeout_ms / 1000);
	else
		snprintf(buf, 32, "%u ms", h->timeout_ms);
	return buf;
}

/* ---- bytes --------------------------------------------------------------- */

/*
 * One step of I/O: sends what it can of @out (when not NULL), and reads
 * what arrived into h->in. Reading while sending keeps a pipelined batch
 * from deadlocking against a server that answers while we still write.
 * The caller owns the deadline: bytes in either direction never move it,
 * or a server trickling one byte every few seconds (or reading that
 * slowly) would keep eqota-gen waiting forever.
 */
static eq_err pump(struct eq_hashserv *h, const char *out, size_t out_len, size_t *sent, double deadline,
		   struct eq_error *err)
{
	struct pollfd p = {.fd = h->fd, .events = POLLIN};
	if (out && *sent < out_len)
		p.events |= POLLOUT;
	double left = deadline - eq_now_s();
	char tb[32];
	if (left <= 0)
		return eq_error_set(err, EQ_ERR_NETWORK,
				    "no answer from hashserv %s within %s (the time allowed for each whole answer, "
				    "however many bytes arrive)",
				    eq_hashserv_addr(h), timeout_str(h, tb));
	int n = poll(&p, 1, (int)(left * 1000) + 1);
	if (n < 0 && errno == EINTR)
		return EQ_OK;
	if (n < 0)
		return eq_error_errno(err, EQ_ERR_NETWORK, "hashserv %s: poll", eq_hashserv_addr(h));
	if (n == 0)
		return EQ_OK; /* the deadline check above reports it */
	if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
		char buf[16384];
		ssize_t r = recv(h->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r == 0)
			return dropped(h, err, "");
		if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			if (errno == ECONNRESET || errno == EPIPE)
				return dropped(h, err, "(reset)");
			return eq_error_errno(err, EQ_ERR_NETWORK, "hashserv %s: receive", eq_hashserv_addr(h));
		}
		if (r > 0) {
			/* Drop consumed bytes, so a long pipelined batch needs
			 * no more room than one message. */
			if (h->in_off > 0) {
				memmove(h->in.data, h->in.data + h->in_off, h->in.len - h->in_off);
				h->in.len -= h->in_off;
				h->in.data[h->in.len] = '\0';
				h->in_off = 0;
			}
			eq_err e = eq_buf_append(&h->in, buf, (size_t)r, err);
			if (e == EQ_ERR_LIMIT)
				return eq_error_set(err, EQ_ERR_LIMIT,
						    "hashserv %s sent more than %u bytes without being read: not a "
						    "bitbake-hashserv answer",
						    eq_hashserv_addr(h), EQ_HASHSERV_MAX_MESSAGE);
			if (e)
				return e;
		}
	}
	if (out && *sent < out_len && (p.revents & POLLOUT)) {
		ssize_t w = send(h->fd, out + *sent, out_len - *sent, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
			return dropped(h, err, "while we sent");
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return eq_error_errno(err, EQ_ERR_NETWORK, "hashserv %s: send", eq_hashserv_addr(h));
		if (w > 0)
			*sent += (size_t)w;
	}
	return EQ_OK;
}

/*
 * The next complete line in the buffer from *off: its start and length
 * without the newline; *off moves past it. NULL when no line is complete.
 * The buffer is not changed, so a caller can look ahead and stop.
 */
static const char *line_at(const struct eq_hashserv *h, size_t *off, size_t *ret_len)
{
	if (*off >= h->in.len)
		return NULL;
	const char *start = (const char *)h->in.data + *off;
	const char *nl = memchr(start, '\n', h->in.len - *off);
	if (!nl)
		return NULL;
	*ret_len = (size_t)(nl - start);
	*off += *ret_len + 1;
	return start;
}

/* A line may hold any UTF-8 JSON, but never a NUL (it would cut it short). */
static eq_err check_line(const struct eq_hashserv *h, const char *s, size_t len, struct eq_error *err)
{
	if (memchr(s, '\0', len))
		return eq_error_set(err, EQ_ERR_PARSE, "hashserv %s sent a NUL byte", eq_hashserv_addr(h));
	return EQ_OK;
}

static char *copy_line(const char *s, size_t len, struct eq_error *err)
{
	char *m = eq_malloc(len + 1);
	if (!m) {
		eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		return NULL;
	}
	memcpy(m, s, len);
	m[len] = '\0';
	return m;
}

static eq_err too_long(const struct eq_hashserv *h, struct eq_error *err)
{
	return eq_error_set(err, EQ_ERR_LIMIT, "hashserv %s sent a message longer than %u bytes", eq_hashserv_addr(h),
			    EQ_HASHSERV_MAX_MESSAGE);
}

/*
 * One complete message from the buffer: a line, or a chunk-stream message
 * reassembled. *ret is NULL when more bytes are needed; otherwise the
 * message text (malloc'ed, caller frees), consumed from the buffer.
 */
static eq_err take_message(struct eq_hashserv *h, char **ret, struct eq_error *err)
{
	*ret = NULL;
	size_t off = h->in_off, len = 0;
	const char *l = line_at(h, &off, &len);
	if (!l)
		return h->in.len - h->in_off > EQ_HASHSERV_MAX_MESSAGE ? too_long(h, err) : EQ_OK;
	eq_err r = check_line(h, l, len, err);
	if (r)
		return r;
	if (len > EQ_HASHSERV_MAX_MESSAGE)
		return too_long(h, err);
	cJSON *j = cJSON_ParseWithLength(l, len);
	bool chunked = cJSON_IsObject(j) && cJSON_GetObjectItemCaseSensitive(j, "chunk-stream");
	cJSON_Delete(j);
	if (!chunked) {
		char *m = copy_line(l, len, err);
		if (!m)
			return EQ_ERR_NOMEM;
		h->in_off = off;
		*ret = m;
		return EQ_OK;
	}
	/* Find the empty line that ends the chunks before copying anything. */
	size_t first = off, total = 0;
	for (;;) {
		size_t cl;
		const char *c = line_at(h, &off, &cl);
		if (!c)
			return h->in.len - first > EQ_HASHSERV_MAX_MESSAGE ? too_long(h, err) : EQ_OK;
		if ((r = check_line(h, c, cl, err)))
			return r;
		if (cl == 0)
			break;
		total += cl;
		if (total > EQ_HASHSERV_MAX_MESSAGE)
			return too_long(h, err);
	}
	char *m = eq_malloc(total + 1);
	if (!m)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	size_t k = 0, at = first, cl;
	const char *c;
	while ((c = line_at(h, &at, &cl)) && cl) {
		memcpy(m + k, c, cl);
		k += cl;
	}
	m[k] = '\0';
	h->in_off = off;
	*ret = m;
	return EQ_OK;
}

/*
 * Appends @text as one message line. The protocol cuts messages of 32 KiB
 * or more into chunks; eqota's requests are bounded far below that (a
 * report with the longest PN and PV is under 3 KiB), so it never sends one.
 */
static eq_err frame(struct eq_buf *b, const char *text, struct eq_error *err)
{
	size_t len = strlen(text);
	if (len >= MAX_CHUNK - 1)
		return eq_error_set(err, EQ_ERR_LIMIT, "hashserv request of %zu bytes: longer than one message line",
				    len);
	eq_err r = eq_buf_append(b, text, len, err);
	return r ? r : eq_buf_append(b, "\n", 1, err);
}

/* ---- messages ------------------------------------------------------------ */

/* Called with each answer of a batch, in order; @i is its index. */
typedef eq_err (*answer_fn)(struct eq_hashserv *h, void *ctx, size_t i, const char *text, struct eq_error *err);

/* An invoke-error answer becomes an error quoting the server. */
static eq_err check_invoke_error(struct eq_hashserv *h, const cJSON *j, const char *what, struct eq_error *err)
{
	const cJSON *ie = cJSON_GetObjectItemCaseSensitive(j, "invoke-error");
	if (!ie)
		return EQ_OK;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(ie, "message");
	/* The server closes after an invoke-error; the next call reconnects. */
	disconnect(h);
	return eq_error_set(err, EQ_ERR_STATE, "hashserv %s refused %s: %.300s", eq_hashserv_addr(h), what,
			    cJSON_IsString(m) ? m->valuestring : "(no message)");
}

/*
 * Sends @out (already framed) and hands the next @n answers to @fn: as
 * JSON messages, or with @lines, as plain lines (stream mode), where the
 * first and last answers of the stream are the mode switches.
 * Each answer must be complete within timeout_ms of the previous one (or
 * of the start): the deadline moves with whole answers only, so a batch
 * of n requests ends within n times timeout_ms whatever the server does.
 */
static eq_err exchange(struct eq_hashserv *h, const struct eq_buf *out, size_t n, bool lines, answer_fn fn, void *ctx,
		       struct eq_error *err)
{
	size_t sent = 0, got = 0;
	double deadline = eq_now_s() + h->timeout_ms / 1000.0;
	while (got < n) {
		eq_err r = EQ_OK;
		char *text = NULL;
		if (lines) {
			size_t off = h->in_off, len = 0;
			const char *l = line_at(h, &off, &len);
			if (l) {
				if ((r = check_line(h, l, len, err)))
					return r;
				if (len > EQ_HASHSERV_MAX_MESSAGE)
					return too_long(h, err);
				text = copy_line(l, len, err);
				if (!text)
					return EQ_ERR_NOMEM;
				h->in_off = off;
				r = fn(h, ctx, got, text, err);
				eq_free(text);
				if (r)
					return r;
				got++;
				deadline = eq_now_s() + h->timeout_ms / 1000.0;
				continue;
			}
			if (h->in.len - h->in_off > EQ_HASHSERV_MAX_MESSAGE)
				return too_long(h, err);
		} else {
			r = take_message(h, &text, err);
			if (r)
				return r;
			if (text) {
				r = fn(h, ctx, got, text, err);
				eq_free(text);
				if (r)
					return r;
				got++;
				deadline = eq_now_s() + h->timeout_ms / 1000.0;
				continue;
			}
		}
		r = pump(h, (const char *)out->data, out->len, &sent, deadline, err);
		if (r)
			return r;
	}
	return EQ_OK;
}

/* ---- connection ---------------------------------------------------------- */

static eq_err wait_connected(struct eq_hashserv *h, int fd, struct eq_error *err)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	/* A fixed deadline: a signal must not restart the wait. */
	double deadline = eq_now_s() + h->timeout_ms / 1000.0, left;
	int n = 0;
	while ((left = deadline - eq_now_s()) > 0 && (n = poll(&p, 1, (int)(left * 1000) + 1)) < 0 && errno == EINTR)
		n = 0;
	char tb[32];
	if (n == 0)
		return eq_error_set(err, EQ_ERR_NETWORK, "hashserv %s: no connection within %s", h->addr,
				    timeout_str(h, tb));
	int e = 0;
	socklen_t el = sizeof(e);
	if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0)
		return eq_error_errno(err, EQ_ERR_NETWORK, "hashserv %s: connect", h->addr);
	if (e) {
		errno = e;
		return eq_error_errno(err, EQ_ERR_NETWORK, "cannot connect to hashserv %s", h->addr);
	}
	return EQ_OK;
}

static eq_err connect_to(struct eq_hashserv *h, const struct sockaddr *sa, socklen_t len, struct eq_error *err)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_NETWORK, "hashserv %s: socket", h->addr);
	eq_err r = EQ_OK;
	if (connect(fd, sa, len) != 0) {
		if (errno == EINPROGRESS)
			r = wait_connected(h, fd, err);
		else
			r = eq_error_errno(err, EQ_ERR_NETWORK, "cannot connect to hashserv %s", h->addr);
	}
	if (r) {
		close(fd);
		return r;
	}
	h->fd = fd;
	h->own_fd = true;
	return EQ_OK;
}

static eq_err open_socket(struct eq_hashserv *h, struct eq_error *err)
{
	const char *a = h->addr;
	if (!strncmp(a, "unix://", 7)) {
		struct sockaddr_un un = {.sun_family = AF_UNIX};
		const char *path = a + 7;
		if (!*path || strlen(path) >= sizeof(un.sun_path))
			return eq_error_set(err, EQ_ERR_INVAL,
					    "hashserv address '%s': the socket path must be 1..%zu bytes", a,
					    sizeof(un.sun_path) - 1);
		memcpy(un.sun_path, path, strlen(path) + 1);
		return connect_to(h, (struct sockaddr *)&un, sizeof(un), err);
	}
	char host[256];
	const char *port;
	if (a[0] == '[') {
		const char *close_br = strchr(a, ']');
		if (!close_br || close_br[1] != ':' || (size_t)(close_br - a - 1) >= sizeof(host))
			return eq_error_set(err, EQ_ERR_INVAL, "hashserv address '%s': expected [ADDRESS]:PORT", a);
		memcpy(host, a + 1, (size_t)(close_br - a - 1));
		host[close_br - a - 1] = '\0';
		port = close_br + 2;
	} else {
		const char *colon = strchr(a, ':');
		if (!colon || strchr(colon + 1, ':') || colon == a || (size_t)(colon - a) >= sizeof(host))
			return eq_error_set(err, EQ_ERR_INVAL,
					    "hashserv address '%s': expected HOST:PORT, [IPV6]:PORT or unix://PATH", a);
		memcpy(host, a, (size_t)(colon - a));
		host[colon - a] = '\0';
		port = colon + 1;
	}
	if (!*port || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 || strtol(port, NULL, 10) < 1 ||
	    strtol(port, NULL, 10) > 65535)
		return eq_error_set(err, EQ_ERR_INVAL, "hashserv address '%s': bad port '%s'", a, port);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	int gr = getaddrinfo(host, port, &hints, &res);
	if (gr != 0)
		return eq_error_set(err, EQ_ERR_NETWORK, "hashserv %s: cannot resolve '%s': %s", a, host,
				    gai_strerror(gr));
	eq_err r = EQ_ERR_NETWORK;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		eq_error_clear(err);
		r = connect_to(h, ai->ai_addr, ai->ai_addrlen, err);
		if (!r)
			break;
	}
	freeaddrinfo(res);
	return r;
}

static eq_err ping_answer(struct eq_hashserv *h, void *ctx, size_t i, const char *text, struct eq_error *err)
{
	(void)ctx, (void)i;
	cJSON *j = cJSON_Parse(text);
	eq_err r = check_invoke_error(h, j, "ping", err);
	if (!r) {
		const cJSON *alive = cJSON_GetObjectItemCaseSensitive(j, "alive");
		if (!cJSON_IsTrue(alive))
			r = eq_error_set(err, EQ_ERR_UNSUPPORTED,
					 "hashserv %s answered '%.80s' to ping: not a bitbake-hashserv speaking %s",
					 eq_hashserv_addr(h), text, PROTO_LINE);
	}
	cJSON_Delete(j);
	return r;
}

static eq_err auth_answer(struct eq_hashserv *h, void *ctx, size_t i, const char *text, struct eq_error *err)
{
	(void)ctx, (void)i;
	cJSON *j = cJSON_Parse(text);
	eq_err r = check_invoke_error(h, j, "the login", err);
	if (r == EQ_ERR_STATE)
		r = err->code = EQ_ERR_VERIFY;
	if (!r && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "result")))
		r = eq_error_set(err, EQ_ERR_VERIFY, "hashserv %s did not accept the login of user '%s'",
				 eq_hashserv_addr(h), h->username);
	cJSON_Delete(j);
	return r;
}

/* Frames one JSON message {@key: @body} (@body is consumed). */
static eq_err frame_json(struct eq_buf *b, const char *key, cJSON *body, struct eq_error *err)
{
	cJSON *m = cJSON_CreateObject();
	if (!m || !body || !cJSON_AddItemToObject(m, key, body)) {
		cJSON_Delete(m);
		cJSON_Delete(body);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	char *text = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	if (!text)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	eq_err r = frame(b, text, err);
	cJSON_free(text);
	return r;
}

/* Handshake, login, ping: a connection that answers is the right server. */
static eq_err setup(struct eq_hashserv *h, struct eq_error *err)
{
	struct eq_buf out;
	eq_buf_init(&out, EQ_HASHSERV_MAX_MESSAGE);
	eq_err r = eq_buf_printf(&out, err, "%s\nneeds-headers: false\n\n", PROTO_LINE);
	size_t n = 0;
	if (!r && h->username) {
		cJSON *a = cJSON_CreateObject();
		if (a && (!cJSON_AddStringToObject(a, "username", h->username) ||
			  !cJSON_AddStringToObject(a, "token", h->token ? h->token : ""))) {
			cJSON_Delete(a);
			a = NULL;
		}
		r = frame_json(&out, "auth", a, err);
		if (!r)
			r = exchange(h, &out, 1, false, auth_answer, NULL, err);
		eq_buf_reset(&out);
		n = 0;
	}
	if (!r)
		r = frame_json(&out, "ping", cJSON_CreateObject(), err);
	if (!r)
		r = exchange(h, &out, 1, false, ping_answer, NULL, err);
	(void)n;
	eq_buf_done(&out);
	if (r && h->dropped && r == EQ_ERR_NETWORK)
		r = eq_error_set(err, EQ_ERR_UNSUPPORTED,
				 "hashserv %s closed the connection after the %s handshake: not a bitbake-hashserv, or "
				 "one that does not speak protocol 1.1",
				 eq_hashserv_addr(h), PROTO_LINE);
	return r;
}

static eq_err reconnect(struct eq_hashserv *h, struct eq_error *err)
{
	disconnect(h);
	if (!h->addr)
		return eq_error_set(err, EQ_ERR_NETWORK, "hashserv connection lost");
	h->dropped = false;
	eq_err r = open_socket(h, err);
	if (!r)
		r = setup(h, err);
	if (r)
		disconnect(h);
	return r;
}

static struct eq_hashserv *new_client(const struct eq_hashserv_opts *o)
{
	struct eq_hashserv *h = eq_calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->fd = -1;
	h->timeout_ms = o && o->timeout_ms ? o->timeout_ms : EQ_HASHSERV_TIMEOUT_MS;
	eq_buf_init(&h->in, EQ_HASHSERV_MAX_MESSAGE + 65536);
	if (o && o->username && *o->username) {
		h->username = eq_strdup(o->username);
		h->token = eq_strdup(o->token ? o->token : "");
		if (!h->username || !h->token) {
			eq_hashserv_close(h);
			return NULL;
		}
	}
	return h;
}

eq_err eq_hashserv_open(const char *addr, const struct eq_hashserv_opts *o, struct eq_hashserv **ret,
			struct eq_error *err)
{
	if (!addr || !*addr)
		return eq_error_set(err, EQ_ERR_INVAL, "hashserv address is empty");
	if (!strncmp(addr, "ws://", 5) || !strncmp(addr, "wss://", 6))
		return eq_error_set(err, EQ_ERR_UNSUPPORTED,
				    "hashserv address '%s': WebSocket is not supported (the libcurl eqota builds "
				    "with has no WebSocket support); bind the server to HOST:PORT or unix://PATH",
				    addr);
	struct eq_hashserv *h = new_client(o);
	if (!h || !(h->addr = eq_strdup(addr))) {
		eq_hashserv_close(h);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	eq_err r = open_socket(h, err);
	if (!r)
		r = setup(h, err);
	if (r) {
		eq_hashserv_close(h);
		return r;
	}
	*ret = h;
	return EQ_OK;
}

eq_err eq_hashserv_open_fd(int fd, const struct eq_hashserv_opts *o, struct eq_hashserv **ret, struct eq_error *err)
{
	struct eq_hashserv *h = new_client(o);
	if (!h)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		eq_hashserv_close(h);
		return eq_error_errno(err, EQ_ERR_INVAL, "hashserv: fd %d", fd);
	}
	h->fd = fd;
	eq_err r = setup(h, err);
	if (r) {
		eq_hashserv_close(h);
		return r;
	}
	*ret = h;
	return EQ_OK;
}

/*
 * Runs @op, reconnecting first when an earlier call left no connection,
 * and once more after a dropped connection: get and report are
 * idempotent, so redoing the whole call is safe.
 */
typedef eq_err (*op_fn)(struct eq_hashserv *h, void *ctx, struct eq_error *err);
static eq_err with_retry(struct eq_hashserv *h, op_fn op, void *ctx, struct eq_error *err)
{
	for (int attempt = 0;; attempt++) {
		eq_err r = h->fd < 0 ? reconnect(h, err) : EQ_OK;
		if (!r) {
			h->dropped = false;
			r = op(h, ctx, err);
		}
		if (!r || !h->dropped || attempt == 1 || !h->addr)
			return r;
	}
}

static eq_err ping_op(struct eq_hashserv *h, void *ctx, struct eq_error *err)
{
	(void)ctx;
	struct eq_buf out;
	eq_buf_init(&out, 256);
	eq_err r = frame_json(&out, "ping", cJSON_CreateObject(), err);
	if (!r)
		r = exchange(h, &out, 1, false, ping_answer, NULL, err);
	eq_buf_done(&out);
	return r;
}

eq_err eq_hashserv_ping(struct eq_hashserv *h, struct eq_error *err)
{
	return with_retry(h, ping_op, NULL, err);
}

/* ---- get (stream mode) --------------------------------------------------- */

static bool hash_ok(const char *s)
{
	return s && eq_is_sha256_hex(s);
}

struct get_ctx {
	const char *method;
	const char *const *taskhashes;
	size_t n;
	char (*ret)[EQ_SHA256_HEX_LEN + 1];
};

static eq_err get_answer(struct eq_hashserv *h, void *vctx, size_t i, const char *line, struct eq_error *err)
{
	struct get_ctx *c = vctx;
	if (i == 0) {
		/* The switch to stream mode is a JSON message: "ok". */
		if (!strcmp(line, "\"ok\""))
			return EQ_OK;
		cJSON *j = cJSON_Parse(line);
		eq_err r = check_invoke_error(h, j, "get-stream", err);
		cJSON_Delete(j);
		return r ? r
			 : eq_error_set(err, EQ_ERR_UNSUPPORTED, "hashserv %s answered '%.80s' to get-stream",
					eq_hashserv_addr(h), line);
	}
	if (i == c->n + 1) {
		if (strcmp(line, "ok"))
			return eq_error_set(err, EQ_ERR_PARSE, "hashserv %s ended a get-stream with '%.80s', not 'ok'",
					    eq_hashserv_addr(h), line);
		return EQ_OK;
	}
	size_t k = i - 1;
	if (!*line) {
		c->ret[k][0] = '\0';
		return EQ_OK;
	}
	if (!hash_ok(line))
		return eq_error_set(err, EQ_ERR_PARSE,
				    "hashserv %s answered '%.80s' for taskhash %s: not a unihash (64 lower-case hex "
				    "digits)",
				    eq_hashserv_addr(h), line, c->taskhashes[k]);
	memcpy(c->ret[k], line, EQ_SHA256_HEX_LEN + 1);
	return EQ_OK;
}

static eq_err get_op(struct eq_hashserv *h, void *vctx, struct eq_error *err)
{
	struct get_ctx *c = vctx;
	struct eq_buf out;
	eq_buf_init(&out, OUT_MAX);
	eq_err r = eq_buf_printf(&out, err, "{\"get-stream\": null}\n");
	for (size_t i = 0; !r && i < c->n; i++)
		r = eq_buf_printf(&out, err, "%s %s\n", c->method, c->taskhashes[i]);
	if (!r)
		r = eq_buf_printf(&out, err, "END\n");
	if (!r)
		r = exchange(h, &out, c->n + 2, true, get_answer, c, err);
	eq_buf_done(&out);
	return r;
}

static eq_err check_method(const char *method, struct eq_error *err)
{
	size_t len = method ? strlen(method) : 0;
	if (len == 0 || len > EQ_STORE_METHOD_MAX)
		return eq_error_set(err, EQ_ERR_INVAL, "method: expected 1..%d printable characters",
				    EQ_STORE_METHOD_MAX);
	for (const unsigned char *p = (const unsigned char *)method; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return eq_error_set(err, EQ_ERR_INVAL,
					    "method '%.80s': expected printable characters without spaces", method);
	return EQ_OK;
}

eq_err eq_hashserv_get_many(struct eq_hashserv *h, const char *method, const char *const *taskhashes, size_t n,
			    char (*ret)[EQ_SHA256_HEX_LEN + 1], struct eq_error *err)
{
	eq_err r = check_method(method, err);
	for (size_t i = 0; !r && i < n; i++)
		if (!hash_ok(taskhashes[i]))
			r = eq_error_set(err, EQ_ERR_INVAL, "taskhash '%.80s': expected 64 lower-case hex digits",
					 taskhashes[i] ? taskhashes[i] : "");
	if (r || n == 0)
		return r;
	struct get_ctx c = {.method = method, .taskhashes = taskhashes, .n = n, .ret = ret};
	return with_retry(h, get_op, &c, err);
}

/* ---- report ------------------------------------------------------------- */

struct report_ctx {
	const char *method;
	struct eq_hashserv_report *v;
	size_t n;
	const char *kind; /* "report" or "report-equiv" */
};

/* The answer must be about the taskhash asked, with a well-formed unihash. */
static eq_err report_answer(struct eq_hashserv *h, void *vctx, size_t i, const char *text, struct eq_error *err)
{
	struct report_ctx *c = vctx;
	struct eq_hashserv_report *x = &c->v[i];
	cJSON *j = cJSON_Parse(text);
	char what[128];
	snprintf(what, sizeof(what), "the %s of taskhash %s", c->kind, x->taskhash);
	eq_err r = check_invoke_error(h, j, what, err);
	if (!r) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "taskhash");
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "unihash");
		if (!cJSON_IsString(t) || strcmp(t->valuestring, x->taskhash))
			r = eq_error_set(err, EQ_ERR_PARSE,
					 "hashserv %s answered the %s of taskhash %s with '%.120s': another taskhash",
					 eq_hashserv_addr(h), c->kind, x->taskhash, text);
		else if (!cJSON_IsString(u) || !hash_ok(u->valuestring))
			r = eq_error_set(err, EQ_ERR_PARSE,
					 "hashserv %s answered the %s of taskhash %s with unihash '%.80s': expected 64 "
					 "lower-case hex digits",
					 eq_hashserv_addr(h), c->kind, x->taskhash,
					 cJSON_IsString(u) ? u->valuestring : "(none)");
		else
			memcpy(x->ret_unihash, u->valuestring, EQ_SHA256_HEX_LEN + 1);
	}
	cJSON_Delete(j);
	return r;
}

static eq_err report_op(struct eq_hashserv *h, void *vctx, struct eq_error *err)
{
	struct report_ctx *c = vctx;
	struct eq_buf out;
	eq_buf_init(&out, OUT_MAX);
	eq_err r = EQ_OK;
	for (size_t i = 0; !r && i < c->n; i++) {
		const struct eq_hashserv_report *x = &c->v[i];
		cJSON *m = cJSON_CreateObject();
		bool ok = m && cJSON_AddStringToObject(m, "taskhash", x->taskhash) &&
			  cJSON_AddStringToObject(m, "method", c->method) &&
			  cJSON_AddStringToObject(m, "unihash", x->unihash ? x->unihash : x->taskhash);
		if (ok && x->outhash)
			ok = cJSON_AddStringToObject(m, "outhash", x->outhash) != NULL;
		if (ok && x->pn)
			ok = cJSON_AddStringToObject(m, "PN", x->pn) != NULL;
		if (ok && x->pv)
			ok = cJSON_AddStringToObject(m, "PV", x->pv) != NULL;
		if (!ok) {
			cJSON_Delete(m);
			m = NULL;
		}
		r = frame_json(&out, c->kind, m, err);
	}
	if (!r)
		r = exchange(h, &out, c->n, false, report_answer, c, err);
	eq_buf_done(&out);
	return r;
}

static eq_err check_meta(const char *field, const char *v, struct eq_error *err)
{
	if (v && strlen(v) > EQ_STORE_META_MAX)
		return eq_error_set(err, EQ_ERR_INVAL, "%s '%.80s...': longer than %d bytes", field, v,
				    EQ_STORE_META_MAX);
	return EQ_OK;
}

eq_err eq_hashserv_report_many(struct eq_hashserv *h, const char *method, struct eq_hashserv_report *v, size_t n,
			       struct eq_error *err)
{
	eq_err r = check_method(method, err);
	for (size_t i = 0; !r && i < n; i++) {
		if (!hash_ok(v[i].taskhash) || !hash_ok(v[i].outhash) || (v[i].unihash && !hash_ok(v[i].unihash)))
			r = eq_error_set(err, EQ_ERR_INVAL,
					 "report %zu: taskhash, outhash and unihash must be 64 lower-case hex digits",
					 i);
		else if (!(r = check_meta("PN", v[i].pn, err)))
			r = check_meta("PV", v[i].pv, err);
	}
	if (r || n == 0)
		return r;
	struct report_ctx c = {.method = method, .v = v, .n = n, .kind = "report"};
	return with_retry(h, report_op, &c, err);
}

eq_err eq_hashserv_report_equiv(struct eq_hashserv *h, const char *method, const char *taskhash, const char *unihash,
				char ret_unihash[EQ_SHA256_HEX_LEN + 1], struct eq_error *err)
{
	eq_err r = check_method(method, err);
	if (!r && (!hash_ok(taskhash) || !hash_ok(unihash)))
		r = eq_error_set(err, EQ_ERR_INVAL,
				 "report-equiv: taskhash and unihash must be 64 lower-case hex digits");
	if (r)
		return r;
	struct eq_hashserv_report x = {.taskhash = taskhash, .unihash = unihash};
	struct report_ctx c = {.method = method, .v = &x, .n = 1, .kind = "report-equiv"};
	r = with_retry(h, report_op, &c, err);
	if (!r)
		memcpy(ret_unihash, x.ret_unihash, EQ_SHA256_HEX_LEN + 1);
	return r;
}
