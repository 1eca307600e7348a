/*
 * struct eq_agent, private to eq_agent: shared by agent.c (the commands)
 * and manifest_client.c (which fetches through its fetcher and keeps its
 * caches and validators). Opaque to everyone else (<eq/agent.h>).
 */
#ifndef EQ_AGENT_PRIV_H
#define EQ_AGENT_PRIV_H

#include <signal.h>

#include <eq/agent.h>

struct eq_agent {
	const struct eq_config *cfg;
	struct eq_manifest_trust *trust; /* legacy mode: [repository] key or trust */
	struct eq_trust *tstore;         /* root mode: [repository] root */
	struct eq_bl *bl;
	struct eq_fetcher *fetcher;
	char *state_path;
	char *downloads;
	char *work;
	char *cache_manifest, *cache_sig;
	char *ts_validators;  /* root mode: the timestamp's ETag and the hash of its bytes */
	char *ts_pending;     /* what to write there once this refresh verified */
	char *ptr_validators; /* legacy mode: the same for manifest.json.sha256 */
	char *ptr_pending;
	char *hold_path;   /* `eqota hold` */
	char *reports_dir; /* the report queue */
	int lock_fd;       /* eq_agent_lock(), -1 when not held */
	eq_progress_fn progress;
	void *progress_ctx;
	bool cache_hit; /* root mode: this refresh's manifest came from the cache */
	/* The image release being installed, NULL otherwise: fetch_cb adds
	 * what it downloads for the release's image components to
	 * component_fetched, for the report. */
	const struct eq_manifest *installing;
	uint64_t component_fetched;
	const volatile sig_atomic_t *stop;
};

#endif
