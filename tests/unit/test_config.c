/*
 * Unit tests for the agent's config parser (agent/config.c): defaults,
 * every key, every error class with its FILE:LINE message, the bad-config
 * corpus and an allocation-failure loop.
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

#define MIN_CONF                                                                                                       \
	"[repository]\n"                                                                                               \
	"url = https://updates.example.com/repo\n"                                                                     \
	"board = qemux86-64\n"                                                                                         \
	"channel = stable\n"                                                                                           \
	"key = /etc/eqota/release.pub\n"                                                                               \
	"[slots]\n"                                                                                                    \
	"A = /srv/slot-a\n"                                                                                            \
	"B = /srv/slot-b\n"                                                                                            \
	"[bootloader]\n"                                                                                               \
	"backend = uboot\n"

static eq_err parse(const char *text, struct eq_config *c, struct eq_error *e)
{
	eq_error_clear(e);
	return eq_config_parse("eqota.conf", text, strlen(text), c, e);
}

static void expect_err(const char *text, eq_err want, const char *substr)
{
	struct eq_config c;
	struct eq_error e;
	memset(&c, 0x5a, sizeof(c));
	eq_err r = parse(text, &c, &e);
	if (r != want || !strstr(e.msg, substr))
		fail_msg("got %s '%s', want %s containing '%s'\n--- input:\n%s", eq_err_str(r), e.msg, eq_err_str(want),
			 substr, text);
	/* ret_* is written only on success */
	assert_int_equal(c.retries, 0x5a5a5a5au);
}

static void test_defaults(void **state)
{
	(void)state;
	struct eq_config c;
	struct eq_error e;
	assert_int_equal(parse(MIN_CONF, &c, &e), EQ_OK);
	assert_string_equal(c.url, "https://updates.example.com/repo");
	assert_string_equal(c.board, "qemux86-64");
	assert_string_equal(c.channel, "stable");
	assert_string_equal(c.key, "/etc/eqota/release.pub");
	assert_null(c.trust);
	assert_null(c.ca_file);
	assert_int_equal(c.connect_timeout_s, 15);
	assert_int_equal(c.low_speed_time_s, 60);
	assert_int_equal(c.min_rate, 1024);
	assert_int_equal(c.retries, 5);
	assert_int_equal(c.retry_delay_ms, 1000);
	assert_int_equal(c.slot_type, EQ_SLOT_DIR);
	assert_string_equal(c.slot_a, "/srv/slot-a");
	assert_string_equal(c.slot_b, "/srv/slot-b");
	assert_string_equal(c.mkfs, "mkfs.ext4 -q -F");
	assert_string_equal(c.bl_backend, "uboot");
	assert_null(c.bl_path);
	assert_string_equal(c.cmdline, "/proc/cmdline");
	assert_string_equal(c.data_dir, "/var/lib/eqota");
	assert_int_equal(c.n_checks, 0);
	assert_int_equal(c.health_timeout_s, 60);
	assert_int_equal(c.poll_interval_s, 3600);
	assert_int_equal(c.poll_jitter_s, 600);
	assert_int_equal(c.cycle_timeout_s, 10800);
	assert_int_equal(c.pin, 0);
	assert_int_equal(c.hold_until, 0);
	assert_string_equal(c.device_id_file, "/etc/machine-id");
	assert_null(c.report_url);
	assert_int_equal(c.report_queue, 100);
	assert_int_equal(c.report_timeout_s, 10);
	eq_config_done(&c);
	eq_config_done(&c); /* done twice is harmless: it zeroes the struct */
	eq_config_done(NULL);
}

