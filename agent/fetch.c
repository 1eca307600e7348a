/*
 * Downloads from the repository with libcurl: the manifest (conditional
 * GET) and objects (resumable, capped at the declared size, hash checked).
 * One easy handle is reused so that a run of object downloads shares one
 * keep-alive connection. CURLcode is translated to EQ_ERR_NETWORK here and
 * nowhere else (STYLE 13).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "curl_dl.h"
#include "fetch.h"
#include "http_header.h"

#include <eq/agent.h>
#include <eq/repo_layout.h>

#define VALIDATORS_NAME "manifest.validators"
#define VALIDATORS_MAX_BYTES 4096u
#define HEADER_VALUE_MAX EQ_HTTP_VALUE_MAX
#define BACKOFF_CAP_MS 60000u
#define PROGRESS_INTERVAL_S 0.2
#define DEADLINE_MAX_S (7u * 86400u)

struct eq_fetcher {
	char *base_url;        /* without trailing '/' */
	char *board, *channel; /* names the repository layout checked */
	char *manifest_rel, *sig_rel;
	char *dir;
	char *validators_path;
	unsigned retries, retry_delay_ms;
	unsigned min_rate, low_speed_time_s, connect_timeout_s;
	char scheme[8]; /* the configured URL's: no other is ever spoken */
	CURL *curl;
	char errbuf[CURL_ERROR_SIZE];
	eq_progress_fn progress;
	void *progress_ctx;
	const volatile sig_atomic_t *stop;
	struct eq_fetch_stats stats;
	/* validators of the last 200 answer, written by _commit */
	bool pending;
	char *pending_etag, *pending_lastmod;
	bool forgotten; /* do not send validators until the next commit */
	uint64_t rng;
};

/* Where the body of one request goes, and what its headers said. */
struct xfer {
	struct eq_fetcher *f;
	const char *url, *rel;
	bool head; /* a HEAD request: only the status counts */
	/* memory sink (manifest, .sig) */
	struct eq_buf *mem;
	/* file sink (objects) */
	int fd;
	const char *part; /* its path, for errors */
	uint64_t have;    /* bytes already in the .part when the request started */
	uint64_t cap;     /* most bytes the whole file may have */
	bool range;       /* a Range request for bytes have- was sent */
	bool is_file;     /* file:// URL: no status line, curl applies the range itself */
	/* headers of the current response (reset at each status line, so the
	 * last of a redirect chain wins): parsed into hdr, and the fields the
	 * other callbacks read copied out by header_cb */
	struct eq_http_header hdr;
	long status;
	bool content_range;
	uint64_t range_start;
	bool has_length;
	uint64_t length;
	char etag[HEADER_VALUE_MAX], lastmod[HEADER_VALUE_MAX];
	/* outcome of the callbacks */
	bool error_body; /* the body of a non-2xx answer began: not read */
	bool body_started;
	uint64_t received; /* body bytes kept by this request */
	eq_err cb_err;     /* set when a callback aborted the transfer */
	struct eq_error cb_error;
	double last_progress_s;
	double started_s;
	/* .part bytes not yet on stable storage, and when they last were */
	uint64_t unsynced;
	double last_sync_s;
};

/* A power cut loses what the page cache held: the .part is synced at least
 * this often while a download runs (and when it stalls), so a device that
 * loses power mid-download resumes from there instead of starting over. */
#define PART_SYNC_INTERVAL_S 1.0

/* ---- small helpers ------------------------------------------------------ */

static uint64_t rng_next(struct eq_fetcher *f)
{
	/* xorshift64: jitter only, never security relevant */
	uint64_t x = f->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	f->rng = x;
	return x;
}

static bool stopping(const struct eq_fetcher *f)
{
	return f->stop && *f->stop;
}

/* In slices of at most 100 ms: a stop request ends the wait. */
static void sleep_ms(const struct eq_fetcher *f, uint64_t ms)
{
	while (ms > 0 && !stopping(f)) {
		uint64_t n = ms < 100u ? ms : 100u;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)n * 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stopping(f)) {
		}
		ms -= n;
	}
}

/* Exponential backoff before retry @attempt (1-based): the configured delay
 * doubled each time, capped, plus up to 1/8 jitter so a fleet that failed
 * together does not retry together. EQ_ERR_STOPPED when a stop ended it. */
static eq_err backoff(struct eq_fetcher *f, unsigned attempt, const char *rel, struct eq_error *err)
{
	uint64_t ms = f->retry_delay_ms;
	for (unsigned i = 1; i < attempt && ms < BACKOFF_CAP_MS; i++)
		ms *= 2u;
	if (ms > BACKOFF_CAP_MS)
		ms = BACKOFF_CAP_MS;
	ms += rng_next(f) % (ms / 8u + 1u);
	eq_log(EQ_LOG_DEBUG, "fetch: retry %u in %" PRIu64 " ms", attempt, ms);
	sleep_ms(f, ms);
	if (stopping(f))
		return eq_error_set(err, EQ_ERR_STOPPED, "stopped on request while waiting to retry %s", rel);
	return EQ_OK;
}

/* Repository paths come from a verified manifest, but they still become
 * URLs and the file names below our directory. */
static bool safe_rel_path(const char *p)
{
	if (!*p || *p == '/' || strstr(p, "..") || strlen(p) > 1024)
		return false;
	for (const char *q = p; *q; q++) {
		char c = *q;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
		      c == '.' || c == '_' || c == '-' || c == '+'))
			return false;
	}
	return true;
}

