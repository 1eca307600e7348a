/*
 * Package reader: real .deb files from dpkg-deb, hand-made .ipk files (ar
 * and tar variants), tarballs written with libarchive, broken input, and
 * the default taskhash feeding the equivalence store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <eq/gen_package.h>
#include <eq/gen_repo.h>
#include <eq/gen_store.h>

struct fx {
	char dir[64];
};

static int sh(const char *fmt, ...) EQ_PRINTF(1, 2);
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-ec", cmd, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "command failed: %s\n", cmd);
		return -1;
	}
	return 0;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/eqgenpkg.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (eq_rm_rf(f->dir, NULL) != EQ_OK)
		fprintf(stderr, "cannot remove %s\n", f->dir);
	free(f);
	return 0;
}

#define LONG_DIR                                                                                                       \
	"usr/share/a-rather-long-directory-name-to-pass-the-ustar-limit/and-another-level-of-nesting-that-is-long/"    \
	"and-a-third-one-for-good-measure"

/* The package's installed tree: setuid file, symlink, hard link, long path. */
static void make_tree(const char *root, const char *variant)
{
	assert_int_equal(sh("umask 022; mkdir -p %s/usr/bin %s/usr/sbin %s/" LONG_DIR " %s/etc/empty.d\n"
			    "printf 'tool %s\\n' > %s/usr/bin/tool; chmod 4755 %s/usr/bin/tool\n"
			    "ln %s/usr/bin/tool %s/usr/sbin/tool-alias\n"
			    "ln -s tool %s/usr/bin/tool-sym\n"
			    "printf 'deep' > %s/" LONG_DIR "/file-with-a-long-name.txt\n"
			    "printf 'key=1\\n' > %s/etc/tool.conf; chmod 600 %s/etc/tool.conf\n",
			    root, root, root, root, variant, root, root, root, root, root, root, root, root),
			 0);
}

static const char control_text[] = "Package: eqtool\n"
				   "Version: 1.2-3\n"
				   "Architecture: arm64\n"
				   "Maintainer: Test <t@example.com>\n"
				   "Pre-Depends: dpkg (>= 1.19)\n"
				   "Depends: libc6 (>= 2.36),\n"
				   "  libfoo1 | libbar1\n"
				   "Description: test package\n"
				   " with a long description.\n";

/* Builds DIR/NAME.deb from tree DIR/TREE with dpkg-deb and compressor Z. */
static void make_deb(const char *dir, const char *tree, const char *name, const char *z)
{
	assert_int_equal(sh("cd %s; rm -rf pkg-%s; cp -a %s pkg-%s; mkdir -m 755 pkg-%s/DEBIAN\n"
			    "cat > pkg-%s/DEBIAN/control <<'EOF'\n%sEOF\n"
			    "dpkg-deb --root-owner-group -Z%s --build pkg-%s %s.deb >/dev/null",
			    dir, name, tree, name, name, name, control_text, z, name, name),
			 0);
}

static eq_err null_sink(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	(void)ctx, (void)data, (void)len, (void)err;
	return EQ_OK;
}

static void tree_sha(const char *root, uint8_t out[32])
{
	struct eq_payload_builder *b = NULL;
	struct eq_error e;
	uint64_t size;
	assert_int_equal(eq_payload_builder_new(NULL, &b, &e), EQ_OK);
	if (eq_payload_builder_add_tree(b, root, &e) != EQ_OK)
		fail_msg("add_tree: %s", e.msg);
	if (eq_payload_builder_write(b, null_sink, NULL, out, &size, &e) != EQ_OK)
		fail_msg("write: %s", e.msg);
	eq_payload_builder_free(b);
}

static struct eq_pkg *read_pkg(const char *path)
{
	struct eq_pkg *p = NULL;
	struct eq_error e;
	eq_error_clear(&e);
	if (eq_pkg_read(path, NULL, &p, &e) != EQ_OK)
		fail_msg("eq_pkg_read: %s", e.msg);
	return p;
}

static void pkg_sha(struct eq_pkg *p, uint8_t out[32])
{
	struct eq_error e;
	uint64_t size;
	if (eq_pkg_write_payload(p, null_sink, NULL, out, &size, &e) != EQ_OK)
		fail_msg("write payload: %s", e.msg);
}

