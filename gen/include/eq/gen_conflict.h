/*
 * eq_gen, paths shipped by several packages (gen_conflict.c). Part of the
 * eq_gen library (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_CONFLICT_H
#define EQ_GEN_CONFLICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>
#include <eq/delta.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A release may ship a path once. When two packages ship one path with
 * different content (Debian's busybox and busybox-static, both with
 * bin/busybox), the device installs whichever comes last, and on every
 * later update finds the other package's files no longer matching its
 * record and downloads it in full (dpkg refuses such a pair outright).
 *
 * The path table collects every entry of every package's published
 * payload and, before the manifest is written, refuses each path that
 * several packages ship, except:
 *  - directories: allowed; if their mode, owner or xattrs differ the
 *    device ends with those of the last such package in name order (the
 *    install order) and a warning says so (dpkg does not refuse this either;
 *    it leaves an existing directory as the first package made it);
 *  - other entries identical in every field (type, mode, owner, size,
 *    content SHA-256, link target, device numbers, xattrs): they install
 *    the same thing whichever comes last, and the device copies either
 *    from its running slot without a mismatch. Not when the entry is a hard
 *    link or the target of one: installing the other package replaces the
 *    file by a new inode and breaks the link, which the device then finds
 *    "modified".
 * Owner rules say which package keeps a path ("PATH=PACKAGE"): every other
 * package of the release is published without that entry (its payload and
 * outhash are the package's minus the path, the same every release), so
 * what devices install is exactly what the manifest lists.
 */
struct eq_path_table;

/* Caps: rules from the command line and a file together, bytes of an
 * owners file, entries in the table (all packages together). */
#define EQ_PATH_RULES_MAX 100000u
#define EQ_PATH_OWNER_ARGS_MAX 256u /* --path-owner options of one command line */
#define EQ_PATH_OWNERS_FILE_MAX (16u * 1024u * 1024u)
#define EQ_PATH_TABLE_MAX_ENTRIES 20000000u
/* Conflicts reported through the note callback before the rest are counted. */
#define EQ_PATH_CONFLICTS_LISTED 100u

/*
 * Creates a table with the owner rules @owners ("PATH=PACKAGE" each, from
 * --path-owner; @n_owners may be 0) and those of @owners_file (NULL for
 * none; one "PATH PACKAGE" per line, fields separated by spaces or tabs,
 * '#' starts a comment line, blank lines and CRLF are fine). PATH is
 * written as in the package (a leading "/" or "./" and a trailing "/" are
 * dropped) and may not be empty or contain "." or ".." components;
 * PACKAGE is a package name (1..255 printable ASCII bytes, no spaces).
 * One path may have one owner (naming it twice with the same owner is
 * fine). Errors: EQ_ERR_INVAL naming the argument, EQ_ERR_PARSE naming
 * FILE:LINE, EQ_ERR_NOTFOUND/EQ_ERR_IO/EQ_ERR_LIMIT for the file.
 * On success *ret is new; free with eq_path_table_free().
 */
EQ_API eq_err eq_path_table_new(const char *const *owners, size_t n_owners, const char *owners_file,
				struct eq_path_table **ret, struct eq_error *err) EQ_MUST_CHECK;
/* Frees the table; NULL is a no-op. */
EQ_API void eq_path_table_free(struct eq_path_table *t);
/* Number of owner rules. */
EQ_API size_t eq_path_table_rule_count(const struct eq_path_table *t);

/*
 * Applies the owner rules to package @pkg_name before its payload is
 * written: removes from @b (eq_payload_builder_remove()) every ruled path
 * that @pkg_name ships but does not own, and remembers what it removed
 * (for eq_path_table_taskhash() and eq_path_table_check()). Call it once
 * per package, right after eq_pkg_read() (eq_pkg_get_builder()).
 * *ret_removed (may be NULL) gets the number of entries removed.
 */
EQ_API eq_err eq_path_table_apply(struct eq_path_table *t, const char *pkg_name, struct eq_payload_builder *b,
				  size_t *ret_removed, struct eq_error *err) EQ_MUST_CHECK;

/*
 * The taskhash under which a package the rules trimmed is published: for a
 * package eq_path_table_apply() removed nothing from, @taskhash is left as
 * it is; else it becomes the SHA-256 (hex) of
 *   "eqota-path-owner-v1" NUL taskhash NUL path1 NUL path2 ...
 * (the removed paths in byte order, no trailing NUL). Needed for taskhashes
 * from a build index: the equivalence store keeps a taskhash's first
 * unihash, and the payload published for it may be the untrimmed one (an
 * earlier release, or a run refused for the conflict), which would be
 * served again. Default taskhashes hash the payload and change anyway.
 */
EQ_API eq_err eq_path_table_taskhash(const struct eq_path_table *t, const char *pkg_name,
				     char taskhash[EQ_SHA256_HEX_LEN + 1], struct eq_error *err) EQ_MUST_CHECK;

/*
 * Adds every entry of the payload file @payload_path (the one published
 * for the package: after the rules, or the stored payload that stands in
 * for a non-reproducible build) under package @pkg_name, read from package
 * file @pkg_file (for messages; its base name is shown). Regular files are
 * hashed. Errors: those of the payload reader, prefixed with the file;
 * EQ_ERR_LIMIT beyond EQ_PATH_TABLE_MAX_ENTRIES.
 */
EQ_API eq_err eq_path_table_add(struct eq_path_table *t, const char *pkg_name, const char *pkg_file,
				const char *payload_path, struct eq_error *err) EQ_MUST_CHECK;

/* Adds one entry (what eq_path_table_add() does per entry); @sha256 is the
 * content hash of a regular file (ignored otherwise, may be NULL then). */
EQ_API eq_err eq_path_table_add_entry(struct eq_path_table *t, const char *pkg_name, const char *pkg_file,
				      const struct eq_payload_entry *e, const uint8_t sha256[EQ_SHA256_LEN],
				      struct eq_error *err) EQ_MUST_CHECK;

/* A line for the user: @error true for a refused path or a bad rule (the
 * check fails), false for a warning (it goes on). @msg is valid during the
 * call only. */
typedef void (*eq_path_note_fn)(void *ctx, bool error, const char *msg);

/*
 * Checks the table: every path several packages ship (rules above), then
 * every rule: one whose owner does not ship its path although other
 * packages did (they were published without it: no package would install
 * it) is an error; one whose path no package ships is a warning (a rule
 * left from an older release), as is nothing; then every entry and hard
 * link target, followed through the symlinks of every package of the
 * release as a device's kernel would (RESOLVE_IN_ROOT): one that lands in
 * EQ_PAYLOAD_RESERVED_DIR, on it, or as a non-directory on a folder on the
 * way to it is an error naming the package, the entry, where it lands and
 * whose symlink leads there (alone, the call fails with EQ_ERR_UNSAFE and
 * that message). Every problem, up to
 * EQ_PATH_CONFLICTS_LISTED, goes to @note (may be NULL) first; then the
 * call fails with EQ_ERR_STATE and a message naming the first one and the
 * count, e.g. "2 paths are shipped by more than one package: bin/busybox
 * is shipped by busybox (busybox_1.35.0-4_amd64.deb) and busybox-static
 * (busybox-static_1.35.0-4_amd64.deb), ...; a release may ship a path once
 * (see --path-owner)".
 */
EQ_API eq_err eq_path_table_check(struct eq_path_table *t, eq_path_note_fn note, void *note_ctx,
				  struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_CONFLICT_H */
