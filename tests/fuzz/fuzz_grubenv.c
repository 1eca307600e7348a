/*
 * Fuzz target for the "grub" backend's reading of its two GRUB environment
 * blocks (PATH and PATH.2, on a FAT partition a power cut can tear), the
 * parsing and validation of the boot variables in bl.c, and the
 * transitions written back to them.
 *
 * Input: [0] flags, then the copies' bytes:
 *   bit 0  a second copy exists (the rest is split at [1] * size / 256)
 *   bit 1  after a successful read, mark the picked slot good and try the
 *          other once (both writes, then a read back must succeed)
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/bootloader.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], path1[96], path2[96];

static void cleanup(void)
{
	unlink(path1);
	unlink(path2);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2 || size > 8192)
		return 0;
	if (!dir[0]) {
		/* tmpfs where there is one: the code under test fsyncs. */
		snprintf(dir, sizeof(dir), "%s/eq-fuzz-grubenv.XXXXXX",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
		if (!mkdtemp(dir))
			abort();
		snprintf(path1, sizeof(path1), "%s/grubenv", dir);
		snprintf(path2, sizeof(path2), "%s/grubenv.2", dir);
		atexit(cleanup);
	}
	const uint8_t *rest = data + 2;
	size_t n = size - 2, split = (data[0] & 1u) ? data[1] * n / 256 : n;
	put(path1, rest, split);
	if (data[0] & 1u)
		put(path2, rest + split, n - split);
	else
		unlink(path2);
	struct eq_bl_config cfg = {.backend = "grub", .path = path1};
	struct eq_bl *bl = NULL;
	struct eq_error e;
	if (eq_bl_open(&cfg, &bl, &e) != EQ_OK) {
		fprintf(stderr, "fuzz_grubenv: cannot open: %s\n", eq_error_msg(&e));
		abort();
	}
	struct eq_bl_state st;
	eq_bl_state_init(&st);
	if (eq_bl_get_state(bl, &st, &e) == EQ_OK && (data[0] & 2u)) {
		int slot = eq_bl_state_pick(&st);
		if (slot >= 0 && eq_bl_mark_good(bl, (unsigned)slot, &e) == EQ_OK &&
		    eq_bl_try_once(bl, 1u - (unsigned)slot, &e) == EQ_OK && eq_bl_get_state(bl, &st, &e) != EQ_OK) {
			fprintf(stderr, "fuzz_grubenv: the blocks eqota wrote do not read back: %s\n",
				eq_error_msg(&e));
			abort();
		}
	}
	eq_bl_close(bl);
	return 0;
}