/* ---- curl callbacks ----------------------------------------------------- */

static eq_err abort_with(struct xfer *x, eq_err code)
{
	x->cb_err = code;
	return code;
}

static uint64_t sink_total(const struct xfer *x)
{
	return x->mem ? x->mem->len : x->have + x->received;
}

/* A 206 to our Range request must start where the .part ends; otherwise
 * the transfer is aborted with a (retried) network error and true is
 * returned. */
static bool wrong_range(struct xfer *x)
{
	if (x->is_file || x->status != 206 || !x->range || (x->content_range && x->range_start == x->have))
		return false;
	(void)abort_with(x, eq_error_set(&x->cb_error, EQ_ERR_NETWORK,
					 "%s: asked for bytes from %" PRIu64
					 " but the server sent a range starting at %" PRIu64,
					 x->url, x->have, x->content_range ? x->range_start : 0));
	return true;
}

/* The parsing is eq_http_header_parse()'s. The rest of this file reads
 * x's own copies of the fields (status, length, range start, validators),
 * refreshed here from x->hdr for each line that changed them. */
static size_t header_cb(char *buf, size_t size, size_t nitems, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * nitems;
	const struct eq_http_header *h = &x->hdr;
	enum eq_http_line kind = eq_http_header_parse(&x->hdr, buf, len);
	if (kind == EQ_HTTP_LINE_STATUS)
		x->status = h->status;
	if (kind == EQ_HTTP_LINE_STATUS || kind == EQ_HTTP_LINE_LENGTH) {
		x->has_length = h->has_length;
		x->length = h->length;
	}
	if (kind == EQ_HTTP_LINE_STATUS || kind == EQ_HTTP_LINE_RANGE) {
		x->content_range = h->has_range;
		x->range_start = h->range_start;
	}
	if (kind == EQ_HTTP_LINE_STATUS || kind == EQ_HTTP_LINE_ETAG)
		memcpy(x->etag, h->etag, strlen(h->etag) + 1);
	if (kind == EQ_HTTP_LINE_STATUS || kind == EQ_HTTP_LINE_LAST_MODIFIED)
		memcpy(x->lastmod, h->last_modified, strlen(h->last_modified) + 1);
	/* End of a header block: refuse a range we did not ask for, then an
	 * announced oversize body, before a byte of it arrives. The range
	 * comes first: one that starts before ours also reads as oversize
	 * from our offset, which is neither the right message nor final. */
	if (kind == EQ_HTTP_LINE_END && wrong_range(x))
		return 0;
	if (kind == EQ_HTTP_LINE_END && !eq_http_header_body_fits(h, x->have, x->cap)) {
		if (x->mem)
			eq_error_set(&x->cb_error, EQ_ERR_LIMIT,
				     "%s: server sent more than the limit of %" PRIu64
				     " bytes for %s (Content-Length %" PRIu64 ")",
				     x->url, x->cap, x->rel, x->length);
		else
			eq_error_set(&x->cb_error, EQ_ERR_LIMIT,
				     "%s: server sent more than the %" PRIu64
				     " bytes the manifest declares for %s (Content-Length %" PRIu64
				     " from byte %" PRIu64 ")",
				     x->url, x->cap, x->rel, x->length, x->status == 206 ? x->have : 0);
		(void)abort_with(x, EQ_ERR_LIMIT);
		return 0;
	}
	return len;
}

static void report_progress(struct xfer *x, bool final)
{
	struct eq_fetcher *f = x->f;
	if (!f->progress)
		return;
	double now = eq_now_s();
	if (!final && now - x->last_progress_s < PROGRESS_INTERVAL_S)
		return;
	x->last_progress_s = now;
	struct eq_progress p = {
		.what = "download",
		.item = x->rel,
		.bytes_done = sink_total(x),
		/* the manifest's cap is no size: report what the server announced */
		.bytes_total = x->mem ? (x->has_length ? x->length : 0) : x->cap,
		.elapsed_s = now - x->started_s,
	};
	f->progress(&p, f->progress_ctx);
}

/* First body bytes of a file download: decide whether they continue the
 * .part (206 at the right offset) or replace it (200). */
static bool start_body(struct xfer *x)
{
	x->body_started = true;
	if (x->is_file || x->status == 206)
		return !wrong_range(x);
	if (x->range) {
		/* 200 to a Range request: the server ignored the range and sends
		 * the whole file, so the .part starts over. */
		eq_log(EQ_LOG_DEBUG, "fetch: %s ignored the range, starting over", x->url);
		if (ftruncate(x->fd, 0) != 0) {
			(void)abort_with(
				x, eq_error_errno(&x->cb_error, EQ_ERR_IO, "cannot truncate the .part of %s", x->rel));
			return false;
		}
		x->have = 0;
		x->range = false;
	}
	return true;
}

/* The transfer ends at once; the bytes already in an object's .part stay
 * (they were written through), so the next start resumes from there. */
static bool abort_if_stopping(struct xfer *x)
{
	if (!stopping(x->f))
		return false;
	(void)abort_with(x, eq_error_set(&x->cb_error, EQ_ERR_STOPPED,
					 "stopped on request while downloading %s (%" PRIu64 " of %" PRIu64 " bytes%s)",
					 x->rel, sink_total(x), x->cap,
					 x->mem ? "" : "; the part downloaded stays and is resumed"));
	return true;
}

