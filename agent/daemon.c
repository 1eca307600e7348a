/* eqota daemon: confirm after boot, then poll for updates, each step in a
 * child process (docs/agent.md, "daemon" and "Stopping"). Part of the
 * program, not of eq_agent: it is the program's signals, exit statuses and
 * systemd notifications. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <eq/agent.h>

#include "eqota.h"

/* How long a step of the daemon has to reach a safe point after SIGTERM
 * before it and everything it started get SIGKILL. Below systemd's
 * TimeoutStopSec in eqota.service, so the daemon still exits by itself. */
#define STEP_STOP_GRACE_S 30

/* A relative sleep (CLOCK_MONOTONIC: a jump of the wall clock neither
 * shortens nor stretches it), ended within 0.1 s by a stop request. */
static void sleep_interruptible_ms(uint64_t ms)
{
	while (ms && !eqota_stop_requested) {
		uint64_t step = ms < 100 ? ms : 100;
		struct timespec ts = {0, (long)step * 1000 * 1000};
		nanosleep(&ts, NULL);
		ms -= step;
	}
}

/* The wait between two polls. Builds with test hooks only (EQ_TEST_HOOKS):
 * EQ_TEST_POLL_MS replaces [daemon] interval (at least 60 s) and the jitter
 * with that many milliseconds, so a soak test runs a thousand polls in a
 * minute or two (tests/integration/agent_soak.sh). */
static uint64_t poll_wait_ms(const struct eq_config *cfg, unsigned jitter)
{
#ifdef EQ_TEST_HOOKS
	const char *t = secure_getenv("EQ_TEST_POLL_MS");
	if (t && *t) {
		char *end;
		long long v = strtoll(t, &end, 10);
		if (!*end && v > 0)
			return (uint64_t)v;
	}
#endif
	return ((uint64_t)cfg->poll_interval_s + jitter) * 1000;
}

/* A daemon confirm step that found the lock held: private to the daemon
 * and its step's process, never an exit status of eqota. */
#define CYCLE_LOCKED 10
/* A step that could not take the lock at all (the data folder read-only,
 * say, under a unit's ProtectSystem=strict): not another eqota at work,
 * and every later poll would fail the same way, so the daemon exits and the
 * service manager shows it failed, with the reason in the log. */
#define CYCLE_BROKEN 11

/* The daemon's reboot after an install or a rollback: returns only when it
 * failed. Builds with test hooks only (EQ_TEST_HOOKS): EQ_TEST_REBOOT_CMD is
 * run with /bin/sh instead of /sbin/reboot (a simulated reboot, e.g. a new
 * boot id and eq-simboot), and -1 returned when it exits 0: the daemon then
 * starts over with its confirm step as after a boot, so that one process
 * lives through installs and reboots in a soak test. */
static int daemon_reboot(void)
{
#ifdef EQ_TEST_HOOKS
	const char *cmd = secure_getenv("EQ_TEST_REBOOT_CMD");
	if (cmd && *cmd) {
		eq_log(EQ_LOG_NOTICE, "rebooting: EQ_TEST_REBOOT_CMD '%s'", cmd);
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
			_exit(127);
		}
		int status = 0;
		pid_t w = -1;
		if (pid > 0)
			do
				w = waitpid(pid, &status, 0);
			while (w < 0 && errno == EINTR);
		if (w == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
			return -1;
		eq_log(EQ_LOG_ERR, "EQ_TEST_REBOOT_CMD '%s' failed", cmd);
		return EQ_EXIT_FAILED;
	}
#endif
	return eqota_reboot();
}

/* One poll of the daemon in a child process: libcurl, the TLS library and
 * the install buffers live only as long as the work, so the waiting daemon
 * stays small. Returns the child's exit status. */
