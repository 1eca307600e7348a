/*
 * Unit tests of [persist] (agent/persist.c, its keys in agent/config.c):
 * the config syntax and its refusals with FILE:LINE, and the copy rules
 * over two temporary slot folders: a symlink in the running slot is not
 * followed, one planted at the target is replaced (never written through),
 * a FIFO is skipped, the cap is refused, a missing path keeps the
 * release's version (and a copy of it beside the records), provisioning
 * copies nothing, globs, folders, modes, and the list of paths whose
 * release version was set aside.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/agent.h>

#include "../../agent/persist.h"

#define MIN_CONF                                                                                                       \
	"[repository]\n"                                                                                               \
	"url = https://updates.example.com/repo\n"                                                                     \
	"board = b\n"                                                                                                  \
	"channel = stable\n"                                                                                           \
	"key = /etc/eqota/release.pub\n"                                                                               \
	"[slots]\n"                                                                                                    \
	"A = /srv/a\n"                                                                                                 \
	"B = /srv/b\n"                                                                                                 \
	"[bootloader]\n"                                                                                               \
	"backend = uboot\n"

static eq_err parse(const char *extra, struct eq_config *c, struct eq_error *e)
{
	char text[4096];
	snprintf(text, sizeof(text), "%s%s", MIN_CONF, extra);
	eq_error_clear(e);
	return eq_config_parse("eqota.conf", text, strlen(text), c, e);
}

static void expect_conf_err(const char *extra, eq_err want, const char *substr)
{
	struct eq_config c;
	struct eq_error e;
	eq_err r = parse(extra, &c, &e);
	if (r == EQ_OK)
		eq_config_done(&c);
	if (r != want || !strstr(e.msg, substr))
		fail_msg("got %s '%s', want %s containing '%s' for:\n%s", eq_err_str(r), e.msg, eq_err_str(want),
			 substr, extra);
}

static void test_config(void **state)
{
	(void)state;
	struct eq_config c;
	struct eq_error e;
	/* Absent: the documented defaults. */
	assert_int_equal(parse("", &c, &e), EQ_OK);
	assert_int_equal(c.n_persist, 4);
	assert_string_equal(c.persist_paths[0], "/etc/machine-id");
	assert_string_equal(c.persist_paths[1], "/etc/ssh/ssh_host_*_key");
	assert_string_equal(c.persist_paths[2], "/etc/ssh/ssh_host_*_key.pub");
	assert_string_equal(c.persist_paths[3], "/etc/hostname");
	assert_int_equal(c.persist_max_bytes, 1024 * 1024);
	eq_config_done(&c);
	/* An explicit empty list turns it off. */
	assert_int_equal(parse("[persist]\npaths =\n", &c, &e), EQ_OK);
	assert_int_equal(c.n_persist, 0);
	eq_config_done(&c);
	assert_int_equal(parse("[persist]\npaths =   # nothing\nmax-bytes = 4096\n", &c, &e), EQ_OK);
	assert_int_equal(c.n_persist, 0);
	assert_int_equal(c.persist_max_bytes, 4096);
	eq_config_done(&c);
	assert_int_equal(parse("[persist]\npaths = /etc/machine-id\t/var/lib/app/id.key  /etc/wpa/*.conf\n", &c, &e),
			 EQ_OK);
	assert_int_equal(c.n_persist, 3);
	assert_string_equal(c.persist_paths[1], "/var/lib/app/id.key");
	assert_string_equal(c.persist_paths[2], "/etc/wpa/*.conf");
	assert_int_equal(c.persist_max_bytes, 1024 * 1024);
	eq_config_done(&c);
	/* "/usr/lib/eqota" alone is not eqota's folder's parent's glob. */
	assert_int_equal(parse("[persist]\npaths = /usr/lib/eqota/state.d /usr/lib/eqotax\n", &c, &e), EQ_OK);
	eq_config_done(&c);

	expect_conf_err("[persist]\npaths = etc/machine-id\n", EQ_ERR_INVAL,
			"eqota.conf:12: [persist] paths: 'etc/machine-id': expected an absolute path");
	expect_conf_err("[persist]\npaths = /etc/*/id\n", EQ_ERR_INVAL,
			"eqota.conf:12: [persist] paths: '/etc/*/id': wildcards (* ? [) only in the last component");
	expect_conf_err("[persist]\npaths = /etc/../root/x\n", EQ_ERR_INVAL,
			":12: [persist] paths: '/etc/../root/x': "
			"'.' and '..' are not allowed");
	expect_conf_err("[persist]\npaths = /etc//x\n", EQ_ERR_INVAL, "empty path component");
	expect_conf_err("[persist]\npaths = /etc/ssh/\n", EQ_ERR_INVAL, "no trailing '/'");
	expect_conf_err("[persist]\npaths = /\n", EQ_ERR_INVAL, "'/' is the whole slot");
	expect_conf_err("[persist]\npaths = /usr/lib/eqota/slot/packages/a.files\n", EQ_ERR_INVAL,
			"inside eqota's own folder /usr/lib/eqota/slot");
	expect_conf_err("[persist]\npaths = /usr/lib/eqota/slot\n", EQ_ERR_INVAL, "inside eqota's own folder");
	expect_conf_err("[persist]\npaths = /usr/lib\n", EQ_ERR_INVAL, "contains eqota's own folder");
	expect_conf_err("[persist]\npaths = /usr/lib/eqota/s*\n", EQ_ERR_INVAL, "contains eqota's own folder");
	expect_conf_err("[persist]\npaths = /usr\n", EQ_ERR_INVAL, "contains eqota's own folder");
	expect_conf_err("[persist]\npaths = /etc/hostname /etc/hostname\n", EQ_ERR_INVAL,
			"eqota.conf:12: [persist] paths: '/etc/hostname' is listed twice");
	expect_conf_err("[persist]\npaths = /var/lib/app /var/lib/app/id\n", EQ_ERR_INVAL,
			"eqota.conf:12: [persist] paths: '/var/lib/app' and '/var/lib/app/id' overlap");
	expect_conf_err("[persist]\npaths = /etc/ssh/ssh_host_rsa_key.pub /etc/ssh/*.pub\n", EQ_ERR_INVAL, "overlap");
	expect_conf_err("[persist]\npaths = /etc/s* /etc/ssh/ssh_host_rsa_key\n", EQ_ERR_INVAL, "overlap");
	expect_conf_err("[persist]\nmax-bytes = 0\n", EQ_ERR_INVAL, "eqota.conf:12: max-bytes = 0: expected 1..");
	expect_conf_err("[persist]\nmax-bytes = 1MiB\n", EQ_ERR_INVAL,
			"eqota.conf:12: max-bytes = 1MiB: expected a whole");
	expect_conf_err("[persist]\nmax-bytes = 2000000000\n", EQ_ERR_INVAL, "expected 1..1073741824");
	expect_conf_err("[persist]\npath = /etc/hostname\n", EQ_ERR_PARSE,
			"eqota.conf:12: unknown key 'path' in [persist]");
	expect_conf_err("[persist]\npaths = /a\npaths = /b\n", EQ_ERR_PARSE, "eqota.conf:13: duplicate key 'paths'");
	char many[2048] = "[persist]\npaths =";
	for (int i = 0; i <= (int)EQ_CONFIG_MAX_PERSIST; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), " /p%d", i);
	strcat(many, "\n");
	expect_conf_err(many, EQ_ERR_LIMIT, "eqota.conf:12: [persist] paths: more than 64 paths");
}