static void expect_same_sha(const uint8_t a[32], const uint8_t b[32], const char *what)
{
	char ha[65], hb[65];
	eq_hex_encode(a, 32, ha);
	eq_hex_encode(b, 32, hb);
	if (strcmp(ha, hb) != 0)
		fail_msg("%s: payload %s != %s", what, ha, hb);
}

/* Walks the payload of @p and checks the interesting entries. */
static void check_entries(struct eq_pkg *p, const char *dir)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/payload.tar", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	uint8_t sha[32];
	uint64_t size;
	struct eq_error e;
	assert_int_equal(eq_pkg_write_payload(p, eq_fd_write, &fd, sha, &size, &e), EQ_OK);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	struct eq_payload_reader *r = NULL;
	assert_int_equal(eq_payload_reader_new(eq_fd_read, &fd, NULL, &r, &e), EQ_OK);
	int seen = 0;
	for (;;) {
		const struct eq_payload_entry *en = NULL;
		if (eq_payload_reader_next(r, &en, &e) != EQ_OK)
			fail_msg("reader: %s", e.msg);
		if (!en)
			break;
		assert_int_equal(en->uid, 0);
		assert_int_equal(en->gid, 0);
		assert_true(en->path[0] != '/' && strncmp(en->path, "./", 2) != 0);
		if (strcmp(en->path, "usr/bin/tool") == 0) {
			assert_int_equal(en->type, EQ_ENTRY_FILE);
			assert_int_equal(en->mode, 04755);
			assert_int_equal(en->size, strlen("tool v1\n"));
			seen |= 1;
		} else if (strcmp(en->path, "usr/sbin/tool-alias") == 0) {
			assert_int_equal(en->type, EQ_ENTRY_HARDLINK);
			assert_string_equal(en->link, "usr/bin/tool");
			seen |= 2;
		} else if (strcmp(en->path, "usr/bin/tool-sym") == 0) {
			assert_int_equal(en->type, EQ_ENTRY_SYMLINK);
			assert_string_equal(en->link, "tool");
			seen |= 4;
		} else if (strcmp(en->path, LONG_DIR "/file-with-a-long-name.txt") == 0) {
			seen |= 8;
		} else if (strcmp(en->path, "etc/tool.conf") == 0) {
			assert_int_equal(en->mode, 0600);
			seen |= 16;
		} else if (strcmp(en->path, "etc/empty.d") == 0) {
			assert_int_equal(en->type, EQ_ENTRY_DIR);
			seen |= 32;
		}
	}
	assert_int_equal(seen, 63);
	eq_payload_reader_free(r);
	close(fd);
}

static void test_deb(void **state)
{
	struct fx *f = *state;
	char tree[128], deb[128];
	snprintf(tree, sizeof(tree), "%s/tree", f->dir);
	make_tree(tree, "v1");
	uint8_t want[32], got[32];
	tree_sha(tree, want);

	make_deb(f->dir, "tree", "xz", "xz");
	snprintf(deb, sizeof(deb), "%s/xz.deb", f->dir);
	struct eq_pkg *p = read_pkg(deb);
	const struct eq_pkg_info *i = eq_pkg_get_info(p);
	assert_int_equal(i->format, EQ_PKG_DEB);
	assert_string_equal(i->name, "eqtool");
	assert_string_equal(i->version, "1.2-3");
	assert_string_equal(i->arch, "arm64");
	assert_string_equal(i->depends, "dpkg (>= 1.19), libc6 (>= 2.36), libfoo1 | libbar1");
	assert_string_equal(i->file, deb);
	pkg_sha(p, got);
	expect_same_sha(got, want, "xz deb vs tree");
	check_entries(p, f->dir);
	eq_pkg_free(p);

	/* Content alone decides: other compressors, other mtimes. */
	static const char *const zs[] = {"gzip", "zstd", "none"};
	for (size_t k = 0; k < 3; k++) {
		if (k == 2)
			assert_int_equal(sh("find %s -exec touch -h -d '2001-02-03 04:05:06' {} +", tree), 0);
		make_deb(f->dir, "tree", zs[k], zs[k]);
		snprintf(deb, sizeof(deb), "%s/%s.deb", f->dir, zs[k]);
		p = read_pkg(deb);
		pkg_sha(p, got);
		expect_same_sha(got, want, zs[k]);
		eq_pkg_free(p);
	}
}

