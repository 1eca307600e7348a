#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eq/common.h"

/*
 * The allocation-failure hook is test-only state; in a build without test
 * hooks (EQ_TEST_HOOKS) it does not exist and the wrappers are plain malloc.
 */
#ifdef EQ_TEST_HOOKS
#include <stdatomic.h>

/* Atomic: the publisher makes its manifest companions on several threads. */
static atomic_ulong alloc_count;
static atomic_ulong alloc_fail_at;

unsigned long eq_alloc_fail_at(unsigned long n)
{
	unsigned long c = atomic_exchange(&alloc_count, 0);
	atomic_store(&alloc_fail_at, n);
	return c;
}

static bool should_fail(void)
{
	unsigned long c = atomic_fetch_add(&alloc_count, 1) + 1;
	unsigned long at = atomic_load(&alloc_fail_at);
	return at && c == at;
}
#else
static bool should_fail(void)
{
	return false;
}
#endif

void *eq_malloc(size_t n)
{
	if (should_fail())
		return NULL;
	return malloc(n ? n : 1);
}

void *eq_calloc(size_t n, size_t size)
{
	if (should_fail())
		return NULL;
	return calloc(n ? n : 1, size ? size : 1);
}

void *eq_realloc(void *p, size_t n)
{
	if (should_fail())
		return NULL;
	return realloc(p, n ? n : 1);
}

char *eq_strdup(const char *s)
{
	return eq_strndup(s, strlen(s));
}

char *eq_strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *r = eq_malloc(len + 1);
	if (!r)
		return NULL;
	memcpy(r, s, len);
	r[len] = '\0';
	return r;
}

char *eq_asprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *r = eq_malloc((size_t)n + 1);
	if (!r)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(r, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return r;
}

void eq_free(void *p)
{
	free(p);
}
