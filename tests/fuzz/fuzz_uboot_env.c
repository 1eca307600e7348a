/*
 * Fuzz target for the U-Boot environment as the "uboot" backend reads it
 * (libubootenv's reader, then eqota's parsing and validation of the boot
 * variables in bl.c), and the transitions written back to it.
 *
 * Input: [0] flags, then the copies' contents after their CRC:
 *   bit 0  redundant environment (two copies in two files), else one copy
 *   bit 1  leave the CRC of copy 0 wrong (the other copy must be used)
 *   bit 2  after a successful read, mark the picked slot good and try the
 *          other once (both writes, then a read back must succeed)
 * The rest is split in halves for two copies; each is a flags byte (two
 * copies only) and the variables ("NAME=value\0...\0\0"), zero-padded to
 * ENV_SIZE. The harness computes each CRC, so the mutations reach the
 * variable parsing instead of stopping at a checksum.
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/bootloader.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ENV_SIZE 0x1000u

static char dir[64], cfg1[96], cfg2[96], dev[2][96];

static void cleanup(void)
{
	unlink(cfg1);
	unlink(cfg2);
	unlink(dev[0]);
	unlink(dev[1]);
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

static void setup(void)
{
	/* tmpfs where there is one: the code under test fsyncs. */
	snprintf(dir, sizeof(dir), "%s/eq-fuzz-uboot.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir))
		abort();
	for (int i = 0; i < 2; i++)
		snprintf(dev[i], sizeof(dev[i]), "%s/env%d", dir, i);
	snprintf(cfg1, sizeof(cfg1), "%s/one.config", dir);
	snprintf(cfg2, sizeof(cfg2), "%s/two.config", dir);
	char text[512];
	int n = snprintf(text, sizeof(text), "%s 0x0 0x%x\n", dev[0], ENV_SIZE);
	put(cfg1, text, (size_t)n);
	n = snprintf(text, sizeof(text), "%s 0x0 0x%x\n%s 0x0 0x%x\n", dev[0], ENV_SIZE, dev[1], ENV_SIZE);
	put(cfg2, text, (size_t)n);
	atexit(cleanup);
}

static void write_copy(const char *path, const uint8_t *d, size_t n, bool redundant, bool bad_crc)
{
	static uint8_t img[ENV_SIZE];
	size_t hdr = redundant ? 5 : 4;
	memset(img, 0, sizeof(img));
	if (redundant && n) {
		img[4] = d[0];
		d++;
		n--;
	}
	memcpy(img + hdr, d, n < ENV_SIZE - hdr ? n : ENV_SIZE - hdr);
	uint32_t c = eq_crc32(img + hdr, ENV_SIZE - hdr) ^ (bad_crc ? 1u : 0u);
	for (int i = 0; i < 4; i++)
		img[i] = (uint8_t)(c >> (8 * i));
	put(path, img, sizeof(img));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > 4 * ENV_SIZE)
		return 0;
	if (!dir[0])
		setup();
	bool redundant = data[0] & 1u;
	const uint8_t *rest = data + 1;
	size_t n = size - 1, half = redundant ? n / 2 : n;
	write_copy(dev[0], rest, half, redundant, data[0] & 2u);
	if (redundant)
		write_copy(dev[1], rest + half, n - half, true, false);
	struct eq_bl_config cfg = {.backend = "uboot", .path = redundant ? cfg2 : cfg1};
	struct eq_bl *bl = NULL;
	struct eq_error e;
	if (eq_bl_open(&cfg, &bl, &e) != EQ_OK) {
		fprintf(stderr, "fuzz_uboot_env: cannot open the fixed config: %s\n", eq_error_msg(&e));
		abort();
	}
	struct eq_bl_state st;
	eq_bl_state_init(&st);
	if (eq_bl_get_state(bl, &st, &e) == EQ_OK && (data[0] & 4u)) {
		int slot = eq_bl_state_pick(&st);
		if (slot >= 0 && eq_bl_mark_good(bl, (unsigned)slot, &e) == EQ_OK &&
		    eq_bl_try_once(bl, 1u - (unsigned)slot, &e) == EQ_OK && eq_bl_get_state(bl, &st, &e) != EQ_OK) {
			fprintf(stderr, "fuzz_uboot_env: the environment eqota wrote does not read back: %s\n",
				eq_error_msg(&e));
			abort();
		}
	}
	eq_bl_close(bl);
	return 0;
}
