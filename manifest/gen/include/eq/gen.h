/*
 * eq_gen: the host-side generator library behind eqota-gen. It turns built
 * packages into canonical payloads, keeps the equivalence store that maps
 * taskhashes to unihashes (BitBake hashserv semantics), and (later sections)
 * publishes, diffs, shows and checks repositories.
 *
 * Depends on eq_base, eq_manifest, eq_delta, SQLite and libarchive. Host
 * only; nothing here runs on a device. Like every library module it never
 * logs above debug: failures come back as eq_err plus struct eq_error.
 */
#ifndef EQ_GEN_H
#define EQ_GEN_H

#include <eq/common.h>
#include <eq/delta.h>
#include <eq/manifest.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================== */
/* ==== Equivalence store (gen_store.c) ================================= */
/* ====================================================================== */

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
#define EQ_STORE_INHERITED   0x4u /* ... taken from an earlier, equivalent taskhash */
#define EQ_STORE_OUTHASH_CHANGED 0x8u /* the taskhash was known with another outhash:
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
EQ_API eq_err eq_store_report_equiv(struct eq_store *s, const char *method, const char *taskhash,
				    const char *unihash, char ret_unihash[EQ_SHA256_HEX_LEN + 1],
				    struct eq_error *err) EQ_MUST_CHECK;

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

/* ====================================================================== */
/* ==== Package reader (gen_package.c) ================================== */
/* ====================================================================== */

/* Container formats eq_pkg_read() understands. */
enum eq_pkg_format {
	EQ_PKG_DEB,     /* ar: debian-binary, control.tar.*, data.tar.* */
	EQ_PKG_IPK,     /* the same members, in an ar or in a (gzipped) tar */
	EQ_PKG_RPM,     /* lead + headers + cpio payload */
	EQ_PKG_TARBALL, /* a plain (compressed) tar of the installed tree */
};

/* Caps on package metadata. */
#define EQ_PKG_CONTROL_MAX (1024u * 1024u) /* bytes of a control file */
#define EQ_PKG_FIELD_MAX 255               /* bytes of name, version, arch */
#define EQ_PKG_DEPENDS_MAX (64u * 1024u)   /* bytes of the depends string */

/*
 * Metadata of one package (plain value struct). All strings are owned by
 * the struct, never NULL after a successful read (depends may be ""), and
 * freed by eq_pkg_info_done().
 *   name, version, arch: from the control file (.deb, .ipk: Package,
 *     Version, Architecture); from the file name for .rpm
 *     ("NAME-VERSION-RELEASE.ARCH.rpm", version = "VERSION-RELEASE") and
 *     tarballs ("NAME_VERSION.tar.*" or "NAME-VERSION.tar.*", arch "all");
 *   depends: Pre-Depends then Depends joined with ", ", continuation lines
 *     folded to single spaces ("" for .rpm and tarballs);
 *   file: the path the package was read from.
 */
struct eq_pkg_info {
	enum eq_pkg_format format;
	char *name;
	char *version;
	char *arch;
	char *depends;
	char *file;
};

/* Zeroes @i; cannot fail. */
EQ_API void eq_pkg_info_init(struct eq_pkg_info *i);
/* Frees the strings and zeroes @i; safe on a zeroed or half-filled struct. */
EQ_API void eq_pkg_info_done(struct eq_pkg_info *i);

/*
 * A package read into memory: its metadata and a payload builder whose
 * regular files point into one private, already unlinked spool file.
 */
struct eq_pkg;

