/*
 * Unit tests for the agent's update policy (agent/policy.c): the hold file,
 * the device id, and the staged rollout's choice of devices over a
 * simulated fleet of 1,000 device ids: the share chosen at 1, 10 and 50 %
 * within binomial bounds for each of several releases, the first percent
 * inside the first ten, and the choices of two releases independent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/agent.h>

#include "../../agent/policy.h"

#define FLEET 1000

static char dir[64];
static char path[128];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/eq-test-policy-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/f", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return rmdir(dir) == 0 ? 0 : -1;
}

static void put(const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void test_hold_file(void **state)
{
	(void)state;
	struct eq_error e;
	int64_t until = -1;
	unlink(path);
	assert_int_equal(eq_hold_load(path, &until, &e), EQ_OK);
	assert_int_equal(until, 0);
	assert_int_equal(eq_hold_save(path, 1798761600, &e), EQ_OK);
	assert_int_equal(eq_hold_load(path, &until, &e), EQ_OK);
	assert_int_equal(until, 1798761600);
	assert_int_equal(eq_hold_save(path, 0, &e), EQ_OK);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(eq_hold_save(path, 0, &e), EQ_OK); /* removing none is fine */
	static const char *const bad[] = {
		"",
		"until=\n",
		"until=12",
		"until=012\n",
		"until=-5\n",
		"until=12a\n",
		"until=1798761600\nuntil=1\n",
		"hold=1798761600\n",
		"until=999999999999999\n",
		"until=253402300800\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(bad[i], strlen(bad[i]));
		until = -1;
		eq_err r = eq_hold_load(path, &until, &e);
		if (r != EQ_ERR_PARSE || !strstr(e.msg, path) || until != -1)
			fail_msg("case %zu: %s '%s'", i, eq_err_str(r), e.msg);
	}
	put("until=1\0\n", 9);
	assert_int_equal(eq_hold_load(path, &until, &e), EQ_ERR_PARSE);
	assert_int_equal(eq_hold_save(path, INT64_C(253402300800), &e), EQ_ERR_INVAL);
}

static void test_device_id(void **state)
{
	(void)state;
	struct eq_error e;
	char id[EQ_DEVICE_ID_MAX + 1];
	put("4c4c4544004d3510804ab4c04f4b3732\n", 33);
	assert_int_equal(eq_device_id_read(path, id, &e), EQ_OK);
	assert_string_equal(id, "4c4c4544004d3510804ab4c04f4b3732");
	put("  serial-0042\r\n\n", 16);
	assert_int_equal(eq_device_id_read(path, id, &e), EQ_OK);
	assert_string_equal(id, "serial-0042");
	static const char *const bad[] = {"", "\n", "two words\n", "tab\there\n", "\x01x\n", "caf\xc3\xa9\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(bad[i], strlen(bad[i]));
		eq_err r = eq_device_id_read(path, id, &e);
		if (r != EQ_ERR_PARSE || !strstr(e.msg, path))
			fail_msg("case %zu: %s '%s'", i, eq_err_str(r), e.msg);
	}
	char longid[EQ_DEVICE_ID_MAX + 2];
	memset(longid, 'a', sizeof(longid));
	put(longid, EQ_DEVICE_ID_MAX);
	assert_int_equal(eq_device_id_read(path, id, &e), EQ_OK);
	put(longid, EQ_DEVICE_ID_MAX + 1);
	assert_int_equal(eq_device_id_read(path, id, &e), EQ_ERR_PARSE);
	unlink(path);
	assert_int_equal(eq_device_id_read(path, id, &e), EQ_ERR_NOTFOUND);
	assert_non_null(strstr(e.msg, path));
}

/* Ids shaped like machine-id(5): 32 hex digits, from SHA-256 of the index. */
static void fleet_id(unsigned i, char out[33])
{
	uint8_t h[EQ_SHA256_LEN];
	char seed[32];
	snprintf(seed, sizeof(seed), "device-%u", i);
	eq_sha256(seed, strlen(seed), h);
	eq_hex_encode(h, 16, out);
}

/* Within 4.5 standard deviations of n*p: a fixed fleet fails this only if
 * the hash is biased (the chance for a fair one is below 1e-5). */
static void expect_binomial(unsigned got, unsigned n, double p, const char *what)
{
	double mean = n * p, sd = sqrt(n * p * (1 - p));
	double lo = mean - 4.5 * sd, hi = mean + 4.5 * sd;
	if (got < lo || got > hi || (p > 0 && got == 0))
		fail_msg("%s: %u of %u, expected %.1f (%.1f..%.1f)", what, got, n, mean, lo, hi);
	printf("%s: %u of %u (expected %.1f)\n", what, got, n, mean);
}

static void test_rollout_fleet(void **state)
{
	(void)state;
	static const unsigned percents[] = {1, 10, 50};
	static unsigned bucket[4][FLEET];
	char id[33];
	for (uint64_t rel = 1; rel <= 4; rel++) {
		unsigned count[3] = {0};
		for (unsigned i = 0; i < FLEET; i++) {
			fleet_id(i, id);
			unsigned b = eq_rollout_bucket(id, "qemuarm64", "stable", rel);
			assert_true(b < EQ_ROLLOUT_BUCKETS);
			/* stable: the same answer at every poll */
			assert_int_equal(b, eq_rollout_bucket(id, "qemuarm64", "stable", rel));
			bucket[rel - 1][i] = b;
			bool in[3];
			for (int k = 0; k < 3; k++) {
				in[k] = eq_rollout_selected(b, percents[k]);
				count[k] += in[k];
			}
			/* in at 1 % means in at 10 %, in at 10 % means in at 50 % */
			assert_true(!in[0] || in[1]);
			assert_true(!in[1] || in[2]);
			assert_false(eq_rollout_selected(b, 0));
			assert_true(eq_rollout_selected(b, 100));
		}
		for (int k = 0; k < 3; k++) {
			char what[64];
			snprintf(what, sizeof(what), "release %" PRIu64 " at %u %%", rel, percents[k]);
			expect_binomial(count[k], FLEET, percents[k] / 100.0, what);
		}
	}
	/* Independent between releases: the devices in release 1's first 10 %
	 * are in release 2's first 10 % as often as chance says (1 %), not
	 * always (the same devices would go first every time). */
	unsigned both = 0;
	for (unsigned i = 0; i < FLEET; i++)
		both += eq_rollout_selected(bucket[0][i], 10) && eq_rollout_selected(bucket[1][i], 10);
	expect_binomial(both, FLEET, 0.01, "in the first 10 % of releases 1 and 2");
	/* The channel and the board are part of the release's identity. */
	unsigned same = 0;
	for (unsigned i = 0; i < FLEET; i++) {
		fleet_id(i, id);
		same += eq_rollout_bucket(id, "qemuarm64", "testing", 1) == bucket[0][i];
	}
	assert_true(same < 10);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hold_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_id, setup, teardown),
		cmocka_unit_test(test_rollout_fleet),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
