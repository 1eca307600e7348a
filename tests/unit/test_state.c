/*
 * Unit tests for the agent's state file (agent/state.c): a round trip of
 * every field, the damaged files of tests/data/bad/state with the message
 * each must give, every truncation of a valid file, and the values the
 * writer never produces (unknown and repeated keys, numbers past their caps,
 * NUL bytes, a file over EQ_STATE_MAX_BYTES).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <eq/agent.h>

#include "../../agent/state.h"

static char dir[64];
static char path[128];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/eq-test-state-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/state", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	struct eq_error e;
	return eq_rm_rf(dir, &e) == EQ_OK ? 0 : -1;
}

/* A plain write: the truncation loop writes thousands of files, and what
 * is tested is the reader, not the durability of the write. */
static void put(const void *d, size_t n)
{
	/* a new file each time: truncating one waits for its writeback */
	unlink(path);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(d, 1, n, f) != n || fclose(f) != 0)
		fail_msg("cannot write %s", path);
}

/* The bytes of the state file; the caller frees them with eq_free(). */
/* Not inlined: gcc 12 -O2 then takes the returned buffer for the local
 * pointer variable it was read into (-Wdangling-pointer false positive). */
__attribute__((noinline)) static char *get(size_t *len)
{
	struct eq_error e;
	uint8_t *d = NULL;
	if (eq_file_read_all(path, 1 << 20, &d, len, &e) != EQ_OK)
		fail_msg("%s", e.msg);
	return (char *)d;
}

/* A state with no field at its default, each at the largest value the
 * reader takes. */
static void full_state(struct eq_state *s)
{
	eq_state_init(s);
	s->phase = EQ_PHASE_TRYING;
	s->target_slot = 1;
	s->from_slot = 0;
	s->target_number = UINT64_C(1) << 53;
	memset(s->target_release, 'r', 64);
	s->target_release[0] = 'R';
	s->target_release[63] = '9';
	s->target_release[64] = '\0';
	s->failed_number = 7;
	memset(s->failed_reason, 'f', sizeof(s->failed_reason) - 1);
	s->failed_reason[sizeof(s->failed_reason) - 1] = '\0';
	memset(s->boot_id, 'a', EQ_STATE_BOOT_ID_MAX);
	s->boot_id[8] = '-';
	s->boot_id[EQ_STATE_BOOT_ID_MAX] = '\0';
	s->error_number = 9;
	snprintf(s->error, sizeof(s->error), "download 'https://x/objects/ab': HTTP 404 ~!@#$%%^&*()=");
	s->error_at = INT64_C(253402300799);
	s->attempts = UINT32_MAX;
	s->next_attempt = INT64_C(253402300798);
}

static void assert_same_state(const struct eq_state *a, const struct eq_state *b)
{
	assert_int_equal(a->phase, b->phase);
	assert_int_equal(a->target_slot, b->target_slot);
	assert_int_equal(a->from_slot, b->from_slot);
	assert_int_equal(a->target_number, b->target_number);
	assert_string_equal(a->target_release, b->target_release);
	assert_int_equal(a->failed_number, b->failed_number);
	assert_string_equal(a->failed_reason, b->failed_reason);
	assert_int_equal(a->changed_at, b->changed_at);
	assert_string_equal(a->boot_id, b->boot_id);
	assert_int_equal(a->error_number, b->error_number);
	assert_string_equal(a->error, b->error);
	assert_int_equal(a->error_at, b->error_at);
	assert_int_equal(a->attempts, b->attempts);
	assert_int_equal(a->next_attempt, b->next_attempt);
}

static void save(const struct eq_state *s)
{
	struct eq_error e;
	if (eq_state_save(path, s, &e) != EQ_OK)
		fail_msg("%s", e.msg);
}

static void load_ok(struct eq_state *s)
{
	struct eq_error e;
	if (eq_state_load(path, s, &e) != EQ_OK)
		fail_msg("%s", e.msg);
}

/* Loads @text (@len bytes) and expects @want with a message containing
 * "state file <path>" and @substr, and *ret untouched. */
static void expect_refused_n(const char *text, size_t len, eq_err want, const char *substr)
{
	put(text, len);
	struct eq_state s;
	struct eq_error e;
	memset(&s, 0x5a, sizeof(s));
	eq_error_clear(&e);
	eq_err r = eq_state_load(path, &s, &e);
	if (r != want || !strstr(e.msg, substr) || !strstr(e.msg, path))
		fail_msg("got %s '%s', want %s naming %s and containing '%s'\n--- input (%zu bytes):\n%.*s",
			 eq_err_str(r), e.msg, eq_err_str(want), path, substr, len, (int)len, text);
	for (size_t i = 0; i < sizeof(s); i++)
		if (((unsigned char *)&s)[i] != 0x5a)
			fail_msg("*ret written at byte %zu on an error ('%s')", i, e.msg);
}

