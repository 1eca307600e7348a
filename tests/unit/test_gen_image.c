/*
 * The image analysis (gen_image.c) on small trees made here: merged-/usr
 * symlinks resolved so that a package's bin/bash is the image's
 * usr/bin/bash, an override named with its package, image-only entries by
 * class, hard links, a device node; refused: a socket, content under
 * proc/, a symlink loop; a symlink pointing out of the image resolved
 * inside it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <eq/common.h>
#include <eq/delta.h>
#include <eq/gen_image.h>

#include "eq_test.h"
#include "gen_image_fixture.h"

static const struct eq_image_entry *entry(const struct eq_image *img, const char *path)
{
	size_t i = eq_image_find(img, path);
	if (i == SIZE_MAX)
		fail_msg("no image entry '%s'", path);
	return eq_image_get(img, i);
}

static void assert_resolves(const struct eq_image *img, const char *path, bool follow, const char *want)
{
	char *got = NULL;
	struct eq_error e;
	assert_int_equal(eq_image_resolve(img, path, follow, &got, &e), EQ_OK);
	assert_string_equal(got, want);
	eq_free(got);
}

/* The image of a merged-/usr system made from packages "bash" and
 * "shells", then changed at image time. */
static void make_image(void)
{
	mkdirs("img/usr/bin");
	mkdirs("img/usr/lib");
	mkdirs("img/usr/share/doc");
	mkdirs("img/etc");
	mkdirs("img/run");
	mkdirs("img/proc");
	mkdirs("img/sys");
	put("img/usr/bin/bash", "bash binary");
	put("img/usr/bin/gzip", "gzip binary");
	assert_int_equal(link(at("img/usr/bin/gzip"), at("img/usr/bin/gunzip")), 0);
	put("img/usr/lib/libc.so", "libc");
	put("img/etc/shells", "/bin/sh\n/bin/bash\n"); /* the package's, edited */
	put("img/etc/passwd", "root:x:0:0::/root:/bin/bash\n");
	put("img/etc/machine-id", "");
	lnk("usr/bin", "img/bin");
	lnk("/usr/lib", "img/lib"); /* absolute: inside the image all the same */
	lnk("bash", "img/usr/bin/sh");
	assert_int_equal(mkfifo(at("img/run/initctl"), 0600), 0);

	mkdirs("bash/bin");
	mkdirs("bash/lib");
	mkdirs("bash/usr/share/doc");
	put("bash/bin/bash", "bash binary");
	put("bash/bin/gzip", "gzip binary");
	assert_int_equal(link(at("bash/bin/gzip"), at("bash/bin/gunzip")), 0);
	put("bash/lib/libc.so", "libc");
	put("bash/usr/share/doc/README", "removed at image time");

	mkdirs("shells/etc");
	put("shells/etc/shells", "/bin/sh\n");
}

