/*
 * Unit tests of the uboot bootloader backend against real storage: regular
 * files as environment devices, a fw_env.config written per test, the real
 * libubootenv, and U-Boot's own tools (mkenvimage, fw_printenv, fw_setenv)
 * where installed. Every layout a board uses is covered: one copy, two
 * copies in two files, two copies at two offsets of one "partition".
 *
 * The test reads and checks the copies itself (CRC32, flag byte, NAME=value
 * strings), so "both copies valid, the newer one wins" is checked on the
 * bytes and not only through the library under test.
 *
 * Cases that skip without U-Boot's tools, without a private mount namespace
 * (root) or without the test hooks run as CTest tests of their own
 * (tests/unit/bl_uboot.cmake PARTS).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <eq/bootloader.h>

#define ENV_SIZE 0x4000u
#define MAX_DEV (2 * ENV_SIZE)

enum kind { SINGLE, TWO_FILES, ONE_FILE };

struct layout {
	enum kind kind;
	uint8_t fill; /* what a blank device holds: 0xff erased, 0x00 zeroed */
};

static struct layout single_ff = {SINGLE, 0xff};
static struct layout single_00 = {SINGLE, 0x00};
static struct layout two_files_ff = {TWO_FILES, 0xff};
static struct layout two_files_00 = {TWO_FILES, 0x00};
static struct layout one_file_ff = {ONE_FILE, 0xff};
static struct layout one_file_00 = {ONE_FILE, 0x00};

static char tmpdir[64];
static char cfg_path[128];
static char dev_path[2][128]; /* device files (ONE_FILE and SINGLE use [0]) */
static unsigned n_devs;
static bool redundant;
/* where each copy lives */
static const char *copy_dev[2];
static long copy_off[2];

/* ---- fixtures ------------------------------------------------------------ */

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void write_str(const char *path, const char *s)
{
	write_file(path, s, strlen(s));
}

static int setup_dir(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/eq-test-ubl-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(cfg_path, sizeof(cfg_path), "%s/fw_env.config", tmpdir);
	return 0;
}

/* A blank device of every copy, and the fw_env.config naming them. */
static int setup_layout(void **state)
{
	const struct layout *l = *state;
	if (setup_dir(state))
		return -1;
	static uint8_t blank[MAX_DEV];
	memset(blank, l->fill, sizeof(blank));
	char cfg[512];
	switch (l->kind) {
	case SINGLE:
		n_devs = 1;
		redundant = false;
		snprintf(dev_path[0], sizeof(dev_path[0]), "%s/env", tmpdir);
		write_file(dev_path[0], blank, ENV_SIZE);
		copy_dev[0] = dev_path[0];
		copy_off[0] = 0;
		snprintf(cfg, sizeof(cfg), "# eqota test: one copy\n%s 0x0 0x4000\n", dev_path[0]);
		break;
	case TWO_FILES:
		n_devs = 2;
		redundant = true;
		for (int i = 0; i < 2; i++) {
			snprintf(dev_path[i], sizeof(dev_path[i]), "%s/env%d", tmpdir, i);
			write_file(dev_path[i], blank, ENV_SIZE);
			copy_dev[i] = dev_path[i];
			copy_off[i] = 0;
		}
		snprintf(cfg, sizeof(cfg), "# two files\n%s 0x0 0x4000\n\n%s 0x0 0x4000\n", dev_path[0], dev_path[1]);
		break;
	case ONE_FILE:
		/* as on a raw partition: /dev/vda4 0x0 + /dev/vda4 0x4000 */
		n_devs = 1;
		redundant = true;
		snprintf(dev_path[0], sizeof(dev_path[0]), "%s/part", tmpdir);
		write_file(dev_path[0], blank, 2 * ENV_SIZE);
		for (int i = 0; i < 2; i++) {
			copy_dev[i] = dev_path[0];
			copy_off[i] = (long)(i * ENV_SIZE);
		}
		snprintf(cfg, sizeof(cfg), "%s 0x0 0x4000\n%s 0x4000 0x4000\n", dev_path[0], dev_path[0]);
		break;
	}
	write_str(cfg_path, cfg);
	return 0;
}

static int teardown_dir(void **state)
{
	(void)state;
	struct eq_error e;
	return eq_rm_rf(tmpdir, &e) == EQ_OK ? 0 : -1;
}

static struct eq_bl *open_bl(void)
{
	struct eq_bl *bl = NULL;
	struct eq_error e;
	struct eq_bl_config cfg = {.backend = "uboot", .path = cfg_path, .try_attempts = 1};
	eq_err r = eq_bl_open(&cfg, &bl, &e);
	if (r)
		fail_msg("open: %s", e.msg);
	return bl;
}

/* ---- the copies' bytes ------------------------------------------------------ */

static size_t hdr(void)
{
	return redundant ? 5 : 4;
}

