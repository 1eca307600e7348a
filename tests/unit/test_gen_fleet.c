/*
 * Unit tests for the fleet summary (gen/gen_fleet.c,
 * gen_fleet_out.c): what each device's reports make of each release
 * (running, committed, trying, rolled back, failed, bytes), reports read
 * from two files out of time order, the top reasons, the rollback share
 * `rollout --auto-halt` uses, every kind of line that is not a report,
 * the escaping of device-written text in the three formats, and the
 * image components' part of the download (optional in reports).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/gen_fleet.h>

/* Lines without "auth" counted, by the sender's device id. */
static const struct eq_fleet_opts unauth = {.unauthenticated = true};

static char dir[64], f1[96], f2[96];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/eq-test-fleet-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(f1, sizeof(f1), "%s/a.jsonl", dir);
	snprintf(f2, sizeof(f2), "%s/b.jsonl", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(f1);
	unlink(f2);
	return rmdir(dir) == 0 ? 0 : -1;
}

/* One report line; dev is a letter repeated 32 times, or 0 for null. */
static void ev(FILE *f, long t, char dev, const char *event, int to, const char *reason, long bytes)
{
	char id[40] = "null";
	if (dev) {
		id[0] = '"';
		memset(id + 1, dev, 32);
		id[33] = '"';
		id[34] = '\0';
	}
	fprintf(f,
		"{\"schema\":\"eqota-report/1\",\"time\":%ld,\"device\":%s,\"board\":\"qemux86-64\",\"channel\":"
		"\"stable\",\"event\":\"%s\",\"from\":{\"release\":\"r1\",\"number\":1},\"to\":{\"release\":\"r%d\","
		"\"number\":%d},\"reason\":%s%s%s,\"bytes\":%ld,\"seconds\":1.5,\"agent\":\"0.1.0\",\"future\":[1]}\n",
		t, id, event, to, to, reason ? "\"" : "", reason ? reason : "null", reason ? "\"" : "", bytes);
}

static const struct eq_fleet_release *rel(const struct eq_fleet *f, uint64_t n)
{
	const struct eq_fleet_release *r = eq_fleet_find(f, "qemux86-64", "stable", n);
	assert_non_null(r);
	return r;
}

