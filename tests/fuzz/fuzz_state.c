/*
 * Fuzz target for the agent's state file (eq_state_load): the file is
 * rewritten at every phase change and a power cut can leave anything a
 * filesystem can leave. The bytes go to a temporary file; a state that
 * loads must save and load back to the same state (changed_at aside:
 * eq_state_save() stamps the time of saving).
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main (which
 * also replays tests/data/bad/state).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/agent.h>

#include "../../agent/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], in_path[96], out_path[96];

static void cleanup(void)
{
	unlink(in_path);
	unlink(out_path);
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

static bool same(const struct eq_state *a, const struct eq_state *b)
{
	return a->phase == b->phase && a->target_slot == b->target_slot && a->from_slot == b->from_slot &&
	       a->target_number == b->target_number && strcmp(a->target_release, b->target_release) == 0 &&
	       a->failed_number == b->failed_number && strcmp(a->failed_reason, b->failed_reason) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct eq_error e;
	if (size > (1u << 20))
		return 0;
	if (!dir[0]) {
		/* tmpfs where there is one: the code under test fsyncs. */
		snprintf(dir, sizeof(dir), "%s/eq-fuzz-state.XXXXXX",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
		if (!mkdtemp(dir))
			abort();
		snprintf(in_path, sizeof(in_path), "%s/state", dir);
		snprintf(out_path, sizeof(out_path), "%s/state.out", dir);
		atexit(cleanup);
	}
	put(in_path, data, size);
	struct eq_state s, back;
	eq_state_init(&s);
	if (eq_state_load(in_path, &s, &e) != EQ_OK)
		return 0;
	eq_state_init(&back);
	if (eq_state_save(out_path, &s, &e) != EQ_OK || eq_state_load(out_path, &back, &e) != EQ_OK) {
		fprintf(stderr, "fuzz_state: a loaded state did not save and load back: %s\n", eq_error_msg(&e));
		abort();
	}
	if (!same(&s, &back))
		abort();
	return 0;
}