static size_t write_cb(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * nmemb;
	if (abort_if_stopping(x))
		return 0;
	x->f->stats.bytes += len;
	if (!x->is_file && x->status != 200 && x->status != 206) {
		/* An error page: the status tells what happened, and a server
		 * could send it without end. Not one byte of it is read. */
		x->error_body = true;
		return 0;
	}
	if (x->mem) {
		if (eq_buf_append(x->mem, buf, len, &x->cb_error) != EQ_OK) {
			if (x->cb_error.code == EQ_ERR_LIMIT)
				eq_error_set(&x->cb_error, EQ_ERR_LIMIT,
					     "%s: server sent more than the limit of %" PRIu64 " bytes for %s", x->url,
					     x->cap, x->rel);
			(void)abort_with(x, x->cb_error.code);
			return 0;
		}
		report_progress(x, false);
		return len;
	}
	if (!x->body_started && !start_body(x))
		return 0;
	if (len > x->cap - x->have - x->received) {
		(void)abort_with(x, eq_error_set(&x->cb_error, EQ_ERR_LIMIT,
						 "%s: server sent more than the %" PRIu64
						 " bytes the manifest declares for %s",
						 x->url, x->cap, x->rel));
		return 0;
	}
	if (eq_write_all(x->fd, buf, len, &x->cb_error) != EQ_OK) {
		/* Name the file: "No space left on device" alone does not say
		 * which file system is full. */
		(void)abort_with(x, eq_error_prefix(&x->cb_error, x->cb_error.code, "%s", x->part));
		return 0;
	}
	x->received += len;
	x->unsynced += len;
	report_progress(x, false);
	return len;
}

/* curl calls this about once a second even while no data comes, which is
 * when a stalled download's last bytes must reach the disk. */
static int xferinfo_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	struct xfer *x = ud;
	if (abort_if_stopping(x))
		return 1;
	if (x->mem || x->fd < 0 || !x->unsynced)
		return 0;
	double now = eq_now_s();
	if (now - x->last_sync_s < PART_SYNC_INTERVAL_S)
		return 0;
	if (fdatasync(x->fd) != 0) {
		(void)abort_with(x, eq_error_errno(&x->cb_error, EQ_ERR_IO, "cannot sync the .part of %s", x->rel));
		return 1;
	}
	x->unsynced = 0;
	x->last_sync_s = now;
	return 0;
}

/* ---- one request -------------------------------------------------------- */

/* Whether a failed request is worth repeating. */
enum outcome { OUT_OK, OUT_RETRY, OUT_FAIL };

