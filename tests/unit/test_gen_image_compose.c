/*
 * Image components (gen_image_compose.c) on a small merged-/usr image made
 * here, read as a folder and as a tar: the skeleton (bin -> usr/bin and the
 * folders around it), the after components by top folder (a package file
 * the image edited, image-only file, symlink, empty file and folder, a
 * hard-link pair the image split, a hard-link group with an image-only
 * member), the replace and remove lists, the counts; refused: device
 * nodes without --image-devices or outside dev/, a file changed between
 * the two reads, a real package named like a component.
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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <eq/common.h>
#include <eq/delta.h>
#include <eq/gen_image.h>

#include "eq_test.h"
#include "gen_image_fixture.h"

/*
 * The image: merged /usr (bin -> usr/bin, lib -> /usr/lib), packages
 * "bash" (bin/bash, bin/gzip + bin/gunzip hard-linked, lib/libc.so,
 * lib/a, usr/share/doc/README) and "shells" (etc/shells); at image time
 * etc/shells was edited, README removed, gzip/gunzip split into two
 * files, lib/a hard-linked to a new lib/b, and etc/passwd,
 * etc/machine-id (empty), usr/bin/sh -> bash, srv/ and vmlinuz -> ...
 * added.
 */
static void make_image(void)
{
	mkdirs("img/usr/bin");
	mkdirs("img/usr/lib");
	mkdirs("img/usr/share/doc");
	mkdirs("img/etc");
	mkdirs("img/srv");
	put("img/usr/bin/bash", "bash binary");
	put("img/usr/bin/gzip", "gzip binary");
	put("img/usr/bin/gunzip", "gzip binary");
	put("img/usr/lib/libc.so", "libc");
	put("img/usr/lib/a", "shared");
	assert_int_equal(link(at("img/usr/lib/a"), at("img/usr/lib/b")), 0);
	put("img/etc/shells", "/bin/sh\n/bin/bash\n");
	put("img/etc/passwd", "root:x:0:0::/root:/bin/bash\n");
	put("img/etc/machine-id", "");
	lnk("usr/bin", "img/bin");
	lnk("/usr/lib", "img/lib");
	lnk("bash", "img/usr/bin/sh");
	lnk("usr/lib/libc.so", "img/vmlinuz");

	mkdirs("bash/bin");
	mkdirs("bash/lib");
	mkdirs("bash/usr/share/doc");
	put("bash/bin/bash", "bash binary");
	put("bash/bin/gzip", "gzip binary");
	assert_int_equal(link(at("bash/bin/gzip"), at("bash/bin/gunzip")), 0);
	put("bash/lib/libc.so", "libc");
	put("bash/lib/a", "shared");
	put("bash/usr/share/doc/README", "removed at image time");

	mkdirs("shells/etc");
	put("shells/etc/shells", "/bin/sh\n");
}

static struct eq_image_components *compose(struct eq_image *img, const char *rootfs, bool devices, eq_err want,
					   const char *needle)
{
	struct eq_image_compose_opts o = {.rootfs = at(rootfs), .tmpdir = base, .devices = devices};
	struct eq_image_components *c = NULL;
	struct eq_error e;
	eq_err r = eq_image_compose(img, &o, &c, &e);
	if (r != want || (needle && !strstr(eq_error_msg(&e), needle)))
		fail_msg("eq_image_compose: expected %d '%s', got %d: %s", want, needle ? needle : "", r,
			 r ? eq_error_msg(&e) : "");
	return c;
}

static const struct eq_image_component *component(const struct eq_image_components *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].name, name))
			return &c->v[i];
	fail_msg("no component '%s'", name);
	return NULL;
}

/* "path:type[:data or link]" of each entry of @b's payload, ";"-joined, and
 * the payload's hash. */
static char *listing(struct eq_payload_builder *b, uint8_t sha[EQ_SHA256_LEN])
{
	char path[600];
	snprintf(path, sizeof(path), "%s/payload", base);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	struct eq_error e;
	uint64_t size;
	eq_err r = eq_payload_builder_write(b, eq_fd_write, &fd, sha, &size, &e);
	if (r)
		fail_msg("write: %s", eq_error_msg(&e));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	struct eq_payload_reader *rd = NULL;
	assert_int_equal(eq_payload_reader_new(eq_fd_read, &fd, NULL, &rd, &e), EQ_OK);
	static char out[4096];
	size_t len = 0;
	out[0] = '\0';
	for (;;) {
		const struct eq_payload_entry *pe;
		assert_int_equal(eq_payload_reader_next(rd, &pe, &e), EQ_OK);
		if (!pe)
			break;
		static const char ty[] = {[EQ_ENTRY_FILE] = 'f',     [EQ_ENTRY_DIR] = 'd', [EQ_ENTRY_SYMLINK] = 'l',
					  [EQ_ENTRY_HARDLINK] = 'h', [EQ_ENTRY_CHR] = 'c', [EQ_ENTRY_BLK] = 'b',
					  [EQ_ENTRY_FIFO] = 'p'};
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s:%c", len ? ";" : "", pe->path,
					ty[pe->type]);
		if (pe->type == EQ_ENTRY_SYMLINK || pe->type == EQ_ENTRY_HARDLINK)
			len += (size_t)snprintf(out + len, sizeof(out) - len, ":%s", pe->link);
		if (pe->type == EQ_ENTRY_FILE && pe->size) {
			char data[256] = "";
			size_t n = 0;
			assert_int_equal(eq_payload_reader_read(rd, data, sizeof(data) - 1, &n, &e), EQ_OK);
			data[n] = '\0';
			len += (size_t)snprintf(out + len, sizeof(out) - len, ":%s", data);
		}
	}
	eq_payload_reader_free(rd);
	close(fd);
	return out;
}