static void test_merged_usr(void **state)
{
	(void)state;
	make_image();
	struct eq_image *img = load("img");
	assert_resolves(img, "bin/bash", false, "usr/bin/bash");
	assert_resolves(img, "lib/libc.so", false, "usr/lib/libc.so");
	assert_resolves(img, "bin", true, "usr/bin");
	assert_resolves(img, "bin", false, "bin");
	assert_resolves(img, "bin/../etc/shells", false, "usr/etc/shells");
	assert_resolves(img, "bin/sh", true, "usr/bin/bash");

	attribute(img, "bash", "bash");
	attribute(img, "shells", "shells");
	struct eq_image_summary s;
	eq_image_classify(img, &s);

	assert_int_equal(entry(img, "usr/bin/bash")->cls, EQ_IMAGE_PACKAGE);
	assert_string_equal(eq_image_pkg_name(img, entry(img, "usr/bin/bash")->pkg), "bash");
	assert_int_equal(entry(img, "usr/lib/libc.so")->cls, EQ_IMAGE_PACKAGE);
	/* Hard links: one group, both members the package's. */
	assert_int_equal(entry(img, "usr/bin/gzip")->cls, EQ_IMAGE_PACKAGE);
	assert_int_equal(entry(img, "usr/bin/gunzip")->cls, EQ_IMAGE_PACKAGE);
	assert_int_not_equal(entry(img, "usr/bin/gzip")->link_group, 0);
	assert_int_equal(entry(img, "usr/bin/gzip")->link_group, entry(img, "usr/bin/gunzip")->link_group);
	/* The package folder bin is the image's usr/bin. */
	assert_int_equal(entry(img, "usr/bin")->cls, EQ_IMAGE_PACKAGE);

	const struct eq_image_entry *shells = entry(img, "etc/shells");
	assert_int_equal(shells->cls, EQ_IMAGE_OVERRIDE);
	assert_string_equal(eq_image_pkg_name(img, shells->pkg), "shells");
	assert_int_equal(entry(img, "etc/passwd")->cls, EQ_IMAGE_FILE);
	assert_int_equal(entry(img, "etc/machine-id")->cls, EQ_IMAGE_EMPTY);
	assert_int_equal(entry(img, "bin")->cls, EQ_IMAGE_SYMLINK);
	assert_int_equal(entry(img, "lib")->cls, EQ_IMAGE_SYMLINK);
	assert_int_equal(entry(img, "usr/bin/sh")->cls, EQ_IMAGE_SYMLINK);
	assert_int_equal(entry(img, "run/initctl")->cls, EQ_IMAGE_FIFO);
	assert_int_equal(entry(img, "proc")->cls, EQ_IMAGE_DIR);

	/* Entries: 9 folders (usr usr/bin usr/lib usr/share usr/share/doc etc
	 * run proc sys), 7 files, 3 symlinks, 1 fifo. */
	assert_int_equal(s.entries, 20);
	/* usr usr/bin usr/lib usr/share usr/share/doc etc; bash gzip gunzip libc.so */
	assert_int_equal(s.by_class[EQ_IMAGE_PACKAGE], 10);
	assert_int_equal(s.by_class[EQ_IMAGE_OVERRIDE], 1);
	assert_int_equal(s.by_class[EQ_IMAGE_FILE], 1);
	assert_int_equal(s.by_class[EQ_IMAGE_EMPTY], 1);
	assert_int_equal(s.by_class[EQ_IMAGE_SYMLINK], 3);
	assert_int_equal(s.by_class[EQ_IMAGE_FIFO], 1);
	assert_int_equal(s.by_class[EQ_IMAGE_DIR], 3); /* run proc sys */
	assert_int_equal(s.by_class[EQ_IMAGE_DEVICE], 0);
	assert_int_equal(s.missing, 1);
	const char *mp;
	uint32_t mk;
	eq_image_missing_get(img, 0, &mp, &mk);
	assert_string_equal(mp, "usr/share/doc/README");
	assert_string_equal(eq_image_pkg_name(img, mk), "bash");
	/* gzip's group once: 11 + 11 + 4 */
	assert_int_equal(s.package_bytes, 26);
	assert_int_equal(s.image_bytes, strlen("/bin/sh\n/bin/bash\n") + strlen("root:x:0:0::/root:/bin/bash\n"));
	eq_image_free(img);
}

/* A hard link the image broke (the file rewritten in place of one of
 * them) is not the package's group any more. */
static void test_hard_link_broken(void **state)
{
	(void)state;
	mkdirs("img/bin");
	put("img/bin/a", "same");
	put("img/bin/b", "same");
	mkdirs("pkg/bin");
	put("pkg/bin/a", "same");
	assert_int_equal(link(at("pkg/bin/a"), at("pkg/bin/b")), 0);
	struct eq_image *img = load("img");
	attribute(img, "p", "pkg");
	struct eq_image_summary s;
	eq_image_classify(img, &s);
	assert_int_equal(entry(img, "bin/a")->cls, EQ_IMAGE_OVERRIDE);
	assert_int_equal(entry(img, "bin/b")->cls, EQ_IMAGE_OVERRIDE);
	assert_int_equal(entry(img, "bin")->cls, EQ_IMAGE_PACKAGE);
	eq_image_free(img);
}

