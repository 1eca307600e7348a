/*
 * Bad-input corpus for eq_gen (tests/data/bad/gen/): every *.index file must
 * fail eq_build_index_load() with the code and message substring named in
 * the matching *.expect file (line 1: EQ_ERR_NAME, line 2: substring).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <eq/gen_index.h>

static const char *const code_names[EQ_ERR__COUNT] = {
	[EQ_OK] = "EQ_OK",
	[EQ_ERR_NOMEM] = "EQ_ERR_NOMEM",
	[EQ_ERR_IO] = "EQ_ERR_IO",
	[EQ_ERR_PARSE] = "EQ_ERR_PARSE",
	[EQ_ERR_VERIFY] = "EQ_ERR_VERIFY",
	[EQ_ERR_NETWORK] = "EQ_ERR_NETWORK",
	[EQ_ERR_LIMIT] = "EQ_ERR_LIMIT",
	[EQ_ERR_STATE] = "EQ_ERR_STATE",
	[EQ_ERR_INVAL] = "EQ_ERR_INVAL",
	[EQ_ERR_NOTFOUND] = "EQ_ERR_NOTFOUND",
	[EQ_ERR_UNSUPPORTED] = "EQ_ERR_UNSUPPORTED",
	[EQ_ERR_EXPIRED] = "EQ_ERR_EXPIRED",
	[EQ_ERR_UNSAFE] = "EQ_ERR_UNSAFE",
};

static void strip_nl(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
}

static void check_one(const char *dir, const char *name)
{
	char path[1024], expect[1024], want_code[64] = "", want_msg[512] = "";
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(expect, sizeof(expect), "%.*s.expect", (int)(strlen(path) - strlen(".index")), path);
	FILE *f = fopen(expect, "r");
	if (!f)
		fail_msg("%s: missing .expect file", name);
	if (!fgets(want_code, sizeof(want_code), f) || !fgets(want_msg, sizeof(want_msg), f))
		fail_msg("%s: .expect needs two lines", expect);
	fclose(f);
	strip_nl(want_code);
	strip_nl(want_msg);

	struct eq_build_index *idx = NULL;
	struct eq_error e;
	eq_error_clear(&e);
	eq_err r = eq_build_index_load(path, &idx, &e);
	eq_build_index_free(idx);
	if (r == EQ_OK)
		fail_msg("%s: loaded, expected %s", name, want_code);
	if (strcmp(code_names[r], want_code) != 0)
		fail_msg("%s: got %s (%s), expected %s", name, code_names[r], e.msg, want_code);
	if (!strstr(e.msg, want_msg))
		fail_msg("%s: message '%s' lacks '%s'", name, e.msg, want_msg);
	/* Errors name the file. */
	if (!strstr(e.msg, name))
		fail_msg("%s: message '%s' does not name the file", name, e.msg);
}

static void test_bad_corpus(void **state)
{
	(void)state;
	const char *data = getenv("EQ_TEST_DATA");
	assert_non_null(data);
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/bad/gen", data);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l > 6 && strcmp(de->d_name + l - 6, ".index") == 0) {
			check_one(dir, de->d_name);
			n++;
		}
	}
	closedir(d);
	assert_true(n >= 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_corpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
