/*
 * Unit tests for the agent's reports (agent/report.c): the JSON line of
 * each outcome with hostile texts escaped, the id derived from the device
 * id, the bounded queue (oldest dropped, order kept, foreign files left
 * alone), and a flush to an address that does not answer keeping every
 * report queued. The POST to a real server is integration.agent_report.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/agent.h>

#include "../../agent/report.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/eq-test-report-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_format(void **state)
{
	(void)state;
	struct eq_report_event ev = {.time = 1796515200,
				     .device = "0123456789abcdef0123456789abcdef",
				     .board = "qemuarm64",
				     .channel = "stable",
				     .kind = EQ_REPORT_ROLLED_BACK,
				     .from_number = 4,
				     .from_release = "2026.11.2",
				     .to_number = 5,
				     .to_release = "2026.12.1",
				     .reason = "check \"/x\"\nfailed\x01 \xff",
				     .bytes = 123456,
				     .seconds = 12.34,
				     .agent = "0.1.0"};
	char line[EQ_REPORT_MAX_BYTES];
	size_t len;
	struct eq_error e;
	assert_int_equal(eq_report_format(&ev, line, &len, &e), EQ_OK);
	assert_int_equal(len, strlen(line));
	assert_string_equal(
		line,
		"{\"schema\":\"eqota-report/1\",\"time\":1796515200,\"device\":\"0123456789abcdef0123456789abcdef\","
		"\"board\":\"qemuarm64\",\"channel\":\"stable\",\"event\":\"rolled_back\","
		"\"from\":{\"release\":\"2026.11.2\",\"number\":4},\"to\":{\"release\":\"2026.12.1\",\"number\":5},"
		"\"reason\":\"check \\\"/x\\\"\\u000afailed\\u0001 \\ufffd\",\"bytes\":123456,\"seconds\":12.3,"
		"\"agent\":\"0.1.0\"}\n");
	/* one line whatever the texts hold: the collector stores lines */
	assert_null(memchr(line, '\n', len - 1));
	ev.device = NULL;
	ev.from_number = 0;
	ev.reason = NULL;
	ev.kind = EQ_REPORT_COMMITTED;
	assert_int_equal(eq_report_format(&ev, line, &len, &e), EQ_OK);
	assert_non_null(strstr(line, "\"device\":null,"));
	assert_non_null(strstr(line, "\"event\":\"committed\",\"from\":null,"));
	assert_non_null(strstr(line, "\"reason\":null,"));
	/* an image release: the components' part of bytes after bytes; only
	 * then, so that other reports stay as before */
	assert_null(strstr(line, "component_bytes"));
	ev.component_bytes = 4567;
	ev.has_component_bytes = true;
	assert_int_equal(eq_report_format(&ev, line, &len, &e), EQ_OK);
	assert_non_null(strstr(line, ",\"bytes\":123456,\"component_bytes\":4567,\"seconds\":12.3,"));
	/* too long for one report: refused, not cut */
	char big[EQ_REPORT_MAX_BYTES];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ev.reason = big;
	assert_int_equal(eq_report_format(&ev, line, &len, &e), EQ_ERR_LIMIT);
	for (int k = EQ_REPORT_INSTALLED; k <= EQ_REPORT_FAILED; k++)
		assert_string_not_equal(eq_report_kind_name((enum eq_report_kind)k), "?");
}

static void test_device_id(void **state)
{
	(void)state;
	char a[EQ_REPORT_ID_LEN + 1], b[EQ_REPORT_ID_LEN + 1];
	/* sha256("eqota-report-id-1\0" "abc")[:16], computed with Python's hashlib */
	eq_report_device_id("abc", a);
	assert_string_equal(a, "6ea9e2c79482c455eb3f8be1cecf2da4");
	eq_report_device_id("abd", b);
	assert_string_not_equal(a, b);
	assert_int_equal(strlen(a), EQ_REPORT_ID_LEN);
}

static size_t queued(const char *path, char names[][32], size_t max)
{
	DIR *d = opendir(path);
	size_t n = 0;
	const struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' && n < max)
			snprintf(names[n++], 32, "%.31s", de->d_name);
	if (d)
		closedir(d);
	qsort(names, n, 32, (int (*)(const void *, const void *))strcmp);
	return n;
}

static void test_queue(void **state)
{
	(void)state;
	struct eq_error e;
	char sub[96];
	snprintf(sub, sizeof(sub), "%s/q", dir);
	char names[16][32];
	for (int i = 1; i <= 5; i++) {
		char line[32];
		int n = snprintf(line, sizeof(line), "{\"n\":%d}\n", i);
		assert_int_equal(eq_report_queue(sub, 3, line, (size_t)n, &e), EQ_OK);
	}
	char keep[] = "README";
	char p[160];
	snprintf(p, sizeof(p), "%s/%s", sub, keep);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	size_t n = queued(sub, names, 16);
	/* the newest three, in order, and a file that is not a report left */
	assert_int_equal(n, 4);
	assert_string_equal(names[0], "00000000000000000003.json");
	assert_string_equal(names[1], "00000000000000000004.json");
	assert_string_equal(names[2], "00000000000000000005.json");
	assert_string_equal(names[3], "README");
	snprintf(p, sizeof(p), "%s/%s", sub, names[2]);
	uint8_t *d = NULL;
	size_t len = 0;
	assert_int_equal(eq_file_read_all(p, 64, &d, &len, &e), EQ_OK);
	assert_memory_equal(d, "{\"n\":5}\n", len);
	eq_free(d);
}

static void test_flush_offline(void **state)
{
	(void)state;
	struct eq_error e;
	struct eq_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	size_t sent = 99;
	/* without a URL: nothing to do */
	assert_int_equal(eq_report_flush(&cfg, dir, &sent, &e), EQ_OK);
	assert_int_equal(sent, 0);
	assert_int_equal(eq_report_queue(dir, 10, "{}\n", 3, &e), EQ_OK);
	assert_int_equal(eq_report_queue(dir, 10, "{}\n", 3, &e), EQ_OK);
	/* port 9 (discard) on loopback: nothing listens in the test machines */
	char url[] = "http://127.0.0.1:9/report";
	cfg.report_url = url;
	cfg.report_timeout_s = 2;
	eq_err r = eq_report_flush(&cfg, dir, &sent, &e);
	if (r == EQ_ERR_UNSUPPORTED)
		EQ_SKIP("libcurl cannot be loaded here (%s): apt-get install libcurl4", e.msg);
	assert_int_equal(r, EQ_ERR_NETWORK);
	assert_int_equal(sent, 0);
	assert_non_null(strstr(e.msg, "0 of 2 report(s) sent, the rest stay queued"));
	char names[8][32];
	assert_int_equal(queued(dir, names, 8), 2);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_device_id),
		cmocka_unit_test_setup_teardown(test_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_offline, setup, teardown),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