static void test_sum(void **state)
{
	(void)state;
	FILE *a = fopen(f1, "w"), *b = fopen(f2, "w");
	assert_non_null(a);
	assert_non_null(b);
	/* a: 2 committed, then 3 rolled back: it runs 2 */
	ev(a, 100, 'a', "installed", 2, NULL, 1000);
	ev(b, 200, 'a', "committed", 2, NULL, 0); /* the other file, read later */
	ev(a, 500, 'a', "installed", 3, NULL, 300);
	ev(a, 600, 'a', "rolled_back", 3, "health X", 0);
	/* b: a failed download, then installed and committed: not "failed" */
	ev(a, 100, 'b', "failed", 2, "HTTP 404", 500);
	ev(a, 150, 'b', "installed", 2, NULL, 2000);
	ev(a, 160, 'b', "committed", 2, NULL, 0);
	/* c: installed 2, rolled back */
	ev(a, 300, 'c', "installed", 2, NULL, 0);
	ev(a, 400, 'c', "rolled_back", 2, "health Y", 0);
	/* d: only a failure; e: installed, nothing since */
	ev(a, 700, 'd', "failed", 2, "no space", 10);
	ev(a, 710, 'e', "installed", 2, NULL, 10);
	/* anonymous */
	ev(a, 800, 0, "committed", 2, NULL, 0);
	/* release 4: ten devices rolled back, for the top five reasons */
	const char *reasons[] = {"r1", "r1", "r1", "r2", "r2", "r3", "r4", "r5", "r6", "r7"};
	for (int i = 0; i < 10; i++) {
		ev(a, 900 + i, (char)('0' + i), "installed", 4, NULL, 0);
		ev(a, 950 + i, (char)('0' + i), "rolled_back", 4, reasons[i], 0);
	}
	fclose(a);
	fclose(b);
	const char *files[] = {f1, f2};
	struct eq_fleet *f = NULL;
	struct eq_error e;
	assert_int_equal(eq_fleet_read(files, 2, &unauth, &f, &e), EQ_OK);
	if (f->bad)
		fail_msg("%zu bad lines, first: %s", f->bad, f->errors[0]);
	assert_int_equal(f->reports, 32);
	assert_int_equal(f->anonymous, 1);
	assert_int_equal(f->devices, 15);
	assert_int_equal(f->n_channels, 1);
	const struct eq_fleet_release *r2 = rel(f, 2);
	assert_string_equal(r2->release, "r2");
	assert_int_equal(r2->devices, 5);
	assert_int_equal(r2->running, 2);     /* a (its 3 rolled back), b */
	assert_int_equal(r2->committed, 2);   /* a, b */
	assert_int_equal(r2->trying, 1);      /* e */
	assert_int_equal(r2->rolled_back, 1); /* c */
	assert_int_equal(r2->failed, 1);      /* d; b installed after its failure */
	assert_int_equal(r2->bytes_total, 1000 + 2500 + 20);
	assert_int_equal(r2->bytes_max, 2500);
	assert_int_equal(r2->n_rolled_back_reasons, 1);
	assert_string_equal(r2->rolled_back_reasons[0].text, "health Y");
	assert_int_equal(r2->n_failed_reasons, 1);
	assert_string_equal(r2->failed_reasons[0].text, "no space");
	/* installed by a, b, c, e: one of four rolled back */
	assert_true(eq_fleet_rollback_share(r2) > 0.2499 && eq_fleet_rollback_share(r2) < 0.2501);
	assert_int_equal(r2->t_installed.n, 4);
	assert_int_equal(r2->t_committed.n, 2);
	assert_int_equal(r2->t_committed.v[0], 160);
	const struct eq_fleet_release *r3 = rel(f, 3);
	assert_int_equal(r3->running, 0);
	assert_int_equal(r3->rolled_back, 1);
	const struct eq_fleet_release *r4 = rel(f, 4);
	assert_int_equal(r4->rolled_back, 10);
	assert_int_equal(r4->n_rolled_back_reasons, EQ_FLEET_MAX_REASONS);
	assert_string_equal(r4->rolled_back_reasons[0].text, "r1");
	assert_int_equal(r4->rolled_back_reasons[0].devices, 3);
	assert_string_equal(r4->rolled_back_reasons[1].text, "r2");
	assert_string_equal(r4->rolled_back_reasons[2].text, "r3");
	assert_string_equal(r4->rolled_back_reasons[4].text, "r5");
	assert_true(eq_fleet_rollback_share(r4) == 1.0);
	assert_null(eq_fleet_find(f, "qemux86-64", "stable", 9));
	assert_null(eq_fleet_find(f, "qemux86-64", "testing", 2));
	eq_fleet_free(f);
}

