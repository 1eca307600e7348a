#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "eq/common.h"

/* One of the two allowed globals (STYLE 20): the agent's log threshold. */
static enum eq_log_level threshold = EQ_LOG_NOTICE;

void eq_log_set_level(enum eq_log_level level)
{
	threshold = level;
}

enum eq_log_level eq_log_get_level(void)
{
	return threshold;
}

static const char *level_name(enum eq_log_level l)
{
	switch (l) {
	case EQ_LOG_ERR: return "error";
	case EQ_LOG_WARNING: return "warning";
	case EQ_LOG_NOTICE: return "notice";
	case EQ_LOG_INFO: return "info";
	case EQ_LOG_DEBUG: return "debug";
	}
	return "log";
}

void eq_log_at(enum eq_log_level level, const char *file, int line, const char *fmt, ...)
{
	if (level > threshold)
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* journald turns "<N>" into the priority when stderr is its stream;
	 * a person at a terminal reads the level's name instead. */
	if (isatty(STDERR_FILENO)) {
		if (level == EQ_LOG_DEBUG) {
			const char *base = strrchr(file, '/');
			fprintf(stderr, "%s: %s:%d: %s\n", level_name(level), base ? base + 1 : file, line, msg);
		} else {
			fprintf(stderr, "%s: %s\n", level_name(level), msg);
		}
	} else {
		if (level == EQ_LOG_DEBUG) {
			const char *base = strrchr(file, '/');
			fprintf(stderr, "<%d>%s: %s:%d: %s\n", (int)level, level_name(level), base ? base + 1 : file,
				line, msg);
		} else {
			fprintf(stderr, "<%d>%s: %s\n", (int)level, level_name(level), msg);
		}
	}
}
