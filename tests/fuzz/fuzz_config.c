/*
 * Fuzz target for the agent's config parser (eq_config_parse). Invariants:
 * a failure carries a message naming the input, and a success holds every
 * required key with values inside their documented ranges.
 *
 * Built with EQ_LIBFUZZER for libFuzzer; otherwise a replay main runs every
 * file in the directories (or files) named on the command line, so gcc CI
 * runs the corpus as a ctest.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <eq/agent.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed invariant in a harness must stop the fuzzer loudly. */
static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_config: invariant broken: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct eq_config c;
	struct eq_error e;
	eq_error_clear(&e);
	eq_err r = eq_config_parse("fuzz.conf", (const char *)data, size, &c, &e);
	if (r != EQ_OK) {
		check(r < EQ_ERR__COUNT && e.code == r, "error code recorded");
		check(strncmp(e.msg, "fuzz.conf", 9) == 0, "message names the file");
		return 0;
	}
	check(c.url && c.board && c.channel && c.slot_a && c.slot_b && c.bl_backend, "required keys set");
	check((c.root != NULL) + (c.key != NULL) + (c.trust != NULL) == 1, "exactly one of root, key and trust");
	check(c.mkfs && c.cmdline && c.data_dir, "defaults set");
	check(c.connect_timeout_s >= 1 && c.connect_timeout_s <= 600, "connect-timeout range");
	check(c.low_speed_time_s >= 1 && c.low_speed_time_s <= 3600, "low-speed-time range");
	check(c.retries <= 20, "retries range");
	check(c.retry_delay_ms >= 10 && c.retry_delay_ms <= 600000, "retry-delay-ms range");
	check(c.health_timeout_s >= 1 && c.health_timeout_s <= 86400, "health timeout range");
	check(c.poll_interval_s >= 60 && c.poll_interval_s <= 604800, "interval range");
	check(c.poll_jitter_s <= 86400, "jitter range");
	check(c.n_checks <= EQ_CONFIG_MAX_CHECKS, "check count");
	check(strcmp(c.slot_a, c.slot_b) != 0, "slots differ");
	eq_config_done(&c);
	return 0;
}