static void read_copy(unsigned i, uint8_t buf[ENV_SIZE])
{
	FILE *f = fopen(copy_dev[i], "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, copy_off[i], SEEK_SET), 0);
	assert_int_equal(fread(buf, 1, ENV_SIZE, f), ENV_SIZE);
	fclose(f);
}

static void write_copy(unsigned i, const uint8_t buf[ENV_SIZE])
{
	FILE *f = fopen(copy_dev[i], "r+b");
	assert_non_null(f);
	assert_int_equal(fseek(f, copy_off[i], SEEK_SET), 0);
	assert_int_equal(fwrite(buf, 1, ENV_SIZE, f), ENV_SIZE);
	assert_int_equal(fclose(f), 0);
}

static bool copy_valid(unsigned i)
{
	static uint8_t b[ENV_SIZE];
	read_copy(i, b);
	uint32_t stored = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return stored == eq_crc32(b + hdr(), ENV_SIZE - hdr());
}

static uint8_t copy_flag(unsigned i)
{
	static uint8_t b[ENV_SIZE];
	read_copy(i, b);
	return b[4];
}

/* The copy U-Boot and libubootenv use, -1 for none. */
static int newest(void)
{
	if (!redundant)
		return copy_valid(0) ? 0 : -1;
	bool v0 = copy_valid(0), v1 = copy_valid(1);
	if (v0 != v1)
		return v0 ? 0 : 1;
	if (!v0)
		return -1;
	uint8_t f0 = copy_flag(0), f1 = copy_flag(1);
	if (f0 == 0xff && f1 == 0)
		return 1;
	if (f1 == 0xff && f0 == 0)
		return 0;
	return f1 > f0 ? 1 : 0;
}

/* The value of @name in copy @i (a static buffer), NULL when not set. */
static const char *copy_value(int i, const char *name)
{
	static uint8_t b[ENV_SIZE];
	static char val[256];
	assert_true(i >= 0);
	read_copy((unsigned)i, b);
	size_t nl = strlen(name);
	for (size_t p = hdr(); p < ENV_SIZE && b[p];) {
		const char *s = (const char *)b + p;
		size_t l = strnlen(s, ENV_SIZE - p);
		if (l > nl && strncmp(s, name, nl) == 0 && s[nl] == '=') {
			snprintf(val, sizeof(val), "%s", s + nl + 1);
			return val;
		}
		p += l + 1;
	}
	return NULL;
}

/* Writes copy @i as U-Boot would: CRC, flag, "k=v" strings from @lines
 * ("k=v\n..."), 0xff padding. */
static void make_copy(unsigned i, const char *lines, uint8_t flag)
{
	static uint8_t b[ENV_SIZE];
	memset(b, 0xff, sizeof(b));
	size_t p = hdr();
	for (const char *s = lines; *s;) {
		const char *nl = strchr(s, '\n');
		size_t l = nl ? (size_t)(nl - s) : strlen(s);
		memcpy(b + p, s, l);
		p += l;
		b[p++] = 0;
		s += l + (nl ? 1 : 0);
	}
	b[p] = 0;
	if (redundant)
		b[4] = flag;
	uint32_t c = eq_crc32(b + hdr(), ENV_SIZE - hdr());
	for (int k = 0; k < 4; k++)
		b[k] = (uint8_t)(c >> (8 * k));
	write_copy(i, b);
}

/* Flips one byte of copy @i's data so that its CRC fails. */
static void corrupt_copy(unsigned i)
{
	static uint8_t b[ENV_SIZE];
	read_copy(i, b);
	b[hdr() + 3] ^= 0x5a;
	write_copy(i, b);
	assert_false(copy_valid(i));
}

/* Every device file's bytes, to compare and restore. */
struct snapshot {
	uint8_t data[2][MAX_DEV];
	size_t len[2];
};

static void take(struct snapshot *s)
{
	for (unsigned d = 0; d < n_devs; d++) {
		FILE *f = fopen(dev_path[d], "rb");
		assert_non_null(f);
		s->len[d] = fread(s->data[d], 1, MAX_DEV, f);
		fclose(f);
	}
}

static void restore(const struct snapshot *s)
{
	for (unsigned d = 0; d < n_devs; d++)
		write_file(dev_path[d], s->data[d], s->len[d]);
}

static bool unchanged(const struct snapshot *s)
{
	static struct snapshot now;
	take(&now);
	for (unsigned d = 0; d < n_devs; d++)
		if (now.len[d] != s->len[d] || memcmp(now.data[d], s->data[d], s->len[d]) != 0)
			return false;
	return true;
}

/* ---- states --------------------------------------------------------------- */

static const char *fmt_state(const struct eq_bl_state *st)
{
	static char buf[64];
	char order[8] = "";
	for (size_t i = 0; i < st->n_order; i++)
		snprintf(order + strlen(order), sizeof(order) - strlen(order), "%s%s", i ? " " : "",
			 eq_bl_slot_name(st->order[i]));
	snprintf(buf, sizeof(buf), "order=%s A=%u B=%u trial=%s", order, st->left[0], st->left[1],
		 st->trial < 0 ? "-" : eq_bl_slot_name((unsigned)st->trial));
	return buf;
}

static const char *state_of(struct eq_bl *bl)
{
	struct eq_bl_state st;
	struct eq_error e;
	eq_err r = eq_bl_get_state(bl, &st, &e);
	if (r)
		fail_msg("get_state: %s", e.msg);
	return fmt_state(&st);
}

static void set_state(struct eq_bl *bl, const char *order, unsigned a, unsigned b, int trial)
{
	struct eq_bl_state st;
	eq_bl_state_init(&st);
	for (const char *c = order; *c; c++)
		if (*c != ' ')
			st.order[st.n_order++] = (unsigned)eq_bl_slot_index((char[]){*c, 0});
	st.left[0] = a;
	st.left[1] = b;
	st.trial = trial;
	struct eq_error e;
	eq_err r = eq_bl_set_state(bl, &st, &e);
	if (r)
		fail_msg("set_state: %s", e.msg);
}

/* What the board's boot script does: decrement the trial slot it boots. */
static int script_boot(struct eq_bl *bl)
{
	struct eq_bl_state st;
	struct eq_error e;
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_OK);
	int s = eq_bl_state_pick(&st);
	if (s >= 0 && s == st.trial) {
		st.left[s]--;
		assert_int_equal(eq_bl_set_state(bl, &st, &e), EQ_OK);
	}
	return s;
}

/* ---- U-Boot's tools ------------------------------------------------------ */

static bool have_tool(const char *name)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

#define NEED_TOOL(name, pkg)                                                                                           \
	do {                                                                                                           \
		if (!have_tool(name))                                                                                  \
			EQ_SKIP("%s not found in PATH (apt-get install %s)", name, pkg);                               \
	} while (0)

/* Runs a shell command; its output (stdout and stderr) into @out. Returns
 * the exit status. */
