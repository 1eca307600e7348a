/*
 * Fuzz target for the publisher's package reader (eq_pkg_read: .deb, .ipk,
 * .rpm and tarballs through libarchive and our own ar/RPM/control-file
 * parsing), then the canonical payload it builds. Packages come from build
 * systems and third parties, so the reader must refuse what it cannot take
 * with an error, never crash or run away.
 *
 * Input: [0] % 4 picks the file name (the format is recognised from the
 * content; the name matters for .ipk and for the name/version of .rpm and
 * tarballs): pkg_1.0.deb, pkg_1.0.ipk, pkg-1.0-1.noarch.rpm,
 * pkg_1.0.tar.gz; the rest is the file. Small limits keep runs fast.
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/gen_package.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct eq_payload_limits LIMITS = {
	.max_entries = 2000,
	.max_path = 1024,
	.max_file_size = 1u << 20,
	.max_total = 4u << 20,
	.max_xattr_size = 4096,
	.max_xattrs = 16,
};

static const char *const NAMES[4] = {"pkg_1.0.deb", "pkg_1.0.ipk", "pkg-1.0-1.noarch.rpm", "pkg_1.0.tar.gz"};

static char dir[64], paths[4][128];

static void cleanup(void)
{
	for (int i = 0; i < 4; i++)
		unlink(paths[i]);
	rmdir(dir);
}

/* A plain write: eq_file_replace_atomic()'s fsyncs would cost most of the
 * run time. */
static void put(const char *path, const void *d, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	bool ok = !n || fwrite(d, 1, n, f) == n;
	if (fclose(f) != 0 || !ok)
		abort();
}

static eq_err count_sink(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	(void)data;
	(void)err;
	*(uint64_t *)ctx += len;
	return EQ_OK;
}

/*
 * libarchive allocates what a cpio header declares before it finds the
 * data missing (2.8 GB for a 401-byte .rpm, tests/fuzz/corpus/gen_package/
 * rpm-cpio-huge-alloc). Natively that is untouched virtual memory and the
 * read fails at once; under ASan the allocation and its release take
 * seconds and turn into fuzzing timeouts. Allocations over 1 GiB fail
 * instead, as on a build host with a memory limit: libarchive reports
 * ENOMEM and the reader an error. Read by ASan (gcc and clang) at startup.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1:max_allocation_size_mb=1024";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > (1u << 20))
		return 0;
	struct eq_error e;
	if (!dir[0]) {
		/* tmpfs where there is one: the code under test fsyncs. */
		snprintf(dir, sizeof(dir), "%s/eq-fuzz-pkg.XXXXXX",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
		if (!mkdtemp(dir))
			abort();
		for (int i = 0; i < 4; i++)
			snprintf(paths[i], sizeof(paths[i]), "%s/%s", dir, NAMES[i]);
		/* The spool file goes to $TMPDIR: keep it in our folder. */
		setenv("TMPDIR", dir, 1);
		atexit(cleanup);
	}
	const char *path = paths[data[0] % 4];
	put(path, data + 1, size - 1);
	struct eq_pkg *p = NULL;
	if (eq_pkg_read(path, &LIMITS, &p, &e) == EQ_OK) {
		const struct eq_pkg_info *i = eq_pkg_get_info(p);
		if (!i->name || !i->version || !i->arch || !i->depends)
			abort(); /* documented: never NULL after a successful read */
		uint8_t sha[EQ_SHA256_LEN];
		uint64_t n = 0, got = 0;
		if (eq_pkg_write_payload(p, count_sink, &got, sha, &n, &e) == EQ_OK && n != got)
			abort();
	}
	eq_pkg_free(p);
	unlink(path);
	return 0;
}
