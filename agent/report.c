/*
 * Device reports (docs/fleet.md, "Reports"): after each outcome the agent
 * writes one JSON line into a bounded queue folder, and sends what is
 * queued to [report] url with a POST whenever it can. A report never
 * blocks or fails an update: it is written after the outcome is saved,
 * sending stops at the first failure (the device is offline, the server
 * is down) and retries at the next outcome or poll, and a full queue drops
 * its oldest line.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/agent.h>

#include "curl_dl.h"
#include "policy.h"
#include "report.h"
#include "report_queue.h"

void eq_report_device_id(const char *id, char out[EQ_REPORT_ID_LEN + 1])
{
	/* machine-id(5) must not leave the device as it is: reports carry a
	 * hash of it, which the operator can compute from an inventory too. */
	char buf[EQ_DEVICE_ID_MAX + 32];
	int n = snprintf(buf, sizeof(buf), "eqota-report-id-1%c%s", 0, id);
	uint8_t h[EQ_SHA256_LEN];
	eq_sha256(buf, n > 0 && (size_t)n < sizeof(buf) ? (size_t)n : 0, h);
	eq_hex_encode(h, EQ_REPORT_ID_LEN / 2, out);
}

const char *eq_report_kind_name(enum eq_report_kind k)
{
	switch (k) {
	case EQ_REPORT_INSTALLED: return "installed";
	case EQ_REPORT_COMMITTED: return "committed";
	case EQ_REPORT_ROLLED_BACK: return "rolled_back";
	case EQ_REPORT_FAILED: return "failed";
	}
	return "?";
}

static void put_release(FILE *f, uint64_t number, const char *name)
{
	if (!number) {
		fputs("null", f);
		return;
	}
	fputs("{\"release\":", f);
	eq_json_put_str(f, name ? name : "");
	fprintf(f, ",\"number\":%" PRIu64 "}", number);
}

eq_err eq_report_format(const struct eq_report_event *ev, char out[EQ_REPORT_MAX_BYTES], size_t *ret_len,
			struct eq_error *err)
{
	FILE *f = fmemopen(out, EQ_REPORT_MAX_BYTES, "w");
	if (!f)
		return eq_error_errno(err, EQ_ERR_NOMEM, "report");
	/* fmemopen's own buffering would hide a short write until fclose. */
	setvbuf(f, NULL, _IONBF, 0);
	fprintf(f, "{\"schema\":\"" EQ_REPORT_SCHEMA "\",\"time\":%lld,\"device\":", (long long)ev->time);
	if (ev->device)
		eq_json_put_str(f, ev->device);
	else
		fputs("null", f);
	fputs(",\"board\":", f);
	eq_json_put_str(f, ev->board);
	fputs(",\"channel\":", f);
	eq_json_put_str(f, ev->channel);
	fprintf(f, ",\"event\":\"%s\",\"from\":", eq_report_kind_name(ev->kind));
	put_release(f, ev->from_number, ev->from_release);
	fputs(",\"to\":", f);
	put_release(f, ev->to_number, ev->to_release);
	fputs(",\"reason\":", f);
	if (ev->reason)
		eq_json_put_str(f, ev->reason);
	else
		fputs("null", f);
	fprintf(f, ",\"bytes\":%" PRIu64, ev->bytes);
	if (ev->has_component_bytes)
		fprintf(f, ",\"component_bytes\":%" PRIu64, ev->component_bytes);
	fprintf(f, ",\"seconds\":%.1f,\"agent\":", ev->seconds >= 0 && ev->seconds < 1e9 ? ev->seconds : 0.0);
	eq_json_put_str(f, ev->agent ? ev->agent : "");
	fputs("}\n", f);
	long len = ftell(f);
	bool bad = ferror(f) || len <= 0 || (size_t)len >= EQ_REPORT_MAX_BYTES;
	fclose(f);
	if (bad)
		return eq_error_set(err, EQ_ERR_LIMIT, "report: longer than %u bytes", EQ_REPORT_MAX_BYTES);
	out[len] = '\0';
	*ret_len = (size_t)len;
	return EQ_OK;
}

static char *queue_path(const char *dir, uint64_t seq)
{
	return eq_asprintf("%s/%0*" PRIu64 ".json", dir, (int)EQ_REPORT_NAME_DIGITS, seq);
}

/* The queued sequence numbers, ascending (oldest first); *ret malloc'ed. */
static eq_err queue_list(const char *dir, uint64_t **ret, size_t *ret_n, struct eq_error *err)
{
	eq_err r = eq_dir_numbers(dir, ".json", EQ_REPORT_NAME_DIGITS, ret, ret_n, err);
	return r ? eq_error_prefix(err, r, "report queue") : EQ_OK;
}

/* Names near the top of the 64 bits were not written by eqota, whose
 * numbers start at 1 and grow by one per report, but the next number
 * would wrap around below the queue's oldest: the queue is numbered
 * 0, 1, 2... again, in its order. Renaming in ascending order never
 * lands on a name in use (seqs[i] >= i) and keeps the order at every
 * step, so a power cut half-way leaves a queue in order too. */
