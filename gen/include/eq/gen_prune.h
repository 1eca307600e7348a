/*
 * eq_gen, prune (gen_prune.c): old releases and what nothing kept needs.
 * Part of the eq_gen library (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_PRUNE_H
#define EQ_GEN_PRUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- prune ------------------------------------------------------------ */

struct eq_prune_opts {
	const char *repo;
	unsigned keep;        /* newest releases kept per board and channel, >= 1 */
	unsigned grace_hours; /* see eq_gen_prune() */
	bool dry_run;         /* report, remove nothing */
	int64_t now;          /* 0: the clock */
	/* Called for each path removed (or that would be), with its size. */
	void (*list)(void *ctx, const char *path, uint64_t size);
	void *list_ctx;
};

struct eq_prune_report {
	size_t releases, objects, deltas, manifest_deltas; /* removed (or would be) */
	size_t kept_releases;
	uint64_t bytes; /* freed: files' sizes; a release counts its manifest */
};

/*
 * Keeps the newest @keep releases of every board and channel (the current
 * manifest always) and removes, under the publish lock: older release
 * folders once the release after each has been out @grace_hours (a device
 * may be fetching it until then); objects and deltas no kept release of any
 * board or channel refers to, and manifest deltas that do not lead to a
 * channel's current manifest, once the file is @grace_hours old. Each
 * channel's publisher-history is rebuilt by the next publish.
 */
EQ_API eq_err eq_gen_prune(const struct eq_prune_opts *o, struct eq_prune_report *ret,
			   struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_PRUNE_H */