static void test_every_key(void **state)
{
	(void)state;
	static const char text[] = "# full config\r\n"
				   "; another comment style\n"
				   "  [ repository ]  \n"
				   "url=http://127.0.0.1:8080/r///   # trailing slashes go\n"
				   "\tboard\t=\tboard_1.x \n"
				   "channel = beta-2\n"
				   "trust = /etc/eqota/root.json\n"
				   "ca-file = /etc/ssl/ca.pem\n"
				   "connect-timeout = 600\n"
				   "low-speed-time = 1\n"
				   "retries = 0\n"
				   "retry-delay-ms = 600000\n"
				   "\n"
				   "[slots]\n"
				   "type = block\n"
				   "A = /dev/mmcblk0p2\n"
				   "B = /dev/mmcblk0p3\n"
				   "mkfs = mkfs.ext4 -q -F -L root#1\n"
				   "[bootloader]\n"
				   "backend = grub\n"
				   "path = /boot/grub/grubenv\n"
				   "cmdline = /tmp/cmdline\n"
				   "good-attempts = 9\n"
				   "try-attempts = 2\n"
				   "var-order = BOOTORDER\n"
				   "var-a-left = BOOT_A_TRIES\n"
				   "var-b-left = BOOT_B_TRIES\n"
				   "var-trial = EQ_TRIAL\n"
				   "[paths]\n"
				   "data = /data/eqota\n"
				   "[health]\n"
				   "check = /usr/bin/systemctl is-system-running --wait\n"
				   "check = /bin/true ; not a comment\n"
				   "timeout = 86400\n"
				   "[daemon]\n"
				   "interval = 604800\n"
				   "jitter = 0\n"
				   "[update]\n"
				   "pin = 4000000000\n"
				   "hold-until = 2026-12-24T06:00:00Z\n"
				   "device-id-file = /factory/serial\n"
				   "[report]\n"
				   "url = https://fleet.example.com/eqota/report\n"
				   "ca-file = /etc/eqota/fleet-ca.pem\n"
				   "client-cert = /etc/eqota/device.crt\n"
				   "client-key = /etc/eqota/device.key\n"
				   "queue = 10000\n"
				   "timeout = 600\n";
	struct eq_config c;
	struct eq_error e;
	assert_int_equal(parse(text, &c, &e), EQ_OK);
	assert_string_equal(c.url, "http://127.0.0.1:8080/r");
	assert_string_equal(c.board, "board_1.x");
	assert_string_equal(c.channel, "beta-2");
	assert_null(c.key);
	assert_string_equal(c.trust, "/etc/eqota/root.json");
	assert_string_equal(c.ca_file, "/etc/ssl/ca.pem");
	assert_int_equal(c.connect_timeout_s, 600);
	assert_int_equal(c.low_speed_time_s, 1);
	assert_int_equal(c.retries, 0);
	assert_int_equal(c.retry_delay_ms, 600000);
	assert_int_equal(c.slot_type, EQ_SLOT_BLOCK);
	assert_string_equal(c.slot_a, "/dev/mmcblk0p2");
	assert_string_equal(c.slot_b, "/dev/mmcblk0p3");
	assert_string_equal(c.mkfs, "mkfs.ext4 -q -F -L root#1");
	assert_string_equal(c.bl_backend, "grub");
	assert_string_equal(c.bl_path, "/boot/grub/grubenv");
	assert_string_equal(c.cmdline, "/tmp/cmdline");
	assert_int_equal(c.bl_good_attempts, 9);
	assert_int_equal(c.bl_try_attempts, 2);
	assert_string_equal(c.bl_var_order, "BOOTORDER");
	assert_string_equal(c.bl_var_a_left, "BOOT_A_TRIES");
	assert_string_equal(c.bl_var_b_left, "BOOT_B_TRIES");
	assert_string_equal(c.bl_var_trial, "EQ_TRIAL");
	assert_string_equal(c.data_dir, "/data/eqota");
	assert_int_equal(c.n_checks, 2);
	assert_string_equal(c.checks[0], "/usr/bin/systemctl is-system-running --wait");
	assert_string_equal(c.checks[1], "/bin/true ; not a comment");
	assert_int_equal(c.health_timeout_s, 86400);
	assert_int_equal(c.poll_interval_s, 604800);
	assert_int_equal(c.poll_jitter_s, 0);
	assert_int_equal(c.pin, 4000000000u);
	assert_int_equal(c.hold_until, 1798092000);
	assert_string_equal(c.device_id_file, "/factory/serial");
	assert_string_equal(c.report_url, "https://fleet.example.com/eqota/report");
	assert_string_equal(c.report_ca_file, "/etc/eqota/fleet-ca.pem");
	assert_string_equal(c.report_cert, "/etc/eqota/device.crt");
	assert_string_equal(c.report_key, "/etc/eqota/device.key");
	assert_int_equal(c.report_queue, 10000);
	assert_int_equal(c.report_timeout_s, 600);
	eq_config_done(&c);
}

