/*
 * The manifest-fetching client of eq_agent (manifest_client.c), private to
 * the module.
 */
#ifndef EQ_AGENT_MANIFEST_CLIENT_H
#define EQ_AGENT_MANIFEST_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <eq/agent.h>

#include "agent_priv.h"

/*
 * The channel's current manifest, verified, into c->next and its bytes: in
 * root mode through the root chain and the timestamp (eq_trust_refresh()),
 * else the manifest and its signatures with the configured keys; @now is
 * the agent's clock for the expiry checks. *ret_fresh (legacy mode): the
 * bytes are not the cached copy, the caller caches them once it accepts
 * them; root mode caches here and says false.
 */
eq_err eq_mclient_fetch_current(struct eq_agent *a, int64_t now, struct eq_check *c, bool *ret_fresh,
				struct eq_error *err);

#endif