static void expect_refused(const char *text, eq_err want, const char *substr)
{
	expect_refused_n(text, strlen(text), want, substr);
}

static void load_text(const char *text, struct eq_state *s)
{
	put(text, strlen(text));
	struct eq_error e;
	if (eq_state_load(path, s, &e) != EQ_OK)
		fail_msg("'%s'\n--- input:\n%s", e.msg, text);
}

#define OLD_IDLE                                                                                                       \
	"phase=idle\ntarget_slot=-\nfrom_slot=-\ntarget_number=0\ntarget_release=\nfailed_number=0\n"                  \
	"failed_reason=\nchanged_at=1\n"
#define ADDED_NONE "boot_id=\nerror_number=0\nerror=\nerror_at=0\nattempts=0\nnext_attempt=0\n"

static void test_round_trip(void **state)
{
	(void)state;
	struct eq_state s, back;
	full_state(&s);
	int64_t before = (int64_t)time(NULL);
	save(&s);
	int64_t after = (int64_t)time(NULL);
	load_ok(&back);
	/* changed_at is the time of the write, whatever the caller had */
	assert_true(back.changed_at >= before && back.changed_at <= after);
	s.changed_at = back.changed_at;
	assert_same_state(&back, &s);

	/* the initial state, and each phase with each slot as target */
	eq_state_init(&s);
	save(&s);
	load_ok(&back);
	s.changed_at = back.changed_at;
	assert_same_state(&back, &s);
	for (int p = EQ_PHASE_INSTALLING; p <= EQ_PHASE_TRYING; p++)
		for (int t = 0; t < 2; t++) {
			eq_state_init(&s);
			s.phase = (enum eq_phase)p;
			s.target_slot = t;
			s.from_slot = !t;
			s.target_number = 1;
			save(&s);
			load_ok(&back);
			s.changed_at = back.changed_at;
			assert_same_state(&back, &s);
		}

	/* what the file says, line by line */
	full_state(&s);
	s.target_release[0] = '\0';
	s.phase = EQ_PHASE_IDLE;
	s.target_slot = s.from_slot = -1;
	s.target_number = 0;
	save(&s);
	size_t len;
	char *text = get(&len);
	assert_non_null(strstr(text, "phase=idle\ntarget_slot=-\nfrom_slot=-\ntarget_number=0\ntarget_release=\n"
				     "failed_number=7\n"));
	assert_non_null(strstr(text, "\nerror_number=9\n"));
	assert_non_null(strstr(text, "\nerror_at=253402300799\nattempts=4294967295\nnext_attempt=253402300798\n"));
	eq_free(text);
}

/* Control characters in the texts would end their line early or be refused
 * on reading: the writer turns them into spaces. */
static void test_control_chars(void **state)
{
	(void)state;
	struct eq_state s, back;
	eq_state_init(&s);
	s.failed_number = 3;
	snprintf(s.failed_reason, sizeof(s.failed_reason), "health\ncheck=1\x7f\tx\r");
	s.error_number = 4;
	s.attempts = 1;
	snprintf(s.error, sizeof(s.error), "phase=trying\n\x1b[0m");
	save(&s);
	load_ok(&back);
	assert_string_equal(back.failed_reason, "health check=1  x ");
	assert_string_equal(back.error, "phase=trying  [0m");
	assert_int_equal(back.phase, EQ_PHASE_IDLE);
}

static void test_missing_file_is_idle(void **state)
{
	(void)state;
	unlink(path);
	struct eq_state s, idle;
	memset(&s, 0x5a, sizeof(s));
	load_ok(&s);
	eq_state_init(&idle);
	assert_same_state(&s, &idle);
}

/* An older agent's file has only the original keys: it still reads, with
 * the added fields at their defaults. */
static void test_old_format(void **state)
{
	(void)state;
	struct eq_state s, idle;
	load_text(OLD_IDLE, &s);
	eq_state_init(&idle);
	idle.changed_at = 1;
	assert_same_state(&s, &idle);
	load_text(OLD_IDLE ADDED_NONE, &s);
	assert_same_state(&s, &idle);
}