static void test_ipk(void **state)
{
	struct fx *f = *state;
	char tree[128], path[128];
	snprintf(tree, sizeof(tree), "%s/tree", f->dir);
	make_tree(tree, "ipk");
	uint8_t want[32], got[32];
	tree_sha(tree, want);
	assert_int_equal(sh("cd %s; mkdir ctl; cat > ctl/control <<'EOF'\n%sEOF\n"
			    "tar -C tree --owner=0 --group=0 -czf data.tar.gz .\n"
			    "tar -C ctl --owner=0 --group=0 -czf control.tar.gz ./control\n"
			    "echo 2.0 > debian-binary\n"
			    "ar rc ar.ipk debian-binary control.tar.gz data.tar.gz\n"
			    "tar --owner=0 --group=0 -czf tar.ipk ./debian-binary ./data.tar.gz ./control.tar.gz",
			    f->dir, control_text),
			 0);
	static const char *const names[] = {"ar.ipk", "tar.ipk"};
	for (size_t k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/%s", f->dir, names[k]);
		struct eq_pkg *p = read_pkg(path);
		const struct eq_pkg_info *i = eq_pkg_get_info(p);
		assert_int_equal(i->format, EQ_PKG_IPK);
		assert_string_equal(i->name, "eqtool");
		assert_string_equal(i->arch, "arm64");
		pkg_sha(p, got);
		expect_same_sha(got, want, names[k]);
		eq_pkg_free(p);
	}
}

static void add_entry(struct archive *a, const char *path, unsigned type, unsigned mode, long uid, const char *data,
		      const char *link)
{
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, mode);
	archive_entry_set_uid(e, uid);
	archive_entry_set_gid(e, uid);
	archive_entry_set_mtime(e, 123456789, 0);
	archive_entry_set_uname(e, "someone");
	if (type == AE_IFLNK)
		archive_entry_set_symlink(e, link);
	if (type == AE_IFCHR)
		archive_entry_set_rdev(e, makedev(1, 3));
	if (data && strcmp(path, "./usr/bin/ping") == 0) {
		static const unsigned char cap[] = {1, 0, 0, 2, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
		archive_entry_xattr_add_entry(e, "security.capability", cap, sizeof(cap));
	}
	archive_entry_set_size(e, data ? (la_int64_t)strlen(data) : 0);
	assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
	if (data)
		assert_int_equal(archive_write_data(a, data, strlen(data)), (la_ssize_t)strlen(data));
	archive_entry_free(e);
}

static void write_tarball(const char *path, bool evil)
{
	struct archive *a = archive_write_new();
	assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
	add_entry(a, "./", AE_IFDIR, 0755, 0, NULL, NULL);
	add_entry(a, "./usr/", AE_IFDIR, 0755, 0, NULL, NULL);
	add_entry(a, "./usr/bin/", AE_IFDIR, 0755, 0, NULL, NULL);
	add_entry(a, "./usr/bin/ping", AE_IFREG, 04711, 0, "ELF-ish", NULL);
	add_entry(a, "/usr/bin/pong", AE_IFLNK, 0777, 0, NULL, "ping");
	add_entry(a, "./dev/", AE_IFDIR, 0755, 0, NULL, NULL);
	add_entry(a, "./dev/null", AE_IFCHR, 0666, 0, NULL, NULL);
	add_entry(a, "./run/", AE_IFDIR, 01777, 0, NULL, NULL);
	add_entry(a, "./run/fifo", AE_IFIFO, 0600, 1000, NULL, NULL);
	if (evil)
		add_entry(a, "./usr/../../etc/passwd", AE_IFREG, 0644, 0, "x", NULL);
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
}