static void test_syntax_errors(void **state)
{
	(void)state;
	expect_err("url = x\n", EQ_ERR_PARSE, "eqota.conf:1: key 'url' outside of any [section]");
	expect_err("[repository]\nurll = http://x\n", EQ_ERR_PARSE, "eqota.conf:2: unknown key 'urll' in [repository]");
	expect_err("[repository]\nca_file = /x\n", EQ_ERR_PARSE,
		   "eqota.conf:2: unknown key 'ca_file' in [repository] (did you mean 'ca-file'?)");
	expect_err("[slots]\na = /x\n", EQ_ERR_PARSE, "(did you mean 'A'?)");
	expect_err("[repo]\n", EQ_ERR_PARSE, "eqota.conf:1: unknown section '[repo]'");
	expect_err("[repository\n", EQ_ERR_PARSE, "eqota.conf:1: expected '[section]'");
	expect_err("[]\n", EQ_ERR_PARSE, "eqota.conf:1: expected '[section]'");
	expect_err("[slots]\n[health]\n[slots]\n", EQ_ERR_PARSE,
		   "eqota.conf:3: section [slots] appears twice (first at line 1)");
	expect_err("[repository]\njust words\n", EQ_ERR_PARSE, "eqota.conf:2: expected 'key = value' or '[section]'");
	expect_err("[repository]\n = x\n", EQ_ERR_PARSE, "eqota.conf:2: missing key before '='");
	expect_err("[repository]\nboard = a\n\nboard = b\n", EQ_ERR_PARSE,
		   "eqota.conf:4: duplicate key 'board' in [repository] (first at line 2)");
	expect_err("[repository]\nurl = \"http://x\"\n", EQ_ERR_PARSE,
		   "eqota.conf:2: url: values are written without quotes");
	expect_err("[repository]\nboard =   # nothing\n", EQ_ERR_INVAL, "eqota.conf:2: board: empty value");
	expect_err("[repository]\nboard = a\0b\n", EQ_ERR_INVAL, "[repository] url is required");
	/* a NUL inside the text (not a C string) */
	struct eq_config c;
	struct eq_error e;
	assert_int_equal(eq_config_parse("eqota.conf", "[slots]\nA = /a\0\n", 16, &c, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "eqota.conf:2: NUL byte in line"));
}

