/*
 * The eqota program's own interface between main.c (the command line) and
 * daemon.c (the daemon loop); not part of eq_agent.
 */
#ifndef EQ_AGENT_EQOTA_H
#define EQ_AGENT_EQOTA_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/agent.h>

/* The signal that asked eqota to stop, 0 while none did. The daemon polls
 * it between steps; a step (and a one-shot command) hands it to the agent,
 * which stops at its next safe point (docs/agent.md, "Stopping"). */
extern volatile sig_atomic_t eqota_stop_requested;

/* Handlers for eqota_catch_stop(): eqota_on_term only records the signal
 * (the waiting daemon); eqota_on_work_term also kills a running health
 * check (a step or a one-shot command at work). */
void eqota_on_term(int sig);
void eqota_on_work_term(int sig);
/* SIGTERM and SIGINT to @handler; @once: a second signal is not caught. */
void eqota_catch_stop(void (*handler)(int), bool once);

/* Why release @number waits, for a person (docs/fleet.md). */
void eqota_defer_text(enum eq_defer d, const struct eq_policy_view *p, const struct eq_rollout_view *ro,
		      uint64_t number, char *out, size_t cap);

/* Asks the init system to reboot: returns only when that failed. */
int eqota_reboot(void);

/* mark-good's step: the health checks, then commit or roll back; with
 * @reboot a rollback reboots into the previous slot. An exit status. */
int eqota_confirm(struct eq_agent *a, bool reboot);

/* `eqota daemon` with the configuration read: its exit status. */
int eqota_daemon(const struct eq_config *cfg);

#endif