static void test_bad_lines(void **state)
{
	(void)state;
	static const struct {
		const char *line, *why;
	} bad[] = {
		{"not json", "not a JSON object"},
		{"[1]", "not a JSON object"},
		{"{\"schema\":\"eqota-report/2\"}", "schema: expected"},
		{"{\"schema\":\"eqota-report/1\",\"time\":-1}", "time: expected"},
		{"{\"schema\":\"eqota-report/1\",\"time\":1.5}", "time: expected"},
		{"{\"schema\":\"eqota-report/1\",\"time\":1,\"device\":\"ABCDEF0123456789ABCDEF0123456789\"}",
		 "device: expected 32 lower-case hex digits"},
		{"{\"schema\":\"eqota-report/1\",\"time\":1,\"device\":null,\"board\":\"../x\"}", "board:"},
		{"{\"schema\":\"eqota-report/1\",\"time\":1,\"device\":null,\"board\":\"b\",\"channel\":\"\"}",
		 "channel:"},
		{"{\"schema\":\"eqota-report/1\",\"time\":1,\"device\":null,\"board\":\"b\",\"channel\":\"c\","
		 "\"event\":\"exploded\"}",
		 "event: expected"},
		{"{\"schema\":\"eqota-report/1\",\"time\":1,\"device\":null,\"board\":\"b\",\"channel\":\"c\","
		 "\"event\":\"committed\",\"from\":5}",
		 "from:"},
		{"{\"schema\":\"eqota-report/1\",\"time\":1,\"device\":null,\"board\":\"b\",\"channel\":\"c\","
		 "\"event\":\"committed\",\"from\":null,\"to\":{\"release\":\"<x>\",\"number\":1}}",
		 "to:"},
		{"{\"schema\":\"eqota-report/1\",\"time\":1,\"device\":null,\"board\":\"b\",\"channel\":\"c\","
		 "\"event\":\"committed\",\"from\":null,\"to\":{\"release\":\"r\",\"number\":0}}",
		 "to:"},
		{"{\"schema\":\"eqota-report/1\",\"time\":1,\"device\":null,\"board\":\"b\",\"channel\":\"c\","
		 "\"event\":\"committed\",\"from\":null,\"to\":{\"release\":\"r\",\"number\":1},\"reason\":5}",
		 "reason:"},
		{"{\"schema\":\"eqota-report/1\",\"time\":1,\"device\":null,\"board\":\"b\",\"channel\":\"c\","
		 "\"event\":\"committed\",\"from\":null,\"to\":{\"release\":\"r\",\"number\":1},\"reason\":null,"
		 "\"bytes\":-3}",
		 "bytes:"},
	};
	FILE *a = fopen(f1, "w");
	assert_non_null(a);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		fprintf(a, "%s\n", bad[i].line);
	fwrite("{\"schema\":\"eqota-report/1\"\0}\n", 1, 30, a);
	for (int i = 0; i < 5000; i++)
		fputc('x', a);
	fputs("\n\n\r\n", a); /* empty lines are not counted */
	ev(a, 5, 'a', "committed", 1, NULL, 0);
	fputs("{\"schema\":\"eqota-report/1\",\"time\":1", a); /* cut off: no newline */
	fclose(a);
	const char *files[] = {f1};
	struct eq_fleet *f = NULL;
	struct eq_error e;
	assert_int_equal(eq_fleet_read(files, 1, &unauth, &f, &e), EQ_OK);
	size_t n_bad = sizeof(bad) / sizeof(bad[0]) + 3;
	assert_int_equal(f->bad, n_bad);
	assert_int_equal(f->reports, 1);
	assert_int_equal(f->lines, n_bad + 1);
	assert_int_equal(f->n_errors, EQ_FLEET_MAX_ERRORS);
	for (size_t i = 0; i < EQ_FLEET_MAX_ERRORS; i++) {
		char want[200];
		snprintf(want, sizeof(want), "%s:%zu: %s", f1, i + 1, bad[i].why);
		if (strncmp(f->errors[i], want, strlen(want)) != 0)
			fail_msg("error %zu: '%s', want '%s'", i, f->errors[i], want);
	}
	eq_fleet_free(f);
	/* each bad line alone: named with its reason */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = fopen(f1, "w");
		fprintf(a, "%s\n", bad[i].line);
		fclose(a);
		assert_int_equal(eq_fleet_read(files, 1, &unauth, &f, &e), EQ_OK);
		if (f->bad != 1 || !strstr(f->errors[0], bad[i].why))
			fail_msg("line %zu: %zu bad, '%s'", i, f->bad, f->n_errors ? f->errors[0] : "");
		eq_fleet_free(f);
	}
	const char *missing[] = {"/nonexistent/reports.jsonl"};
	assert_int_equal(eq_fleet_read(missing, 1, &unauth, &f, &e), EQ_ERR_NOTFOUND);
	assert_non_null(strstr(e.msg, "/nonexistent/reports.jsonl"));
}

