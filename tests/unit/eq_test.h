/*
 * Honest skips for the cmocka tests. cmocka's skip() counts as a pass in
 * CTest; here a case that cannot run says why with EQ_SKIP(), and
 * eq_test_run() then makes the program exit with EQ_TEST_SKIP (77), which
 * every CTest test of the suite treats as "skipped" (SKIP_RETURN_CODE).
 *
 * So that one missing tool does not turn a whole program's passes into one
 * "skipped", the cases that can skip run as CTest tests of their own:
 * eq_test_run() takes "--only CASE[,CASE...]" or "--except CASE[,CASE...]"
 * and tests/CMakeLists.txt (eq_add_unit_test PARTS) registers each part.
 * A CASE also selects the cases named "CASE/..." (parameterised ones).
 *
 * Include after <cmocka.h>, in the one source file of a test program.
 */
#ifndef EQ_TEST_H
#define EQ_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EQ_TEST_SKIP 77

static inline unsigned *eq_test_skips(void)
{
	static unsigned n;
	return &n;
}

/* Skips the current case: prints "SKIP: " and the printf-style reason,
 * which should name what is missing and how to get it. */
#define EQ_SKIP(...)                                                                                                   \
	do {                                                                                                           \
		print_message("SKIP: " __VA_ARGS__);                                                                   \
		print_message("\n");                                                                                   \
		(*eq_test_skips())++;                                                                                  \
		_skip(__FILE__, __LINE__);                                                                             \
	} while (0)

/* A plain skip() would pass in CTest without a reason: use EQ_SKIP(). */
#undef skip
#define skip() _Static_assert(0, "use EQ_SKIP(reason) from eq_test.h")

/* The body of a case that needs the test hooks of eq_base, the grub backend
 * or the agent (EQ_TEST_HOOKS): in a build without them the hooks do not
 * exist, and the case only says so. Use as
 *   #ifdef EQ_TEST_HOOKS
 *   static void test_x(void **state) { ... }
 *   #else
 *   EQ_HOOKS_MISSING(test_x)
 *   #endif
 */
#define EQ_HOOKS_MISSING(name)                                                                                         \
	static void name(void **state)                                                                                 \
	{                                                                                                              \
		(void)state;                                                                                           \
		EQ_SKIP("this build has no test hooks (configure with -DEQ_TEST_HOOKS=ON)");                           \
	}

/* Whether @name is in the comma-separated @list, or is "CASE/..." for a
 * CASE there. */
static inline int eq_test_listed(const char *list, const char *name)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		if (n && !strncmp(p, name, n) && (name[n] == '\0' || name[n] == '/'))
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

/* Fails unless every name in @list selects a case of @tests: a renamed case
 * must not drop out of its part silently. */
static inline int eq_test_check_list(const char *list, const struct CMUnitTest *tests, size_t n)
{
	int ok = 1;
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		int found = 0;
		for (size_t i = 0; i < n && !found; i++)
			found = len && !strncmp(p, tests[i].name, len) &&
				(tests[i].name[len] == '\0' || tests[i].name[len] == '/');
		if (!found) {
			fprintf(stderr, "no test case '%.*s'\n", (int)len, p);
			ok = 0;
		}
		p += len + (p[len] == ',');
	}
	return ok;
}

static inline int eq_test_run_(const char *group, const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup,
			       CMFixtureFunction teardown, int argc, char **argv)
{
	const char *only = NULL, *except = NULL;
	for (int i = 1; i < argc; i += 2) {
		if (i + 1 < argc && !strcmp(argv[i], "--only"))
			only = argv[i + 1];
		else if (i + 1 < argc && !strcmp(argv[i], "--except"))
			except = argv[i + 1];
		else {
			fprintf(stderr, "usage: %s [--only CASE[,CASE...] | --except CASE[,CASE...]]\n", argv[0]);
			return 2;
		}
	}
	if ((only && !eq_test_check_list(only, tests, n)) || (except && !eq_test_check_list(except, tests, n)))
		return 2;
	struct CMUnitTest *sel = calloc(n ? n : 1, sizeof(*sel));
	if (!sel)
		return 1;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if ((!only || eq_test_listed(only, tests[i].name)) &&
		    !(except && eq_test_listed(except, tests[i].name)))
			sel[m++] = tests[i];
	int failed = _cmocka_run_group_tests(group, sel, m, setup, teardown);
	free(sel);
	if (failed)
		return 1;
	if (*eq_test_skips()) {
		print_message("%u case(s) skipped, see the SKIP lines above\n", *eq_test_skips());
		return EQ_TEST_SKIP;
	}
	return 0;
}

/* cmocka_run_group_tests() with the --only/--except selection of argv: 0
 * when every selected case passed, EQ_TEST_SKIP when none failed but some
 * skipped, 1 on failures, 2 on a usage error. */
#define eq_test_run(tests, setup, teardown, argc, argv)                                                                \
	eq_test_run_(#tests, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown, argc, argv)

#endif
