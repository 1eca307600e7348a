/*
 * Health checks (health.c), private to eq_agent; the program's signal
 * handler uses eq_health_kill_running() from <eq/agent.h>.
 */
#ifndef EQ_AGENT_HEALTH_H
#define EQ_AGENT_HEALTH_H

#include <eq/agent.h>

/*
 * Runs each command (split at spaces, no shell) one after the other, in its
 * own process group, all within @timeout_s seconds in total. EQ_OK when every
 * command exits 0; EQ_ERR_VERIFY naming the failing command and its status,
 * or EQ_ERR_LIMIT when the time ran out (the process group is killed).
 */
eq_err eq_health_run(const char *const *checks, size_t n_checks, unsigned timeout_s,
		     struct eq_error *err) EQ_MUST_CHECK;

#endif