static char *write_all(const struct eq_fleet *f, enum eq_fleet_format fmt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	assert_non_null(out);
	struct eq_error e;
	assert_int_equal(eq_fleet_write(f, fmt, 1796515200, out, &e), EQ_OK);
	fclose(out);
	return buf;
}

static void test_escaping(void **state)
{
	(void)state;
	FILE *a = fopen(f1, "w");
	ev(a, 100, 'a', "installed", 2, NULL, 0);
	ev(a, 200, 'a', "rolled_back", 2, "<script>alert(1)</script> & \\\"q\\\" \\n\\u0007", 0);
	fclose(a);
	const char *files[] = {f1};
	struct eq_fleet *f = NULL;
	struct eq_error e;
	assert_int_equal(eq_fleet_read(files, 1, &unauth, &f, &e), EQ_OK);
	char *html = write_all(f, EQ_FLEET_HTML);
	assert_null(strstr(html, "<script"));
	assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot; &#xfffd;&#xfffd;"));
	assert_non_null(strstr(html, "default-src 'none'"));
	assert_non_null(strstr(html, "<polyline class=\"installed\""));
	assert_non_null(strstr(html, "<polyline class=\"rolledback\""));
	free(html);
	char *text = write_all(f, EQ_FLEET_TEXT);
	assert_null(strchr(strstr(text, "rolled back: "), '\a'));
	assert_non_null(strstr(text, "1 x \"<script>alert(1)</script> & \"q\" ??\""));
	free(text);
	char *json = write_all(f, EQ_FLEET_JSON);
	assert_non_null(strstr(json, "\"reason\":\"<script>alert(1)</script> & \\\"q\\\" \\u000a\\u0007\""));
	assert_non_null(strstr(json, "\"schema\":\"eqota-gen-fleet/1\",\"generated\":1796515200,"));
	free(json);
	eq_fleet_free(f);
}

/* A report as the collector stores it: "auth" is the verified identity
 * (NULL: none), dev the sender's device id (any 32 hex digits). */
static void evx(FILE *f, long t, const char *auth, unsigned dev, const char *channel, const char *event, int to)
{
	fprintf(f,
		"{\"schema\":\"eqota-report/1\",\"time\":%ld,\"device\":\"%032x\",\"board\":\"qemux86-64\",\"channel\":"
		"\"%s\",\"event\":\"%s\",\"from\":null,\"to\":{\"release\":\"r%d\",\"number\":%d},\"reason\":%s,"
		"\"bytes\":0,\"seconds\":1.5,\"agent\":\"0.1.0\"%s%s%s}\n",
		t, dev, channel, event, to, to, strcmp(event, "rolled_back") ? "null" : "\"health\"",
		auth ? ",\"auth\":\"" : "", auth ? auth : "", auth ? "\"" : "");
}

/* The forgeries of issue 29 (finding 4): lines without a verified identity
 * are not counted by default, and one identity counts once per release
 * whatever device ids it writes. */