/* Every file of tests/data/bad/state, with the code and the part of the
 * message that names what is wrong. A new file there needs a row here. */
static const struct {
	const char *name;
	eq_err code;
	const char *msg;
} bad_files[] = {
	{"duplicate-key", EQ_ERR_PARSE, "line 2: phase: repeated"},
	{"empty", EQ_ERR_PARSE, ": empty"},
	{"missing-key", EQ_ERR_PARSE, "no changed_at line"},
	{"negative-number", EQ_ERR_PARSE, "line 6: failed_number: bad value '-1'"},
	{"nul-byte", EQ_ERR_PARSE, "NUL byte at offset 10"},
	{"oversized", EQ_ERR_LIMIT, "larger than the limit of 8192 bytes"},
	{"truncated", EQ_ERR_PARSE, "truncated: the last line has no newline"},
	{"trying-without-slot", EQ_ERR_PARSE, "phase trying without a target and a different from_slot"},
	{"unknown-key", EQ_ERR_PARSE, "line 9: unknown key 'bogus'"},
};

static void test_bad_corpus(void **state)
{
	(void)state;
	const char *data_dir = secure_getenv("EQ_TEST_DATA");
	char bad[512];
	snprintf(bad, sizeof(bad), "%s/bad/state", data_dir ? data_dir : "tests/data");
	DIR *d = opendir(bad);
	if (!d)
		fail_msg("cannot open %s", bad);
	struct dirent *de;
	unsigned seen = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		size_t i = 0;
		while (i < sizeof(bad_files) / sizeof(bad_files[0]) && strcmp(bad_files[i].name, de->d_name))
			i++;
		if (i == sizeof(bad_files) / sizeof(bad_files[0])) {
			fail_msg("%s/%s has no row in bad_files[] of test_state.c", bad, de->d_name);
			break; /* not reached: fail_msg ends the test */
		}
		char file[1024];
		snprintf(file, sizeof(file), "%s/%s", bad, de->d_name);
		struct eq_state s;
		struct eq_error e;
		memset(&s, 0x5a, sizeof(s));
		eq_err r = eq_state_load(file, &s, &e);
		if (r != bad_files[i].code || !strstr(e.msg, bad_files[i].msg) || !strstr(e.msg, file))
			fail_msg("%s: got %s '%s', want %s naming the file and containing '%s'", de->d_name,
				 eq_err_str(r), e.msg, eq_err_str(bad_files[i].code), bad_files[i].msg);
		assert_int_equal(s.attempts, 0x5a5a5a5a5a5a5a5au);
		seen++;
	}
	closedir(d);
	assert_int_equal(seen, sizeof(bad_files) / sizeof(bad_files[0]));
}

/* A cut-off copy of a file at every length: refused, or - only where the cut
 * leaves exactly an older agent's file - read with the fields that file has.
 * Never another state. */
static void truncations_of(const struct eq_state *orig)
{
	save(orig);
	size_t len;
	char *text = get(&len);
	struct eq_state full;
	load_ok(&full);
	/* the end of the changed_at line: what an older agent wrote */
	const char *old_end = strstr(text, "\nboot_id=");
	assert_non_null(old_end);
	size_t old_len = (size_t)(old_end - text) + 1;
	unsigned read_back = 0;
	for (size_t n = 0; n < len; n++) {
		put(text, n);
		struct eq_state s;
		struct eq_error e;
		memset(&s, 0x5a, sizeof(s));
		eq_error_clear(&e);
		eq_err r = eq_state_load(path, &s, &e);
		if (r != EQ_OK) {
			if (r != EQ_ERR_PARSE || !strstr(e.msg, path))
				fail_msg("cut at %zu: %s '%s'", n, eq_err_str(r), e.msg);
			assert_int_equal(s.attempts, 0x5a5a5a5a5a5a5a5au);
			continue;
		}
		if (n != old_len)
			fail_msg("cut at %zu of %zu bytes: read as a valid state\n--- input:\n%.*s", n, len, (int)n,
				 text);
		struct eq_state want = full;
		want.boot_id[0] = want.error[0] = '\0';
		want.error_number = want.attempts = 0;
		want.error_at = want.next_attempt = 0;
		assert_same_state(&s, &want);
		read_back++;
	}
	assert_true(read_back <= 1);
	eq_free(text);
}