#define SETOPT(f, opt, val)                                                                                            \
	do {                                                                                                           \
		CURLcode rc_ = curl_easy_setopt((f)->curl, opt, val);                                                  \
		if (rc_ != CURLE_OK)                                                                                   \
			return eq_error_set(err, EQ_ERR_NETWORK, "curl option %s: %s", #opt, curl_easy_strerror(rc_)); \
	} while (0)

/*
 * Performs one GET of @x->url into @x's sink. Returns EQ_OK for a 2xx (or
 * 304 when @allow_304) answer with *ret_status set; otherwise an error with
 * *ret_outcome saying whether to retry.
 */
static eq_err perform(struct eq_fetcher *f, struct xfer *x, struct curl_slist *headers, long *ret_status,
		      enum outcome *ret_outcome, struct eq_error *err)
{
	char range[32];
	*ret_outcome = OUT_FAIL;
	x->f = f;
	x->status = 0;
	x->error_body = false;
	x->cb_err = EQ_OK;
	eq_error_clear(&x->cb_error);
	x->started_s = x->last_progress_s = x->last_sync_s = eq_now_s();
	x->unsynced = 0;
	f->errbuf[0] = '\0';
	SETOPT(f, CURLOPT_URL, x->url);
	SETOPT(f, CURLOPT_HTTPHEADER, headers);
	if (x->head)
		SETOPT(f, CURLOPT_NOBODY, 1L);
	else
		SETOPT(f, CURLOPT_HTTPGET, 1L);
	if (x->range) {
		snprintf(range, sizeof(range), "%" PRIu64 "-", x->have);
		SETOPT(f, CURLOPT_RANGE, range);
	} else {
		SETOPT(f, CURLOPT_RANGE, (char *)NULL);
	}
	/* A deadline for the whole request, from the most it may carry at
	 * the lowest rate allowed: a server that trickles just above the
	 * low-speed limit still ends. */
	uint64_t left = x->cap > x->have ? x->cap - x->have : 0;
	uint64_t deadline = f->connect_timeout_s + f->low_speed_time_s + left / f->min_rate;
	/* curl takes at most INT_MAX / 1000 s; a week is the cap anyway. */
	SETOPT(f, CURLOPT_TIMEOUT, (long)(deadline < DEADLINE_MAX_S ? deadline : DEADLINE_MAX_S));
	SETOPT(f, CURLOPT_WRITEDATA, x);
	SETOPT(f, CURLOPT_HEADERDATA, x);
	SETOPT(f, CURLOPT_XFERINFODATA, x);

	f->stats.requests++;
	CURLcode rc = curl_easy_perform(f->curl);
	/* The handle outlives this call: drop pointers to our stack now. */
	(void)curl_easy_setopt(f->curl, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
	(void)curl_easy_setopt(f->curl, CURLOPT_WRITEDATA, (void *)NULL);
	(void)curl_easy_setopt(f->curl, CURLOPT_HEADERDATA, (void *)NULL);
	(void)curl_easy_setopt(f->curl, CURLOPT_XFERINFODATA, (void *)NULL);

	if (x->cb_err != EQ_OK) {
		if (err)
			*err = x->cb_error;
		/* a wrong Content-Range is a server hiccup worth one more try */
		*ret_outcome = x->cb_err == EQ_ERR_NETWORK ? OUT_RETRY : OUT_FAIL;
		return x->cb_err;
	}
	long status = 0;
	(void)curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &status);
	if (rc == CURLE_WRITE_ERROR && x->error_body)
		rc = CURLE_OK; /* cut on purpose, the status is what counts */
	if (rc == CURLE_UNSUPPORTED_PROTOCOL)
		return eq_error_set(err, EQ_ERR_NETWORK,
				    "%s: redirect refused: the repository is %s:// and is never continued over another "
				    "protocol (%s)",
				    x->url, f->scheme, f->errbuf[0] ? f->errbuf : curl_easy_strerror(rc));
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		*ret_outcome = OUT_RETRY;
		return eq_error_set(err, EQ_ERR_NETWORK,
				    "%s: too slow: %s (below %u bytes/s for %u s, or past the deadline for %" PRIu64
				    " bytes); see [repository] min-rate",
				    x->url, f->errbuf[0] ? f->errbuf : curl_easy_strerror(rc), f->min_rate,
				    f->low_speed_time_s, left);
	}
	if (rc != CURLE_OK) {
		if (rc == CURLE_FILE_COULDNT_READ_FILE) {
			return eq_error_set(err, EQ_ERR_NOTFOUND, "%s: %s%s%s", x->url, curl_easy_strerror(rc),
					    f->errbuf[0] ? ": " : "", f->errbuf);
		}
		/* Option and protocol refusals will not get better by retrying. */
		if (rc != CURLE_UNSUPPORTED_PROTOCOL && rc != CURLE_URL_MALFORMAT && rc != CURLE_TOO_MANY_REDIRECTS &&
		    rc != CURLE_SSL_CACERT_BADFILE && rc != CURLE_PEER_FAILED_VERIFICATION)
			*ret_outcome = OUT_RETRY;
		return eq_error_set(err, EQ_ERR_NETWORK, "%s: %s%s%s", x->url, curl_easy_strerror(rc),
				    f->errbuf[0] ? ": " : "", f->errbuf);
	}
	if (x->is_file)
		status = x->range ? 206 : 200;
	if (status == 404 || status == 410)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "%s: HTTP %ld", x->url, status);
	if (status >= 500) {
		*ret_outcome = OUT_RETRY;
		return eq_error_set(err, EQ_ERR_NETWORK, "%s: HTTP %ld", x->url, status);
	}
	if (status != 200 && status != 206 && status != 304)
		return eq_error_set(err, EQ_ERR_NETWORK, "%s: unexpected HTTP %ld", x->url, status);
	*ret_status = status;
	*ret_outcome = OUT_OK;
	return EQ_OK;
}

/* ---- lifecycle ---------------------------------------------------------- */

void eq_fetcher_free(struct eq_fetcher *f)
{
	if (!f)
		return;
	if (f->curl)
		curl_easy_cleanup(f->curl);
	eq_free(f->base_url);
	eq_free(f->board);
	eq_free(f->channel);
	eq_free(f->manifest_rel);
	eq_free(f->sig_rel);
	eq_free(f->dir);
	eq_free(f->validators_path);
	eq_free(f->pending_etag);
	eq_free(f->pending_lastmod);
	eq_free(f);
}