static void test_forged(void **state)
{
	(void)state;
	FILE *a = fopen(f1, "w");
	assert_non_null(a);
	char id[32];
	/* A healthy release 2: 100 devices committed it. */
	for (int i = 0; i < 100; i++) {
		snprintf(id, sizeof(id), "device-%d", i);
		evx(a, 100 + i, id, (unsigned)i, "stable", "installed", 2);
		evx(a, 200 + i, id, (unsigned)i, "stable", "committed", 2);
	}
	/* Ten invented rollbacks, no identity: 9.1 % if counted. */
	for (int i = 0; i < 10; i++)
		evx(a, 300 + i, NULL, 1000u + (unsigned)i, "stable", "rolled_back", 2);
	/* A bad release 3: 10 of 100 devices roll back... */
	for (int i = 0; i < 100; i++) {
		snprintf(id, sizeof(id), "device-%d", i);
		evx(a, 400 + i, id, (unsigned)i, "stable", "installed", 3);
		evx(a, 500 + i, id, (unsigned)i, "stable", i < 10 ? "rolled_back" : "committed", 3);
	}
	/* ...150 invented commits would dilute it to 4 %... */
	for (int i = 0; i < 150; i++) {
		evx(a, 600 + i, NULL, 2000u + (unsigned)i, "stable", "installed", 3);
		evx(a, 601 + i, NULL, 2000u + (unsigned)i, "stable", "committed", 3);
	}
	/* ...and one device with a certificate writing ten device ids counts
	 * once, by its last word. */
	for (int i = 0; i < 10; i++)
		evx(a, 700 + i, "device-1", 3000u + (unsigned)i, "stable", i == 9 ? "rolled_back" : "committed", 2);
	fclose(a);
	const char *files[] = {f1};
	struct eq_fleet *f = NULL;
	struct eq_error e;
	assert_int_equal(eq_fleet_read(files, 1, NULL, &f, &e), EQ_OK);
	assert_int_equal(f->bad, 0);
	assert_int_equal(f->unauthenticated, 310);
	assert_int_equal(f->devices, 100);
	const struct eq_fleet_release *r2 = rel(f, 2), *r3 = rel(f, 3);
	assert_int_equal(r2->devices, 100);
	assert_int_equal(r2->rolled_back, 1); /* device-1's last word */
	assert_int_equal(r3->devices, 100);
	assert_int_equal(r3->rolled_back, 10);
	assert_true(eq_fleet_rollback_share(r2) <= 0.05);
	assert_true(eq_fleet_rollback_share(r3) > 0.05);
	eq_fleet_free(f);

	/* Counted on request: then the forgeries do what the issue says. */
	assert_int_equal(eq_fleet_read(files, 1, &unauth, &f, &e), EQ_OK);
	assert_true(eq_fleet_rollback_share(rel(f, 2)) > 0.05);
	assert_true(eq_fleet_rollback_share(rel(f, 3)) < 0.05);
	eq_fleet_free(f);

	/* An inventory of 50 identities: the others are not counted. */
	a = fopen(f2, "w");
	fputs("# the fleet\n", a);
	for (int i = 0; i < 50; i++)
		fprintf(a, "device-%d\n", i);
	fclose(a);
	struct eq_fleet_opts o = {.inventory = f2};
	assert_int_equal(eq_fleet_read(files, 1, &o, &f, &e), EQ_OK);
	assert_int_equal(rel(f, 3)->devices, 50);
	assert_int_equal(f->uninventoried, 50 * 4); /* the 310 without identity stay "unauthenticated" */
	eq_fleet_free(f);
	a = fopen(f2, "w");
	fputs("device-1\n\"quoted\"\n", a);
	fclose(a);
	assert_int_equal(eq_fleet_read(files, 1, &o, &f, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, ":2: expected one device identity per line"));
}

/* The collector's check: what it stores is one line the reader counts,
 * "auth" is its own, and a device that sends one is refused. */