static void test_truncations(void **state)
{
	(void)state;
	struct eq_state s;
	full_state(&s);
	truncations_of(&s);
	/* no install error: its fields are all 0 and "" */
	s.error_number = s.attempts = 0;
	s.error[0] = '\0';
	s.error_at = s.next_attempt = 0;
	truncations_of(&s);
	eq_state_init(&s);
	truncations_of(&s);
}

static void test_unknown_keys(void **state)
{
	(void)state;
	expect_refused(OLD_IDLE "bogus=1\n", EQ_ERR_PARSE, "line 9: unknown key 'bogus'");
	expect_refused("Phase=idle\n", EQ_ERR_PARSE, "line 1: unknown key 'Phase'");
	expect_refused("phase =idle\n", EQ_ERR_PARSE, "line 1: unknown key 'phase '");
	expect_refused(" phase=idle\n", EQ_ERR_PARSE, "line 1: unknown key ' phase'");
	expect_refused("=idle\n", EQ_ERR_PARSE, "line 1: unknown key ''");
	expect_refused(OLD_IDLE "\n", EQ_ERR_PARSE, "line 9: expected key=value");
	expect_refused(OLD_IDLE "# comment\n", EQ_ERR_PARSE, "line 9: expected key=value");
	expect_refused("phase=idle\r\n", EQ_ERR_PARSE, "line 1: phase: bad value 'idle\r'");
	/* a key longer than the message shows is cut, not overrun */
	char longkey[600];
	memset(longkey, 'k', 590);
	memcpy(longkey + 590, "=1\n", 4);
	expect_refused(longkey, EQ_ERR_PARSE, "unknown key 'kkkkkkkkkkkkkkkk");
}

static void test_duplicate_keys(void **state)
{
	(void)state;
	static const char *const lines[] = {
		"phase=idle\n",      "target_slot=-\n",  "from_slot=-\n",  "target_number=0\n", "target_release=\n",
		"failed_number=0\n", "failed_reason=\n", "changed_at=1\n", "boot_id=\n",        "error_number=0\n",
		"error=\n",          "error_at=0\n",     "attempts=0\n",   "next_attempt=0\n",
	};
	for (size_t k = 0; k < sizeof(lines) / sizeof(lines[0]); k++) {
		char text[1024], msg[64];
		snprintf(text, sizeof(text), OLD_IDLE ADDED_NONE "%s", lines[k]);
		snprintf(msg, sizeof(msg), "line 15: %.*s: repeated", (int)strcspn(lines[k], "="), lines[k]);
		expect_refused(text, EQ_ERR_PARSE, msg);
	}
	/* repeated with another value, right after the first */
	expect_refused("phase=idle\nphase=trying\n", EQ_ERR_PARSE, "line 2: phase: repeated");
}

/* OLD_IDLE with line @key replaced by "key=@value". */
static void with_value(char *out, size_t cap, const char *key, const char *value)
{
	char full[1024];
	snprintf(full, sizeof(full), "%s%s", OLD_IDLE, ADDED_NONE);
	char k[64];
	snprintf(k, sizeof(k), "%s=", key);
	char *at = strstr(full, k);
	if (at != full)
		at = strstr(full, (snprintf(k, sizeof(k), "\n%s=", key), k)) + 1;
	char *eol = strchr(at, '\n');
	snprintf(out, cap, "%.*s%s=%s%s", (int)(at - full), full, key, value, eol);
}

static void check_value(const char *key, const char *value, bool ok)
{
	char text[2048], msg[128];
	with_value(text, sizeof(text), key, value);
	if (ok) {
		struct eq_state s;
		load_text(text, &s);
		return;
	}
	snprintf(msg, sizeof(msg), "%s: bad value '%.40s", key, value);
	expect_refused(text, EQ_ERR_PARSE, msg);
}