static void assert_list(char *const *v, size_t n, const char *want)
{
	char got[2048] = "";
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s", i ? " " : "", v[i]);
	assert_string_equal(got, want);
}

/* The components of the image at @rootfs (made by make_image()); their
 * payload hashes go to @sha (one per component, in order). */
static void check_components(const char *rootfs, uint8_t sha[8][EQ_SHA256_LEN])
{
	struct eq_image *img = load(rootfs);
	attribute(img, "bash", "bash");
	attribute(img, "shells", "shells");
	struct eq_image_summary s;
	eq_image_classify(img, &s);
	struct eq_image_components *c = compose(img, rootfs, false, EQ_OK, NULL);
	assert_int_equal(c->n, 5);
	assert_int_equal(c->n_before, 1);
	assert_string_equal(c->v[0].name, "eqota-image-skeleton");
	/* After, in name order: the root's non-folders first. */
	assert_string_equal(c->v[1].name, "eqota-image-top");
	assert_string_equal(c->v[2].name, "eqota-image.etc");
	assert_string_equal(c->v[3].name, "eqota-image.srv");
	assert_string_equal(c->v[4].name, "eqota-image.usr");
	assert_string_equal(listing(c->v[0].b, sha[0]), "bin:l:usr/bin;lib:l:/usr/lib;usr:d;usr/bin:d;usr/lib:d");
	assert_string_equal(listing(component(c, "eqota-image-top")->b, sha[1]), "vmlinuz:l:usr/lib/libc.so");
	assert_string_equal(listing(component(c, "eqota-image.etc")->b, sha[2]),
			    "etc/machine-id:f;etc/passwd:f:root:x:0:0::/root:/bin/bash\n;"
			    "etc/shells:f:/bin/sh\n/bin/bash\n");
	assert_string_equal(listing(component(c, "eqota-image.srv")->b, sha[3]), "srv:d");
	/* The pair the image split: two files; the group with an image-only
	 * member: whole, in one component. */
	assert_string_equal(listing(component(c, "eqota-image.usr")->b, sha[4]),
			    "usr/bin/gunzip:f:gzip binary;usr/bin/gzip:f:gzip binary;usr/bin/sh:l:bash;"
			    "usr/lib/a:f:shared;usr/lib/b:h:usr/lib/a");
	assert_int_equal(component(c, "eqota-image.etc")->bytes,
			 strlen("root:x:0:0::/root:/bin/bash\n") + strlen("/bin/sh\n/bin/bash\n"));
	assert_int_equal(component(c, "eqota-image.usr")->entries, 5);
	/* Package paths as the packages ship them: the folders the image has
	 * as symlinks and every entry that is not the image's. */
	assert_list(c->replace, c->n_replace, "bin bin/gunzip bin/gzip etc/shells lib lib/a");
	assert_list(c->remove, c->n_remove, "usr/share/doc/README");
	/* 20 entries; from the image: the 4 symlinks, etc's 3 files, srv,
	 * and the 4 usr files split or grouped by the image. The packages
	 * place usr's 5 folders, etc, bash and libc.so. */
	assert_int_equal(s.entries, 20);
	assert_int_equal(c->from_image, 12);
	assert_int_equal(c->from_packages, 8);
	eq_image_components_free(c);
	eq_image_free(img);
}

static void test_components(void **state)
{
	(void)state;
	make_image();
	uint8_t dir_sha[8][EQ_SHA256_LEN], tar_sha[8][EQ_SHA256_LEN];
	check_components("img", dir_sha);
	/* The same image as a compressed tar: the data is read again from it,
	 * and the payloads are the same bytes. */
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "tar --format=posix --numeric-owner -C %s -czf %s .", at("img"), at("img.tar.gz"));
	if (system(cmd) != 0)
		EQ_SKIP("tar cannot make %s", at("img.tar.gz"));
	check_components("img.tar.gz", tar_sha);
	for (int i = 0; i < 5; i++)
		assert_memory_equal(dir_sha[i], tar_sha[i], EQ_SHA256_LEN);
}