static void test_collect(void **state)
{
	(void)state;
	static const char body[] =
		"{\"schema\":\"eqota-report/1\",\"time\":5,\"device\":null,\"board\":\"b\",\"channel\":\"c\","
		"\"event\":\"rolled_back\",\"from\":null,\"to\":{\"release\":\"r1\",\"number\":1},"
		"\"reason\":\"line\\nbreak \\u2028\",\"bytes\":0}";
	char *line = NULL;
	struct eq_error e;
	assert_int_equal(eq_fleet_collect(body, strlen(body), "device-7", &line, &e), EQ_OK);
	assert_null(strchr(line, '\n'));
	assert_non_null(strstr(line, ",\"auth\":\"device-7\"}"));
	FILE *a = fopen(f1, "w");
	fprintf(a, "%s\n", line);
	fclose(a);
	eq_free(line);
	const char *files[] = {f1};
	struct eq_fleet *f = NULL;
	assert_int_equal(eq_fleet_read(files, 1, NULL, &f, &e), EQ_OK);
	assert_int_equal(f->devices, 1);
	assert_int_equal(f->unauthenticated, 0);
	eq_fleet_free(f);
	/* no identity: stored without "auth" */
	assert_int_equal(eq_fleet_collect(body, strlen(body), NULL, &line, &e), EQ_OK);
	assert_null(strstr(line, "\"auth\""));
	eq_free(line);

	static const char forged[] =
		"{\"schema\":\"eqota-report/1\",\"time\":5,\"device\":null,\"board\":\"b\",\"channel\":\"c\","
		"\"event\":\"committed\",\"from\":null,\"to\":{\"release\":\"r1\",\"number\":1},"
		"\"reason\":null,\"bytes\":0,\"auth\":\"device-8\"}";
	assert_int_equal(eq_fleet_collect(forged, strlen(forged), "device-7", &line, &e), EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, "'auth' is set by the collector"));
	assert_int_equal(eq_fleet_collect(forged, strlen(forged), NULL, &line, &e), EQ_ERR_VERIFY);
	assert_int_equal(eq_fleet_collect(body, strlen(body), "bad\"name", &line, &e), EQ_ERR_VERIFY);
	assert_int_equal(eq_fleet_collect(body, strlen(body), "", &line, &e), EQ_ERR_VERIFY);
	/* two "device" members: which one counts would be the forger's pick */
	static const char twice[] = "{\"schema\":\"eqota-report/1\",\"schema\":\"eqota-report/1\"}";
	assert_int_equal(eq_fleet_collect(twice, strlen(twice), NULL, &line, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "a member named twice"));
	assert_int_equal(eq_fleet_collect("{}", 2, NULL, &line, &e), EQ_ERR_PARSE);
	assert_int_equal(eq_fleet_collect("{\"a\"\0}", 6, NULL, &line, &e), EQ_ERR_PARSE);
}

/* Names any sender chooses are capped (finding 6): the 1025th board and
 * channel pair is a bad line, not a new entry to keep. */
static void test_caps(void **state)
{
	(void)state;
	FILE *a = fopen(f1, "w");
	char ch[32];
	for (int i = 0; i < 1100; i++) {
		snprintf(ch, sizeof(ch), "c%d", i);
		evx(a, 100 + i, "device-1", 1, ch, "committed", 2);
	}
	fclose(a);
	const char *files[] = {f1};
	struct eq_fleet *f = NULL;
	struct eq_error e;
	assert_int_equal(eq_fleet_read(files, 1, NULL, &f, &e), EQ_OK);
	assert_int_equal(f->n_channels, 1024);
	assert_int_equal(f->bad, 1100 - 1024);
	assert_int_equal(f->reports, 1024);
	assert_non_null(strstr(f->errors[0], ":1025: more than 1024 board/channel pairs, ignoring"));
	eq_fleet_free(f);
	/* One device with a certificate that fills the caps first cannot hide
	 * a release from --auto-halt, which reads only its own. */
	a = fopen(f1, "a");
	for (int i = 0; i < 10; i++)
		evx(a, 5000 + i, i ? "device-2" : "device-3", 2, "c1099", "rolled_back", 2);
	fclose(a);
	struct eq_fleet_opts o = {.board = "qemux86-64", .channel = "c1099", .number = 2};
	assert_int_equal(eq_fleet_read(files, 1, &o, &f, &e), EQ_OK);
	assert_int_equal(f->bad, 0);
	assert_int_equal(f->n_channels, 1);
	const struct eq_fleet_release *r = eq_fleet_find(f, "qemux86-64", "c1099", 2);
	assert_non_null(r);
	assert_int_equal(r->rolled_back, 2);
	eq_fleet_free(f);
}