#undef SETOPT
#define SETOPT(opt, val)                                                                                               \
	do {                                                                                                           \
		CURLcode rc_ = curl_easy_setopt(f->curl, opt, val);                                                    \
		if (rc_ != CURLE_OK) {                                                                                 \
			r = eq_error_set(err, EQ_ERR_NETWORK, "curl option %s: %s", #opt, curl_easy_strerror(rc_));    \
			goto out;                                                                                      \
		}                                                                                                      \
	} while (0)

eq_err eq_fetcher_new(const struct eq_config *cfg, const char *download_dir, struct eq_fetcher **ret,
		      struct eq_error *err)
{
	eq_err r = eq_curl_load(err);
	if (r)
		return r;
	struct eq_fetcher *f = eq_calloc(1, sizeof(*f));
	if (!f)
		return eq_error_set(err, EQ_ERR_NOMEM, "fetcher: out of memory");
	f->retries = cfg->retries;
	f->min_rate = cfg->min_rate ? cfg->min_rate : 1;
	f->low_speed_time_s = cfg->low_speed_time_s;
	f->connect_timeout_s = cfg->connect_timeout_s;
	f->retry_delay_ms = cfg->retry_delay_ms ? cfg->retry_delay_ms : 1;
	f->rng = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)f;
	if (!f->rng)
		f->rng = 1;
	f->base_url = eq_strdup(cfg->url);
	if ((r = eq_layout_channel(NULL, cfg->board, cfg->channel, EQ_LAYOUT_MANIFEST, &f->manifest_rel, err)) ||
	    (r = eq_layout_channel(NULL, cfg->board, cfg->channel, EQ_LAYOUT_MANIFEST_SIG, &f->sig_rel, err)))
		goto out;
	f->board = eq_strdup(cfg->board);
	f->channel = eq_strdup(cfg->channel);
	f->dir = eq_strdup(download_dir);
	f->validators_path = eq_asprintf("%s/" VALIDATORS_NAME, download_dir);
	if (!f->base_url || !f->board || !f->channel || !f->dir || !f->validators_path) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "fetcher: out of memory");
		goto out;
	}
	size_t l = strlen(f->base_url);
	while (l > 0 && f->base_url[l - 1] == '/')
		f->base_url[--l] = '\0';
	if ((r = eq_mkdir_p(download_dir, 0700, err)) != EQ_OK)
		goto out;

	if (!(f->curl = curl_easy_init())) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "fetcher: curl_easy_init failed");
		goto out;
	}
	SETOPT(CURLOPT_ERRORBUFFER, f->errbuf);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_USERAGENT, "eqota");
	/* The configured scheme only, redirects included: an https
	 * repository is never continued over plain http. */
	const char *colon = strstr(f->base_url, "://");
	size_t sl = colon ? (size_t)(colon - f->base_url) : 0;
	if (sl == 0 || sl >= sizeof(f->scheme)) {
		r = eq_error_set(err, EQ_ERR_INVAL, "fetcher: url '%.200s' has no scheme", f->base_url);
		goto out;
	}
	for (size_t k = 0; k < sl; k++)
		f->scheme[k] = (char)(f->base_url[k] | 0x20);
	f->scheme[sl] = '\0';
	if (strcmp(f->scheme, "http") && strcmp(f->scheme, "https") && strcmp(f->scheme, "file")) {
		r = eq_error_set(err, EQ_ERR_UNSUPPORTED,
				 "fetcher: url scheme '%s' is not supported (http, https, file)", f->scheme);
		goto out;
	}
	SETOPT(CURLOPT_PROTOCOLS_STR, f->scheme);
	SETOPT(CURLOPT_REDIR_PROTOCOLS_STR, f->scheme);
	SETOPT(CURLOPT_FOLLOWLOCATION, 1L);
	SETOPT(CURLOPT_MAXREDIRS, 5L);
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	if (cfg->ca_file)
		SETOPT(CURLOPT_CAINFO, cfg->ca_file);
	SETOPT(CURLOPT_CONNECTTIMEOUT, (long)cfg->connect_timeout_s);
	SETOPT(CURLOPT_LOW_SPEED_LIMIT, (long)f->min_rate);
	SETOPT(CURLOPT_LOW_SPEED_TIME, (long)cfg->low_speed_time_s);
	SETOPT(CURLOPT_FAILONERROR, 0L);
	SETOPT(CURLOPT_HEADERFUNCTION, header_cb);
	SETOPT(CURLOPT_WRITEFUNCTION, write_cb);
	SETOPT(CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
	SETOPT(CURLOPT_NOPROGRESS, 0L);
	*ret = f;
	return EQ_OK;
out:
	eq_fetcher_free(f);
	return r;
}
#undef SETOPT

void eq_fetcher_set_stop(struct eq_fetcher *f, const volatile sig_atomic_t *flag)
{
	f->stop = flag;
}

void eq_fetcher_set_progress(struct eq_fetcher *f, eq_progress_fn fn, void *ctx)
{
	f->progress = fn;
	f->progress_ctx = ctx;
}

void eq_fetcher_stats(const struct eq_fetcher *f, struct eq_fetch_stats *ret)
{
	*ret = f->stats;
}

/* ---- manifest ----------------------------------------------------------- */

/* The validators file: "etag <value>" and "last-modified <value>" lines.
 * A damaged file only costs a full download, so it is ignored. */
static void load_validators(struct eq_fetcher *f, char *etag, char *lastmod, size_t cap)
{
	uint8_t *data = NULL;
	size_t len = 0;
	struct eq_error e;
	etag[0] = lastmod[0] = '\0';
	if (f->forgotten || eq_file_read_all(f->validators_path, VALIDATORS_MAX_BYTES, &data, &len, &e) != EQ_OK)
		return;
	eq_http_validators_parse((const char *)data, len, cap, etag, lastmod);
	eq_free(data);
}

static eq_err fetch_mem(struct eq_fetcher *f, const char *rel, size_t cap, struct curl_slist *headers, bool head,
			long *ret_status, struct eq_buf *buf, struct xfer *x, struct eq_error *err)
{
	EQ_AUTOFREE char *url = eq_asprintf("%s/%s", f->base_url, rel);
	if (!url)
		return eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", rel);
	eq_err r = EQ_OK;
	for (unsigned attempt = 0; attempt <= f->retries; attempt++) {
		if (attempt && backoff(f, attempt, rel, err)) {
			r = EQ_ERR_STOPPED;
			break;
		}
		memset(x, 0, sizeof(*x));
		eq_buf_reset(buf);
		x->url = url;
		x->rel = rel;
		x->head = head;
		x->mem = buf;
		x->cap = cap;
		x->fd = -1;
		x->is_file = strncmp(url, "file:", 5) == 0;
		enum outcome o;
		r = perform(f, x, headers, ret_status, &o, err);
		if (o != OUT_RETRY)
			break;
	}
	return r;
}

