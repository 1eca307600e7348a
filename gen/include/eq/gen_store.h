/*
 * eq_gen, equivalence store (gen_store.c): taskhash -> unihash -> published
 * payload, with BitBake hashserv semantics. Part of the eq_gen library
 * (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_STORE_H
#define EQ_GEN_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An SQLite file with the semantics of BitBake's hash equivalence server
 * (bitbake-hashserv, see docs/equivalence-store.md):
 *   - unihashes(method, taskhash) -> unihash, write-once;
 *   - outhashes(method, taskhash, outhash, ...), append-only, "oldest" is
 *     the insertion order;
 *   - published(method, unihash) -> the payload and object published for
 *     that unihash, write-once.
 * Every hash is 64 lower-case hex characters. A method is 1..255 printable
 * ASCII characters without spaces. Several processes may use one store file
 * at the same time: each operation is one IMMEDIATE transaction, retried on
 * SQLITE_BUSY for up to EQ_STORE_BUSY_TIMEOUT_S seconds.
 *
 * A struct eq_store must be used by one thread at a time and must not be
 * carried across fork(): open the store again in the child.
 */
struct eq_store;

/* How long one operation waits for another process's write lock. */
#define EQ_STORE_BUSY_TIMEOUT_S 30

/* Longest method name, and longest pn/pv accepted by eq_store_report(). */
#define EQ_STORE_METHOD_MAX 255
#define EQ_STORE_META_MAX 1024

/*
 * Opens (creating it and its schema if missing) the store at @path. The
 * parent directory must exist. A file that is not an eqota store, or one
 * whose schema version is newer than this program's, is refused with
 * EQ_ERR_UNSUPPORTED; a damaged file gives EQ_ERR_IO or EQ_ERR_PARSE.
 * On success *ret is a new store; free it with eq_store_close().
 */
EQ_API eq_err eq_store_open(const char *path, struct eq_store **ret, struct eq_error *err) EQ_MUST_CHECK;

/* Closes the store; NULL is a no-op. */
EQ_API void eq_store_close(struct eq_store *s);

/*
 * The default store location: $XDG_DATA_HOME/eqota/equiv.db when
 * XDG_DATA_HOME is set to an absolute path, else $HOME/.local/share/eqota/
 * equiv.db (HOME from the environment, else the password database).
 * The eqota folder is created with mode 0700 when missing, its missing
 * parents too (mkdir -p); an existing folder is never chmod'ed.
 * *ret_path is malloc'ed; free with eq_free().
 * EQ_ERR_NOTFOUND when no home directory can be found; EQ_ERR_IO when the
 * folder cannot be created or something other than a folder is in the way;
 * EQ_ERR_UNSAFE when the existing eqota folder is group or world writable.
 * Every message names the folder.
 */
EQ_API eq_err eq_store_default_path(char **ret_path, struct eq_error *err) EQ_MUST_CHECK;

/* Flags returned by eq_store_report(). */
#define EQ_STORE_NEW_OUTHASH 0x1u /* the (method, taskhash, outhash) row was new */
#define EQ_STORE_NEW_MAPPING 0x2u /* this call gave the taskhash its unihash */
#define EQ_STORE_INHERITED 0x4u   /* ... taken from an earlier, equivalent taskhash */
#define EQ_STORE_OUTHASH_CHANGED                                                                                       \
	0x8u /* the taskhash was known with another outhash:
				       * its output is not reproducible */

/*
 * report(method, taskhash, outhash) as bitbake-hashserv does it:
 *  1. record (method, taskhash, outhash) unless that exact row exists;
 *  2. only if it was new: the candidate unihash is the unihash of the
 *     oldest other row with the same (method, outhash) and a different
 *     taskhash that has one, else @proposed_unihash (NULL means @taskhash);
 *     the taskhash gets the candidate unless it already has a unihash
 *     (write-once, "sticky");
 *  3. returns the taskhash's unihash.
 * @pn and @pv (package name and version, may be NULL) are stored with a new
 * outhash row for `eqota-gen equiv list`. @ret_unihash receives 64 hex
 * digits and a NUL; @ret_flags (may be NULL) a mask of EQ_STORE_* flags.
 * Errors: EQ_ERR_INVAL naming the field for a malformed argument, EQ_ERR_IO
 * for database failures (EQ_ERR_STATE when the lock wait timed out).
 */