/* A report with the optional "component_bytes" @comp (a JSON value), or
 * without it (NULL) as agents before image mode send. */
static void evc(FILE *f, long t, char dev, const char *event, int to, long bytes, const char *comp)
{
	char id[33];
	memset(id, dev, 32);
	id[32] = '\0';
	fprintf(f,
		"{\"schema\":\"eqota-report/1\",\"time\":%ld,\"device\":\"%s\",\"board\":\"qemux86-64\","
		"\"channel\":\"stable\",\"event\":\"%s\",\"from\":null,\"to\":{\"release\":\"r%d\",\"number\":%d},"
		"\"reason\":null,\"bytes\":%ld%s%s,\"seconds\":1.5,\"agent\":\"0.1.0\"}\n",
		t, id, event, to, to, bytes, comp ? ",\"component_bytes\":" : "", comp ? comp : "");
}

/* Image releases: the components' part of the download summed per release
 * next to bytes_total; reports without the field count 0; a part larger
 * than the whole, or not a number, is a bad line. */
static void test_components(void **state)
{
	(void)state;
	FILE *a = fopen(f1, "w");
	assert_non_null(a);
	evc(a, 100, 'a', "failed", 2, 200, "50");
	evc(a, 110, 'a', "installed", 2, 1000, "600");
	evc(a, 120, 'a', "committed", 2, 0, "0");
	evc(a, 130, 'b', "installed", 2, 500, NULL); /* an older agent */
	evc(a, 140, 'c', "installed", 2, 100, "100");
	evc(a, 150, 'd', "installed", 3, 700, NULL);
	evc(a, 160, 'e', "installed", 2, 10, "11");
	evc(a, 170, 'e', "installed", 2, 10, "\"5\"");
	evc(a, 180, 'e', "installed", 2, 10, "-1");
	fclose(a);
	const char *files[] = {f1};
	struct eq_fleet *f = NULL;
	struct eq_error e;
	assert_int_equal(eq_fleet_read(files, 1, &unauth, &f, &e), EQ_OK);
	assert_int_equal(f->reports, 6);
	assert_int_equal(f->bad, 3);
	assert_non_null(strstr(f->errors[0], ":7: component_bytes: more than bytes"));
	assert_non_null(strstr(f->errors[1], ":8: component_bytes: expected a whole number"));
	assert_non_null(strstr(f->errors[2], ":9: component_bytes: expected a whole number"));
	const struct eq_fleet_release *r2 = rel(f, 2), *r3 = rel(f, 3);
	assert_int_equal(r2->bytes_total, 200 + 1000 + 500 + 100);
	assert_int_equal(r2->component_bytes_total, 50 + 600 + 100);
	assert_int_equal(r3->bytes_total, 700);
	assert_int_equal(r3->component_bytes_total, 0);
	char *text = write_all(f, EQ_FLEET_TEXT);
	/* 750 of 1800 */
	assert_non_null(strstr(text, "at most; image components 41.7 % of it\n"));
	assert_non_null(strstr(text, "at most\n")); /* release 3: no components' part */
	free(text);
	char *json = write_all(f, EQ_FLEET_JSON);
	assert_non_null(strstr(json, "\"bytes_total\":1800,\"bytes_max\":1200,\"component_bytes_total\":750,"));
	assert_non_null(strstr(json, "\"bytes_total\":700,\"bytes_max\":700,\"component_bytes_total\":0,"));
	free(json);
	char *html = write_all(f, EQ_FLEET_HTML);
	assert_non_null(strstr(html, "<th>image components</th>"));
	assert_non_null(strstr(html, "<td>41.7 %</td></tr>"));
	free(html);
	eq_fleet_free(f);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sum, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escaping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_collect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_components, setup, teardown),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