eq_err eq_fetch_manifest(struct eq_fetcher *f, bool *ret_not_modified, uint8_t **ret_manifest, size_t *ret_manifest_len,
			 uint8_t **ret_sig, size_t *ret_sig_len, struct eq_error *err)
{
	char etag[HEADER_VALUE_MAX], lastmod[HEADER_VALUE_MAX];
	struct curl_slist *headers = NULL;
	struct eq_buf m, s;
	struct xfer *x = eq_calloc(1, sizeof(*x));
	long status = 0;
	eq_err r = EQ_OK;
	eq_buf_init(&m, EQ_MANIFEST_MAX_BYTES);
	eq_buf_init(&s, EQ_MANIFEST_SIG_MAX_BYTES);
	if (!x) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", f->manifest_rel);
		goto out;
	}
	load_validators(f, etag, lastmod, sizeof(etag));
	const char *names[2] = {"If-None-Match: ", "If-Modified-Since: "};
	const char *values[2] = {etag, lastmod};
	for (int i = 0; i < 2; i++) {
		if (!values[i][0])
			continue;
		EQ_AUTOFREE char *h = eq_asprintf("%s%s", names[i], values[i]);
		struct curl_slist *n = h ? curl_slist_append(headers, h) : NULL;
		if (!n) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", f->manifest_rel);
			goto out;
		}
		headers = n;
	}
	if ((r = fetch_mem(f, f->manifest_rel, EQ_MANIFEST_MAX_BYTES, headers, false, &status, &m, x, err)) != EQ_OK)
		goto out;
	if (status == 304) {
		f->stats.not_modified++;
		*ret_not_modified = true;
		*ret_manifest = *ret_sig = NULL;
		*ret_manifest_len = *ret_sig_len = 0;
		goto out;
	}
	char *new_etag = x->etag[0] ? eq_strdup(x->etag) : NULL;
	char *new_lastmod = x->lastmod[0] ? eq_strdup(x->lastmod) : NULL;
	if ((x->etag[0] && !new_etag) || (x->lastmod[0] && !new_lastmod)) {
		eq_free(new_etag);
		eq_free(new_lastmod);
		r = eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", f->manifest_rel);
		goto out;
	}
	/* The signature has no validators of its own: it belongs to the
	 * manifest just fetched and is always fetched with it. */
	if ((r = fetch_mem(f, f->sig_rel, EQ_MANIFEST_SIG_MAX_BYTES, NULL, false, &status, &s, x, err)) != EQ_OK) {
		eq_free(new_etag);
		eq_free(new_lastmod);
		goto out;
	}
	eq_free(f->pending_etag);
	eq_free(f->pending_lastmod);
	f->pending_etag = new_etag;
	f->pending_lastmod = new_lastmod;
	f->pending = true;
	*ret_not_modified = false;
	*ret_manifest = eq_buf_steal(&m, ret_manifest_len);
	*ret_sig = eq_buf_steal(&s, ret_sig_len);
out:
	curl_slist_free_all(headers);
	eq_buf_done(&m);
	eq_buf_done(&s);
	eq_free(x);
	return r;
}

eq_err eq_fetch_release_manifest(struct eq_fetcher *f, uint64_t number, uint8_t **ret_manifest,
				 size_t *ret_manifest_len, uint8_t **ret_sig, size_t *ret_sig_len, struct eq_error *err)
{
	/* Earlier releases stay beside the current one (eqota-gen keeps them). */
	EQ_AUTOFREE char *mrel = NULL, *srel = NULL;
	struct xfer *x = eq_calloc(1, sizeof(*x));
	struct eq_buf m, sg;
	eq_buf_init(&m, EQ_MANIFEST_MAX_BYTES);
	eq_buf_init(&sg, EQ_MANIFEST_SIG_MAX_BYTES);
	long status = 0;
	eq_err r = EQ_OK;
	if (!x)
		r = eq_error_set(err, EQ_ERR_NOMEM, "release %" PRIu64 ": out of memory", number);
	if (!r)
		r = eq_layout_release(NULL, f->board, f->channel, number, EQ_LAYOUT_MANIFEST, &mrel, err);
	if (!r)
		r = eq_layout_release(NULL, f->board, f->channel, number, EQ_LAYOUT_MANIFEST_SIG, &srel, err);
	if (!r)
		r = fetch_mem(f, mrel, EQ_MANIFEST_MAX_BYTES, NULL, false, &status, &m, x, err);
	if (!r)
		r = fetch_mem(f, srel, EQ_MANIFEST_SIG_MAX_BYTES, NULL, false, &status, &sg, x, err);
	if (!r) {
		*ret_manifest = eq_buf_steal(&m, ret_manifest_len);
		*ret_sig = eq_buf_steal(&sg, ret_sig_len);
	}
	eq_buf_done(&m);
	eq_buf_done(&sg);
	eq_free(x);
	return r;
}

eq_err eq_fetch_manifest_commit(struct eq_fetcher *f, struct eq_error *err)
{
	if (!f->pending)
		return EQ_OK;
	EQ_AUTOFREE char *text =
		eq_asprintf("%s%s%s%s%s%s", f->pending_etag ? "etag " : "", f->pending_etag ? f->pending_etag : "",
			    f->pending_etag ? "\n" : "", f->pending_lastmod ? "last-modified " : "",
			    f->pending_lastmod ? f->pending_lastmod : "", f->pending_lastmod ? "\n" : "");
	if (!text)
		return eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", f->validators_path);
	eq_err r = eq_file_replace_atomic(f->validators_path, text, strlen(text), 0600, err);
	if (r != EQ_OK)
		return r;
	f->pending = false;
	f->forgotten = false;
	return EQ_OK;
}

