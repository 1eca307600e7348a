/*
 * Fuzz target for the manifest parsers: every input goes to the manifest
 * JSON parser (with a write -> parse -> write round-trip check), to the
 * signature-file parser (as the signature over a fixed message, checked
 * against a fixed trusted key) and to the trust-file parser.
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

#include <eq/manifest.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The key behind tests/fuzz/corpus/manifest/sig-valid.json, which signs
 * the message below; the private half is not kept anywhere. */
static const char trust_json[] = "{\"format\":1,\"threshold\":1,\"keys\":[{\"keyid\":"
				 "\"65cfadc85c4bf8e6a18d5b055025fbbbd79af654ef1b63190b8a6efbd4b25733\",\"pem\":"
				 "\"-----BEGIN PUBLIC KEY-----\\n"
				 "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEFTTQFYIU/wXqq3y5kt78nEyzrSe1\\n"
				 "5K7bUOBuLWlCsvL1ICWos2Uym3IalAWnGxgLjJmUEGMyZnrSZTN8/w70EA==\\n"
				 "-----END PUBLIC KEY-----\\n\"}]}";
static const char message[] = "eqota fuzz";

/* A failed invariant in a harness must stop the fuzzer loudly. */
static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_manifest: invariant broken: %s\n", what);
		abort();
	}
}

static void fuzz_manifest(const uint8_t *data, size_t size)
{
	struct eq_error e;
	struct eq_manifest *m = NULL, *m2 = NULL;
	uint8_t *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	if (eq_manifest_parse_unverified(data, size, &m, &e) != EQ_OK)
		return;
	/* anything accepted must write, re-parse and write identically */
	eq_err r = eq_manifest_to_json(m, &a, &alen, &e);
	if (r != EQ_ERR_LIMIT) {
		check(r == EQ_OK, "to_json of a parsed manifest");
		check(eq_manifest_parse_unverified(a, alen, &m2, &e) == EQ_OK, "re-parse of written manifest");
		check(eq_manifest_to_json(m2, &b, &blen, &e) == EQ_OK, "second to_json");
		check(alen == blen && memcmp(a, b, alen) == 0, "round trip gives identical bytes");
	}
	eq_free(a);
	eq_free(b);
	eq_manifest_free(m);
	eq_manifest_free(m2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct eq_error e;
	struct eq_manifest_trust *trust = NULL, *t2 = NULL;
	fuzz_manifest(data, size);
	check(eq_manifest_trust_parse((const uint8_t *)trust_json, strlen(trust_json), &trust, &e) == EQ_OK,
	      "built-in trust file parses");
	eq_err vr = eq_manifest_verify((const uint8_t *)message, strlen(message), data, size, trust, &e);
	check(vr == EQ_OK || (vr < EQ_ERR__COUNT && e.code == vr && e.msg[0]), "verify fails with a message");
	eq_manifest_trust_free(trust);
	if (eq_manifest_trust_parse(data, size, &t2, &e) == EQ_OK) {
		uint8_t *out = NULL;
		size_t olen = 0;
		check(eq_manifest_trust_to_json(t2, &out, &olen, &e) == EQ_OK, "trust to_json");
		eq_free(out);
	}
	eq_manifest_trust_free(t2);
	return 0;
}