/* ---- copies between two slot folders --------------------------------------- */

struct fx {
	char dir[64]; /* holds run/, new/ and outside/ */
	char run[96], target[96];
};

static void sh(const char *fmt, ...) EQ_PRINTF(1, 2);
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("shell: %s", cmd);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/eq-persist.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->run, sizeof(f->run), "%s/run", f->dir);
	snprintf(f->target, sizeof(f->target), "%s/new", f->dir);
	/* The running slot: the device's own files. The new slot: what the
	 * release holds (its own machine id and hostname, no keys). */
	sh("cd %s && mkdir -p run/etc/ssh new/etc/ssh new/usr/lib/eqota/slot/packages outside && "
	   "printf 'device-id\\n' > run/etc/machine-id && chmod 0444 run/etc/machine-id && "
	   "printf 'device-host\\n' > run/etc/hostname && "
	   "printf 'rsa key\\n' > run/etc/ssh/ssh_host_rsa_key && chmod 0600 run/etc/ssh/ssh_host_rsa_key && "
	   "printf 'rsa pub\\n' > run/etc/ssh/ssh_host_rsa_key.pub && "
	   "printf 'ed key\\n' > run/etc/ssh/ssh_host_ed25519_key && chmod 0600 run/etc/ssh/ssh_host_ed25519_key && "
	   "printf 'image-id\\n' > new/etc/machine-id && printf 'image-host\\n' > new/etc/hostname && "
	   "printf 'secret\\n' > outside/secret && printf 'victim\\n' > outside/victim",
	   f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	sh("rm -rf %s", f->dir);
	free(f);
	return 0;
}