static void test_device_node(void **state)
{
	(void)state;
	mkdirs("img/dev");
	if (mknod(at("img/dev/null"), S_IFCHR | 0666, makedev(1, 3)) < 0)
		EQ_SKIP("mknod needs root (run the test as root)");
	mkdirs("pkg/dev");
	struct eq_image *img = load("img");
	attribute(img, "p", "pkg");
	struct eq_image_summary s;
	eq_image_classify(img, &s);
	const struct eq_image_entry *d = entry(img, "dev/null");
	assert_int_equal(d->cls, EQ_IMAGE_DEVICE);
	assert_int_equal(d->type, EQ_ENTRY_CHR);
	assert_int_equal(d->devmajor, 1);
	assert_int_equal(d->devminor, 3);
	assert_int_equal(s.by_class[EQ_IMAGE_DEVICE], 1);
	eq_image_free(img);
}

static void assert_refused(const char *rel, eq_err code, const char *needle)
{
	struct eq_image *img = NULL;
	struct eq_error e;
	eq_err r = eq_image_load(at(rel), NULL, &img, &e);
	if (r != code || !strstr(eq_error_msg(&e), needle))
		fail_msg("expected code %d and '%s', got %d: %s", code, needle, r, eq_error_msg(&e));
	assert_null(img);
}

static void test_socket_refused(void **state)
{
	(void)state;
	mkdirs("img/run");
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(s >= 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", at("img/run/sock"));
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	close(s);
	assert_refused("img", EQ_ERR_UNSUPPORTED, "'run/sock'");
}

static void test_proc_refused(void **state)
{
	(void)state;
	mkdirs("img/proc/1");
	put("img/proc/1/status", "State: R");
	assert_refused("img", EQ_ERR_UNSAFE, "'proc/1'");
	mkdirs("img2");
	put("img2/sys", "not a folder");
	assert_refused("img2", EQ_ERR_UNSAFE, "'sys'");
}

static void test_loop_refused(void **state)
{
	(void)state;
	mkdirs("img/etc");
	lnk("b", "img/etc/a");
	lnk("/etc/a", "img/etc/b");
	assert_refused("img", EQ_ERR_UNSAFE, "loop");
}

/* A symlink pointing out of the image resolves inside it: a package's
 * out/file is the image's nonexistent/file (missing), never the host's. */
static void test_outside_stays_inside(void **state)
{
	(void)state;
	mkdirs("img/a");
	lnk("../../../../../../tmp", "img/a/out");
	lnk("/nonexistent", "img/dangling");
	mkdirs("pkg/a/out");
	put("pkg/a/out/file", "x");
	struct eq_image *img = load("img");
	assert_resolves(img, "a/out/file", false, "tmp/file");
	assert_resolves(img, "dangling/x", false, "nonexistent/x");
	attribute(img, "p", "pkg");
	struct eq_image_summary s;
	eq_image_classify(img, &s);
	/* a/out (a folder resolving to "tmp") and a/out/file: missing. */
	assert_int_equal(s.missing, 2);
	assert_int_equal(entry(img, "a/out")->cls, EQ_IMAGE_SYMLINK);
	assert_int_equal(s.by_class[EQ_IMAGE_PACKAGE], 1); /* a */
	eq_image_free(img);
}

/* The caps of struct eq_payload_limits hold for an image: entries, path
 * length, total size. */
static void test_caps(void **state)
{
	(void)state;
	mkdirs("img/etc");
	put("img/etc/a", "0123456789");
	put("img/etc/b", "0123456789");
	struct {
		struct eq_payload_limits lim;
		const char *needle;
	} cases[] = {
		{{.max_entries = 2}, "more than 2 entries at 'etc/b'"},
		{{.max_path = 4}, "etc/a"},
		{{.max_total = 15}, "15 at 'etc/b'"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct eq_image *img = NULL;
		struct eq_error e;
		eq_err r = eq_image_load(at("img"), &cases[i].lim, &img, &e);
		if (r != EQ_ERR_LIMIT || !strstr(eq_error_msg(&e), cases[i].needle))
			fail_msg("case %zu: expected EQ_ERR_LIMIT and '%s', got %d: %s", i, cases[i].needle, r,
				 eq_error_msg(&e));
		assert_null(img);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_merged_usr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_link_broken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proc_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loop_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outside_stays_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_caps, setup, teardown),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