static void queue_renumber(const char *dir, uint64_t *seqs, size_t n)
{
	eq_log(EQ_LOG_WARNING, "report queue %s: names up to %" PRIu64 " were not written by eqota; numbering it again",
	       dir, seqs[n - 1]);
	for (size_t i = 0; i < n; i++) {
		if (seqs[i] == i)
			continue;
		EQ_AUTOFREE char *from = queue_path(dir, seqs[i]);
		EQ_AUTOFREE char *to = queue_path(dir, i);
		if (from && to && rename(from, to) == 0)
			seqs[i] = i;
	}
}

/* One queue file, never through a symlink, never blocking on a FIFO;
 * *ret (eq_free) holds at most EQ_REPORT_MAX_BYTES. */
static eq_err queue_read(const char *path, uint8_t **ret, size_t *ret_len, struct eq_error *err)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return eq_error_errno(err, errno == ELOOP ? EQ_ERR_UNSAFE : EQ_ERR_IO, "report '%s'", path);
	struct stat st;
	eq_err r = EQ_OK;
	uint8_t *buf = NULL;
	size_t n = 0;
	if (fstat(fd, &st) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "report '%s'", path);
	else if (!S_ISREG(st.st_mode))
		r = eq_error_set(err, EQ_ERR_UNSAFE, "report '%s': not a plain file (mode %o)", path,
				 (unsigned)st.st_mode);
	else if (!(buf = eq_malloc(EQ_REPORT_MAX_BYTES + 1)))
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	while (!r) {
		ssize_t k = read(fd, buf + n, EQ_REPORT_MAX_BYTES + 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			r = eq_error_errno(err, EQ_ERR_IO, "report '%s'", path);
		else if (k == 0)
			break;
		else if ((n += (size_t)k) > EQ_REPORT_MAX_BYTES)
			r = eq_error_set(err, EQ_ERR_LIMIT, "report '%s': longer than %u bytes", path,
					 EQ_REPORT_MAX_BYTES);
	}
	close(fd);
	if (!r && n == 0)
		r = eq_error_set(err, EQ_ERR_PARSE, "report '%s': empty", path);
	if (r) {
		eq_free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = n;
	return EQ_OK;
}

eq_err eq_report_queue(const char *dir, unsigned max, const char *line, size_t len, struct eq_error *err)
{
	eq_err r = eq_mkdir_p(dir, 0700, err);
	uint64_t *seqs = NULL;
	size_t n = 0;
	if (!r)
		r = queue_list(dir, &seqs, &n, err);
	if (!r && n && seqs[n - 1] >= EQ_REPORT_SEQ_MAX) {
		queue_renumber(dir, seqs, n);
		eq_free(seqs);
		seqs = NULL;
		r = queue_list(dir, &seqs, &n, err);
		if (!r && n && seqs[n - 1] == UINT64_MAX)
			r = eq_error_set(err, EQ_ERR_IO, "report queue %s: cannot number it again", dir);
	}
	/* Bounded: the oldest reports go first, the newest outcome says most. */
	for (size_t i = 0; !r && max && n - i >= max; i++) {
		EQ_AUTOFREE char *p = queue_path(dir, seqs[i]);
		if (p && unlink(p) == 0)
			eq_log(EQ_LOG_INFO, "report queue %s is full (%u): dropped the oldest report", dir, max);
	}
	uint64_t next = n ? seqs[n - 1] + 1 : 1;
	eq_free(seqs);
	if (r)
		return r;
	EQ_AUTOFREE char *p = queue_path(dir, next);
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	return eq_file_replace_atomic(p, line, len, 0600, err);
}

static size_t discard_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	(void)ptr;
	(void)ud;
	return size * nmemb;
}

/* One POST of @body; *ret_status the HTTP status (0 without an answer). */
static eq_err post_one(CURL *h, const struct eq_config *cfg, const char *body, size_t len, long *ret_status,
		       struct eq_error *err)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	if (!hdr)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	bool https = strncmp(cfg->report_url, "https://", 8) == 0;
	CURLcode c = CURLE_OK;
