#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "eq/common.h"

static const char *const names[EQ_ERR__COUNT] = {
	[EQ_OK] = "success",
	[EQ_ERR_NOMEM] = "out of memory",
	[EQ_ERR_IO] = "I/O error",
	[EQ_ERR_PARSE] = "malformed input",
	[EQ_ERR_VERIFY] = "verification failed",
	[EQ_ERR_NETWORK] = "network error",
	[EQ_ERR_LIMIT] = "limit exceeded",
	[EQ_ERR_STATE] = "invalid state",
	[EQ_ERR_INVAL] = "invalid argument",
	[EQ_ERR_NOTFOUND] = "not found",
	[EQ_ERR_UNSUPPORTED] = "unsupported",
	[EQ_ERR_EXPIRED] = "expired",
	[EQ_ERR_UNSAFE] = "unsafe input",
	[EQ_ERR_STOPPED] = "stopped on request",
};

const char *eq_err_str(eq_err code)
{
	if ((unsigned)code >= EQ_ERR__COUNT)
		return "unknown error";
	return names[code];
}

void eq_error_clear(struct eq_error *err)
{
	if (!err)
		return;
	err->code = EQ_OK;
	err->sys_errno = 0;
	err->msg[0] = '\0';
}

static void vset(struct eq_error *err, eq_err code, int saved_errno, const char *fmt, va_list ap) EQ_PRINTF(4, 0);
static void vset(struct eq_error *err, eq_err code, int saved_errno, const char *fmt, va_list ap)
{
	err->code = code;
	err->sys_errno = saved_errno;
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (n < 0)
		err->msg[0] = '\0';
	if (saved_errno) {
		size_t len = strlen(err->msg);
		snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(saved_errno));
	}
}

eq_err eq_error_set(struct eq_error *err, eq_err code, const char *fmt, ...)
{
	if (!err)
		return code;
	va_list ap;
	va_start(ap, fmt);
	vset(err, code, 0, fmt, ap);
	va_end(ap);
	return code;
}

eq_err eq_error_setv(struct eq_error *err, eq_err code, const char *fmt, va_list ap)
{
	if (err)
		vset(err, code, 0, fmt, ap);
	return code;
}

eq_err eq_error_errnov(struct eq_error *err, eq_err code, int saved_errno, const char *fmt, va_list ap)
{
	int keep = errno;
	if (err)
		vset(err, code, saved_errno ? saved_errno : EIO, fmt, ap);
	errno = keep;
	return code;
}

eq_err eq_error_errno(struct eq_error *err, eq_err code, const char *fmt, ...)
{
	int saved = errno;
	if (!err)
		return code;
	va_list ap;
	va_start(ap, fmt);
	vset(err, code, saved ? saved : EIO, fmt, ap);
	va_end(ap);
	errno = saved;
	return code;
}

eq_err eq_error_prefix(struct eq_error *err, eq_err code, const char *fmt, ...)
{
	/* The code comes from the caller, not from @err, so that passing NULL
	 * (detail not wanted) never changes what the caller returns. */
	assert(code != EQ_OK);
	if (!err)
		return code;
	err->code = code;
	char prefix[EQ_ERROR_MSG_MAX];
	char old[EQ_ERROR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	if (n < 0)
		return code;
	memcpy(old, err->msg, sizeof(old));
	/* Truncation keeps the start of the chain, which names the file. */
	size_t plen = strnlen(prefix, sizeof(err->msg) - 3);
	memcpy(err->msg, prefix, plen);
	memcpy(err->msg + plen, ": ", 2);
	size_t room = sizeof(err->msg) - plen - 3;
	size_t olen = strnlen(old, room);
	memcpy(err->msg + plen + 2, old, olen);
	err->msg[plen + 2 + olen] = '\0';
	return code;
}

const char *eq_error_msg(const struct eq_error *err)
{
	if (!err)
		return "";
	if (err->msg[0])
		return err->msg;
	return eq_err_str(err->code);
}