static int run(char *out, size_t out_size, const char *fmt, ...) EQ_PRINTF(3, 4);
static int run(char *out, size_t out_size, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, out_size - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- fw_env.config ------------------------------------------------------- */

static void expect_open_error(const char *cfg_text, eq_err code, const char *sub1, const char *sub2)
{
	if (cfg_text)
		write_str(cfg_path, cfg_text);
	struct eq_bl *bl = NULL;
	struct eq_error e;
	struct eq_bl_config cfg = {.backend = "uboot", .path = cfg_path, .try_attempts = 1};
	eq_err r = eq_bl_open(&cfg, &bl, &e);
	if (r != code || !strstr(e.msg, sub1) || (sub2 && !strstr(e.msg, sub2)))
		fail_msg("config '%s': got %s '%s', want %s with '%s' and '%s'", cfg_text ? cfg_text : "(none)",
			 eq_err_str(r), e.msg, eq_err_str(code), sub1, sub2 ? sub2 : "");
	assert_null(bl);
}

static void test_config(void **state)
{
	(void)state;
	char dev[128], text[512];
	snprintf(dev, sizeof(dev), "%s/env", tmpdir);
	static uint8_t blank[ENV_SIZE];
	write_file(dev, blank, sizeof(blank));

	/* the default path, when the config gives none */
	struct eq_bl *bl = NULL;
	struct eq_error e;
	struct eq_bl_config dcfg = {.backend = "uboot"};
	if (access("/etc/fw_env.config", F_OK) != 0) {
		assert_int_equal(eq_bl_open(&dcfg, &bl, &e), EQ_ERR_IO);
		assert_non_null(strstr(e.msg, "/etc/fw_env.config"));
	}

	expect_open_error(NULL, EQ_ERR_IO, cfg_path, "No such file");
	assert_int_equal(mkdir(cfg_path, 0755), 0);
	expect_open_error(NULL, EQ_ERR_IO, cfg_path, NULL);
	assert_int_equal(rmdir(cfg_path), 0);
	expect_open_error("", EQ_ERR_PARSE, cfg_path, "no environment copy");
	expect_open_error("# nothing but comments\n\n   \n", EQ_ERR_PARSE, cfg_path, "no environment copy");
	expect_open_error("hello world\n", EQ_ERR_PARSE, "line 1: expected 'DEVICE OFFSET SIZE', got 'hello world'",
			  cfg_path);
	snprintf(text, sizeof(text), "# offset only\n%s 0x0\n", dev);
	expect_open_error(text, EQ_ERR_PARSE, "line 2: expected", cfg_path);
	snprintf(text, sizeof(text), "%s 0x0 0\n", dev);
	expect_open_error(text, EQ_ERR_PARSE, "line 1: environment size 0", NULL);
	snprintf(text, sizeof(text), "%s 0x0 0x2000\n%s 0x2000 0x2000\n%s 0x4000 0x2000\n", dev, dev, dev);
	expect_open_error(text, EQ_ERR_PARSE, "line 3: a third environment copy", NULL);
	snprintf(text, sizeof(text), "%s 0x0 0x2000\n%s 0x2000 0x1000\n", dev, dev);
	expect_open_error(text, EQ_ERR_PARSE, "line 2: size 0x1000 differs", NULL);
	snprintf(text, sizeof(text), "%s 0x0 0x2000\n%s 0x1000 0x2000\n", dev, dev);
	expect_open_error(text, EQ_ERR_PARSE, "line 2: the second copy overlaps the first", NULL);
	snprintf(text, sizeof(text), "%s/nodev 0x0 0x4000\n", tmpdir);
	expect_open_error(text, EQ_ERR_IO, "line 1: environment device", "nodev': No such file");
	write_file(cfg_path,
		   "\x7f"
		   "ELF\x02\x01\x01\x00\x00\x00",
		   10);
	expect_open_error(NULL, EQ_ERR_PARSE, "line 1: binary data", cfg_path);
	expect_open_error("/dev/null 0x0 0x4000 \x01\n", EQ_ERR_PARSE, "binary data (byte 0x01)", NULL);

	/* accepted: comments, blank lines, CRLF, sector size and count */
	snprintf(text, sizeof(text), "# device offset size sector-size sectors\r\n\r\n  %s\t0x0\t0x4000 0x1000 4\r\n",
		 dev);
	write_str(cfg_path, text);
	bl = open_bl();
	assert_string_equal(eq_bl_backend_name(bl), "uboot");
	eq_bl_close(bl);
}

/* ---- blank devices: provisioning --------------------------------------------- */

static void test_blank(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_bl_state st;
	struct eq_error e;
	struct snapshot *before = malloc(sizeof(*before));
	assert_non_null(before);
	take(before);

	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_ERR_NOTFOUND);
	assert_non_null(strstr(e.msg, cfg_path));
	assert_non_null(strstr(e.msg, dev_path[0]));
	assert_non_null(strstr(e.msg, redundant ? "no valid environment: both copies fail their CRC"
						: "no valid environment: the copy fails its CRC"));
	/* no state to change: refused, nothing written */
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_ERR_NOTFOUND);
	assert_non_null(strstr(e.msg, "no boot environment yet"));
	assert_int_equal(eq_bl_mark_bad(bl, 0, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(eq_bl_rearm(bl, 0, &e), EQ_ERR_NOTFOUND);
	assert_true(unchanged(before));

	/* provisioning: committing the slot creates the environment */
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=A A=3 B=0 trial=-");
	int n = newest();
	assert_true(n >= 0);
	assert_string_equal(copy_value(n, "BOOT_ORDER"), "A");
	assert_string_equal(copy_value(n, "BOOT_A_LEFT"), "3");
	assert_string_equal(copy_value(n, "BOOT_B_LEFT"), "0");
	assert_string_equal(copy_value(n, "BOOT_TRIAL"), "");
	if (redundant) /* the write went to one copy; the other is still blank */
		assert_false(copy_valid(1u - (unsigned)n));
	free(before);
	eq_bl_close(bl);

	/* what U-Boot's tools make of it */
	NEED_TOOL("fw_printenv", "libubootenv-tool");
	char out[1024];
	int rc = run(out, sizeof(out), "fw_printenv -c %s", cfg_path);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "BOOT_A_LEFT=3\nBOOT_B_LEFT=0\nBOOT_ORDER=A\nBOOT_TRIAL=\n");
}

/* ---- every transition, other variables kept ------------------------------------- */

/* After each write: the state, the other variables, and with two copies
 * that the write went to the other copy with a higher flag. */