static void test_tarball(void **state)
{
	struct fx *f = *state;
	char path[128];
	snprintf(path, sizeof(path), "%s/my-tool_2.1+git.tar.gz", f->dir);
	write_tarball(path, false);
	struct eq_pkg *p = read_pkg(path);
	const struct eq_pkg_info *i = eq_pkg_get_info(p);
	assert_int_equal(i->format, EQ_PKG_TARBALL);
	assert_string_equal(i->name, "my-tool");
	assert_string_equal(i->version, "2.1+git");
	assert_string_equal(i->arch, "all");
	assert_string_equal(i->depends, "");
	assert_int_equal(eq_payload_builder_count(eq_pkg_get_builder(p)), 8);

	char out[128];
	snprintf(out, sizeof(out), "%s/payload.tar", f->dir);
	int fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
	uint8_t sha[32];
	uint64_t size;
	struct eq_error e;
	assert_int_equal(eq_pkg_write_payload(p, eq_fd_write, &fd, sha, &size, &e), EQ_OK);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	struct eq_payload_reader *r = NULL;
	assert_int_equal(eq_payload_reader_new(eq_fd_read, &fd, NULL, &r, &e), EQ_OK);
	int seen = 0;
	const struct eq_payload_entry *en;
	while (eq_payload_reader_next(r, &en, &e) == EQ_OK && en) {
		if (strcmp(en->path, "usr/bin/ping") == 0) {
			assert_int_equal(en->mode, 04711);
			assert_int_equal(en->n_xattrs, 1);
			assert_string_equal(en->xattrs[0].name, "security.capability");
			assert_int_equal(en->xattrs[0].len, 20);
			seen |= 1;
		} else if (strcmp(en->path, "usr/bin/pong") == 0) {
			assert_int_equal(en->type, EQ_ENTRY_SYMLINK);
			seen |= 2;
		} else if (strcmp(en->path, "dev/null") == 0) {
			assert_int_equal(en->type, EQ_ENTRY_CHR);
			assert_int_equal(en->devmajor, 1);
			assert_int_equal(en->devminor, 3);
			seen |= 4;
		} else if (strcmp(en->path, "run/fifo") == 0) {
			assert_int_equal(en->type, EQ_ENTRY_FIFO);
			assert_int_equal(en->uid, 1000);
			seen |= 8;
		} else if (strcmp(en->path, "run") == 0) {
			assert_int_equal(en->mode, 01777);
			seen |= 16;
		}
	}
	assert_int_equal(seen, 31);
	eq_payload_reader_free(r);
	close(fd);
	eq_pkg_free(p);

	/* Name rules. */
	snprintf(path, sizeof(path), "%s/python3-foo-1.0.tar.xz", f->dir);
	assert_int_equal(sh("cd %s; mkdir -p t/x; tar -C t -cJf python3-foo-1.0.tar.xz .; "
			    "cp python3-foo-1.0.tar.xz noversion.tar.xz",
			    f->dir),
			 0);
	p = read_pkg(path);
	assert_string_equal(eq_pkg_get_info(p)->name, "python3-foo");
	assert_string_equal(eq_pkg_get_info(p)->version, "1.0");
	eq_pkg_free(p);
	snprintf(path, sizeof(path), "%s/noversion.tar.xz", f->dir);
	p = NULL;
	assert_int_equal(eq_pkg_read(path, NULL, &p, &e), EQ_ERR_PARSE);
	assert_non_null(strstr(e.msg, "noversion.tar.xz"));
	assert_null(p);

	/* ".." is refused. */
	snprintf(path, sizeof(path), "%s/evil_1.tar.gz", f->dir);
	write_tarball(path, true);
	assert_int_equal(eq_pkg_read(path, NULL, &p, &e), EQ_ERR_UNSAFE);
	assert_non_null(strstr(e.msg, "evil_1.tar.gz"));
}

/* Every suffix the package reader takes is listed as a package of a
 * folder (.txz, .tbz2 and .tar.lzma were skipped, so silently missing from
 * a release), and each one reads. */
static void test_list_suffixes(void **state)
{
	struct fx *f = *state;
	assert_int_equal(
		sh("cd %s; mkdir -p pk t/usr/share/x; echo x > t/usr/share/x/f\n"
		   "tar -C t -cJf pk/a_1.txz . && tar -C t -cjf pk/b_1.tbz2 . && tar -C t --lzma -cf pk/c_1.tar.lzma .\n"
		   "tar -C t -czf pk/d_1.tgz . && echo notes > pk/README.txt",
		   f->dir),
		0);
	char dir[128];
	snprintf(dir, sizeof(dir), "%s/pk", f->dir);
	char **paths = NULL;
	size_t n = 0;
	struct eq_error e;
	assert_int_equal(eq_gen_list_packages(dir, &paths, &n, &e), EQ_OK);
	const char *want[] = {"a_1.txz", "b_1.tbz2", "c_1.tar.lzma", "d_1.tgz"};
	if (n != 4)
		fail_msg("listed %zu package files, expected 4 (.txz .tbz2 .tar.lzma .tgz)", n);
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(paths[i], '/');
		assert_string_equal(base ? base + 1 : paths[i], want[i]);
		struct eq_pkg *p = read_pkg(paths[i]);
		assert_int_equal(eq_payload_builder_count(eq_pkg_get_builder(p)), 4);
		eq_pkg_free(p);
		eq_free(paths[i]);
	}
	eq_free(paths);
}