/*
 * Reads the package file @path. The format is recognised from the content:
 * ar magic (.deb, or .ipk when the name ends in ".ipk"), RPM lead, else a
 * possibly compressed tar (an .ipk container when the name ends in ".ipk",
 * a tarball otherwise). Only in-process decompressors are used (gzip, xz,
 * lzma, bzip2, zstd); a libarchive warning is an error, since it means lost
 * metadata. Hard-link groups are normalised: the smallest path (strcmp
 * order) holds the data, the others link to it, whatever the archive did.
 * Every data entry goes into the payload: paths lose a leading "./" or "/",
 * the root entry is skipped, numeric owners, mode (setuid etc.), symlinks,
 * hard links, device nodes, FIFOs and xattrs (pax SCHILY.xattr) are kept;
 * timestamps and owner names are dropped. File data is spooled into one
 * unlinked temporary file in $TMPDIR (else /var/tmp).
 * @limits (NULL: defaults) caps entries, path length, file and total sizes.
 * Errors name @path and, where it applies, the member and entry:
 * EQ_ERR_PARSE (corrupt or truncated archive, bad control file),
 * EQ_ERR_UNSUPPORTED (sockets, unknown format), EQ_ERR_UNSAFE (".." in a
 * path), EQ_ERR_LIMIT, EQ_ERR_IO, EQ_ERR_NOTFOUND (no such file, or no
 * data.tar/control member). On success *ret is new; free with eq_pkg_free().
 */
EQ_API eq_err eq_pkg_read(const char *path, const struct eq_payload_limits *limits, struct eq_pkg **ret,
			  struct eq_error *err) EQ_MUST_CHECK;

/* Frees the package, its builder and its spool file; NULL is a no-op. */
EQ_API void eq_pkg_free(struct eq_pkg *p);

/* The package's metadata, owned by @p. */
EQ_API const struct eq_pkg_info *eq_pkg_get_info(const struct eq_pkg *p);

/* The package's payload builder, owned by @p (for adding nothing more;
 * eq_payload_builder_count() and the like). */
EQ_API struct eq_payload_builder *eq_pkg_get_builder(struct eq_pkg *p);

/*
 * Writes the canonical payload to @sink (eq_payload_builder_write() over
 * the spool file) and returns its SHA-256 (the package's outhash for
 * EQ_PAYLOAD_METHOD) and size. May be called more than once.
 */
EQ_API eq_err eq_pkg_write_payload(struct eq_pkg *p, eq_write_fn sink, void *sink_ctx,
				   uint8_t ret_sha256[EQ_SHA256_LEN], uint64_t *ret_size,
				   struct eq_error *err) EQ_MUST_CHECK;

/*
 * The default taskhash of a package that comes without one: the SHA-256
 * (lower-case hex into @ret_hex) of the bytes
 *   "eqota-taskhash-v1" NUL name NUL version NUL arch NUL depends NUL
 *   payload-sha256-hex
 * (no trailing NUL; a NULL string counts as ""). The payload hash is part of
 * it because the taskhash -> unihash mapping is write-once: a taskhash that
 * ignored the content would keep a changed package on its old unihash.
 */
EQ_API void eq_pkg_default_taskhash(const struct eq_pkg_info *info, const uint8_t payload_sha256[EQ_SHA256_LEN],
				    char ret_hex[EQ_SHA256_HEX_LEN + 1]);

/* ====================================================================== */
/* ==== Build index (gen_index.c) ======================================= */
/* ====================================================================== */

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
EQ_API eq_err eq_build_index_load(const char *path, struct eq_build_index **ret,
				  struct eq_error *err) EQ_MUST_CHECK;

/* Frees the index; NULL is a no-op. */
EQ_API void eq_build_index_free(struct eq_build_index *idx);

/* The taskhash of package @name (owned by @idx), or NULL if not listed. */
EQ_API const char *eq_build_index_lookup(const struct eq_build_index *idx, const char *name);

/* Number of packages in the index. */
EQ_API size_t eq_build_index_count(const struct eq_build_index *idx);

/* ==== publisher: repository, publish, diff, qa ========================= */

/* ---- repository layout --------------------------------------------------
 *   boards/<board>/<channel>/manifest.json(.sig)      current release
 *   boards/<board>/<channel>/releases/<number>/manifest.json(.sig)
 *   objects/<sha256 of the compressed object>
 *   deltas/<from payload sha256>-<to payload sha256>
 */

/* The signed manifests of one board/channel, oldest first. */
struct eq_repo_release {
	uint64_t number;
	char *release;            /* name */
	struct eq_manifest *m;    /* owned */
};
struct eq_repo_history {
	struct eq_repo_release *v;
	size_t n;
};