static void check_write(struct eq_bl *bl, int *last, const char *want)
{
	assert_string_equal(state_of(bl), want);
	int n = newest();
	assert_true(n >= 0);
	assert_string_equal(copy_value(n, "keep"), "me");
	assert_string_equal(copy_value(n, "bootcmd"), "run distro_bootcmd");
	if (redundant && *last >= 0) {
		assert_int_not_equal(n, *last);
		assert_true(copy_valid(0) && copy_valid(1));
		assert_int_equal(copy_flag((unsigned)n), (uint8_t)(copy_flag((unsigned)*last) + 1));
	}
	*last = n;
}

static void test_transitions(void **state)
{
	(void)state;
	/* a RAUC-style environment: no BOOT_TRIAL, other variables around */
	make_copy(0, "BOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\nbootcmd=run distro_bootcmd\nkeep=me\n", 1);
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	int last = newest();
	assert_int_equal(last, 0);
	assert_string_equal(state_of(bl), "order=A A=3 B=0 trial=-");

	struct snapshot *snap = malloc(sizeof(*snap));
	assert_non_null(snap);
	take(snap);
	assert_int_equal(eq_bl_try_once(bl, 0, &e), EQ_ERR_STATE); /* B is no fallback */
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);       /* nothing changes: no write */
	assert_true(unchanged(snap));

	set_state(bl, "A B", 3, 3, -1);
	check_write(bl, &last, "order=A B A=3 B=3 trial=-");
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	check_write(bl, &last, "order=B A A=3 B=1 trial=B");
	assert_int_equal(script_boot(bl), 1);
	check_write(bl, &last, "order=B A A=3 B=0 trial=B");
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	check_write(bl, &last, "order=B A A=3 B=3 trial=-");
	assert_int_equal(eq_bl_try_once(bl, 0, &e), EQ_OK);
	check_write(bl, &last, "order=A B A=1 B=3 trial=A");
	assert_int_equal(script_boot(bl), 0);
	check_write(bl, &last, "order=A B A=0 B=3 trial=A");
	assert_int_equal(script_boot(bl), 1); /* A never confirmed: fallback */
	assert_int_equal(eq_bl_mark_bad(bl, 0, &e), EQ_OK);
	check_write(bl, &last, "order=B A=0 B=3 trial=-");
	set_state(bl, "B", 0, 1, -1); /* a RAUC-style script used B's attempts */
	check_write(bl, &last, "order=B A=0 B=1 trial=-");
	assert_int_equal(eq_bl_rearm(bl, 1, &e), EQ_OK);
	check_write(bl, &last, "order=B A=0 B=3 trial=-");
	assert_int_equal(eq_bl_rearm(bl, 0, &e), EQ_ERR_STATE);

	/* every slot rejected: the order is empty, and stays empty for U-Boot */
	assert_int_equal(eq_bl_mark_bad(bl, 1, &e), EQ_OK);
	check_write(bl, &last, "order= A=0 B=0 trial=-");
	assert_string_equal(copy_value(last, "BOOT_ORDER"), " ");
	assert_string_equal(copy_value(last, "BOOT_TRIAL"), "");
	struct eq_bl_state st;
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_OK); /* not a garbled order */
	assert_int_equal(eq_bl_state_pick(&st), -1);

	assert_int_equal(eq_bl_init_default(bl, 0, &e), EQ_OK);
	check_write(bl, &last, "order=A A=3 B=0 trial=-");
	/* the flag byte wraps as U-Boot's does: 0 after 255 is newer */
	for (unsigned k = 0; redundant && k < 260; k++) {
		set_state(bl, k % 2 ? "A" : "A B", 3, 3, -1);
		check_write(bl, &last, k % 2 ? "order=A A=3 B=3 trial=-" : "order=A B A=3 B=3 trial=-");
	}
	free(snap);
	eq_bl_close(bl);
}

/* ---- U-Boot's tools: mkenvimage, fw_printenv, fw_setenv ----------------------- */

static void test_mkenvimage(void **state)
{
	(void)state;
	NEED_TOOL("mkenvimage", "u-boot-tools");
	char txt[160], img[160], out[1024];
	snprintf(txt, sizeof(txt), "%s/env.txt", tmpdir);
	snprintf(img, sizeof(img), "%s/env.img", tmpdir);
	write_str(txt, "BOOT_ORDER=B A\nBOOT_A_LEFT=2\nBOOT_B_LEFT=1\nBOOT_TRIAL=B\nkeep=me\n");
	int rc = run(out, sizeof(out), "mkenvimage %s -s 0x4000 -o %s %s", redundant ? "-r" : "", img, txt);
	if (rc)
		fail_msg("mkenvimage: %s", out);
	static uint8_t b[ENV_SIZE];
	FILE *f = fopen(img, "rb");
	assert_non_null(f);
	assert_int_equal(fread(b, 1, sizeof(b), f), sizeof(b));
	fclose(f);
	/* one copy, or the same image in both, as a factory flashes it */
	write_copy(0, b);
	if (redundant)
		write_copy(1, b);

	struct eq_bl *bl = open_bl();
	struct eq_error e;
	assert_string_equal(state_of(bl), "order=B A A=2 B=1 trial=B");
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=B A A=2 B=3 trial=-");
	int n = newest();
	assert_string_equal(copy_value(n, "keep"), "me");
	if (redundant) { /* equal flags: copy 0 was read, copy 1 written */
		assert_int_equal(n, 1);
		assert_true(copy_valid(0));
		assert_int_equal(copy_flag(1), (uint8_t)(copy_flag(0) + 1));
	}
	eq_bl_close(bl);
}

