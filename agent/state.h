/*
 * The state file (state.c), private to eq_agent and reached by its tests;
 * struct eq_state is in <eq/agent.h> (struct eq_status holds one).
 */
#ifndef EQ_AGENT_STATE_H
#define EQ_AGENT_STATE_H

#include <eq/agent.h>

/* The state file's size cap: a longer file is damaged, not read. */
#define EQ_STATE_MAX_BYTES 8192u

/* Backoff of a release whose install failed for a transient reason
 * (download, 404, hash, size, space, delta): 1 minute after the first
 * failure, doubling per failure, at most 6 hours. */
#define EQ_RETRY_FIRST_S 60
#define EQ_RETRY_MAX_S (6 * 3600)

void eq_state_init(struct eq_state *s);
/*
 * Loads @path strictly: every line "key=value" with a known key, at most
 * once, a valid value; the original keys all present (the added ones are
 * optional, so a file of an older agent still reads); the last line ends in
 * a newline; at most EQ_STATE_MAX_BYTES; the phase consistent with the
 * slots. A missing file is an idle state. Anything else is EQ_ERR_PARSE (or
 * EQ_ERR_LIMIT, EQ_ERR_IO) naming the file and the line. *ret is written
 * only on success. The agent recovers from such errors (docs/agent.md).
 */
eq_err eq_state_load(const char *path, struct eq_state *ret, struct eq_error *err) EQ_MUST_CHECK;
/* Writes @s atomically, stamping changed_at with the current time;
 * control characters in the texts become spaces. */
eq_err eq_state_save(const char *path, const struct eq_state *s, struct eq_error *err) EQ_MUST_CHECK;
/* The delay before attempt @attempts + 1 after @attempts failures in a row. */
int64_t eq_state_backoff_s(uint64_t attempts);

#endif