/*
 * Loads every release manifest of @board/@channel under @repo (the
 * publisher's own files, read without signature check: `eqota-gen verify`
 * is the check). A missing channel gives an empty history. Free with
 * eq_repo_history_done().
 */
EQ_API eq_err eq_repo_history_load(const char *repo, const char *board, const char *channel,
				   struct eq_repo_history *ret, struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_repo_history_done(struct eq_repo_history *h);
/* Release by name or by number (decimal), the rule of
 * eq_manifest_release_match(); NULL if none. Owned by @h. */
EQ_API const struct eq_repo_release *eq_repo_history_find(const struct eq_repo_history *h, const char *name_or_number);

/* ---- publish -------------------------------------------------------- */

/* What eq_gen_publish() does with packages that pass the device's path
 * rules (eq_payload_checker_add(), always enforced) but hold setuid or
 * setgid files or device nodes: DEFAULT warns and lists them, STRICT
 * refuses the package (EQ_ERR_UNSAFE). */
enum eq_publish_policy { EQ_POLICY_DEFAULT = 0, EQ_POLICY_STRICT };

struct eq_publish_opts {
	const char *repo;
	const char *board;
	const char *channel;
	const char *release;
	const char *packages_dir;
	const char *const *key_paths; /* private keys that sign */
	size_t n_keys;
	const char *build_index; /* NULL: default taskhashes */
	const char *store_path;  /* NULL: eq_store_default_path() */
	unsigned deltas_from;    /* deltas against the last N releases (default 1) */
	unsigned expires_days;   /* default 30 */
	int level;               /* zstd level of objects and deltas, default 19 */
	enum eq_publish_policy policy; /* default EQ_POLICY_DEFAULT */
	eq_progress_fn progress; /* may be NULL */
	void *progress_ctx;
};

enum eq_publish_state {
	EQ_PUB_NEW,          /* new content: object written */
	EQ_PUB_REUSED,       /* unihash already published: object reused */
	EQ_PUB_NOT_REPRODUCIBLE, /* known unihash, other bytes: stored object kept */
};

struct eq_publish_pkg {
	char *name, *version;
	enum eq_publish_state state;
	bool equivalent; /* unihash inherited from an earlier taskhash */
};

struct eq_publish_report {
	uint64_t number;
	size_t n_packages;
	size_t objects_written, deltas_written, not_reproducible, equivalent;
	uint64_t bytes_written;
	double seconds;
	struct eq_publish_pkg *pkgs; /* n_packages entries, owned */
};
EQ_API void eq_publish_report_done(struct eq_publish_report *r);

/*
 * Publishes the packages in opts->packages_dir as the next release of
 * board/channel: payloads, unihashes from the equivalence store, objects
 * (written only when no object exists for the unihash), deltas against the
 * previous releases where clearly smaller, and the signed manifest.
 * Fills @ret (free with eq_publish_report_done()).
 */
EQ_API eq_err eq_gen_publish(const struct eq_publish_opts *o, struct eq_publish_report *ret,
			     struct eq_error *err) EQ_MUST_CHECK;

/* ---- diff ------------------------------------------------------------- */

enum eq_diff_state { EQ_DIFF_KEPT, EQ_DIFF_EQUIVALENT, EQ_DIFF_CHANGED, EQ_DIFF_ADDED, EQ_DIFF_REMOVED };
EQ_API const char *eq_diff_state_name(enum eq_diff_state s);

struct eq_diff_entry {
	enum eq_diff_state state;
	const char *name;        /* owned by the manifests */
	const char *old_version; /* NULL when added */
	const char *new_version; /* NULL when removed */
	uint64_t bytes;          /* what a device on the old release downloads */
	bool via_delta;
};
struct eq_diff {
	struct eq_diff_entry *v;
	size_t n;
	size_t count[5];
	uint64_t download_bytes; /* sum of bytes */
	uint64_t full_bytes;     /* every object of the new release */
};

/* Compares two releases; entries point into @from and @to, which must
 * outlive the result. Free with eq_diff_done(). */
EQ_API eq_err eq_gen_diff(const struct eq_manifest *from, const struct eq_manifest *to, struct eq_diff *ret,
			  struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_diff_done(struct eq_diff *d);

/* ---- qa --------------------------------------------------------------- */

/* One finding: a file of a package that embeds the build directory. */
typedef void (*eq_qa_fn)(void *ctx, const char *package_file, const char *path, uint64_t count);

/*
 * Scans every package in @packages (a folder of packages, or one package
 * file) for payload files containing the bytes of @build_dir. Calls @fn for
 * each file that does and returns the number of such files in *ret_found.
 */
EQ_API eq_err eq_gen_qa(const char *packages, const char *build_dir, eq_qa_fn fn, void *ctx, size_t *ret_found,
			struct eq_error *err) EQ_MUST_CHECK;

/* Lists the package files (.deb .ipk .rpm .tar .tar.*) of a folder, sorted.
 * Caller frees each string and the array with eq_free(). */
EQ_API eq_err eq_gen_list_packages(const char *dir, char ***ret_paths, size_t *ret_n,
				   struct eq_error *err) EQ_MUST_CHECK;


/* ====================================================================== */
/* ==== Root of trust and timestamp (gen_root.c) ======================== */
/* ====================================================================== */

/* One role of a new root: .pub files and a threshold. No files keeps the
 * previous root's keys (threshold 0 keeps its threshold too). */
struct eq_root_role_opts {
	const char *const *pubs;
	size_t n_pubs;
	unsigned threshold; /* 0: 1 for new keys, else unchanged */
};

struct eq_root_opts {
	const char *repo;
	const char *const *sign_keys; /* private keys that sign the new root */
	size_t n_sign;
	struct eq_root_role_opts roles[EQ_ROLE_COUNT];
	const char *revoke_keyid; /* rotate: drop this key from every role */
	unsigned expires_days;    /* default 365 */
	int64_t now;              /* 0: the clock (tests pass a time) */
};

/*
 * Writes <repo>/root/<N>.root.json and .sig: N = 1 with @init (every role
 * needs keys; refused when a root exists), else the newest root + 1 (the
 * chain from root/1 is verified first; roles not given are copied, minus
 * @revoke_keyid). Before anything is written the new root is checked as a
 * device would check it (eq_root_verify_next()): signed by a threshold of
 * the old root role and of the new one. *ret_version gets N.
 */
EQ_API eq_err eq_gen_root_write(const struct eq_root_opts *o, bool init, uint64_t *ret_version,
				struct eq_error *err) EQ_MUST_CHECK;

/* The newest root of @repo, the chain from root/1.root.json verified step
 * by step. EQ_ERR_NOTFOUND when the repository has no root. */
EQ_API eq_err eq_gen_root_newest(const char *repo, struct eq_root **ret, struct eq_error *err) EQ_MUST_CHECK;

struct eq_timestamp_opts {
	const char *repo, *board, *channel;
	const char *const *keys; /* the timestamp role's private keys */
	size_t n_keys;
	unsigned expires_hours; /* default 24; never past the manifest's expiry */
	int64_t now;            /* 0: the clock */
};

/*
 * Writes boards/<b>/<c>/timestamp.json and .sig for the manifest there,
 * with the version after the published one. The manifest must verify under
 * the newest root's release role; the result must verify under its
 * timestamp role. @ret (may be NULL) receives what was written.
 */
EQ_API eq_err eq_gen_timestamp(const struct eq_timestamp_opts *o, struct eq_timestamp *ret,
			       struct eq_error *err) EQ_MUST_CHECK;

/*
 * Checks @repo's board/channel exactly as a device with the installed root
 * @root_path does (eq_trust_refresh() over the files, with a throw-away
 * trust store): root chain, timestamp, manifest. @clock is "now".
 * *ret as eq_trust_refresh(); *ret_root_version the newest root.
 */
EQ_API eq_err eq_gen_verify_trusted(const char *repo, const char *root_path, const char *board, const char *channel,
				    int64_t clock, struct eq_trust_result *ret, uint64_t *ret_root_version,
				    struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