static void test_value_errors(void **state)
{
	(void)state;
	char buf[2048];
	static const struct {
		const char *section, *line, *msg;
	} cases[] = {
		{"health", "timeout = 0", "eqota.conf:12: timeout = 0: expected 1..86400"},
		{"health", "timeout = 86401", "timeout = 86401: expected 1..86400"},
		{"health", "timeout = -1", "timeout = -1: expected a whole number 1..86400"},
		{"health", "timeout = 1s", "timeout = 1s: expected a whole number"},
		{"health", "timeout = 99999999999999999999", "expected a whole number 1..86400"},
		{"repository", "connect-timeout = 601", "connect-timeout = 601: expected 1..600"},
		{"repository", "low-speed-time = 0", "low-speed-time = 0: expected 1..3600"},
		{"repository", "retries = 21", "retries = 21: expected 0..20"},
		{"repository", "retry-delay-ms = 9", "retry-delay-ms = 9: expected 10..600000"},
		{"daemon", "interval = 59", "interval = 59: expected 60..604800"},
		{"daemon", "jitter = 86401", "jitter = 86401: expected 0..86400"},
		{"slots", "type = ubi", "type = ubi: expected dir or block"},
		{"bootloader", "cmdline = proc/cmdline", "cmdline = proc/cmdline: expected an absolute path"},
		{"paths", "data = var/lib", "data = var/lib: expected an absolute path"},
		{"repository", "ca-file = ca.pem", "ca-file = ca.pem: expected an absolute path"},
		{"repository", "min-rate = 0", "min-rate = 0: expected 1..100000000"},
		{"daemon", "cycle-timeout = 9", "cycle-timeout = 9: expected 10..604800"},
		{"update", "pin = 0", "pin = 0: expected 1..4000000000"},
		{"update", "pin = r5", "pin = r5: expected a whole number"},
		{"update", "hold-until = tomorrow", "hold-until = tomorrow: expected a UTC time"},
		{"update", "hold-until = 2026-12-24 06:00", "expected a UTC time such as 2026-12-24T06:00:00Z"},
		{"update", "hold-until = 2026-02-30T00:00:00Z", "hold-until = 2026-02-30T00:00:00Z: expected"},
		{"update", "device-id-file = machine-id", "device-id-file = machine-id: expected an absolute path"},
		{"report", "url = http://x/r\nqueue = 0", "queue = 0: expected 1..10000"},
		{"report", "url = http://x/r\ntimeout = 601", "timeout = 601: expected 1..600"},
		{"report", "url = ftp://x/r", "url = ftp://x/r: expected an http://, https:// or file:// URL"},
		{"report", "url = file:///var/r", "[report] url = file:///var/r: expected an http:// or https:// URL"},
		{"report", "queue = 5", "[report] queue without [report] url"},
		{"report", "url = https://x/r\nclient-cert = /c.pem", "client-cert and client-key go together"},
		/* refused here with file and line, not later by the bootloader */
		{"bootloader", "var-order = boot-order", "var-order = boot-order: expected 1 to 64 of A-Z a-z 0-9 _"},
		{"bootloader", "var-trial = 1st", "var-trial = 1st: expected 1 to 64 of"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* MIN_CONF is 10 lines; the section header is line 11 */
		snprintf(buf, sizeof(buf), "%s[%s]\n%s\n", MIN_CONF, cases[i].section, cases[i].line);
		if (strcmp(cases[i].section, "repository") == 0 || strcmp(cases[i].section, "slots") == 0 ||
		    strcmp(cases[i].section, "bootloader") == 0) {
			/* sections may not repeat: put the line into the existing one */
			const char *hdr = strcmp(cases[i].section, "repository") == 0 ? "[repository]\n"
					  : strcmp(cases[i].section, "slots") == 0    ? "[slots]\n"
										      : "[bootloader]\n";
			const char *at = strstr(MIN_CONF, hdr) + strlen(hdr);
			snprintf(buf, sizeof(buf), "%.*s%s\n%s", (int)(at - MIN_CONF), MIN_CONF, cases[i].line, at);
		}
		expect_err(buf, EQ_ERR_INVAL, cases[i].msg);
	}
	expect_err("[repository]\nurl = ftp://x\n", EQ_ERR_INVAL,
		   "url = ftp://x: expected an http://, https:// or file:// URL");
	expect_err("[repository]\nurl = http://x/a?b=1\n", EQ_ERR_INVAL, "may not contain spaces, '?' or '#'");
	expect_err("[repository]\nboard = ../etc\n", EQ_ERR_INVAL, "board = ../etc: expected up to 128 of");
	expect_err("[repository]\nchannel = a/b\n", EQ_ERR_INVAL, "channel = a/b: expected up to 128 of");
	expect_err("[bootloader]\nbackend = barebox\n", EQ_ERR_INVAL,
		   "backend = barebox: expected file, uboot or grub");
}

static void test_required(void **state)
{
	(void)state;
	char buf[2048];
	static const struct {
		const char *drop, *msg;
	} cases[] = {
		{"url = ", "eqota.conf: [repository] url is required"},
		{"board = ", "eqota.conf: [repository] board is required"},
		{"channel = ", "eqota.conf: [repository] channel is required"},
		{"key = ", "eqota.conf: [repository] needs one of root, key or trust"},
		{"A = ", "eqota.conf: [slots] A is required"},
		{"B = ", "eqota.conf: [slots] B is required"},
		{"backend = ", "eqota.conf: [bootloader] backend is required"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* comment out the one line */
		const char *at = strstr(MIN_CONF, cases[i].drop);
		assert_non_null(at);
		snprintf(buf, sizeof(buf), "%.*s#%s", (int)(at - MIN_CONF), MIN_CONF, at);
		expect_err(buf, EQ_ERR_INVAL, cases[i].msg);
	}
	snprintf(buf, sizeof(buf), "%s[repository]\n", MIN_CONF);
	expect_err(MIN_CONF "trust = /etc/eqota/root.json\n", EQ_ERR_PARSE, "unknown key 'trust' in [bootloader]");
	expect_err("[repository]\nurl = http://x\nboard = b\nchannel = c\nkey = /k\ntrust = /t\n"
		   "[slots]\nA = /a\nB = /b\n[bootloader]\nbackend = uboot\n",
		   EQ_ERR_INVAL, "eqota.conf:6: [repository] key and trust exclude each other (key at line 5)");
	expect_err("[repository]\nurl = http://x\nboard = b\nchannel = c\nkey = /k\n"
		   "[slots]\nA = /a\nB = /a\n[bootloader]\nbackend = uboot\n",
		   EQ_ERR_INVAL, "eqota.conf:8: [slots] A and B are both '/a'");
	expect_err("[repository]\nurl = http://x\nboard = b\nchannel = c\nkey = /k\n"
		   "[slots]\nA = /a\nB = /b\n[bootloader]\nbackend = file\n",
		   EQ_ERR_INVAL, "path is required for backend 'file'");
}

static void test_limits(void **state)
{
	(void)state;
	/* the 17th check line */
	char buf[4096];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "%s[health]\n", MIN_CONF);
	for (unsigned i = 0; i < EQ_CONFIG_MAX_CHECKS; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "check = /bin/check-%u\n", i);
	struct eq_config c;
	struct eq_error e;
	assert_int_equal(parse(buf, &c, &e), EQ_OK);
	assert_int_equal(c.n_checks, EQ_CONFIG_MAX_CHECKS);
	assert_string_equal(c.checks[15], "/bin/check-15");
	eq_config_done(&c);
	snprintf(buf + n, sizeof(buf) - n, "check = /bin/one-too-many\n");
	expect_err(buf, EQ_ERR_LIMIT, "eqota.conf:28: more than 16 check lines in [health]");

	/* a line of 4096 bytes is fine, 4097 is not */
	char *big = malloc(8192);
	assert_non_null(big);
	n = (size_t)snprintf(big, 8192, "%s[paths]\ndata = /", MIN_CONF);
	size_t want = 4096 - strlen("data = /");
	memset(big + n, 'x', want);
	strcpy(big + n + want, "\n");
	assert_int_equal(parse(big, &c, &e), EQ_OK);
	assert_int_equal(strlen(c.data_dir), 4096 - strlen("data = "));
	eq_config_done(&c);
	big[n] = 'y';
	memmove(big + n + 1, big + n, want + 2);
	expect_err(big, EQ_ERR_LIMIT, "eqota.conf:12: line longer than 4096 bytes");
	free(big);

	/* file size cap, checked before anything is parsed */
	assert_int_equal(eq_config_parse("eqota.conf", "", EQ_CONFIG_MAX_BYTES + 1, &c, &e), EQ_ERR_LIMIT);
	assert_non_null(strstr(e.msg, "eqota.conf: larger than the limit of 262144 bytes"));
}

static void test_load(void **state)
{
	(void)state;
	char dir[] = "/tmp/eqcfg-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/eqota.conf", dir);
	struct eq_config c;
	struct eq_error e;
	assert_int_equal(eq_config_load(path, &c, &e), EQ_ERR_NOTFOUND);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(MIN_CONF "[daemon]\ninterval = 30\n", f);
	fclose(f);
	assert_int_equal(eq_config_load(path, &c, &e), EQ_ERR_INVAL);
	char want[128];
	snprintf(want, sizeof(want), "%s:12: interval = 30: expected 60..604800", path);
	assert_string_equal(e.msg, want);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(MIN_CONF, f);
	fclose(f);
	assert_int_equal(eq_config_load(path, &c, &e), EQ_OK);
	assert_string_equal(c.board, "qemux86-64");
	eq_config_done(&c);
	unlink(path);
	rmdir(dir);
}