static void test_numbers(void **state)
{
	(void)state;
	/* release numbers: at most 2^53 */
	check_value("failed_number", "9007199254740992", true);
	check_value("failed_number", "9007199254740993", false);
	check_value("failed_number", "18446744073709551615", false); /* UINT64_MAX */
	check_value("failed_number", "18446744073709551616", false); /* UINT64_MAX + 1 */
	check_value("failed_number", "184467440737095516150", false);
	check_value("failed_number", "99999999999999999999999999999999999999", false);
	/* times: at most 9999-12-31T23:59:59Z, never negative */
	check_value("changed_at", "253402300799", true);
	check_value("changed_at", "253402300800", false);
	check_value("changed_at", "9223372036854775807", false); /* INT64_MAX */
	check_value("changed_at", "9223372036854775808", false); /* INT64_MAX + 1 */
	check_value("changed_at", "-1", false);
	check_value("changed_at", "-9223372036854775808", false);
	/* attempts: at most 2^32 - 1 */
	char text[2048];
	with_value(text, sizeof(text), "error_number", "5");
	char *a = strstr(text, "attempts=0\n");
	assert_non_null(a);
	memcpy(a, "attempts=1\n", 11);
	struct eq_state s;
	load_text(text, &s);
	assert_int_equal(s.error_number, 5);
	assert_int_equal(s.attempts, 1);
	check_value("attempts", "4294967296", false);
	check_value("attempts", "18446744073709551616", false);
	/* the writer's form only: digits, no sign, no leading zero, no space */
	static const char *const bad[] = {"", "+1", "01", "00", " 1", "1 ", "1a", "0x10", "1e3", "1.0", "\xc2\xb9"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		check_value("target_number", bad[i], false);
		check_value("next_attempt", bad[i], false);
	}
}

static void test_other_values(void **state)
{
	(void)state;
	check_value("phase", "Idle", false);
	check_value("phase", "", false);
	check_value("phase", "idle ", false);
	check_value("target_slot", "C", false);
	check_value("target_slot", "", false);
	check_value("from_slot", "--", false);
	check_value("target_release", "-r1", false);
	check_value("target_release", "r 1", false);
	check_value("target_release", "r1/..", false);
	char s65[80];
	memset(s65, 'r', 65);
	s65[65] = '\0';
	check_value("target_release", s65, false);
	s65[64] = '\0';
	check_value("target_release", s65, true);
	check_value("boot_id", "ABCDEF", false);
	check_value("boot_id", "ab cd", false);
	char id[80];
	memset(id, 'a', 65);
	id[65] = '\0';
	check_value("boot_id", id, false);
	id[64] = '\0';
	check_value("boot_id", id, true);
	/* texts: no control characters, shorter than EQ_STATE_REASON_MAX */
	check_value("failed_reason", "a\tb", false);
	check_value("failed_reason", "a\x7f", false);
	check_value("error", "\x1b[0m", false);
	char reason[EQ_STATE_REASON_MAX + 2];
	memset(reason, 'x', EQ_STATE_REASON_MAX);
	reason[EQ_STATE_REASON_MAX] = '\0';
	check_value("failed_reason", reason, false);
	reason[EQ_STATE_REASON_MAX - 1] = '\0';
	check_value("failed_reason", reason, true);
	/* an '=' in a value is part of it */
	struct eq_state s;
	char text[2048];
	with_value(text, sizeof(text), "failed_reason", "a=b==");
	load_text(text, &s);
	assert_string_equal(s.failed_reason, "a=b==");
}

/* Lines that are each fine but never written together. */
static void test_inconsistent(void **state)
{
	(void)state;
	char text[2048];
	with_value(text, sizeof(text), "target_slot", "A");
	expect_refused(text, EQ_ERR_PARSE, "phase idle with a target");
	with_value(text, sizeof(text), "target_number", "3");
	expect_refused(text, EQ_ERR_PARSE, "phase idle with a target");
	expect_refused("phase=installing\ntarget_slot=A\nfrom_slot=A\ntarget_number=1\ntarget_release=\n"
		       "failed_number=0\nfailed_reason=\nchanged_at=1\n",
		       EQ_ERR_PARSE, "phase installing without a target and a different from_slot");
	expect_refused("phase=installed\ntarget_slot=B\nfrom_slot=A\ntarget_number=0\ntarget_release=\n"
		       "failed_number=0\nfailed_reason=\nchanged_at=1\n",
		       EQ_ERR_PARSE, "phase installed without a target_number");
	with_value(text, sizeof(text), "error", "HTTP 404");
	expect_refused(text, EQ_ERR_PARSE, "an install error without its error_number");
	with_value(text, sizeof(text), "next_attempt", "5");
	expect_refused(text, EQ_ERR_PARSE, "an install error without its error_number");
	with_value(text, sizeof(text), "error_number", "5");
	expect_refused(text, EQ_ERR_PARSE, "error_number 5 with 0 attempts");
}

/* The added keys come all together (this agent) or not at all (an older
 * one): a file with some of them was cut off at a line's end. */