static eq_err run(struct fx *f, const char *const *paths, size_t n, uint64_t cap, struct eq_persist_report *rep,
		  struct eq_error *e)
{
	struct eq_persist p = {.running_root = f->run,
			       .target_root = f->target,
			       .paths = (char *const *)(uintptr_t)paths,
			       .n_paths = n,
			       .max_bytes = cap,
			       .owners = geteuid() == 0};
	eq_error_clear(e);
	return eq_persist_copy(&p, rep, e);
}

/* The content of @rel below @root, "" when missing. */
static const char *content(const char *root, const char *rel)
{
	static char buf[256];
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	buf[0] = '\0';
	FILE *fp = fopen(path, "r");
	if (fp) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
		buf[n] = '\0';
		fclose(fp);
	}
	return buf;
}

static mode_t lmode(const char *root, const char *rel)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return lstat(path, &st) == 0 ? st.st_mode : 0;
}

static void test_defaults_copy(void **state)
{
	struct fx *f = *state;
	static const char *const paths[] = {"/etc/machine-id", "/etc/ssh/ssh_host_*_key", "/etc/ssh/ssh_host_*_key.pub",
					    "/etc/hostname"};
	struct eq_persist_report rep;
	struct eq_error e;
	assert_int_equal(run(f, paths, 4, 1024 * 1024, &rep, &e), EQ_OK);
	assert_string_equal(content(f->target, "etc/machine-id"), "device-id\n");
	assert_string_equal(content(f->target, "etc/hostname"), "device-host\n");
	assert_string_equal(content(f->target, "etc/ssh/ssh_host_rsa_key"), "rsa key\n");
	assert_string_equal(content(f->target, "etc/ssh/ssh_host_ed25519_key"), "ed key\n");
	assert_string_equal(content(f->target, "etc/ssh/ssh_host_rsa_key.pub"), "rsa pub\n");
	assert_int_equal(lmode(f->target, "etc/machine-id"), S_IFREG | 0444);
	assert_int_equal(lmode(f->target, "etc/ssh/ssh_host_rsa_key"), S_IFREG | 0600);
	assert_int_equal(rep.files, 5);
	assert_int_equal(rep.saved, 2);
	assert_int_equal(rep.bytes, 10 + 12 + 8 + 8 + 7);
	/* The release's versions are kept beside the records, and listed. */
	assert_string_equal(content(f->target, EQ_PERSIST_IMAGE_DIR "/etc/machine-id"), "image-id\n");
	assert_string_equal(content(f->target, EQ_PERSIST_IMAGE_DIR "/etc/hostname"), "image-host\n");
	assert_string_equal(content(f->target, EQ_PERSIST_LIST), "etc/machine-id\netc/hostname\n");
	int fd = open(f->target, O_PATH | O_DIRECTORY);
	struct eq_persist_list l;
	assert_int_equal(eq_persist_list_load(fd, &l, &e), EQ_OK);
	assert_int_equal(l.n, 2);
	assert_true(eq_persist_list_covers(&l, "etc/hostname"));
	assert_false(eq_persist_list_covers(&l, "etc/hostname2"));
	assert_false(eq_persist_list_covers(&l, "etc"));
	eq_persist_list_done(&l);
	close(fd);
	/* No temporary copy is left behind. */
	sh("! ls -a %s/etc %s/etc/ssh | grep -q eqpersist", f->target, f->target);
}