static int daemon_cycle(const struct eq_config *cfg, bool first)
{
	/* Blocked across fork(): the child must not run the parent's
	 * handlers, and the parent polls eqota_stop_requested below, so a signal
	 * between fork() and the wait is never lost. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid_t pid = fork();
	if (pid < 0) {
		eq_log(EQ_LOG_ERR, "cannot fork: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		return EQ_EXIT_FAILED;
	}
	if (pid == 0) {
		eqota_catch_stop(eqota_on_work_term, true);
		/* Its own group: SIGKILL after the grace time takes whatever it
		 * started with it. */
		setpgid(0, 0);
		sigprocmask(SIG_SETMASK, &old, NULL);
		struct eq_agent *a = NULL;
		struct eq_error e;
		if (eq_agent_new(cfg, &a, &e)) {
			eq_log(EQ_LOG_ERR, "%s", eq_error_msg(&e));
			_exit(EQ_EXIT_FAILED);
		}
		eq_agent_set_stop(a, &eqota_stop_requested);
		int rc;
		eq_err lr = eq_agent_lock(a, first ? "daemon (confirm)" : "daemon (poll)", 0, &e);
		if (lr == EQ_ERR_STATE) {
			/* An operator's command is at work: this poll is skipped;
			 * a skipped confirm is retried before any update. */
			eq_log(EQ_LOG_NOTICE, "%s; this poll is skipped%s", eq_error_msg(&e),
			       first ? ", the confirm step is retried at the next one" : "");
			rc = first ? CYCLE_LOCKED : EQ_EXIT_FAILED;
		} else if (lr) {
			eq_log(EQ_LOG_ERR, "%s; the daemon cannot work without its lock and exits", eq_error_msg(&e));
			rc = CYCLE_BROKEN;
		} else if (first) {
			rc = eqota_confirm(a, false);
		} else {
			struct eq_update_result res;
			eq_err r = eq_agent_update(a, false, &res, &e);
			if (r == EQ_ERR_STOPPED) {
				eq_log(EQ_LOG_NOTICE, "%s", eq_error_msg(&e));
				rc = EQ_EXIT_FAILED;
			} else if (r) {
				eq_log(EQ_LOG_WARNING, "update failed: %s, retrying at the next poll",
				       eq_error_msg(&e));
				rc = EQ_EXIT_FAILED;
			} else {
				if (res.exit == EQ_EXIT_UPDATED)
					eq_log(EQ_LOG_NOTICE, "release '%s' installed; rebooting into it", res.release);
				/* Each poll: why a device stays behind its channel is
				 * what an operator reads the journal for. */
				if (res.skipped_failed)
					eq_log(EQ_LOG_NOTICE,
					       "release '%s' (number %" PRIu64 ") failed on this device before: not "
					       "installed again until a newer release appears ('eqota update --retry' "
					       "installs it now)",
					       res.release, res.number);
				if (res.deferred) {
					char why[512];
					eqota_defer_text(res.deferred, &res.policy, &res.rollout, res.number, why,
							 sizeof(why));
					eq_log(EQ_LOG_INFO, "%s", why);
				}
				rc = res.exit;
			}
		}
		eq_agent_free(a);
		fflush(NULL);
		_exit(rc);
	}
	setpgid(pid, pid);
	sigprocmask(SIG_SETMASK, &old, NULL);
	/* A hostile or broken server must not hold the daemon forever: past
	 * cycle-timeout the cycle is stopped and the next poll starts over
	 * (downloads resume from their .part files). */
	double now = eq_now_s(), deadline = now + cfg->cycle_timeout_s, kill_at = 0;
	bool stopping = false;
	int status;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			eq_log(EQ_LOG_ERR, "waiting for the poll: %s", strerror(errno));
			return EQ_EXIT_FAILED;
		}
		now = eq_now_s();
		if (!stopping && (eqota_stop_requested || now >= deadline)) {
			if (!eqota_stop_requested)
				eq_log(EQ_LOG_WARNING,
				       "the poll ran longer than [daemon] cycle-timeout (%u s): stopping it, retrying at "
				       "the next poll",
				       cfg->cycle_timeout_s);
			/* To the step alone: it stops at a safe point and ends what
			 * it started itself. A signal to the whole group would kill
			 * a mke2fs or a health check under its feet and turn a stop
			 * into an install error or a failed trial. */
			kill(pid, SIGTERM);
			stopping = true;
			kill_at = now + STEP_STOP_GRACE_S;
		} else if (stopping && kill_at > 0 && now >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = 0;
		}
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : EQ_EXIT_FAILED;
}

