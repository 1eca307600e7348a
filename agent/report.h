/*
 * Reports (report.c), private to eq_agent and reached by its tests.
 */
#ifndef EQ_AGENT_REPORT_H
#define EQ_AGENT_REPORT_H

#include <eq/agent.h>

#define EQ_REPORT_SCHEMA "eqota-report/1"
#define EQ_REPORT_MAX_BYTES 4096u
#define EQ_REPORT_ID_LEN 32u

enum eq_report_kind {
	EQ_REPORT_INSTALLED,   /* a release was installed and is tried at the next boot */
	EQ_REPORT_COMMITTED,   /* it passed its health checks */
	EQ_REPORT_ROLLED_BACK, /* it failed them or never came up */
	EQ_REPORT_FAILED,      /* its install failed (download, space, hash: retried) */
};
/* "installed", "committed", "rolled_back", "failed". */
const char *eq_report_kind_name(enum eq_report_kind k);

/* One outcome, as docs/fleet.md ("Reports") shows it. */
struct eq_report_event {
	int64_t time;
	const char *device; /* eq_report_device_id(), NULL when the device has none */
	const char *board, *channel;
	enum eq_report_kind kind;
	uint64_t from_number; /* 0: none */
	const char *from_release;
	uint64_t to_number;
	const char *to_release;
	const char *reason; /* rolled back or failed: why; NULL otherwise */
	uint64_t bytes;     /* downloaded for it by this run */
	/* Added (image releases): the part of bytes that was image components;
	 * written only when has_component_bytes, so that the reports of
	 * releases of packages alone stay as they were. */
	uint64_t component_bytes;
	bool has_component_bytes;
	double seconds;    /* taken by this run */
	const char *agent; /* the agent's version */
};

/* The id reports carry: 32 hex digits of SHA-256 over the device id, so
 * that /etc/machine-id itself never leaves the device (machine-id(5)). */
void eq_report_device_id(const char *id, char out[EQ_REPORT_ID_LEN + 1]);
/* One JSON line (ending in a newline, NUL-terminated) into @out; EQ_ERR_LIMIT
 * when it would not fit. */
eq_err eq_report_format(const struct eq_report_event *ev, char out[EQ_REPORT_MAX_BYTES], size_t *ret_len,
			struct eq_error *err) EQ_MUST_CHECK;
/* Adds @line to the queue folder @dir (created 0700), dropping the oldest
 * reports beyond @max. */
eq_err eq_report_queue(const char *dir, unsigned max, const char *line, size_t len, struct eq_error *err) EQ_MUST_CHECK;
/* POSTs the queued reports oldest first to cfg->report_url, removing each
 * one a 2xx answered, and dropping (with a warning) one the server refuses
 * for what it is (400, 413, 415, 422); stops at any other failure
 * (EQ_ERR_NETWORK naming the URL and how many were sent), leaving the rest
 * queued. A no-op without a report_url. */
eq_err eq_report_flush(const struct eq_config *cfg, const char *dir, size_t *ret_sent,
		       struct eq_error *err) EQ_MUST_CHECK;

#endif