void eq_fetch_manifest_forget(struct eq_fetcher *f)
{
	f->pending = false;
	f->forgotten = true;
	/* Best effort: if the file stays, f->forgotten still skips it in this
	 * process, and the next commit replaces it. */
	if (unlink(f->validators_path) != 0 && errno != ENOENT)
		eq_log(EQ_LOG_DEBUG, "fetch: cannot remove '%s': %s", f->validators_path, strerror(errno));
}

/* ---- objects ------------------------------------------------------------ */

static eq_err check_hash(const char *path, const char *rel, const char *want_hex, uint64_t size, struct eq_error *err)
{
	uint8_t d[EQ_SHA256_LEN];
	char hex[EQ_SHA256_HEX_LEN + 1];
	uint64_t got = 0;
	eq_err r = eq_sha256_file(path, d, &got, err);
	if (r != EQ_OK)
		return r;
	if (got != size)
		return eq_error_set(err, EQ_ERR_VERIFY, "%s: %" PRIu64 " bytes, the manifest declares %" PRIu64, rel,
				    got, size);
	eq_hex_encode(d, sizeof(d), hex);
	if (strcmp(hex, want_hex) != 0)
		return eq_error_set(err, EQ_ERR_VERIFY, "%s: SHA-256 is %s, the manifest declares %s", rel, hex,
				    want_hex);
	return EQ_OK;
}

/* Size of @path, or -1 when missing (other errors are reported). */
static eq_err file_size(const char *path, int64_t *ret, struct eq_error *err)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		if (errno == ENOENT) {
			*ret = -1;
			return EQ_OK;
		}
		return eq_error_errno(err, EQ_ERR_IO, "cannot stat '%s'", path);
	}
	*ret = (int64_t)st.st_size;
	return EQ_OK;
}

static eq_err remove_file(const char *path, struct eq_error *err)
{
	if (unlink(path) != 0 && errno != ENOENT)
		return eq_error_errno(err, EQ_ERR_IO, "cannot remove '%s'", path);
	return EQ_OK;
}

