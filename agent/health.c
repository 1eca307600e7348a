#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <eq/agent.h>

#include "health.h"

#define MAX_ARGS 64

/* The health check's process group while one runs, for
 * eq_health_kill_running() (a signal handler). */
static volatile sig_atomic_t running_pgid;

void eq_health_kill_running(void)
{
	pid_t pg = running_pgid;
	if (pg > 0)
		kill(-pg, SIGKILL);
}

/* Splits @cmd at runs of spaces into @argv (pointers into @buf). */
static size_t split(const char *cmd, char *buf, size_t bufsz, char **argv)
{
	snprintf(buf, bufsz, "%s", cmd);
	size_t n = 0;
	for (char *p = buf; *p && n < MAX_ARGS - 1;) {
		while (*p == ' ' || *p == '\t')
			*p++ = '\0';
		if (!*p)
			break;
		argv[n++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	argv[n] = NULL;
	return n;
}

static eq_err run_one(const char *cmd, double deadline, struct eq_error *err)
{
	char buf[4096];
	char *argv[MAX_ARGS];
	if (split(cmd, buf, sizeof(buf), argv) == 0)
		return eq_error_set(err, EQ_ERR_INVAL, "empty health check");
	/* A SIGTERM between fork() and running_pgid would miss the new check:
	 * the signals wait until the group is known. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid_t pid = fork();
	if (pid < 0) {
		int saved = errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		errno = saved;
		return eq_error_errno(err, EQ_ERR_IO, "cannot start health check '%s'", cmd);
	}
	if (pid == 0) {
		/* Own process group, so a timeout kills whatever the check started. */
		setpgid(0, 0);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execv(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	running_pgid = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	int status;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			running_pgid = 0;
			return eq_error_errno(err, EQ_ERR_IO, "waiting for health check '%s'", cmd);
		}
		if (eq_now_s() >= deadline) {
			kill(-pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			running_pgid = 0;
			return eq_error_set(err, EQ_ERR_LIMIT, "health check '%s' did not finish within the time limit",
					    cmd);
		}
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	running_pgid = 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return EQ_OK;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return eq_error_set(err, EQ_ERR_VERIFY, "health check '%s' could not be run (exit status 127)", cmd);
	if (WIFEXITED(status))
		return eq_error_set(err, EQ_ERR_VERIFY, "health check '%s' failed with exit status %d", cmd,
				    WEXITSTATUS(status));
	return eq_error_set(err, EQ_ERR_VERIFY, "health check '%s' was killed by signal %d", cmd, WTERMSIG(status));
}

eq_err eq_health_run(const char *const *checks, size_t n_checks, unsigned timeout_s, struct eq_error *err)
{
	double deadline = eq_now_s() + timeout_s;
	for (size_t i = 0; i < n_checks; i++) {
		eq_err r = run_one(checks[i], deadline, err);
		if (r)
			return r;
	}
	return EQ_OK;
}
