/*
 * Fuzz target for the publisher's path owners file (eq_path_table_new()
 * with --path-owners FILE), then the rules applied to a small payload and
 * checked. Invariants: a failure carries its code and names the file; a
 * table holds at most EQ_PATH_RULES_MAX rules; applying and checking end in
 * EQ_OK or EQ_ERR_STATE (a rule that leaves a path to nobody), never
 * anything else.
 *
 * Built with EQ_LIBFUZZER for libFuzzer; otherwise a replay main runs every
 * file in the directories (or files) named on the command line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <eq/gen_conflict.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_path_owners: invariant broken: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("owners", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct eq_path_table *t = NULL;
	struct eq_error e;
	eq_error_clear(&e);
	eq_err r = eq_path_table_new(NULL, 0, path, &t, &e);
	close(fd);
	if (r != EQ_OK) {
		check(r < EQ_ERR__COUNT && e.code == r, "error code recorded");
		check(strstr(e.msg, path) != NULL || r == EQ_ERR_NOMEM, "message names the file");
		return 0;
	}
	check(eq_path_table_rule_count(t) <= EQ_PATH_RULES_MAX, "rule cap");
	/* Two packages sharing bin/busybox: the rules decide who keeps it. */
	static const char *const names[] = {"busybox", "busybox-static"};
	for (int i = 0; i < 2 && !r; i++) {
		struct eq_payload_builder *b = NULL;
		r = eq_payload_builder_new(NULL, &b, &e);
		struct eq_payload_entry ents[] = {
			{.path = "bin", .type = EQ_ENTRY_DIR, .mode = 0755},
			{.path = "bin/busybox", .type = EQ_ENTRY_SYMLINK, .mode = 0777, .link = names[i]},
			{.path = "usr/share/doc/busybox", .type = EQ_ENTRY_DIR, .mode = 0755},
		};
		for (size_t k = 0; k < 3 && !r; k++)
			r = eq_payload_builder_add(b, &ents[k], -1, 0, &e);
		size_t removed = 0;
		if (!r)
			r = eq_path_table_apply(t, names[i], b, &removed, &e);
		check(r != EQ_OK || removed <= 3, "removed count");
		check(r != EQ_OK || eq_payload_builder_count(b) == 3 - removed, "builder count");
		/* What is left goes into the table as the published payload would. */
		for (size_t k = 0; k < 3 && !r; k++) {
			bool gone = false;
			/* eq_payload_builder_remove() of a missing path is a no-op:
			 * it tells whether the rules left the entry in. */
			r = eq_payload_builder_remove(b, ents[k].path, &gone, &e);
			if (!r && gone)
				r = eq_path_table_add_entry(t, names[i], "/pool/x.deb", &ents[k], NULL, &e);
		}
		char th[EQ_SHA256_HEX_LEN + 1];
		memset(th, 'a', EQ_SHA256_HEX_LEN);
		th[EQ_SHA256_HEX_LEN] = '\0';
		if (!r)
			r = eq_path_table_taskhash(t, names[i], th, &e);
		check(r != EQ_OK || eq_is_sha256_hex(th), "taskhash stays 64 hex digits");
		eq_payload_builder_free(b);
	}
	if (!r) {
		r = eq_path_table_check(t, NULL, NULL, &e);
		check(r == EQ_OK || r == EQ_ERR_STATE || r == EQ_ERR_NOMEM, "check result");
	}
	eq_path_table_free(t);
	return 0;
}
