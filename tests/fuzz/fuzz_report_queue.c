/*
 * Fuzz target for the agent's report queue (agent/report.c): the queue
 * folder outlives power cuts and full disks, and its names and files decide
 * what leaves the device. The input describes entries made in a fresh
 * queue folder (plain files, symlinks out of it and into it, folders,
 * FIFOs; names made of digits or any bytes), then two reports are queued
 * and the queue drained through a local send that answers as the input says.
 * Invariants: nothing outside the folder is read (a marker file behind the
 * symlinks never reaches send), no plain file is sent twice, nothing sent
 * is longer than EQ_REPORT_MAX_BYTES or is not what a plain queue file or
 * the new report held, no more than the queue's bound is kept or sent,
 * the reports queued survive their queueing (no sequence number wraps
 * around), and it never blocks (a FIFO).
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main.
 *
 * Input: a byte MAX (1..8 after % 8 + 1), then entries until the input
 * ends or 32 were made, each
 *   TYPE (% 5: 0 plain, 1 symlink out, 2 symlink in, 3 folder, 4 FIFO)
 *   NAME (byte: even -> 8 bytes of a little-endian sequence number, made
 *         "%020llu.json"; odd -> byte LEN % 40 + 1 and LEN raw bytes)
 *   plain: 2 bytes LEN (% 5000) and LEN bytes; symlink in: 8 bytes of a
 *   sequence number, the target's name
 * and, behind a 0xff TYPE byte, one byte per send: % 4 gives 200, 400,
 * 503 or a network error (200 once the bytes run out).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/agent.h>

#include "../../agent/report.h"
#include "../../agent/report_queue.h"

/* Whether a plain file of @q holds @line. */
static bool queued(const char *q, const char *line)
{
	DIR *d = opendir(q);
	if (!d)
		abort();
	bool found = false;
	const struct dirent *de;
	while (!found && (de = readdir(d))) {
		char p[4096], buf[256];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", q, de->d_name);
		if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != strlen(line))
			continue;
		FILE *f = fopen(p, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
		if (f)
			fclose(f);
		found = n == strlen(line) && memcmp(buf, line, n) == 0;
	}
	closedir(d);
	return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ENTRIES 32u /* made by the input; + 2 reports queued */
#define SECRET "SECRET-OUTSIDE-THE-QUEUE"

struct in {
	const uint8_t *p;
	size_t n;
};

static bool take(struct in *in, void *out, size_t len)
{
	if (in->n < len)
		return false;
	memcpy(out, in->p, len);
	in->p += len;
	in->n -= len;
	return true;
}

static uint64_t take_u64(struct in *in)
{
	uint8_t b[8] = {0};
	(void)take(in, b, sizeof(b));
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* What may be sent: the plain files made, by content, and whether each
 * went out already. */
struct sent_check {
	char *content[MAX_ENTRIES + 2];
	size_t len[MAX_ENTRIES + 2];
	bool sent[MAX_ENTRIES + 2];
	size_t n;
	struct in script;
	size_t calls, ok;
	bool marker_inside; /* a plain file holds the marker itself */
};

static eq_err send_cb(void *ctx, const char *body, size_t len, long *ret_status, struct eq_error *err)
{
	struct sent_check *c = ctx;
	c->calls++;
	if (len > EQ_REPORT_MAX_BYTES || (!c->marker_inside && memmem(body, len, SECRET, strlen(SECRET)))) {
		fprintf(stderr, "fuzz_report_queue: sent %zu bytes that are not a queue file's\n", len);
		abort();
	}
	size_t i;
	for (i = 0; i < c->n; i++) {
		/* the queue sends a file without its final newline */
		size_t l = c->len[i];
		if ((l == len || (l == len + 1 && c->content[i][len] == '\n')) && memcmp(c->content[i], body, len) == 0)
			break;
	}
	if (i == c->n) {
		fprintf(stderr, "fuzz_report_queue: sent a body no plain queue file held\n");
		abort();
	}
	uint8_t s = 0;
	(void)take(&c->script, &s, 1);
	switch (s % 4) {
	case 0:
		/* contents may repeat: the first of them not sent yet */
		for (; i < c->n; i++)
			if (!c->sent[i] && c->len[i] >= len && memcmp(c->content[i], body, len) == 0)
				break;
		if (i == c->n) {
			fprintf(stderr, "fuzz_report_queue: a plain file was sent twice\n");
			abort();
		}
		c->sent[i] = true;
		c->ok++;
		*ret_status = 200;
		return EQ_OK;
	case 1: *ret_status = 400; return EQ_OK;
	case 2: *ret_status = 503; return EQ_OK;
	default: *ret_status = 0; return eq_error_set(err, EQ_ERR_NETWORK, "fuzz: no network");
	}
}

/* The entries eq_dir_numbers() counts as queued that the queue could have
 * removed (a folder it cannot). */
static size_t count_queued(const char *q)
{
	uint64_t *v = NULL;
	size_t n = 0, k = 0;
	if (eq_dir_numbers(q, ".json", EQ_REPORT_NAME_DIGITS, &v, &n, NULL) != EQ_OK)
		abort();
	for (size_t i = 0; i < n; i++) {
		char p[4096];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%020" PRIu64 ".json", q, v[i]);
		if (v[i] <= EQ_REPORT_SEQ_MAX && lstat(p, &st) == 0 && !S_ISDIR(st.st_mode))
			k++;
	}
	eq_free(v);
	return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	if (!quiet) {
		eq_log_set_level(EQ_LOG_ERR);
		quiet = true;
	}
	struct in in = {data, size};
	uint8_t mb = 0;
	if (!take(&in, &mb, 1))
		return 0;
	unsigned max = mb % 8u + 1u;
	char base[] = "/tmp/eq-fuzz-queue.XXXXXX";
	if (!mkdtemp(base))
		abort();
	char q[64], secret[64], p[512], t[512];
	snprintf(q, sizeof(q), "%s/q", base);
	snprintf(secret, sizeof(secret), "%s/secret", base);
	FILE *f = fopen(secret, "w");
	if (mkdir(q, 0700) != 0 || !f || fputs(SECRET "\n", f) < 0 || fclose(f) != 0)
		abort();
	struct sent_check c = {0};
	for (unsigned made = 0; made < MAX_ENTRIES && in.n;) {
		uint8_t type = 0, nm = 0;
		(void)take(&in, &type, 1);
		if (type == 0xff)
			break;
		if (!take(&in, &nm, 1))
			break;
		char name[64];
		if (nm % 2 == 0) {
			snprintf(name, sizeof(name), "%020" PRIu64 ".json", take_u64(&in));
		} else {
			uint8_t len = 0;
			(void)take(&in, &len, 1);
			len = (uint8_t)(len % 40u + 1u);
			memset(name, 0, sizeof(name));
			if (!take(&in, name, len))
				break;
			for (unsigned i = 0; i < len; i++)
				if (name[i] == '/' || name[i] == '\0')
					name[i] = '_';
			if (!strcmp(name, ".") || !strcmp(name, ".."))
				continue;
		}
		snprintf(p, sizeof(p), "%s/%s", q, name);
		struct stat st;
		if (lstat(p, &st) == 0)
			continue; /* a name given twice (a dangling symlink too) */
		switch (type % 5) {
		case 0: {
			uint8_t lb[2] = {0};
			(void)take(&in, lb, 2);
			size_t len = (size_t)(lb[0] | lb[1] << 8) % 5000u;
			if (len > in.n)
				len = in.n;
			int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
			if (fd < 0 || write(fd, in.p, len) != (ssize_t)len || close(fd) != 0)
				abort();
			c.marker_inside |= memmem(in.p, len, SECRET, strlen(SECRET)) != NULL;
			if (c.n < MAX_ENTRIES && (c.content[c.n] = malloc(len + 1))) {
				memcpy(c.content[c.n], in.p, len);
				c.len[c.n++] = len;
			}
			in.p += len;
			in.n -= len;
			break;
		}
		case 1:
			if (symlink(secret, p) != 0)
				abort();
			break;
		case 2:
			snprintf(t, sizeof(t), "%020" PRIu64 ".json", take_u64(&in));
			if (symlink(t, p) != 0)
				abort();
			break;
		case 3:
			if (mkdir(p, 0700) != 0)
				abort();
			break;
		default:
			if (mkfifo(p, 0600) != 0)
				abort();
			break;
		}
		made++;
	}
	c.script = in;

	/* Queueing two reports keeps both (the newer alone when the bound is
	 * 1), and keeps the queue within its bound. */
	static const char *const lines[] = {"{\"fuzz\":\"report A\"}\n", "{\"fuzz\":\"report B\"}\n"};
	struct eq_error e;
	eq_err r = EQ_OK;
	for (int k = 0; k < 2 && !r; k++) {
		if ((r = eq_report_queue(q, max, lines[k], strlen(lines[k]), &e)))
			break;
		if ((c.content[c.n] = malloc(strlen(lines[k]) + 1))) {
			memcpy(c.content[c.n], lines[k], strlen(lines[k]));
			c.len[c.n++] = strlen(lines[k]);
		}
		if (count_queued(q) > max) {
			fprintf(stderr, "fuzz_report_queue: %zu reports kept, bound %u\n", count_queued(q), max);
			abort();
		}
	}
	if (!r && (!queued(q, lines[1]) || (max >= 2 && !queued(q, lines[0])))) {
		fprintf(stderr, "fuzz_report_queue: a report just queued is gone (bound %u)\n", max);
		abort();
	}
	size_t sent = 0;
	r = eq_report_drain(q, max, send_cb, &c, "fuzz", &sent, &e);
	if (sent != c.ok || c.calls > max) {
		fprintf(stderr, "fuzz_report_queue: %zu sent, %zu answered 200, %zu sends for a bound of %u\n", sent,
			c.ok, c.calls, max);
		abort();
	}
	(void)r;
	for (size_t i = 0; i < c.n; i++)
		free(c.content[i]);
	if (eq_rm_rf(base, &e) != EQ_OK)
		abort();
	return 0;
}