static eq_err code_by_name(const char *name)
{
	for (int i = 0; i < EQ_ERR__COUNT; i++) {
		static const char *const names[EQ_ERR__COUNT] = {
			"EQ_OK",         "EQ_ERR_NOMEM",    "EQ_ERR_IO",          "EQ_ERR_PARSE",
			"EQ_ERR_VERIFY", "EQ_ERR_NETWORK",  "EQ_ERR_LIMIT",       "EQ_ERR_STATE",
			"EQ_ERR_INVAL",  "EQ_ERR_NOTFOUND", "EQ_ERR_UNSUPPORTED", "EQ_ERR_EXPIRED",
			"EQ_ERR_UNSAFE",
		};
		if (strcmp(names[i], name) == 0)
			return (eq_err)i;
	}
	fail_msg("unknown error name '%s'", name);
	return EQ_ERR__COUNT;
}

/* Walks tests/data/bad/config: every <case>.conf must fail with the code
 * and message substring in <case>.expect. */
static void test_bad_corpus(void **state)
{
	(void)state;
	const char *data_dir = secure_getenv("EQ_TEST_DATA");
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/bad/config", data_dir ? data_dir : "tests/data");
	DIR *d = opendir(dir);
	if (!d)
		fail_msg("cannot open %s", dir);
	struct dirent *de;
	unsigned cases = 0, failed = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 6 || strcmp(de->d_name + l - 5, ".conf") != 0)
			continue;
		char path[1024], expect_path[1024], code[64] = "", substr[512] = "";
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		snprintf(expect_path, sizeof(expect_path), "%s/%.*s.expect", dir, (int)(l - 5), de->d_name);
		FILE *f = fopen(expect_path, "r");
		if (!f)
			fail_msg("%s: missing .expect", path);
		if (!fgets(code, sizeof(code), f) || !fgets(substr, sizeof(substr), f))
			fail_msg("%s: .expect needs two lines", expect_path);
		fclose(f);
		code[strcspn(code, "\n")] = '\0';
		substr[strcspn(substr, "\n")] = '\0';
		struct eq_config c;
		struct eq_error e;
		eq_error_clear(&e);
		eq_err r = eq_config_load(path, &c, &e);
		if (r == EQ_OK)
			eq_config_done(&c);
		if (r != code_by_name(code) || !strstr(e.msg, substr)) {
			print_error("%s: got %s '%s', want %s containing '%s'\n", de->d_name, eq_err_str(r), e.msg,
				    code, substr);
			failed++;
		}
		cases++;
	}
	closedir(d);
	assert_int_equal(failed, 0);
	assert_true(cases >= 20);
}

