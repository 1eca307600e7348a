/*
 * A program with a planted bug per argument, for the sanitizer build only
 * (tests/unit/sanitizers.cmake): proves that the sanitizer pass stops a
 * run on undefined behaviour (also with EQ_UBSAN_TRAP, where no libubsan
 * is linked), on a heap overflow and on a leak. Without a bug it exits 0.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* volatile: the compiler must not see the values and fold the bugs away. */
static volatile int g_big = INT_MAX;
static volatile size_t g_len = 8;

static int overflow(void)
{
	int v = g_big;
	return v + (int)g_len; /* signed overflow */
}

static int heap_overflow(void)
{
	char *p = malloc(g_len);
	if (!p)
		return 0;
	memset(p, 'x', g_len);
	int c = p[g_len]; /* one past the end */
	free(p);
	return c;
}

static int leak(void)
{
	char *p = malloc(g_len);
	if (!p)
		return 0;
	p[0] = 1;
	int c = p[0];
	p = NULL; /* the only pointer is gone */
	return c;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sanitizer_probe none|overflow|heap|leak\n");
		return 2;
	}
	int r = 0;
	if (!strcmp(argv[1], "overflow"))
		r = overflow();
	else if (!strcmp(argv[1], "heap"))
		r = heap_overflow();
	else if (!strcmp(argv[1], "leak"))
		r = leak();
	else if (strcmp(argv[1], "none"))
		return 2;
	printf("probe %s: %d\n", argv[1], r);
	return 0;
}
