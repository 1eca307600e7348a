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
	check((c.key != NULL) != (c.trust != NULL), "exactly one of key and trust");
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

#ifndef EQ_LIBFUZZER
static int run_file(const char *path, unsigned long *count)
{
	uint8_t *data = NULL;
	size_t len = 0;
	struct eq_error e;
	/* a little over the cap, so the cap itself is exercised */
	if (eq_file_read_all(path, EQ_CONFIG_MAX_BYTES + 1024, &data, &len, &e) != EQ_OK) {
		fprintf(stderr, "fuzz_config: %s\n", e.msg);
		return 1;
	}
	LLVMFuzzerTestOneInput(data, len);
	eq_free(data);
	(*count)++;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long count = 0;
	int failed = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "fuzz_config: cannot stat %s\n", argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			failed |= run_file(argv[i], &count);
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			fprintf(stderr, "fuzz_config: cannot open %s\n", argv[i]);
			return 1;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			char path[4096];
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			failed |= run_file(path, &count);
		}
		closedir(d);
	}
	printf("fuzz_config: ran %lu inputs\n", count);
	return failed || count == 0;
}
#endif
