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
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/agent.h>

#include "curl_dl.h"

/* Queue files: 20 decimal digits (a sequence number) and ".json". */
#define NAME_DIGITS 20u

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
	fprintf(f, ",\"bytes\":%" PRIu64 ",\"seconds\":%.1f,\"agent\":", ev->bytes,
		ev->seconds >= 0 && ev->seconds < 1e9 ? ev->seconds : 0.0);
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

/* The queued sequence numbers, ascending (oldest first); *ret malloc'ed. */
static eq_err queue_list(const char *dir, uint64_t **ret, size_t *ret_n, struct eq_error *err)
{
	eq_err r = eq_dir_numbers(dir, ".json", NAME_DIGITS, ret, ret_n, err);
	return r ? eq_error_prefix(err, r, "report queue") : EQ_OK;
}

static char *queue_path(const char *dir, uint64_t seq)
{
	return eq_asprintf("%s/%0*" PRIu64 ".json", dir, (int)NAME_DIGITS, seq);
}

eq_err eq_report_queue(const char *dir, unsigned max, const char *line, size_t len, struct eq_error *err)
{
	eq_err r = eq_mkdir_p(dir, 0700, err);
	uint64_t *seqs = NULL;
	size_t n = 0;
	if (!r)
		r = queue_list(dir, &seqs, &n, err);
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

eq_err eq_report_flush(const struct eq_config *cfg, const char *dir, size_t *ret_sent, struct eq_error *err)
{
	*ret_sent = 0;
	if (!cfg->report_url)
		return EQ_OK;
	uint64_t *seqs = NULL;
	size_t n = 0;
	eq_err r = queue_list(dir, &seqs, &n, err);
	if (r || !n) {
		eq_free(seqs);
		return r;
	}
	CURL *h = NULL;
	if (!(r = eq_curl_load(err)) && !(h = curl_easy_init()))
		r = eq_error_set(err, EQ_ERR_NOMEM, "cannot create a libcurl handle");
	for (size_t i = 0; !r && i < n; i++) {
		EQ_AUTOFREE char *p = queue_path(dir, seqs[i]);
		uint8_t *body = NULL;
		size_t len = 0;
		if (!p) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
		eq_err fr = eq_file_read_all(p, EQ_REPORT_MAX_BYTES, &body, &len, err);
		if (fr) {
			/* A damaged queue file (a power cut mid-write is ruled out by
			 * the atomic write, but not a full disk's empty file) would
			 * block every later report: it goes. */
			eq_log(EQ_LOG_WARNING, "%s; dropping it", eq_error_msg(err));
			(void)unlink(p);
			continue;
		}
		long status = 0;
		/* The body without its newline: one JSON document per POST. */
		r = post_one(h, cfg, (const char *)body, len && body[len - 1] == '\n' ? len - 1 : len, &status, err);
		eq_free(body);
		if (!r && refused_for_good(status)) {
			/* This report, not the server or the network: kept, it would
			 * stop every later one until the queue dropped it. */
			eq_log(EQ_LOG_WARNING, "%s refused a report with %ld; dropping it", cfg->report_url, status);
			(void)unlink(p);
			continue;
		}
		if (!r && (status < 200 || status > 299))
			r = eq_error_set(err, EQ_ERR_NETWORK, "%s answered %ld", cfg->report_url, status);
		if (r)
			break;
		(void)unlink(p);
		(*ret_sent)++;
	}
	if (h)
		curl_easy_cleanup(h);
	eq_free(seqs);
	if (r)
		return eq_error_prefix(err, r, "%zu of %zu report(s) sent, the rest stay queued in %s", *ret_sent, n,
				       dir);
	return EQ_OK;
}