static void test_fw_tools(void **state)
{
	(void)state;
	NEED_TOOL("fw_printenv", "libubootenv-tool");
	NEED_TOOL("fw_setenv", "libubootenv-tool");
	char out[2048], script[160];
	snprintf(script, sizeof(script), "%s/script", tmpdir);
	struct eq_bl *bl = open_bl();
	struct eq_error e;

	/* eqota writes, fw_printenv reads */
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	assert_int_equal(run(out, sizeof(out), "fw_printenv -c %s", cfg_path), 0);
	assert_string_equal(out, "BOOT_A_LEFT=3\nBOOT_B_LEFT=0\nBOOT_ORDER=A\nBOOT_TRIAL=\n");

	/* fw_setenv writes, eqota reads; its variables survive eqota's writes */
	write_str(script, "BOOT_ORDER=B A\nBOOT_B_LEFT=1\nBOOT_TRIAL=B\nkeep=me\n");
	assert_int_equal(run(out, sizeof(out), "fw_setenv -c %s -s %s", cfg_path, script), 0);
	assert_string_equal(state_of(bl), "order=B A A=3 B=1 trial=B");
	/* "NAME=" in a fw_setenv script deletes: a missing BOOT_TRIAL is no trial */
	write_str(script, "BOOT_TRIAL=\n");
	assert_int_equal(run(out, sizeof(out), "fw_setenv -c %s -s %s", cfg_path, script), 0);
	struct eq_bl_state st;
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_OK);
	assert_string_equal(fmt_state(&st), "order=B A A=3 B=1 trial=-");
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	assert_int_equal(run(out, sizeof(out), "fw_printenv -c %s", cfg_path), 0);
	assert_string_equal(out, "BOOT_A_LEFT=3\nBOOT_B_LEFT=3\nBOOT_ORDER=B A\nBOOT_TRIAL=\nkeep=me\n");

	/* the empty order as the tools (and U-Boot) see it: set, one space */
	assert_int_equal(eq_bl_mark_bad(bl, 0, &e), EQ_OK);
	assert_int_equal(eq_bl_mark_bad(bl, 1, &e), EQ_OK);
	assert_int_equal(run(out, sizeof(out), "fw_printenv -c %s BOOT_ORDER", cfg_path), 0);
	assert_string_equal(out, "BOOT_ORDER= \n");
	/* and the tools' writes keep alternating copies with eqota's */
	write_str(script, "BOOT_ORDER=A\nBOOT_A_LEFT=3\n");
	assert_int_equal(run(out, sizeof(out), "fw_setenv -c %s -s %s", cfg_path, script), 0);
	assert_string_equal(state_of(bl), "order=A A=3 B=0 trial=-");
	if (redundant)
		assert_true(copy_valid(0) && copy_valid(1));
	eq_bl_close(bl);
}

/* ---- redundant copies: corruption, torn writes -------------------------------- */

static void test_corrupt_one(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK); /* copy 1 (both were blank) */
	set_state(bl, "A B", 3, 3, -1);                      /* copy 0 */
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);  /* copy 1 */
	assert_int_equal(newest(), 1);

	/* the newer copy rots: the older, good one is used */
	corrupt_copy(1);
	assert_string_equal(state_of(bl), "order=A B A=3 B=3 trial=-");
	/* the next write replaces the bad copy; both valid, the new one wins */
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	assert_true(copy_valid(0) && copy_valid(1));
	assert_int_equal(newest(), 1);
	assert_int_equal(copy_flag(1), (uint8_t)(copy_flag(0) + 1));
	assert_string_equal(state_of(bl), "order=B A A=3 B=1 trial=B");

	/* the older copy rots: nothing changes for the reader */
	corrupt_copy(0);
	assert_string_equal(state_of(bl), "order=B A A=3 B=1 trial=B");
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	assert_true(copy_valid(0) && copy_valid(1));
	assert_int_equal(newest(), 0);
	assert_int_equal(copy_flag(0), (uint8_t)(copy_flag(1) + 1));
	assert_string_equal(state_of(bl), "order=B A A=3 B=3 trial=-");
	eq_bl_close(bl);
}

/*
 * A power cut during a write, simulated: the devices before the write are
 * kept, and the copy the write went to is replaced by what a cut can leave
 * (a prefix of the new bytes, garbage, a new header on old data, all but
 * the last byte). The state read must be the old one; the complete copy
 * gives the new one. With one copy a torn write leaves nothing valid.
 */
static void test_torn_write(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	set_state(bl, "A B", 3, 3, -1);
	const char *old_state = "order=A B A=3 B=3 trial=-";
	struct snapshot *before = malloc(sizeof(*before));
	assert_non_null(before);
	take(before);
	int was = newest();
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	unsigned w = (unsigned)newest(); /* the copy written */
	assert_string_equal(state_of(bl), "order=B A A=3 B=1 trial=B");
	if (redundant)
		assert_int_not_equal((int)w, was);
	static uint8_t nu[ENV_SIZE], old[ENV_SIZE], torn[ENV_SIZE];
	read_copy(w, nu);
	restore(before);
	read_copy(w, old);
	/* The copies can share their padding (libubootenv does not clear its
	 * buffer), so cut inside the bytes that really differ. */
	size_t d0 = 0, d1 = ENV_SIZE;
	while (d0 < ENV_SIZE && nu[d0] == old[d0])
		d0++;
	while (d1 > d0 && nu[d1 - 1] == old[d1 - 1])
		d1--;
	assert_true(d1 > d0);

	for (int c = 0; c < 6; c++) {
		restore(before);
		memcpy(torn, old, ENV_SIZE);
		switch (c) {
		case 0: /* cut halfway through the bytes that change */ memcpy(torn, nu, d0 + (d1 - d0) / 2); break;
		case 1: /* the header (CRC and the newer flag) only */ memcpy(torn, nu, hdr()); break;
		case 2: { /* the variables made it, the padding after them not */
			size_t end = hdr();
			while (end < ENV_SIZE && nu[end])
				end += strnlen((const char *)nu + end, ENV_SIZE - end) + 1;
			memcpy(torn, nu, ENV_SIZE);
			for (size_t i = end + 1; i < ENV_SIZE; i++)
				torn[i] = (uint8_t)~nu[i];
			break;
		}
		case 3: /* garbage */
			srand(7);
			for (size_t i = 0; i < ENV_SIZE; i++)
				torn[i] = (uint8_t)rand();
			break;
		case 4: /* everything but the last changed byte */ memcpy(torn, nu, d1 - 1); break;
		default: /* complete: the new state */ memcpy(torn, nu, ENV_SIZE); break;
		}
		assert_true(c == 5 || memcmp(torn, nu, ENV_SIZE) != 0);
		write_copy(w, torn);
		struct eq_bl_state st;
		eq_err r = eq_bl_get_state(bl, &st, &e);
		if (c == 5) {
			assert_int_equal(r, EQ_OK);
			assert_string_equal(fmt_state(&st), "order=B A A=3 B=1 trial=B");
		} else if (redundant) {
			if (r)
				fail_msg("torn case %d: %s", c, e.msg);
			assert_string_equal(fmt_state(&st), old_state);
		} else {
			if (r != EQ_ERR_NOTFOUND) /* why boards want two copies */
				fail_msg("torn case %d, one copy: %s", c, eq_err_str(r));
		}
	}
	/* after a cut the next write works normally (one copy: a fresh start) */
	restore(before);
	memcpy(torn, nu, ENV_SIZE);
	torn[hdr()] ^= 0xff;
	write_copy(w, torn);
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	assert_string_equal(state_of(bl), redundant ? "order=B A A=3 B=3 trial=-" : "order=B A=0 B=3 trial=-");
	free(before);
	eq_bl_close(bl);
}