/* Every allocation of a full parse fails once in turn: the parse must
 * report EQ_ERR_NOMEM and leak nothing (ASan builds check the leaks). */
#ifdef EQ_TEST_HOOKS
static void test_alloc_failures(void **state)
{
	(void)state;
	static const char text[] = MIN_CONF "cmdline = /c\n[health]\ncheck = /bin/a\ncheck = /bin/b\n"
					    "[paths]\ndata = /d\n";
	struct eq_config c;
	struct eq_error e;
	(void)eq_alloc_fail_at(0);
	assert_int_equal(parse(text, &c, &e), EQ_OK);
	unsigned long total = eq_alloc_fail_at(0);
	eq_config_done(&c);
	assert_true(total > 5);
	for (unsigned long n = 1; n <= total; n++) {
		(void)eq_alloc_fail_at(n);
		eq_err r = parse(text, &c, &e);
		(void)eq_alloc_fail_at(0);
		if (r != EQ_ERR_NOMEM)
			fail_msg("allocation %lu of %lu failed but parse returned %s", n, total, eq_err_str(r));
		assert_non_null(strstr(e.msg, "out of memory"));
	}
}
#else
EQ_HOOKS_MISSING(test_alloc_failures)
#endif

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),       cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_syntax_errors),  cmocka_unit_test(test_value_errors),
		cmocka_unit_test(test_required),       cmocka_unit_test(test_limits),
		cmocka_unit_test(test_load),           cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_alloc_failures),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