/* Fills @part up to @size bytes, resuming what is there. */
static eq_err download_part(struct eq_fetcher *f, const char *url, const char *rel, const char *part, uint64_t size,
			    struct eq_error *err)
{
	eq_err r = EQ_OK;
	struct xfer *x = eq_calloc(1, sizeof(*x));
	if (!x)
		return eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", rel);
	for (unsigned attempt = 0; attempt <= f->retries; attempt++) {
		if (attempt && backoff(f, attempt, rel, err)) {
			r = EQ_ERR_STOPPED;
			break;
		}
		int64_t have = 0;
		if ((r = file_size(part, &have, err)) != EQ_OK)
			break;
		if (have < 0)
			have = 0;
		if ((uint64_t)have == size && size > 0)
			break; /* a previous attempt got everything */
		memset(x, 0, sizeof(*x));
		x->url = url;
		x->rel = rel;
		x->cap = size;
		x->have = (uint64_t)have;
		x->range = have > 0;
		x->is_file = strncmp(url, "file:", 5) == 0;
		x->part = part;
		x->fd = open(part, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (x->fd < 0) {
			r = eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", part);
			break;
		}
		long status = 0;
		enum outcome o;
		r = perform(f, x, NULL, &status, &o, err);
		if (r == EQ_OK && x->range && (x->is_file || status == 206))
			f->stats.resumed++;
		if (r == EQ_OK && x->have + x->received != size) {
			/* an empty 200 body to a Range request still means "start over" */
			if (x->range && status == 200 && !x->body_started && ftruncate(x->fd, 0) != 0)
				r = eq_error_errno(err, EQ_ERR_IO, "cannot truncate '%s'", part);
			else
				r = eq_error_set(err, EQ_ERR_NETWORK,
						 "%s: body ended after %" PRIu64 " of %" PRIu64 " bytes", url,
						 x->have + x->received, size);
			o = OUT_RETRY;
		}
		if (r == EQ_OK && fsync(x->fd) != 0)
			r = eq_error_errno(err, EQ_ERR_IO, "cannot sync '%s'", part);
		if (close(x->fd) != 0 && r == EQ_OK)
			r = eq_error_errno(err, EQ_ERR_IO, "cannot write '%s'", part);
		report_progress(x, true);
		if (r != EQ_OK && (x->cb_err == EQ_ERR_LIMIT || x->cb_err == EQ_ERR_NETWORK)) {
			/* Bytes past the declared size, or a range we did not ask
			 * for: what the .part holds is not to be trusted. */
			struct eq_error e2;
			if (remove_file(part, &e2) != EQ_OK)
				eq_log(EQ_LOG_DEBUG, "fetch: %s", e2.msg);
		}
		if (r == EQ_OK || o != OUT_RETRY)
			break;
	}
	eq_free(x);
	if (r != EQ_OK) {
		/* do not leave an empty .part behind a 404 */
		struct stat st;
		if (stat(part, &st) == 0 && st.st_size == 0)
			(void)unlink(part);
	}
	return r;
}

eq_err eq_fetch_object(struct eq_fetcher *f, const char *rel_path, const char *sha256_hex, uint64_t size,
		       char **ret_path, struct eq_error *err)
{
	if (!safe_rel_path(rel_path))
		return eq_error_set(err, EQ_ERR_UNSAFE, "'%s': not a repository path", rel_path);
	if (!eq_is_sha256_hex(sha256_hex))
		return eq_error_set(err, EQ_ERR_INVAL, "%s: '%s' is not a SHA-256", rel_path, sha256_hex);
	EQ_AUTOFREE char *final = eq_asprintf("%s/%s", f->dir, sha256_hex);
	EQ_AUTOFREE char *part = eq_asprintf("%s/%s.part", f->dir, sha256_hex);
	EQ_AUTOFREE char *url = eq_asprintf("%s/%s", f->base_url, rel_path);
	if (!final || !part || !url)
		return eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", rel_path);

	int64_t have = -1;
	eq_err r = file_size(final, &have, err);
	if (r != EQ_OK)
		return r;
	if (have >= 0) {
		struct eq_error e2;
		if (check_hash(final, rel_path, sha256_hex, size, &e2) == EQ_OK) {
			*ret_path = eq_steal_ptr(final);
			return EQ_OK;
		}
		eq_log(EQ_LOG_DEBUG, "fetch: %s, downloading again", e2.msg);
		if ((r = remove_file(final, err)) != EQ_OK)
			return r;
	}
	/* A .part that is complete (a crash between download and rename) is
	 * checked as it is; a wrong or oversize one starts over. */
	if ((r = file_size(part, &have, err)) != EQ_OK)
		return r;
	if (have >= 0 && (uint64_t)have >= size) {
		struct eq_error e2;
		if ((uint64_t)have > size || check_hash(part, rel_path, sha256_hex, size, &e2) != EQ_OK) {
			if ((r = remove_file(part, err)) != EQ_OK)
				return r;
		}
	}
	if ((r = file_size(part, &have, err)) != EQ_OK)
		return r;
	if (have < 0 || (uint64_t)have < size || size == 0) {
		if ((r = download_part(f, url, rel_path, part, size, err)) != EQ_OK)
			return r;
	}
	if ((r = check_hash(part, rel_path, sha256_hex, size, err)) != EQ_OK) {
		struct eq_error e2;
		if (remove_file(part, &e2) != EQ_OK)
			eq_log(EQ_LOG_DEBUG, "fetch: %s", e2.msg);
		return r;
	}
	if (rename(part, final) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot rename '%s' to '%s'", part, final);
	if ((r = eq_fsync_dir_of(final, err)) != EQ_OK)
		return r;
	*ret_path = eq_steal_ptr(final);
	return EQ_OK;
}

/* ---- small signed files (root mode) --------------------------------------- */

eq_err eq_fetch_file_cond(struct eq_fetcher *f, const char *rel, size_t max, const char *etag, bool *ret_not_modified,
			  uint8_t **ret, size_t *ret_len, char **ret_etag, struct eq_error *err)
{
	struct xfer *x = eq_calloc(1, sizeof(*x));
	struct curl_slist *headers = NULL;
	struct eq_buf b;
	eq_buf_init(&b, max);
	long status = 0;
	eq_err r = EQ_OK;
	*ret_not_modified = false;
	if (ret_etag)
		*ret_etag = NULL;
	if (etag && *etag) {
		EQ_AUTOFREE char *h = eq_asprintf("If-None-Match: %s", etag);
		if (!h || !(headers = curl_slist_append(NULL, h)))
			r = eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", rel);
	}
	if (!r)
		r = x ? fetch_mem(f, rel, max, headers, false, &status, &b, x, err)
		      : eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", rel);
	if (!r && status == 304 && !headers)
		r = eq_error_set(err, EQ_ERR_NETWORK, "%s: HTTP 304 to a request that was not conditional", rel);
	if (!r && status == 304) {
		f->stats.not_modified++;
		*ret_not_modified = true;
		*ret = NULL;
		*ret_len = 0;
		goto out;
	}
	if (!r && ret_etag && x->etag[0] && !(*ret_etag = eq_strdup(x->etag)))
		r = eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", rel);
	size_t len = b.len;
	/* An empty body still gives a buffer, so callers never pass NULL on. */
	if (!r && !len && !(*ret = eq_malloc(1)))
		r = eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", rel);
	else if (!r && len)
		*ret = eq_buf_steal(&b, NULL);
	if (!r)
		*ret_len = len;
	if (r && ret_etag) {
		eq_free(*ret_etag);
		*ret_etag = NULL;
	}
out:
	curl_slist_free_all(headers);
	eq_buf_done(&b);
	eq_free(x);
	return r;
}

eq_err eq_fetch_file(struct eq_fetcher *f, const char *rel, size_t max, uint8_t **ret, size_t *ret_len,
		     struct eq_error *err)
{
	bool not_modified;
	return eq_fetch_file_cond(f, rel, max, NULL, &not_modified, ret, ret_len, NULL, err);
}

eq_err eq_fetch_exists(struct eq_fetcher *f, const char *rel, size_t max, struct eq_error *err)
{
	struct xfer *x = eq_calloc(1, sizeof(*x));
	struct eq_buf b;
	eq_buf_init(&b, max);
	long status = 0;
	eq_err r = x ? fetch_mem(f, rel, max, NULL, true, &status, &b, x, err)
		     : eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", rel);
	eq_buf_done(&b);
	eq_free(x);
	return r;
}
