/*
 * eq_gen, build index (gen_index.c): what the build says each package is.
 * Part of the eq_gen library (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_INDEX_H
#define EQ_GEN_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A build index names the taskhash of each package of a build, one
 * "PACKAGE TASKHASH" line each (fields separated by spaces or tabs; '#'
 * starts a comment line; blank lines and a final line without newline are
 * fine; CRLF is accepted). PACKAGE is 1..255 bytes of printable ASCII
 * without '#' at its start; TASKHASH is 64 lower-case hex digits. A package
 * may appear once. At most EQ_BUILD_INDEX_MAX_BYTES bytes and
 * EQ_BUILD_INDEX_MAX_ENTRIES lines with entries.
 */
struct eq_build_index;

#define EQ_BUILD_INDEX_MAX_BYTES (64u * 1024u * 1024u)
#define EQ_BUILD_INDEX_MAX_ENTRIES 1000000u

/*
 * Loads the build index @path. Errors name the file and line:
 * EQ_ERR_PARSE (missing field, extra field, bad hash, duplicate package,
 * NUL byte), EQ_ERR_LIMIT, EQ_ERR_NOTFOUND, EQ_ERR_IO. On success *ret is
 * new; free with eq_build_index_free().
 */
EQ_API eq_err eq_build_index_load(const char *path, struct eq_build_index **ret, struct eq_error *err) EQ_MUST_CHECK;

/* Frees the index; NULL is a no-op. */
EQ_API void eq_build_index_free(struct eq_build_index *idx);

/* The taskhash of package @name (owned by @idx), or NULL if not listed. */
EQ_API const char *eq_build_index_lookup(const struct eq_build_index *idx, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_INDEX_H */