/* The copy a cut at byte @k leaves: the new bytes before @k, then @tail's. */
static void cut_at(uint8_t *torn, const uint8_t *nu, const uint8_t *tail, size_t k)
{
	memcpy(torn, nu, k);
	memcpy(torn + k, tail + k, ENV_SIZE - k);
}

/* Every byte up to this far past the last one that changes is a cut point. */
#define CUT_DENSE 256u
/* Past that, every CUT_STRIDE-th byte and the last CUT_END, unless
 * EQ_TEST_TORN_ALL is set: every byte then (6 x 16385 reads, about 30 s). */
#define CUT_STRIDE 61u
#define CUT_END 16u

static bool cut_point(size_t k, size_t d1, bool all)
{
	return all || k <= d1 + CUT_DENSE || k >= ENV_SIZE - CUT_END || k % CUT_STRIDE == 0;
}

/*
 * A power cut at every byte of a write: for each k in 0..ENV_SIZE the copy
 * the write went to holds the new bytes before k and, after them, the old
 * bytes (a device that keeps what it held) or garbage (one that does not).
 * Two copies: every such copy reads as exactly the old state, and only
 * bytes equal to the new copy (the complete write, or a cut after the last
 * byte that changes) as the new one. One copy: no valid environment
 * (EQ_ERR_NOTFOUND), except when the bytes are the old or the new copy.
 * Every byte of the header, of the variables that change and of the
 * padding after them is a cut point; beyond that a sample (every byte with
 * EQ_TEST_TORN_ALL=1). Then, for a handful of cut points, the next writes
 * work.
 */
static void test_torn_every_byte(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	set_state(bl, "A B", 3, 3, -1);
	const char *old_state = "order=A B A=3 B=3 trial=-", *new_state = "order=B A A=3 B=1 trial=B";
	struct snapshot *before = malloc(sizeof(*before));
	assert_non_null(before);
	take(before);
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_OK);
	unsigned w = (unsigned)newest(); /* the copy written */
	assert_string_equal(state_of(bl), new_state);
	static uint8_t nu[ENV_SIZE], old[ENV_SIZE], junk[ENV_SIZE], torn[ENV_SIZE];
	read_copy(w, nu);
	restore(before);
	read_copy(w, old);
	size_t d0 = 0, d1 = ENV_SIZE; /* the first byte that differs, and one past the last */
	while (d0 < ENV_SIZE && nu[d0] == old[d0])
		d0++;
	while (d1 > d0 && nu[d1 - 1] == old[d1 - 1])
		d1--;
	assert_true(d0 < hdr() && d1 > hdr()); /* the CRC changes, and so do the variables */
	assert_true(d1 + CUT_DENSE < ENV_SIZE - CUT_END);
	srand(17);
	for (size_t i = 0; i < ENV_SIZE; i++) /* garbage unlike the new byte everywhere */
		junk[i] = (uint8_t)(nu[i] ^ (uint8_t)(1 + rand() % 255));
	const char *all_env = secure_getenv("EQ_TEST_TORN_ALL");
	bool all = all_env && *all_env && strcmp(all_env, "0") != 0;

	unsigned long tried = 0, as_new = 0, as_old = 0, invalid = 0;
	for (int v = 0; v < 2; v++) {
		const uint8_t *tail = v ? junk : old;
		for (size_t k = 0; k <= ENV_SIZE; k++) {
			if (!cut_point(k, d1, all))
				continue;
			cut_at(torn, nu, tail, k);
			write_copy(w, torn);
			bool is_new = !memcmp(torn, nu, ENV_SIZE), is_old = !memcmp(torn, old, ENV_SIZE);
			const char *want = is_new ? new_state : is_old || redundant ? old_state : NULL;
			struct eq_bl_state st;
			eq_err r = eq_bl_get_state(bl, &st, &e);
			if (want ? r != EQ_OK || strcmp(fmt_state(&st), want) != 0 : r != EQ_ERR_NOTFOUND)
				fail_msg("write cut at byte %zu of %u (then %s): %s '%s', want %s", k, ENV_SIZE,
					 v ? "garbage" : "the old bytes", eq_err_str(r), r ? e.msg : fmt_state(&st),
					 want ? want : "no valid environment");
			tried++;
			as_new += is_new;
			as_old += is_old;
			invalid += !want;
		}
	}
	/* The cut points: 0..d1 + CUT_DENSE, the multiples of CUT_STRIDE up to
	 * the last CUT_END bytes, those and ENV_SIZE itself; each with both
	 * tails. The new bytes: with the old tail from d1 on, with garbage only
	 * at ENV_SIZE; the old bytes: up to the first change, with the old tail. */
	size_t lo = d1 + CUT_DENSE, hi = ENV_SIZE - CUT_END;
	unsigned long points =
		all ? ENV_SIZE + 1ul : (lo + 1) + ((hi - 1) / CUT_STRIDE - lo / CUT_STRIDE) + (CUT_END + 1);
	unsigned long new_points = all ? ENV_SIZE - d1 + 1ul : points - d1;
	assert_int_equal(tried, 2 * points);
	assert_true(points > d1 + hdr());
	assert_int_equal(as_new, new_points + 1);
	assert_int_equal(as_old, d0 + 1);
	assert_int_equal(invalid, redundant ? 0 : tried - as_new - as_old);
	print_message("%s: %lu cut writes (bytes %zu..%zu of %u change): %lu read as the new state, %lu as the old, "
		      "%lu as no environment\n",
		      redundant ? "two copies" : "one copy", tried, d0, d1 - 1, ENV_SIZE, as_new,
		      redundant ? tried - as_new : as_old, invalid);

	/* after a cut the next writes work: commit B, then try A once */
	const size_t cuts[] = {0, 1, hdr() - 1, hdr(), (hdr() + d1) / 2, d1 - 1, d1, ENV_SIZE / 2, ENV_SIZE};
	for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		for (int v = 0; v < 2; v++) {
			restore(before);
			cut_at(torn, nu, v ? junk : old, cuts[c]);
			write_copy(w, torn);
			bool fresh = !redundant && memcmp(torn, nu, ENV_SIZE) != 0 && memcmp(torn, old, ENV_SIZE) != 0;
			if (eq_bl_mark_good(bl, 1, &e) != EQ_OK)
				fail_msg("mark_good after a cut at byte %zu: %s", cuts[c], e.msg);
			/* one copy torn: a fresh environment, as from a blank device */
			assert_string_equal(state_of(bl),
					    fresh ? "order=B A=0 B=3 trial=-" : "order=B A A=3 B=3 trial=-");
			if (redundant)
				assert_true(copy_valid(0) && copy_valid(1));
			assert_int_equal(eq_bl_try_once(bl, 0, &e), EQ_OK);
			assert_string_equal(state_of(bl), "order=A B A=1 B=3 trial=A");
		}
	}
	free(before);
	eq_bl_close(bl);
}