static void test_symlink_in_running_not_followed(void **state)
{
	struct fx *f = *state;
	sh("cd %s && rm run/etc/machine-id && ln -s ../../outside/secret run/etc/machine-id && "
	   "rm -r run/etc/ssh && ln -s ../outside run/etc/ssh && cp outside/secret outside/ssh_host_x_key",
	   f->dir);
	static const char *const paths[] = {"/etc/machine-id", "/etc/ssh/ssh_host_*_key"};
	struct eq_persist_report rep;
	struct eq_error e;
	assert_int_equal(run(f, paths, 2, 1024 * 1024, &rep, &e), EQ_OK);
	/* Neither the file nor the folder on the way was followed: the new
	 * slot keeps the release's id and gets no key. */
	assert_string_equal(content(f->target, "etc/machine-id"), "image-id\n");
	assert_int_equal(lmode(f->target, "etc/ssh/ssh_host_x_key"), 0);
	assert_int_equal(rep.files, 0);
	assert_int_equal(rep.skipped, 2);
}

static void test_symlink_at_target_replaced(void **state)
{
	struct fx *f = *state;
	/* The release put a symlink where the device's hostname goes, and one
	 * in place of the folder of the keys. */
	sh("cd %s && rm new/etc/hostname && ln -s ../../outside/victim new/etc/hostname", f->dir);
	static const char *const paths[] = {"/etc/hostname"};
	struct eq_persist_report rep;
	struct eq_error e;
	assert_int_equal(run(f, paths, 1, 1024 * 1024, &rep, &e), EQ_OK);
	assert_int_equal(lmode(f->target, "etc/hostname"), S_IFREG | 0644);
	assert_string_equal(content(f->target, "etc/hostname"), "device-host\n");
	assert_string_equal(content(f->dir, "outside/victim"), "victim\n");
	assert_true(S_ISLNK(lmode(f->target, EQ_PERSIST_IMAGE_DIR "/etc/hostname")));

	/* A symlink on the way in the new slot is refused, not written through. */
	sh("cd %s && rm -r new/etc/ssh && ln -s ../../outside new/etc/ssh", f->dir);
	static const char *const keys[] = {"/etc/ssh/ssh_host_*_key"};
	eq_err r = run(f, keys, 1, 1024 * 1024, &rep, &e);
	assert_int_equal(r, EQ_ERR_UNSAFE);
	assert_non_null(strstr(e.msg, "persist: '/etc/ssh/ssh_host_ed25519_key' in the new slot"));
	sh("! ls %s/outside | grep -q ssh_host", f->dir);
}

