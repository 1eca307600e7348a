/*
 * Fuzz target for the root and timestamp documents (the files a device in
 * root mode parses after checking their signatures, and a publisher parses
 * from its repository): every input goes to both parsers. What is accepted
 * must write back (eq_root_to_json, eq_timestamp_to_json) to bytes that
 * parse to the same document and write identically again.
 *
 * Built with EQ_LIBFUZZER for libFuzzer; otherwise the replay main runs the
 * corpus as a ctest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <eq/manifest.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_trust: invariant broken: %s\n", what);
		abort();
	}
}

static void write_root(const struct eq_root *root, uint8_t **ret, size_t *ret_len)
{
	struct eq_root_info info;
	eq_root_get_info(root, &info);
	const struct eq_manifest_trust *roles[EQ_ROLE_COUNT];
	for (int i = 0; i < EQ_ROLE_COUNT; i++)
		roles[i] = eq_root_role(root, (enum eq_role)i);
	struct eq_error e;
	check(eq_root_to_json(&info, roles, ret, ret_len, &e) == EQ_OK, "root to_json of a parsed root");
}

static void fuzz_root(const uint8_t *data, size_t size)
{
	struct eq_error e;
	struct eq_root *root = NULL, *again = NULL;
	if (eq_root_parse_unverified(data, size, &root, &e) != EQ_OK)
		return;
	uint8_t *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	write_root(root, &a, &alen);
	check(eq_root_parse_unverified(a, alen, &again, &e) == EQ_OK, "re-parse of a written root");
	write_root(again, &b, &blen);
	check(alen == blen && memcmp(a, b, alen) == 0, "root round trip gives identical bytes");
	eq_free(a);
	eq_free(b);
	eq_root_free(root);
	eq_root_free(again);
}

static void fuzz_timestamp(const uint8_t *data, size_t size)
{
	struct eq_error e;
	struct eq_timestamp ts, again;
	if (eq_timestamp_parse_unverified(data, size, &ts, &e) != EQ_OK)
		return;
	uint8_t *a = NULL;
	size_t alen = 0;
	check(eq_timestamp_to_json(&ts, &a, &alen, &e) == EQ_OK, "timestamp to_json of a parsed timestamp");
	check(eq_timestamp_parse_unverified(a, alen, &again, &e) == EQ_OK, "re-parse of a written timestamp");
	/* field by field: struct padding is not part of the document */
	check(ts.version == again.version && ts.issued == again.issued && ts.expires == again.expires &&
		      ts.number == again.number && ts.size == again.size && !strcmp(ts.board, again.board) &&
		      !strcmp(ts.channel, again.channel) && !strcmp(ts.sha256, again.sha256) &&
		      ts.rollout.present == again.rollout.present && ts.rollout.percent == again.rollout.percent &&
		      ts.rollout.halted == again.rollout.halted,
	      "timestamp round trip gives the same fields");
	eq_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_root(data, size);
	fuzz_timestamp(data, size);
	return 0;
}