static void test_both_bad(void **state)
{
	(void)state;
	make_copy(0, "BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nkeep=me\n", 4);
	make_copy(1, "BOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nkeep=me\n", 5);
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	assert_string_equal(state_of(bl), "order=B A A=3 B=3 trial=-");
	corrupt_copy(0);
	corrupt_copy(1);
	struct snapshot *before = malloc(sizeof(*before));
	assert_non_null(before);
	take(before);
	struct eq_bl_state st;
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_ERR_NOTFOUND);
	assert_non_null(strstr(e.msg, "no valid environment: both copies fail their CRC"));
	assert_non_null(strstr(e.msg, cfg_path));
	assert_non_null(strstr(e.msg, copy_dev[1]));
	assert_int_equal(eq_bl_try_once(bl, 1, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(eq_bl_mark_bad(bl, 0, &e), EQ_ERR_NOTFOUND);
	assert_int_equal(eq_bl_rearm(bl, 1, &e), EQ_ERR_NOTFOUND);
	assert_true(unchanged(before));
	/* mark_good repairs it: a fresh environment in one copy... */
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	assert_string_equal(state_of(bl), "order=B A=0 B=3 trial=-");
	assert_null(copy_value(newest(), "keep")); /* unreadable, so not kept */
	assert_int_equal(copy_valid(0) + copy_valid(1), 1);
	/* ...and the next write makes both valid again */
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	assert_true(copy_valid(0) && copy_valid(1));
	assert_string_equal(state_of(bl), "order=A B A=3 B=3 trial=-");
	free(before);
	eq_bl_close(bl);
}

/* ---- garbled values, limits, lock, allocation failures ---------------------------- */

static void test_garbled(void **state)
{
	(void)state;
	make_copy(0, "BOOT_ORDER=C A\nBOOT_A_LEFT=x\nBOOT_B_LEFT=2\nBOOT_TRIAL=Q\nkeep=me\n", 1);
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	struct eq_bl_state st;
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, cfg_path));
	assert_non_null(strstr(e.msg, "BOOT_ORDER='C A': unknown slot 'C'"));
	assert_non_null(strstr(e.msg, "(and 2 more problems)"));
	assert_string_equal(fmt_state(&st), "order=A A=0 B=2 trial=-");
	/* a transition starts from what a boot script reads, and repairs */
	assert_int_equal(eq_bl_mark_good(bl, 1, &e), EQ_OK);
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_OK);
	assert_string_equal(fmt_state(&st), "order=B A=0 B=3 trial=-");
	assert_string_equal(copy_value(newest(), "keep"), "me");

	/* a missing counter is read as a boot script defaults it */
	make_copy(0, "BOOT_ORDER=B\nBOOT_B_LEFT=x\n", 1);
	if (redundant)
		corrupt_copy(1);
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "BOOT_A_LEFT is missing"));
	assert_string_equal(fmt_state(&st), "order=B A=3 B=0 trial=-");
	eq_bl_close(bl);
}

/* A copy whose CRC holds but whose variables never end (no empty string
 * inside it): libubootenv 0.3.2 would read past its buffer (a fuzz
 * finding); it is refused as garbled and nothing is written over it. */
static void test_unterminated(void **state)
{
	(void)state;
	static uint8_t b[ENV_SIZE];
	memset(b, 'x', sizeof(b));
	memcpy(b + hdr(), "BOOT_ORDER=A B", 14);
	b[hdr() + 14] = 0; /* one string ended, the rest 'x' up to the end */
	if (redundant)
		b[4] = 1;
	uint32_t c = eq_crc32(b + hdr(), ENV_SIZE - hdr());
	for (int k = 0; k < 4; k++)
		b[k] = (uint8_t)(c >> (8 * k));
	write_copy(0, b);
	if (redundant)
		corrupt_copy(1);
	assert_true(copy_valid(0));
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	struct eq_bl_state st;
	struct snapshot *before = malloc(sizeof(*before));
	assert_non_null(before);
	take(before);
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_ERR_PARSE);
	if (!strstr(e.msg, "copy 1") || !strstr(e.msg, "its CRC holds but its variables do not end"))
		fail_msg("message: %s", e.msg);
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_ERR_PARSE);
	assert_true(unchanged(before));
	free(before);
	eq_bl_close(bl);
}

