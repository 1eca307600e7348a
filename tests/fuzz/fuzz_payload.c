/*
 * Fuzz target for the payload reader and safe extract: the bytes are read
 * entry by entry, then extracted into a fresh temporary directory; when
 * that succeeds, the payload of the extracted tree must survive a second
 * extract-and-rebuild byte for byte (the canonical form is a fixed point).
 *
 * Built for libFuzzer with EQ_LIBFUZZER, else with a replay main that runs
 * every file of the directories (or files) named on the command line.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/delta.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small caps keep each run fast; the parser paths are the same. */
static const struct eq_payload_limits LIMITS = {
	.max_entries = 2000,
	.max_path = 1024,
	.max_file_size = 1u << 20,
	.max_total = 4u << 20,
	.max_xattr_size = 4096,
	.max_xattrs = 16,
};

struct mem {
	const uint8_t *d;
	size_t len, pos;
};

static eq_err mem_read(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	(void)err;
	struct mem *m = ctx;
	size_t n = m->len - m->pos < len ? m->len - m->pos : len;
	memcpy(buf, m->d + m->pos, n);
	m->pos += n;
	*ret_n = n;
	return EQ_OK;
}

static eq_err buf_sink(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	return eq_buf_append(ctx, data, len, err);
}

static void read_all(const uint8_t *data, size_t size)
{
	struct mem m = {data, size, 0};
	struct eq_payload_reader *r = NULL;
	struct eq_error e;
	if (eq_payload_reader_new(mem_read, &m, &LIMITS, &r, &e))
		return;
	uint8_t buf[4096];
	for (int i = 0;; i++) {
		const struct eq_payload_entry *ent;
		if (eq_payload_reader_next(r, &ent, &e) || !ent)
			break;
		size_t n = 1;
		/* Every other file is read, the rest skipped by next(). */
		while ((i & 1) && n && !eq_payload_reader_read(r, buf, sizeof(buf), &n, &e))
			;
	}
	eq_payload_reader_free(r);
}

static bool build(const char *dir, struct eq_buf *out)
{
	struct eq_payload_builder *b = NULL;
	struct eq_error e;
	uint8_t sha[EQ_SHA256_LEN];
	uint64_t n;
	eq_buf_init(out, 64u << 20);
	bool ok = !eq_payload_builder_new(&LIMITS, &b, &e) && !eq_payload_builder_add_tree(b, dir, &e) &&
		  !eq_payload_builder_write(b, buf_sink, out, sha, &n, &e);
	eq_payload_builder_free(b);
	return ok;
}

/* Best effort: gcc's warn_unused_result ignores a (void) cast. */
static void rm_tree(const char *dir)
{
	struct eq_error e;
	eq_err r = eq_rm_rf(dir, &e);
	(void)r;
}

static void extract_round_trip(const uint8_t *data, size_t size)
{
	/* tmpfs where there is one: extract fsyncs what it writes. */
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	char d1[64], d2[64];
	snprintf(d1, sizeof(d1), "%s/eq-fuzz-payload.XXXXXX", base);
	snprintf(d2, sizeof(d2), "%s/eq-fuzz-payload.XXXXXX", base);
	struct eq_error e;
	if (!mkdtemp(d1))
		return;
	if (!mkdtemp(d2)) {
		rm_tree(d1);
		return;
	}
	unsigned flags = geteuid() == 0 ? EQ_EXTRACT_OWNERS : 0;
	struct mem m = {data, size, 0};
	struct eq_buf p1, p2;
	eq_buf_init(&p1, 1);
	eq_buf_init(&p2, 1);
	if (!eq_payload_extract(mem_read, &m, d1, &LIMITS, flags, NULL, &e) && build(d1, &p1)) {
		struct mem m2 = {p1.data, p1.len, 0};
		if (eq_payload_extract(mem_read, &m2, d2, &LIMITS, flags, NULL, &e) || !build(d2, &p2) ||
		    p1.len != p2.len || memcmp(p1.data, p2.data, p1.len)) {
			fprintf(stderr, "fuzz_payload: canonical payload did not round trip: %s\n", eq_error_msg(&e));
			abort();
		}
	}
	eq_buf_done(&p1);
	eq_buf_done(&p2);
	rm_tree(d1);
	rm_tree(d2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	read_all(data, size);
	extract_round_trip(data, size);
	return 0;
}