static void cpio_entry(struct archive *a, const char *path, unsigned type, unsigned mode, long ino, unsigned nlink,
		       const char *data)
{
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, mode);
	archive_entry_set_ino(e, ino);
	archive_entry_set_nlink(e, nlink);
	archive_entry_set_size(e, data ? (la_int64_t)strlen(data) : 0);
	if (type == AE_IFLNK) {
		archive_entry_set_symlink(e, data);
		archive_entry_set_size(e, 0);
		data = NULL;
	}
	assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
	if (data && *data)
		assert_int_equal(archive_write_data(a, data, strlen(data)), (la_ssize_t)strlen(data));
	archive_entry_free(e);
}

/* A minimal RPM: lead, empty signature and main headers, gzipped newc cpio
 * whose hard-link pair keeps its data on the last member (cpio style). */
static void test_rpm(void **state)
{
	struct fx *f = *state;
	static uint8_t buf[1 << 16];
	size_t used = 0;
	memset(buf, 0, 96 + 32);
	static const uint8_t lead_magic[] = {0xed, 0xab, 0xee, 0xdb, 3, 0};
	memcpy(buf, lead_magic, sizeof(lead_magic));
	buf[79] = 5; /* signature type: header-style */
	static const uint8_t hdr[] = {0x8e, 0xad, 0xe8, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	memcpy(buf + 96, hdr, 16);
	memcpy(buf + 112, hdr, 16);
	struct archive *a = archive_write_new();
	assert_int_equal(archive_write_set_format_cpio_newc(a), ARCHIVE_OK);
	assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_memory(a, buf + 128, sizeof(buf) - 128, &used), ARCHIVE_OK);
	cpio_entry(a, "./usr", AE_IFDIR, 0755, 1, 2, NULL);
	cpio_entry(a, "./usr/bin", AE_IFDIR, 0755, 2, 2, NULL);
	cpio_entry(a, "./usr/bin/a-link", AE_IFREG, 0755, 42, 2, "");
	cpio_entry(a, "./usr/bin/z-tool", AE_IFREG, 0755, 42, 2, "tool data\n");
	cpio_entry(a, "./usr/bin/sym", AE_IFLNK, 0777, 43, 1, "z-tool");
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	char path[128];
	snprintf(path, sizeof(path), "%s/eqtool-1.2-3.x86_64.rpm", f->dir);
	struct eq_error e;
	assert_int_equal(eq_file_replace_atomic(path, buf, 128 + used, 0644, &e), EQ_OK);

	struct eq_pkg *p = read_pkg(path);
	const struct eq_pkg_info *i = eq_pkg_get_info(p);
	assert_int_equal(i->format, EQ_PKG_RPM);
	assert_string_equal(i->name, "eqtool");
	assert_string_equal(i->version, "1.2-3");
	assert_string_equal(i->arch, "x86_64");
	char out[128];
	snprintf(out, sizeof(out), "%s/payload.tar", f->dir);
	int fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
	uint8_t sha[32];
	uint64_t size;
	assert_int_equal(eq_pkg_write_payload(p, eq_fd_write, &fd, sha, &size, &e), EQ_OK);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	struct eq_payload_reader *r = NULL;
	assert_int_equal(eq_payload_reader_new(eq_fd_read, &fd, NULL, &r, &e), EQ_OK);
	int seen = 0;
	const struct eq_payload_entry *en;
	while (eq_payload_reader_next(r, &en, &e) == EQ_OK && en) {
		if (strcmp(en->path, "usr/bin/a-link") == 0) {
			/* The smallest path of the group holds the data. */
			assert_int_equal(en->type, EQ_ENTRY_FILE);
			assert_int_equal(en->size, 10);
			seen |= 1;
		} else if (strcmp(en->path, "usr/bin/z-tool") == 0) {
			assert_int_equal(en->type, EQ_ENTRY_HARDLINK);
			assert_string_equal(en->link, "usr/bin/a-link");
			seen |= 2;
		}
	}
	assert_int_equal(seen, 3);
	eq_payload_reader_free(r);
	close(fd);
	eq_pkg_free(p);
}

