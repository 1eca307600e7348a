/*
 * eq_gen, fleet reports (gen_fleet.c, gen_fleet_out.c): where the fleet
 * stands. Part of the eq_gen library (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_FLEET_H
#define EQ_GEN_FLEET_H

#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>
#include <eq/manifest.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- fleet (gen_fleet.c): where the fleet stands ------------------------
 *
 * Reads the reports devices POST (docs/fleet.md, "Reports"), one JSON
 * document per line as a web server appended them, and sums them up per
 * board, channel and release. Each line is checked; one that is not a
 * report is counted in `bad` (the first EQ_FLEET_MAX_ERRORS named as
 * "FILE:LINE: why") and changes nothing else.
 *
 * Who a report counts as: the "auth" member, which the collector
 * (eq_fleet_collect) writes from the TLS client certificate it verified and
 * which a device cannot set. The "device" member is chosen by the sender;
 * reports without "auth" are counted only with eq_fleet_opts.unauthenticated.
 * Each identity counts once per board, channel and release, by its last
 * report on it, however many device ids it writes.
 */
#define EQ_FLEET_REPORT_SCHEMA "eqota-report/1"
#define EQ_FLEET_DEVICE_LEN 32u
#define EQ_FLEET_AUTH_MEMBER "auth"
#define EQ_FLEET_IDENTITY_MAX 128u
#define EQ_FLEET_MAX_ERRORS 5u
#define EQ_FLEET_MAX_REASONS 5u

struct eq_fleet_reason {
	char *text; /* as the devices sent it (at most 256 bytes): hostile, escape it */
	size_t devices;
};

/* Sorted times (seconds since 1970), one per device. */
struct eq_fleet_times {
	int64_t *v;
	size_t n, cap;
};

/* One release, over the devices that reported on it. A device counts once
 * per release, by its reports on that release, the last one deciding. */
struct eq_fleet_release {
	uint64_t number;
	char release[EQ_MANIFEST_NAME_MAX + 1];
	size_t devices;                  /* reported anything on it */
	size_t running;                  /* their newest commit is this release: running it now */
	size_t committed;                /* committed it (some may have moved on) */
	size_t trying;                   /* installed it, no commit or rollback reported yet */
	size_t rolled_back;              /* last word: rolled back */
	size_t failed;                   /* failed to install it and never installed it */
	uint64_t bytes_total, bytes_max; /* downloaded for it, summed per device */
	/* Added: the image components' part of bytes_total, from the reports'
	 * optional "component_bytes" (0 in reports without it). */
	uint64_t component_bytes_total;
	struct eq_fleet_reason rolled_back_reasons[EQ_FLEET_MAX_REASONS];
	size_t n_rolled_back_reasons;
	struct eq_fleet_reason failed_reasons[EQ_FLEET_MAX_REASONS];
	size_t n_failed_reasons;
	/* For the chart: when each device first installed it, first committed
	 * it, and rolled back (devices whose last word is a rollback). */
	struct eq_fleet_times t_installed, t_committed, t_rolled_back;
};

struct eq_fleet_channel {
	char board[EQ_MANIFEST_NAME_MAX + 1];
	char channel[EQ_MANIFEST_NAME_MAX + 1];
	struct eq_fleet_release *releases; /* by number, ascending */
	size_t n_releases;
};

struct eq_fleet {
	size_t lines;           /* non-empty lines read */
	size_t reports;         /* lines that were reports */
	size_t bad;             /* lines that were not */
	size_t anonymous;       /* reports without a device id (counted nowhere else) */
	size_t unauthenticated; /* reports without "auth", not counted (opts.unauthenticated unset) */
	size_t uninventoried;   /* reports whose identity is not in opts.inventory, not counted */
	size_t devices;         /* distinct device ids per board and channel */
	int64_t first, last;
	char errors[EQ_FLEET_MAX_ERRORS][320];
	size_t n_errors;
	struct eq_fleet_channel *channels; /* in the order first seen */
	size_t n_channels;
};

struct eq_fleet_opts {
	/* Count reports without "auth" too, each under its "device" id: for a
	 * collector without client certificates, where anyone who reaches it
	 * can invent devices and their outcomes. */
	bool unauthenticated;
	/* A file of identities, one per line ('#' starts a comment): count only
	 * reports of these ("auth", or "device" for unauthenticated ones).
	 * NULL: every identity. */
	const char *inventory;
	/* Read only the reports on this board, channel and release number
	 * (NULL, NULL, 0: all): what `rollout --auto-halt` needs, and names
	 * other reports invent then fill no cap. */
	const char *board, *channel;
	uint64_t number;
};

/* Reads every file of @files (at most 20 million reports in all; a file
 * that cannot be read is an error naming it). @opts NULL: the defaults
 * (authenticated reports only, no inventory). The names a file can make
 * it hold are capped (1024 board/channel pairs, 65536 releases, 65536
 * distinct reasons kept, the rest counted as one): a line past a cap is a
 * bad line. EQ_ERR_PARSE for a bad inventory line. Free with eq_fleet_free(). */
EQ_API eq_err eq_fleet_read(const char *const *files, size_t n_files, const struct eq_fleet_opts *opts,
			    struct eq_fleet **ret, struct eq_error *err) EQ_MUST_CHECK;
/* The collector's check of one POSTed report (@body, @len bytes): it must
 * be a report eq_fleet_read() counts, without an "auth" member. Fills
 * *ret_line with the line to append (no newline; free with eq_free()): the
 * report printed again as one line of JSON, with "auth": @identity when
 * @identity is not NULL (the verified client certificate's name).
 * EQ_ERR_PARSE (not a report: why), EQ_ERR_VERIFY ("auth" sent by the
 * device, or @identity not 1 to EQ_FLEET_IDENTITY_MAX printable ASCII
 * characters without '"' or '\\'), EQ_ERR_LIMIT (over 4096 bytes), EQ_ERR_NOMEM. */
EQ_API eq_err eq_fleet_collect(const char *body, size_t len, const char *identity, char **ret_line,
			       struct eq_error *err) EQ_MUST_CHECK;
/* Whether @s (@len bytes) may be an identity: see eq_fleet_collect(). */
EQ_API bool eq_fleet_identity_ok(const char *s, size_t len);
EQ_API void eq_fleet_free(struct eq_fleet *f);
/* The release, NULL when no report names it. */
EQ_API const struct eq_fleet_release *eq_fleet_find(const struct eq_fleet *f, const char *board, const char *channel,
						    uint64_t number);
/* The share of the devices that installed @r which rolled back: what
 * `eqota-gen rollout --auto-halt` compares with its ratio. 0 when none. */
EQ_API double eq_fleet_rollback_share(const struct eq_fleet_release *r);

enum eq_fleet_format { EQ_FLEET_TEXT, EQ_FLEET_JSON, EQ_FLEET_HTML };
#define EQ_FLEET_JSON_SCHEMA "eqota-gen-fleet/1"
/* Writes the summary: text for people, JSON (EQ_FLEET_JSON_SCHEMA, see
 * docs/json-output.md) for tools, or one self-contained HTML page (no
 * script, font or image from elsewhere) with the rollout of each release
 * over time as an inline SVG chart. @now is printed as the time of the
 * summary. EQ_ERR_IO when @out fails. */
EQ_API eq_err eq_fleet_write(const struct eq_fleet *f, enum eq_fleet_format fmt, int64_t now, FILE *out,
			     struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_FLEET_H */
