/*
 * The device's manifest-delta glue (private to eq_agent, and reached by
 * tests/fuzz/fuzz_manifest_delta.c): a channel's manifest.json as fetched
 * in its cheaper forms, a delta against the manifest this device cached
 * or the zstd-compressed manifest, rebuilt and checked against the hash
 * the timestamp (or the unsigned pointer of legacy mode) names.
 */
#ifndef EQ_AGENT_MANIFEST_UNPACK_H
#define EQ_AGENT_MANIFEST_UNPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>

enum eq_mpack_kind {
	EQ_MPACK_DELTA, /* manifest-deltas/<old sha256>-<new sha256>.delta */
	EQ_MPACK_ZST    /* manifest.json.zst */
};

/*
 * Rebuilds the manifest of SHA-256 @want and at most @max bytes from the
 * @len bytes of @body: with EQ_MPACK_DELTA a delta against the file
 * @ref_path (the cached manifest, at most EQ_MANIFEST_MAX_BYTES), with
 * EQ_MPACK_ZST a zstd frame (@ref_path unused). EQ_OK only when the result
 * hashes to @want: *ret (free with eq_free) and *ret_len are written then
 * and only then. Errors: EQ_ERR_VERIFY (another manifest, or a delta
 * from another reference), EQ_ERR_LIMIT (more than @max bytes, a larger
 * reference), EQ_ERR_PARSE (a damaged body), EQ_ERR_IO / EQ_ERR_NOTFOUND
 * (the reference), EQ_ERR_NOMEM; the caller then fetches the full manifest.
 */
eq_err eq_manifest_unpack(enum eq_mpack_kind kind, const char *ref_path, const uint8_t *body, size_t len, size_t max,
			  const uint8_t want[EQ_SHA256_LEN], uint8_t **ret, size_t *ret_len,
			  struct eq_error *err) EQ_MUST_CHECK;

#endif