static void test_added_keys_together(void **state)
{
	(void)state;
	static const char *const added[] = {
		"boot_id=", "error_number=", "error=", "error_at=", "attempts=", "next_attempt="};
	for (size_t k = 0; k < sizeof(added) / sizeof(added[0]); k++) {
		char text[1024], msg[64];
		const char *all = OLD_IDLE ADDED_NONE;
		const char *at = strstr(all, added[k]);
		const char *eol = strchr(at, '\n') + 1;
		snprintf(text, sizeof(text), "%.*s%s", (int)(at - all), all, eol);
		snprintf(msg, sizeof(msg), "no %.*s line", (int)strlen(added[k]) - 1, added[k]);
		expect_refused(text, EQ_ERR_PARSE, msg);
		/* that key alone after the original ones */
		snprintf(text, sizeof(text), OLD_IDLE "%.*s", (int)(eol - at), at);
		expect_refused(text, EQ_ERR_PARSE, k ? "no boot_id line" : "no error_number line");
	}
}

static void test_nul_and_newline(void **state)
{
	(void)state;
	static const char text[] = OLD_IDLE ADDED_NONE;
	char buf[sizeof(text)];
	size_t len = sizeof(text) - 1;
	/* a NUL byte in a value, in a key, as the last byte */
	const size_t at[] = {strlen("phase=id"), strlen(OLD_IDLE "boot_id="), strlen(OLD_IDLE "err"), len - 1};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		memcpy(buf, text, len);
		buf[at[i]] = '\0';
		char msg[64];
		snprintf(msg, sizeof(msg), "NUL byte at offset %zu", at[i]);
		expect_refused_n(buf, len, EQ_ERR_PARSE, msg);
	}
	/* no newline after the last line */
	expect_refused_n(text, len - 1, EQ_ERR_PARSE, "truncated: the last line has no newline");
	expect_refused("\n", EQ_ERR_PARSE, "line 1: expected key=value");
}

static void test_size_cap(void **state)
{
	(void)state;
	static char big[EQ_STATE_MAX_BYTES * 4];
	memset(big, '\n', sizeof(big));
	memcpy(big, OLD_IDLE, strlen(OLD_IDLE));
	/* at the cap it is read (and refused for its empty line) */
	expect_refused_n(big, EQ_STATE_MAX_BYTES, EQ_ERR_PARSE, "line 9: expected key=value");
	expect_refused_n(big, EQ_STATE_MAX_BYTES + 1, EQ_ERR_LIMIT, "larger than the limit of 8192 bytes");
	expect_refused_n(big, sizeof(big), EQ_ERR_LIMIT, "larger than the limit of 8192 bytes");
}

static void test_save_errors(void **state)
{
	(void)state;
	struct eq_state s;
	struct eq_error e;
	eq_state_init(&s);
	char bad[256];
	snprintf(bad, sizeof(bad), "%s/no-such-dir/state", dir);
	assert_int_not_equal(eq_state_save(bad, &s, &e), EQ_OK);
	assert_non_null(strstr(e.msg, "no-such-dir"));
	/* the state at its longest fits the writer's buffer */
	full_state(&s);
	memset(s.error, 'e', sizeof(s.error) - 1);
	s.error[sizeof(s.error) - 1] = '\0';
	save(&s);
	struct eq_state back;
	load_ok(&back);
	s.changed_at = back.changed_at;
	assert_same_state(&back, &s);
}

static void test_backoff(void **state)
{
	(void)state;
	assert_int_equal(eq_state_backoff_s(0), EQ_RETRY_FIRST_S);
	assert_int_equal(eq_state_backoff_s(1), 60);
	assert_int_equal(eq_state_backoff_s(2), 120);
	assert_int_equal(eq_state_backoff_s(3), 240);
	assert_int_equal(eq_state_backoff_s(9), 15360);
	assert_int_equal(eq_state_backoff_s(10), EQ_RETRY_MAX_S);
	assert_int_equal(eq_state_backoff_s(UINT32_MAX), EQ_RETRY_MAX_S);
	assert_int_equal(eq_state_backoff_s(UINT64_MAX), EQ_RETRY_MAX_S);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_control_chars),
		cmocka_unit_test(test_missing_file_is_idle),
		cmocka_unit_test(test_old_format),
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_duplicate_keys),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_other_values),
		cmocka_unit_test(test_inconsistent),
		cmocka_unit_test(test_added_keys_together),
		cmocka_unit_test(test_nul_and_newline),
		cmocka_unit_test(test_size_cap),
		cmocka_unit_test(test_save_errors),
		cmocka_unit_test(test_backoff),
	};
	return eq_test_run(tests, setup, teardown, argc, argv);
}