static void test_fifo_skipped(void **state)
{
	struct fx *f = *state;
	sh("cd %s && rm run/etc/hostname && mkfifo run/etc/hostname && mkdir -p run/var/lib/app && "
	   "mkfifo run/var/lib/app/pipe && printf 'state\\n' > run/var/lib/app/state && "
	   "ln -s /etc/shadow run/var/lib/app/link && chmod 0750 run/var/lib/app",
	   f->dir);
	static const char *const paths[] = {"/etc/hostname", "/var/lib/app"};
	struct eq_persist_report rep;
	struct eq_error e;
	assert_int_equal(run(f, paths, 2, 1024 * 1024, &rep, &e), EQ_OK);
	/* Skipped, never opened (a FIFO would block the update). */
	assert_string_equal(content(f->target, "etc/hostname"), "image-host\n");
	/* A folder comes with its files; the FIFO and the symlink in it stay out. */
	assert_string_equal(content(f->target, "var/lib/app/state"), "state\n");
	assert_int_equal(lmode(f->target, "var/lib/app"), S_IFDIR | 0750);
	assert_int_equal(lmode(f->target, "var/lib/app/pipe"), 0);
	assert_int_equal(lmode(f->target, "var/lib/app/link"), 0);
	assert_int_equal(rep.skipped, 3);
	assert_int_equal(rep.dirs, 1);
	assert_int_equal(rep.files, 1);
}

static void test_cap_refused(void **state)
{
	struct fx *f = *state;
	sh("cd %s && head -c 3000 /dev/zero > run/etc/hostname", f->dir);
	static const char *const paths[] = {"/etc/machine-id", "/etc/hostname"};
	struct eq_persist_report rep;
	struct eq_error e;
	eq_err r = run(f, paths, 2, 2048, &rep, &e);
	assert_int_equal(r, EQ_ERR_LIMIT);
	assert_non_null(strstr(e.msg, "persist: '/etc/hostname' brings the files to copy to"));
	assert_non_null(strstr(e.msg, "over [persist] max-bytes (2.0 KiB)"));
	/* The running slot is only read. */
	sh("test $(stat -c %%s %s/etc/hostname) = 3000", f->run);
	/* Exactly at the cap is allowed. */
	assert_int_equal(run(f, paths + 1, 1, 3000, &rep, &e), EQ_OK);
	assert_int_equal(rep.bytes, 3000);
}

static void test_missing_keeps_release(void **state)
{
	struct fx *f = *state;
	sh("cd %s && rm run/etc/machine-id && rm run/etc/ssh/*", f->dir);
	static const char *const paths[] = {"/etc/machine-id", "/etc/ssh/ssh_host_*_key", "/opt/none/x"};
	struct eq_persist_report rep;
	struct eq_error e;
	assert_int_equal(run(f, paths, 3, 1024 * 1024, &rep, &e), EQ_OK);
	assert_string_equal(content(f->target, "etc/machine-id"), "image-id\n");
	assert_int_equal(rep.missing, 3);
	assert_int_equal(rep.files, 0);
	/* The release's id stays in place, and a copy of it beside the
	 * records, for when the device writes its own there later. */
	assert_int_equal(rep.saved, 1);
	assert_string_equal(content(f->target, EQ_PERSIST_IMAGE_DIR "/etc/machine-id"), "image-id\n");
	assert_string_equal(content(f->target, EQ_PERSIST_LIST), "etc/machine-id\n");
}

static void test_provisioning_copies_nothing(void **state)
{
	struct fx *f = *state;
	static const char *const paths[] = {"/etc/machine-id"};
	struct eq_persist p = {
		.target_root = f->target, .paths = (char *const *)(uintptr_t)paths, .n_paths = 1, .max_bytes = 100};
	struct eq_persist_report rep;
	struct eq_error e;
	assert_int_equal(eq_persist_copy(&p, &rep, &e), EQ_OK);
	assert_string_equal(content(f->target, "etc/machine-id"), "image-id\n");
	assert_int_equal(rep.files, 0);
	assert_int_equal(rep.saved, 1);
	assert_string_equal(content(f->target, EQ_PERSIST_IMAGE_DIR "/etc/machine-id"), "image-id\n");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test_setup_teardown(test_defaults_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_in_running_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_at_target_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cap_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_keeps_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_provisioning_copies_nothing, setup, teardown),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
