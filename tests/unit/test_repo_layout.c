/*
 * The repository layout (<eq/repo_layout.h>): the paths device and
 * publisher agree on, and the names and hashes that never become a path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <string.h>

#include <eq/manifest.h>
#include <eq/repo_layout.h>

#define SHA_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define SHA_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

/* @pp, not its value: the call that fills it is an argument too, and C
 * leaves the order in which arguments are evaluated open. */
static void check_path(eq_err r, char **pp, const char *want)
{
	char *p = *pp;
	*pp = NULL;
	assert_int_equal(r, EQ_OK);
	assert_non_null(p);
	assert_string_equal(p, want);
	eq_free(p);
}

static void test_channel_files(void **state)
{
	(void)state;
	static const struct {
		enum eq_layout_file f;
		const char *rel;
	} files[] = {
		{EQ_LAYOUT_DIR, "boards/qemu-arm64/stable"},
		{EQ_LAYOUT_MANIFEST, "boards/qemu-arm64/stable/manifest.json"},
		{EQ_LAYOUT_MANIFEST_SIG, "boards/qemu-arm64/stable/manifest.json.sig"},
		{EQ_LAYOUT_MANIFEST_SHA256, "boards/qemu-arm64/stable/manifest.json.sha256"},
		{EQ_LAYOUT_MANIFEST_ZST, "boards/qemu-arm64/stable/manifest.json.zst"},
		{EQ_LAYOUT_MANIFEST_DELTAS, "boards/qemu-arm64/stable/manifest-deltas"},
		{EQ_LAYOUT_TIMESTAMP, "boards/qemu-arm64/stable/timestamp.json"},
		{EQ_LAYOUT_TIMESTAMP_SIG, "boards/qemu-arm64/stable/timestamp.json.sig"},
		{EQ_LAYOUT_RELEASES, "boards/qemu-arm64/stable/releases"},
		{EQ_LAYOUT_HISTORY, "boards/qemu-arm64/stable/publisher-history"},
	};
	_Static_assert(sizeof(files) / sizeof(files[0]) == EQ_LAYOUT_FILE_COUNT, "every file is tested");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *p = NULL;
		char want[256];
		check_path(eq_layout_channel(NULL, "qemu-arm64", "stable", files[i].f, &p, NULL), &p, files[i].rel);
		snprintf(want, sizeof(want), "/srv/repo/%s", files[i].rel);
		check_path(eq_layout_channel("/srv/repo", "qemu-arm64", "stable", files[i].f, &p, NULL), &p, want);
	}
}

static void test_release_files(void **state)
{
	(void)state;
	char *p = NULL;
	check_path(eq_layout_release(NULL, "b", "c", 12, EQ_LAYOUT_DIR, &p, NULL), &p, "boards/b/c/releases/12");
	check_path(eq_layout_release("r", "b", "c", 12, EQ_LAYOUT_MANIFEST, &p, NULL), &p,
		   "r/boards/b/c/releases/12/manifest.json");
	check_path(eq_layout_release(NULL, "b", "c", UINT64_C(9007199254740992), EQ_LAYOUT_MANIFEST_SIG, &p, NULL), &p,
		   "boards/b/c/releases/9007199254740992/manifest.json.sig");
	/* What belongs to the channel has no place in a release folder. */
	static const enum eq_layout_file channel_only[] = {EQ_LAYOUT_TIMESTAMP, EQ_LAYOUT_TIMESTAMP_SIG,
							   EQ_LAYOUT_RELEASES, EQ_LAYOUT_HISTORY, EQ_LAYOUT_FILE_COUNT};
	for (size_t i = 0; i < sizeof(channel_only) / sizeof(channel_only[0]); i++) {
		struct eq_error e;
		eq_error_clear(&e);
		p = (char *)"untouched";
		assert_int_equal(eq_layout_release("r", "b", "c", 1, channel_only[i], &p, &e), EQ_ERR_INVAL);
		assert_null(p);
		assert_non_null(strstr(e.msg, "release folder"));
	}
}