/* A file of the image changed after it was read: refused, named. */
static void test_changed(void **state)
{
	(void)state;
	make_image();
	struct eq_image *img = load("img");
	attribute(img, "bash", "bash");
	attribute(img, "shells", "shells");
	struct eq_image_summary s;
	eq_image_classify(img, &s);
	put("img/etc/passwd", "root:x:0:0::/root:/bin/sh\n");
	assert_null(compose(img, "img", false, EQ_ERR_STATE, "entry 'etc/passwd': changed since the image was read"));
	unlink(at("img/etc/passwd"));
	assert_null(compose(img, "img", false, EQ_ERR_NOTFOUND, "etc/passwd"));
	eq_image_free(img);
}

static void test_devices(void **state)
{
	(void)state;
	mkdirs("img/dev");
	mkdirs("img/etc");
	if (mknod(at("img/dev/null"), S_IFCHR | 0666, makedev(1, 3)) < 0)
		EQ_SKIP("mknod needs root (run the test as root)");
	mkdirs("pkg/dev");
	struct eq_image *img = load("img");
	attribute(img, "p", "pkg");
	struct eq_image_summary s;
	eq_image_classify(img, &s);
	assert_null(compose(img, "img", false, EQ_ERR_UNSAFE, "entry 'dev/null': a device node (give --image-devices"));
	struct eq_image_components *c = compose(img, "img", true, EQ_OK, NULL);
	uint8_t sha[EQ_SHA256_LEN];
	assert_string_equal(listing(component(c, "eqota-image.dev")->b, sha), "dev/null:c");
	eq_image_components_free(c);
	eq_image_free(img);

	assert_int_equal(mknod(at("img/etc/null"), S_IFCHR | 0666, makedev(1, 3)), 0);
	img = load("img");
	attribute(img, "p", "pkg");
	eq_image_classify(img, &s);
	assert_null(compose(img, "img", true, EQ_ERR_UNSAFE, "entry 'etc/null': a device node outside dev/"));
	eq_image_free(img);
}

/* Top folders whose names cannot be package names get a hashed one. */
static void test_names(void **state)
{
	(void)state;
	mkdirs("img/odd name");
	mkdirs("img/lost+found");
	put("img/odd name/f", "x");
	struct eq_image *img = load("img");
	struct eq_image_summary s;
	eq_image_classify(img, &s);
	struct eq_image_components *c = compose(img, "img", false, EQ_OK, NULL);
	assert_int_equal(c->n, 2);
	assert_int_equal(c->n_before, 0);
	assert_string_equal(c->v[0].name, "eqota-image.lost+found");
	assert_true(!strncmp(c->v[1].name, "eqota-image.x", 13) && strlen(c->v[1].name) == 13 + 16);
	assert_true(eq_image_is_component_name(c->v[1].name));
	assert_true(eq_image_is_component_name("eqota-image-skeleton"));
	assert_true(eq_image_is_component_name("eqota-image-top"));
	assert_false(eq_image_is_component_name("eqota-image"));
	assert_false(eq_image_is_component_name("eqota"));
	eq_image_components_free(c);
	eq_image_free(img);
}

/* var splits one level further: what a running system writes under
 * var/log must not share a component with dpkg's database in var/lib. */
static void test_var_split(void **state)
{
	(void)state;
	mkdirs("img/var/lib/dpkg");
	mkdirs("img/var/log");
	mkdirs("img/var/odd name");
	put("img/var/lib/dpkg/status", "Package: x\n");
	put("img/var/log/wtmp", "");
	put("img/var/log.txt", "a file of var itself");
	put("img/var/odd name/f", "y");
	struct eq_image *img = load("img");
	struct eq_image_summary s;
	eq_image_classify(img, &s);
	struct eq_image_components *c = compose(img, "img", false, EQ_OK, NULL);
	uint8_t sha[EQ_SHA256_LEN];
	assert_int_equal(c->n, 4);
	assert_string_equal(listing(component(c, "eqota-image.var")->b, sha),
			    "var:d;var/log.txt:f:a file of var itself");
	assert_string_equal(listing(component(c, "eqota-image.var.lib")->b, sha),
			    "var/lib:d;var/lib/dpkg:d;var/lib/dpkg/status:f:Package: x\n");
	assert_string_equal(listing(component(c, "eqota-image.var.log")->b, sha), "var/log:d;var/log/wtmp:f");
	/* A second level that cannot be part of a package name: hashed. */
	bool hashed = false;
	for (size_t i = 0; i < c->n; i++)
		hashed |= !strncmp(c->v[i].name, "eqota-image.x", 13) && strlen(c->v[i].name) == 13 + 16;
	assert_true(hashed);
	eq_image_components_free(c);
	eq_image_free(img);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_components, setup, teardown),
		cmocka_unit_test_setup_teardown(test_changed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_devices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_var_split, setup, teardown),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