#define OPT(o, v)                                                                                                      \
	do {                                                                                                           \
		if (c == CURLE_OK)                                                                                     \
			c = curl_easy_setopt(h, o, v);                                                                 \
	} while (0)
	OPT(CURLOPT_URL, cfg->report_url);
	OPT(CURLOPT_ERRORBUFFER, errbuf);
	OPT(CURLOPT_NOSIGNAL, 1L);
	OPT(CURLOPT_USERAGENT, "eqota");
	OPT(CURLOPT_PROTOCOLS_STR, https ? "https" : "http");
	OPT(CURLOPT_FOLLOWLOCATION, 0L);
	OPT(CURLOPT_POST, 1L);
	OPT(CURLOPT_POSTFIELDS, body);
	OPT(CURLOPT_POSTFIELDSIZE, (long)len);
	OPT(CURLOPT_HTTPHEADER, hdr);
	OPT(CURLOPT_CONNECTTIMEOUT, (long)cfg->report_timeout_s);
	OPT(CURLOPT_TIMEOUT, (long)cfg->report_timeout_s);
	OPT(CURLOPT_SSL_VERIFYPEER, 1L);
	OPT(CURLOPT_SSL_VERIFYHOST, 2L);
	OPT(CURLOPT_WRITEFUNCTION, discard_cb);
	if (cfg->report_ca_file)
		OPT(CURLOPT_CAINFO, cfg->report_ca_file);
	if (cfg->report_cert)
		OPT(CURLOPT_SSLCERT, cfg->report_cert);
	if (cfg->report_key)
		OPT(CURLOPT_SSLKEY, cfg->report_key);
#undef OPT
	if (c == CURLE_OK)
		c = curl_easy_perform(h);
	long status = 0;
	(void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	(void)curl_easy_setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
	curl_slist_free_all(hdr);
	*ret_status = status;
	if (c != CURLE_OK)
		return eq_error_set(err, EQ_ERR_NETWORK, "%s: %s", cfg->report_url,
				    errbuf[0] ? errbuf : curl_easy_strerror(c));
	return EQ_OK;
}

/* Answers that refuse the report itself (malformed, too large, not
 * understood). Others (401 and 403: credentials; 404: a wrong URL; 408,
 * 429 and 5xx: for now) say nothing against it: it stays queued. */
static bool refused_for_good(long status)
{
	return status == 400 || status == 413 || status == 415 || status == 422;
}

eq_err eq_report_drain(const char *dir, unsigned max, eq_report_send_fn send, void *ctx, const char *what,
		       size_t *ret_sent, struct eq_error *err)
{
	*ret_sent = 0;
	uint64_t *seqs = NULL;
	size_t n = 0;
	eq_err r = queue_list(dir, &seqs, &n, err);
	if (!r && max && n > max)
		n = max;
	for (size_t i = 0; !r && i < n; i++) {
		EQ_AUTOFREE char *p = queue_path(dir, seqs[i]);
		uint8_t *body = NULL;
		size_t len = 0;
		if (!p) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
		eq_err fr = queue_read(p, &body, &len, err);
		if (fr == EQ_ERR_NOMEM) {
			r = fr;
			break;
		}
		if (fr) {
			/* A damaged queue file (a power cut mid-write is ruled out by
			 * the atomic write, but not a full disk's empty file) would
			 * block every later report, and a planted one is not ours to
			 * send: it goes. */
			eq_log(EQ_LOG_WARNING, "%s; dropping it", eq_error_msg(err));
			(void)unlink(p);
			continue;
		}
		long status = 0;
		/* The body without its newline: one JSON document per POST. */
		r = send(ctx, (const char *)body, body[len - 1] == '\n' ? len - 1 : len, &status, err);
		eq_free(body);
		if (!r && refused_for_good(status)) {
			/* This report, not the server or the network: kept, it would
			 * stop every later one until the queue dropped it. */
			eq_log(EQ_LOG_WARNING, "%s refused a report with %ld; dropping it", what, status);
			(void)unlink(p);
			continue;
		}
		if (!r && (status < 200 || status > 299))
			r = eq_error_set(err, EQ_ERR_NETWORK, "%s answered %ld", what, status);
		if (r)
			break;
		(void)unlink(p);
		(*ret_sent)++;
	}
	eq_free(seqs);
	if (r)
		return eq_error_prefix(err, r, "%zu of %zu report(s) sent, the rest stay queued in %s", *ret_sent, n,
				       dir);
	return EQ_OK;
}

/* The POST, with libcurl loaded at the first report only: an empty queue
 * costs no handle. */
struct poster {
	const struct eq_config *cfg;
	CURL *h;
};

static eq_err post_cb(void *ctx, const char *body, size_t len, long *ret_status, struct eq_error *err)
{
	struct poster *p = ctx;
	if (!p->h) {
		eq_err r = eq_curl_load(err);
		if (r)
			return r;
		if (!(p->h = curl_easy_init()))
			return eq_error_set(err, EQ_ERR_NOMEM, "cannot create a libcurl handle");
	}
	return post_one(p->h, p->cfg, body, len, ret_status, err);
}

eq_err eq_report_flush(const struct eq_config *cfg, const char *dir, size_t *ret_sent, struct eq_error *err)
{
	*ret_sent = 0;
	if (!cfg->report_url)
		return EQ_OK;
	struct poster p = {cfg, NULL};
	eq_err r = eq_report_drain(dir, cfg->report_queue, post_cb, &p, cfg->report_url, ret_sent, err);
	if (p.h)
		curl_easy_cleanup(p.h);
	return r;
}