static void test_store_paths(void **state)
{
	(void)state;
	char *p = NULL;
	check_path(eq_layout_object(NULL, SHA_A, &p, NULL), &p, "objects/" SHA_A);
	check_path(eq_layout_object("repo", SHA_A, &p, NULL), &p, "repo/objects/" SHA_A);
	check_path(eq_layout_delta(NULL, SHA_A, SHA_B, &p, NULL), &p, "deltas/" SHA_A "-" SHA_B);
	check_path(eq_layout_delta("repo", SHA_A, SHA_B, &p, NULL), &p, "repo/deltas/" SHA_A "-" SHA_B);
	check_path(eq_layout_root(NULL, 1, &p, NULL), &p, "root/1.root.json");
	check_path(eq_layout_root("https://h/r", 42, &p, NULL), &p, "https://h/r/root/42.root.json");
	check_path(eq_layout_manifest_delta(NULL, "b", "c", SHA_A, SHA_B, &p, NULL), &p,
		   "boards/b/c/manifest-deltas/" SHA_A "-" SHA_B ".delta");
	/* The manifest's own rule for object and delta paths is this layout. */
	assert_int_equal(strlen("objects/" SHA_A), EQ_MANIFEST_OBJECT_PATH_LEN);
	assert_int_equal(strlen("deltas/" SHA_A "-" SHA_B), EQ_MANIFEST_DELTA_PATH_LEN);
}

/* 65 characters: one more than a name may have. */
#define LONG_NAME "a2345678901234567890123456789012345678901234567890123456789012345"

static const char *const hostile_names[] = {
	"",     ".",      "..",  "../x", "x/..",        "a/b",   "/abs", "a\\b",    ".hidden",
	"-opt", "_under", "a b", "a\nb", "caf\xc3\xa9", "a%2fb", "a:b",  LONG_NAME,
};

static void test_hostile_names(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(hostile_names) / sizeof(hostile_names[0]); i++) {
		const char *bad = hostile_names[i];
		assert_non_null(eq_layout_check_name(bad));
		char *p = (char *)"untouched";
		struct eq_error e;
		eq_error_clear(&e);
		assert_int_equal(eq_layout_channel("r", bad, "stable", EQ_LAYOUT_MANIFEST, &p, &e), EQ_ERR_INVAL);
		assert_null(p);
		assert_non_null(strstr(e.msg, "board"));
		eq_error_clear(&e);
		assert_int_equal(eq_layout_channel(NULL, "b", bad, EQ_LAYOUT_DIR, &p, &e), EQ_ERR_INVAL);
		assert_null(p);
		assert_non_null(strstr(e.msg, "channel"));
		assert_int_equal(eq_layout_release("r", bad, "c", 1, EQ_LAYOUT_MANIFEST, &p, NULL), EQ_ERR_INVAL);
		assert_int_equal(eq_layout_release("r", "b", bad, 1, EQ_LAYOUT_MANIFEST, &p, NULL), EQ_ERR_INVAL);
		assert_int_equal(eq_layout_manifest_delta("r", bad, "c", SHA_A, SHA_B, &p, NULL), EQ_ERR_INVAL);
		assert_int_equal(eq_layout_manifest_delta("r", "b", bad, SHA_A, SHA_B, &p, NULL), EQ_ERR_INVAL);
		assert_null(p);
	}
	assert_int_equal(eq_layout_channel("r", NULL, "c", EQ_LAYOUT_DIR, &(char *){NULL}, NULL), EQ_ERR_INVAL);
	/* The longest name that is still one, and names as the manifest has them. */
	static const char longest[] = "a234567890123456789012345678901234567890123456789012345678901234";
	assert_int_equal(strlen(longest), EQ_MANIFEST_NAME_MAX);
	assert_null(eq_layout_check_name(longest));
	assert_null(eq_layout_check_name("0.9_rc-1"));
	assert_null(eq_layout_check_name("Qemu.ARM64"));
}

static void test_hostile_hashes(void **state)
{
	(void)state;
	static const char *const bad[] = {
		NULL,
		"",
		"..",
		"../../etc/passwd",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0", /* 65 digits */
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde",   /* 63 */
		"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",  /* upper case */
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd/f",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *p = (char *)"untouched";
		assert_int_equal(eq_layout_object("r", bad[i], &p, NULL), EQ_ERR_INVAL);
		assert_null(p);
		assert_int_equal(eq_layout_delta("r", bad[i], SHA_B, &p, NULL), EQ_ERR_INVAL);
		assert_int_equal(eq_layout_delta("r", SHA_A, bad[i], &p, NULL), EQ_ERR_INVAL);
		assert_int_equal(eq_layout_manifest_delta("r", "b", "c", bad[i], SHA_B, &p, NULL), EQ_ERR_INVAL);
		assert_int_equal(eq_layout_manifest_delta("r", "b", "c", SHA_A, bad[i], &p, NULL), EQ_ERR_INVAL);
		assert_null(p);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_channel_files),  cmocka_unit_test(test_release_files),
		cmocka_unit_test(test_store_paths),    cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_hostile_hashes),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