static void expect_fail(const char *path, eq_err code)
{
	struct eq_pkg *p = NULL;
	struct eq_error e;
	eq_error_clear(&e);
	eq_err r = eq_pkg_read(path, NULL, &p, &e);
	eq_pkg_free(p);
	if (r != code)
		fail_msg("%s: got %s (%s), want %s", path, eq_err_str(r), e.msg, eq_err_str(code));
	if (!strstr(e.msg, path))
		fail_msg("message '%s' does not name %s", e.msg, path);
}

static void test_broken(void **state)
{
	struct fx *f = *state;
	char tree[128], path[160];
	snprintf(tree, sizeof(tree), "%s/tree", f->dir);
	make_tree(tree, "broken");
	make_deb(f->dir, "tree", "good", "xz");
	assert_int_equal(sh("cd %s; sz=$(stat -c %%s good.deb)\n"
			    "head -c $((sz / 2)) good.deb > half.deb\n"
			    "head -c $((sz - 40)) good.deb > short.deb\n"
			    "head -c 200 /dev/urandom > junk.deb\n: > empty.deb\n"
			    "cp good.deb flipped.deb; printf 'XXXXXXXXXXXXXXXX' | "
			    "dd of=flipped.deb bs=1 seek=$((sz - 300)) conv=notrunc 2>/dev/null\n"
			    "ar x good.deb; ar rc nodata.deb debian-binary control.tar.*",
			    f->dir),
			 0);
	static const struct {
		const char *name;
		eq_err code;
	} cases[] = {
		{"half.deb", EQ_ERR_PARSE},       {"short.deb", EQ_ERR_PARSE},   {"junk.deb", EQ_ERR_PARSE},
		{"empty.deb", EQ_ERR_PARSE},      {"flipped.deb", EQ_ERR_PARSE}, {"nodata.deb", EQ_ERR_NOTFOUND},
		{"missing.deb", EQ_ERR_NOTFOUND},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		snprintf(path, sizeof(path), "%s/%s", f->dir, cases[k].name);
		expect_fail(path, cases[k].code);
	}
}

static void test_default_taskhash(void **state)
{
	struct fx *f = *state;
	/* The documented serialisation. */
	struct eq_pkg_info info = {.name = "a", .version = "1", .arch = "all", .depends = NULL};
	uint8_t payload[32];
	char payload_hex[65], got[65], want[65];
	eq_sha256("x", 1, payload);
	eq_hex_encode(payload, 32, payload_hex);
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "eqota-taskhash-v1%c%s%c%s%c%s%c%c%s", 0, "a", 0, "1", 0, "all", 0, 0,
			 payload_hex);
	uint8_t d[32];
	eq_sha256(buf, (size_t)n, d);
	eq_hex_encode(d, 32, want);
	eq_pkg_default_taskhash(&info, payload, got);
	assert_string_equal(got, want);

	/* Same name and version, other content: new taskhash, new unihash. */
	char t1[128], t2[128], path[160], db[160];
	snprintf(t1, sizeof(t1), "%s/t1", f->dir);
	snprintf(t2, sizeof(t2), "%s/t2", f->dir);
	make_tree(t1, "old");
	make_tree(t2, "new");
	make_deb(f->dir, "t1", "one", "xz");
	make_deb(f->dir, "t2", "two", "gzip");
	snprintf(db, sizeof(db), "%s/equiv.db", f->dir);
	struct eq_store *s = NULL;
	struct eq_error e;
	assert_int_equal(eq_store_open(db, &s, &e), EQ_OK);
	char th[2][65], uh[2][65], oh[65];
	static const char *const names[] = {"one.deb", "two.deb"};
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/%s", f->dir, names[k]);
		struct eq_pkg *p = read_pkg(path);
		uint8_t sha[32];
		pkg_sha(p, sha);
		eq_pkg_default_taskhash(eq_pkg_get_info(p), sha, th[k]);
		eq_hex_encode(sha, 32, oh);
		assert_int_equal(eq_store_report(s, EQ_PAYLOAD_METHOD, th[k], oh, NULL, eq_pkg_get_info(p)->name,
						 eq_pkg_get_info(p)->version, uh[k], NULL, &e),
				 EQ_OK);
		eq_pkg_free(p);
	}
	assert_string_not_equal(th[0], th[1]);
	assert_string_not_equal(uh[0], uh[1]);
	eq_store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_deb, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ipk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tarball, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_suffixes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rpm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_taskhash, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