EQ_API eq_err eq_store_report(struct eq_store *s, const char *method, const char *taskhash, const char *outhash,
			      const char *proposed_unihash, const char *pn, const char *pv,
			      char ret_unihash[EQ_SHA256_HEX_LEN + 1], unsigned *ret_flags,
			      struct eq_error *err) EQ_MUST_CHECK;

/*
 * report-equiv: asserts that @taskhash is equivalent to @unihash without an
 * outhash. Insert-or-ignore: an existing mapping is never changed.
 * @ret_unihash receives the mapping the store now holds.
 */
EQ_API eq_err eq_store_report_equiv(struct eq_store *s, const char *method, const char *taskhash, const char *unihash,
				    char ret_unihash[EQ_SHA256_HEX_LEN + 1], struct eq_error *err) EQ_MUST_CHECK;

/* get: the unihash of (@method, @taskhash), EQ_ERR_NOTFOUND if none. */
EQ_API eq_err eq_store_get(struct eq_store *s, const char *method, const char *taskhash,
			   char ret_unihash[EQ_SHA256_HEX_LEN + 1], struct eq_error *err) EQ_MUST_CHECK;

/*
 * One row of eq_store_list(): a taskhash mapping, joined with the first
 * outhash reported for that taskhash (outhash, pn, pv and created are NULL
 * for a mapping made by report-equiv alone). Pointers are valid during the
 * callback only.
 */
struct eq_store_entry {
	const char *method;
	const char *taskhash;
	const char *unihash;
	const char *outhash;
	const char *pn, *pv;
	const char *created; /* ISO-8601 UTC */
};

/* List callback; returning anything but EQ_OK stops the walk, and
 * eq_store_list() returns that code. */
typedef eq_err (*eq_store_list_fn)(void *ctx, const struct eq_store_entry *e, struct eq_error *err);

/* Calls @fn for every mapping of @method (NULL: every method), ordered by
 * method, then by insertion. Runs in one read transaction. */
EQ_API eq_err eq_store_list(struct eq_store *s, const char *method, eq_store_list_fn fn, void *ctx,
			    struct eq_error *err) EQ_MUST_CHECK;

/* What is published for one unihash (plain value struct). */
struct eq_store_published {
	char payload_sha256[EQ_SHA256_HEX_LEN + 1];
	uint64_t payload_size;
	char object_sha256[EQ_SHA256_HEX_LEN + 1];
	uint64_t object_size;
};

/* The payload published for (@method, @unihash), EQ_ERR_NOTFOUND if none. */
EQ_API eq_err eq_store_get_published(struct eq_store *s, const char *method, const char *unihash,
				     struct eq_store_published *ret, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Records that (@method, @unihash) is published as @pub, unless something is
 * already recorded for it: one unihash names exactly one payload. *ret
 * receives the row the store now holds and *ret_inserted (may be NULL)
 * whether this call inserted it. A caller that finds ret->payload_sha256 different from
 * its own payload has a non-reproducible build: it must keep serving the
 * stored object. Sizes above INT64_MAX are EQ_ERR_INVAL.
 */
EQ_API eq_err eq_store_set_published(struct eq_store *s, const char *method, const char *unihash,
				     const struct eq_store_published *pub, struct eq_store_published *ret,
				     bool *ret_inserted, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Whether @outhash was ever reported for a package named @pn (*ret_found).
 * The publisher asks before it serves a stored payload under a package's
 * name: only that package's own earlier output may stand in for it.
 */
EQ_API eq_err eq_store_output_of(struct eq_store *s, const char *method, const char *outhash, const char *pn,
				 bool *ret_found, struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_STORE_H */