/* Tells systemd (Type=notify) where the daemon is; a failure is logged
 * once and never stops the daemon. */
static void notify(const char *fmt, ...) EQ_PRINTF(1, 2);
static void notify(const char *fmt, ...)
{
	static bool warned;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct eq_error e;
	if (eq_sd_notify(msg, &e) && !warned) {
		eq_log(EQ_LOG_WARNING, "%s", eq_error_msg(&e));
		warned = true;
	}
}

static const char *cycle_outcome(int ex)
{
	switch (ex) {
	case EQ_EXIT_OK: return "up to date";
	case EQ_EXIT_UPDATED: return "a release was installed";
	case EQ_EXIT_ROLLED_BACK: return "rolled back";
	default: return "failed, retried at the next poll";
	}
}

static int daemon_broken(void)
{
	notify("STATUS=cannot take eqota's lock in the data folder (see the log): exiting");
	return EQ_EXIT_FAILED;
}

/* The daemon in one boot: the confirm step, then a poll every interval.
 * Returns its exit status, or -1 after a simulated reboot (daemon_reboot). */
static int daemon_boot(const struct eq_config *cfg)
{
	/* After a boot the confirm step comes first: it may commit or roll back. */
	int ex = daemon_cycle(cfg, true);
	/* A trial left unconfirmed through its boot is rolled back by the
	 * bootloader at the next one: a confirm that found the lock held is
	 * retried at each poll, before any update. */
	while (ex == CYCLE_LOCKED && !eqota_stop_requested) {
		notify("STATUS=the confirm step waits for another eqota; retried every %u s", cfg->poll_interval_s);
		sleep_interruptible_ms(poll_wait_ms(cfg, 0));
		if (!eqota_stop_requested)
			ex = daemon_cycle(cfg, true);
	}
	if (ex == CYCLE_BROKEN)
		return daemon_broken();
	if (ex == EQ_EXIT_ROLLED_BACK && !eqota_stop_requested) {
		notify("STOPPING=1\nSTATUS=the trial slot failed and the previous slot is back: rebooting");
		return daemon_reboot();
	}
	notify("STATUS=slot confirmed; polling every %u s", cfg->poll_interval_s);
	while (!eqota_stop_requested) {
		/* Jitter keeps a fleet from polling the server in lockstep. */
		unsigned jitter = 0;
		if (cfg->poll_jitter_s && getrandom(&jitter, sizeof(jitter), 0) == (ssize_t)sizeof(jitter))
			jitter %= cfg->poll_jitter_s + 1;
		ex = daemon_cycle(cfg, false);
		if (ex == CYCLE_BROKEN)
			return daemon_broken();
		/* Asked to stop while the bootloader was switched: the trial
		 * slot is tried at whatever reboot comes next (the shutdown
		 * that stopped us, most likely), and confirmed after it. */
		if (ex == EQ_EXIT_UPDATED && !eqota_stop_requested) {
			notify("STOPPING=1\nSTATUS=a release was installed: rebooting into it");
			return daemon_reboot();
		}
		char when[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time((int64_t)time(NULL), when);
		notify("STATUS=last poll %s: %s; polling every %u s", when, cycle_outcome(ex), cfg->poll_interval_s);
		if (eqota_stop_requested)
			break;
		sleep_interruptible_ms(poll_wait_ms(cfg, jitter));
	}
	return EQ_EXIT_OK;
}

int eqota_daemon(const struct eq_config *cfg)
{
	eqota_catch_stop(eqota_on_term, false);
	/* Ready as soon as the configuration is read: the confirm step below
	 * may run health checks for minutes, longer than a start timeout
	 * should be (eqota-confirm.service has already run them at boot). */
	notify("READY=1\nSTATUS=confirming the booted slot");
	int rc;
	while ((rc = daemon_boot(cfg)) < 0 && !eqota_stop_requested)
		notify("READY=1\nSTATUS=confirming the booted slot");
	if (rc == EQ_EXIT_OK || rc < 0) {
		notify("STOPPING=1");
		eq_log(EQ_LOG_NOTICE, "stopping on request");
		rc = EQ_EXIT_OK;
	}
	return rc;
}