static void test_too_small(void **state)
{
	(void)state;
	/* a 0x40-byte environment already holding a long variable */
	char text[256];
	snprintf(text, sizeof(text), "%s 0x0 0x40\n", dev_path[0]);
	write_str(cfg_path, text);
	static uint8_t b[0x40];
	memset(b, 0xff, sizeof(b));
	const char *v = "filler=0123456789012345678901234567890123456789";
	memcpy(b + 4, v, strlen(v) + 1);
	b[4 + strlen(v) + 1] = 0;
	uint32_t c = eq_crc32(b + 4, sizeof(b) - 4);
	for (int k = 0; k < 4; k++)
		b[k] = (uint8_t)(c >> (8 * k));
	write_file(dev_path[0], b, sizeof(b));
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	struct eq_bl_state st;
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_ERR_PARSE); /* nothing of eqota's yet */
	struct snapshot *before = malloc(sizeof(*before));
	assert_non_null(before);
	take(before);
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_ERR_LIMIT);
	assert_non_null(strstr(e.msg, "the variables need"));
	assert_non_null(strstr(e.msg, cfg_path));
	assert_true(unchanged(before));
	free(before);
	eq_bl_close(bl);
}

/* A device file shorter than offset + size: an I/O error, nothing written. */
static void test_short_device(void **state)
{
	(void)state;
	write_file(dev_path[0], "short", 5);
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	struct eq_bl_state st;
	assert_int_equal(eq_bl_get_state(bl, &st, &e), EQ_ERR_IO);
	assert_non_null(strstr(e.msg, "cannot read the environment"));
	assert_non_null(strstr(e.msg, dev_path[0]));
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_ERR_IO);
	struct stat sb;
	assert_int_equal(stat(dev_path[0], &sb), 0);
	assert_int_equal(sb.st_size, 5);
	eq_bl_close(bl);
}

/*
 * libubootenv 0.3.2 goes on without its lock when /var/lock is not
 * writable; eqota refuses to write then. Run in a child with a private
 * mount namespace and a read-only /var/lock (needs CAP_SYS_ADMIN).
 */
static int lock_child(void)
{
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return 77;
	char *lockdir = realpath("/var/lock", NULL);
	if (!lockdir || mount("tmpfs", lockdir, "tmpfs", MS_RDONLY, "size=64k") != 0)
		return 77;
	free(lockdir);
	struct eq_bl *bl = NULL;
	struct eq_error e;
	struct eq_bl_config cfg = {.backend = "uboot", .path = cfg_path, .try_attempts = 1};
	if (eq_bl_open(&cfg, &bl, &e) != EQ_OK)
		return 1;
	struct eq_bl_state st;
	int rc = 0;
	if (eq_bl_get_state(bl, &st, &e) != EQ_OK) {
		fprintf(stderr, "read without the lock: %s\n", e.msg);
		rc = 1;
	}
	eq_err r = eq_bl_mark_good(bl, 1, &e);
	if (r != EQ_ERR_IO || !strstr(e.msg, "/var/lock/fw_printenv.lock") || !strstr(e.msg, "writable")) {
		fprintf(stderr, "write without the lock: %s '%s'\n", eq_err_str(r), e.msg);
		rc = 1;
	}
	eq_bl_close(bl);
	return rc;
}

static void test_lock(void **state)
{
	(void)state;
	struct eq_bl *bl = open_bl();
	struct eq_error e;
	assert_int_equal(eq_bl_mark_good(bl, 0, &e), EQ_OK);
	eq_bl_close(bl);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(lock_child());
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		EQ_SKIP("no private mount namespace here (needs root or CAP_SYS_ADMIN)");
	assert_int_equal(WEXITSTATUS(st), 0);
	bl = open_bl();
	assert_string_equal(state_of(bl), "order=A A=3 B=0 trial=-"); /* nothing written */
	eq_bl_close(bl);
}

#ifdef EQ_TEST_HOOKS
static void test_alloc_failures(void **state)
{
	(void)state;
	make_copy(0, "BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nother=1\n", 1);
	for (unsigned long n = 1; n < 100; n++) {
		struct eq_bl *bl = NULL;
		struct eq_error e;
		struct eq_bl_config cfg = {.backend = "uboot", .path = cfg_path, .try_attempts = 1};
		(void)eq_alloc_fail_at(n);
		eq_err r = eq_bl_open(&cfg, &bl, &e);
		if (!r) {
			struct eq_bl_state st;
			r = eq_bl_get_state(bl, &st, &e);
			if (!r)
				r = eq_bl_try_once(bl, 1, &e);
		}
		unsigned long used = eq_alloc_fail_at(0);
		eq_bl_close(bl);
		assert_true(r == EQ_OK || r == EQ_ERR_NOMEM);
		if (r == EQ_OK && used < n)
			break;
	}
	struct eq_bl *bl = open_bl();
	assert_string_equal(state_of(bl), "order=B A A=3 B=1 trial=B");
	assert_string_equal(copy_value(newest(), "other"), "1");
	eq_bl_close(bl);
}
#else
EQ_HOOKS_MISSING(test_alloc_failures)
#endif

/* Named "test/layout" so a failure says which layout. */
#define T(f, l)                                                                                                        \
	{                                                                                                              \
#f "/" #l, f, setup_layout, teardown_dir, &(l)                                                         \
	}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config, setup_dir, teardown_dir),
		T(test_blank, single_ff),
		T(test_blank, single_00),
		T(test_blank, two_files_ff),
		T(test_blank, one_file_00),
		T(test_transitions, single_ff),
		T(test_transitions, two_files_ff),
		T(test_transitions, one_file_00),
		T(test_mkenvimage, single_ff),
		T(test_mkenvimage, one_file_ff),
		T(test_fw_tools, single_00),
		T(test_fw_tools, one_file_ff),
		T(test_fw_tools, two_files_00),
		T(test_corrupt_one, two_files_ff),
		T(test_corrupt_one, one_file_00),
		T(test_torn_write, single_ff),
		T(test_torn_write, two_files_00),
		T(test_torn_write, one_file_ff),
		T(test_torn_every_byte, single_ff),
		T(test_torn_every_byte, two_files_00),
		T(test_torn_every_byte, one_file_ff),
		T(test_both_bad, two_files_ff),
		T(test_both_bad, one_file_00),
		T(test_garbled, single_ff),
		T(test_garbled, one_file_ff),
		T(test_unterminated, single_ff),
		T(test_unterminated, two_files_00),
		T(test_too_small, single_ff),
		T(test_short_device, single_ff),
		T(test_lock, one_file_ff),
		T(test_alloc_failures, one_file_ff),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
