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

/* ====================================================================== */
/* ==== bitbake-hashserv client (gen_hashserv.c) ======================== */
/* ====================================================================== */

/*
 * A client of BitBake's hash equivalence server, protocol OEHASHEQUIV 1.1
 * (docs/equivalence-store.md). One connection, used by one thread at a time.
 * Whatever the server answers is checked: every answer must match its
 * request and every unihash must be 64 lower-case hex digits.
 */
struct eq_hashserv;

/* Default wait for a connection and for each answer. */
#define EQ_HASHSERV_TIMEOUT_MS 30000u
/* Longest message (or line) accepted from a server, chunks joined. */
#define EQ_HASHSERV_MAX_MESSAGE (1024u * 1024u)

struct eq_hashserv_opts {
	unsigned timeout_ms;  /* 0: EQ_HASHSERV_TIMEOUT_MS */
	const char *username; /* NULL or "": no login */
	const char *token;
};

/*
 * Connects to @addr ("HOST:PORT", "[IPV6]:PORT" or "unix://PATH", as
 * BB_HASHSERVE), says OEHASHEQUIV 1.1, logs in when a username is given
 * and pings. "ws://" and "wss://" are EQ_ERR_UNSUPPORTED. Errors name the
 * address: EQ_ERR_INVAL (malformed address), EQ_ERR_NETWORK (refused,
 * timeout, closed), EQ_ERR_UNSUPPORTED (not a hashserv speaking 1.1),
 * EQ_ERR_VERIFY (login refused). Free *ret with eq_hashserv_close().
 */
EQ_API eq_err eq_hashserv_open(const char *addr, const struct eq_hashserv_opts *o, struct eq_hashserv **ret,
			       struct eq_error *err) EQ_MUST_CHECK;
/* The same over a connected stream socket @fd (tests, inetd-style use);
 * @fd stays the caller's and is never reconnected. */
EQ_API eq_err eq_hashserv_open_fd(int fd, const struct eq_hashserv_opts *o, struct eq_hashserv **ret,
				  struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_hashserv_close(struct eq_hashserv *h); /* NULL is a no-op */
EQ_API const char *eq_hashserv_addr(const struct eq_hashserv *h);

/*
 * Every call below reconnects first when an earlier error closed the
 * connection, and redoes its whole work once when the connection drops in
 * the middle (get and report are idempotent). An {"invoke-error"} answer
 * (a missing permission, say) is EQ_ERR_STATE quoting the server.
 */
EQ_API eq_err eq_hashserv_ping(struct eq_hashserv *h, struct eq_error *err) EQ_MUST_CHECK;

/* get of @n taskhashes in stream mode, all in flight at once: ret[i] gets
 * the unihash, or "" when the server does not know taskhashes[i]. */
EQ_API eq_err eq_hashserv_get_many(struct eq_hashserv *h, const char *method, const char *const *taskhashes, size_t n,
				   char (*ret)[EQ_SHA256_HEX_LEN + 1], struct eq_error *err) EQ_MUST_CHECK;

struct eq_hashserv_report {
	const char *taskhash, *outhash;
	const char *unihash;                     /* proposed; NULL: the taskhash */
	const char *pn, *pv;                     /* sent as PN and PV when not NULL */
	char ret_unihash[EQ_SHA256_HEX_LEN + 1]; /* the server's answer */
};

/*
 * @n report messages, all in flight at once, answers in order. A read-only
 * server, or a user without @report, answers without recording anything:
 * the caller finds out with a get (eq_equiv_report_many() does).
 */
EQ_API eq_err eq_hashserv_report_many(struct eq_hashserv *h, const char *method, struct eq_hashserv_report *v, size_t n,
				      struct eq_error *err) EQ_MUST_CHECK;
/* report-equiv (needs @read and @report); @ret_unihash: what the server
 * holds for @taskhash afterwards. */
EQ_API eq_err eq_hashserv_report_equiv(struct eq_hashserv *h, const char *method, const char *taskhash,
				       const char *unihash, char ret_unihash[EQ_SHA256_HEX_LEN + 1],
				       struct eq_error *err) EQ_MUST_CHECK;

/* ====================================================================== */
/* ==== Equivalence backend (gen_equiv.c) =============================== */
/* ====================================================================== */

/*
 * What publish and `eqota-gen equiv` talk to: the local store above, or a
 * bitbake-hashserv (eq_hashserv_*) shared with the build farm. Both give
 * the same answers for report and get. What a unihash was published as
 * comes from the local store's `published` table, or, with a hashserv
 * (which has no such table), from the manifests of the repository being
 * published, so each repository keeps "one unihash, one payload".
 */
struct eq_equiv;

struct eq_equiv_opts {
	const char *store_path; /* local store; NULL: eq_store_default_path() */
	const char *hashserv;   /* non-NULL: use this server instead (eq_hashserv_open() address) */
	const char *repo;       /* with hashserv: the repository whose manifests tell what is published;
				 * NULL: nothing is known to be published */
	unsigned timeout_ms;    /* hashserv: 0 for the client's default */
};

/*
 * Opens the backend. With a hashserv the login comes from the environment,
 * never the command line: EQOTA_HASHSERV_USERNAME and EQOTA_HASHSERV_TOKEN,
 * else BitBake's BB_HASHSERVE_USERNAME and BB_HASHSERVE_PASSWORD.
 * Free with eq_equiv_close().
 */
EQ_API eq_err eq_equiv_open(const struct eq_equiv_opts *o, struct eq_equiv **ret, struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_equiv_close(struct eq_equiv *e);

/* One report of eq_equiv_report_many(). */
struct eq_equiv_item {
	const char *taskhash, *outhash;
	const char *proposed;                /* NULL: the taskhash */
	const char *pn, *pv;                 /* may be NULL */
	char unihash[EQ_SHA256_HEX_LEN + 1]; /* out */
	unsigned flags;                      /* out: EQ_STORE_* (local store only; 0 with a hashserv) */
};

/*
 * Reports @n items (eq_store_report() each, or pipelined hashserv reports)
 * and fills their unihashes. With a hashserv the unihashes are read back
 * with one stream get: a taskhash the server did not record (a read-only
 * server, or a user without @report) fails the call with EQ_ERR_STATE
 * naming the package, unless the server already knew it.
 */
EQ_API eq_err eq_equiv_report_many(struct eq_equiv *e, const char *method, struct eq_equiv_item *v, size_t n,
				   struct eq_error *err) EQ_MUST_CHECK;
/* eq_store_get() semantics on either backend (EQ_ERR_NOTFOUND if unknown). */
EQ_API eq_err eq_equiv_get(struct eq_equiv *e, const char *method, const char *taskhash,
			   char ret_unihash[EQ_SHA256_HEX_LEN + 1], struct eq_error *err) EQ_MUST_CHECK;

/*
 * What is published for (@method, @unihash), EQ_ERR_NOTFOUND if nothing.
 * *ret_same_package: that payload is an output of a package named @pn
 * (eq_store_output_of(), or a manifest of the repository that lists it
 * under @pn), so it may stand in for @pn's non-reproducible rebuild.
 */
EQ_API eq_err eq_equiv_get_published(struct eq_equiv *e, const char *method, const char *unihash, const char *pn,
				     struct eq_store_published *ret, bool *ret_same_package,
				     struct eq_error *err) EQ_MUST_CHECK;
/* eq_store_set_published() semantics; @pn is the package's name. */
EQ_API eq_err eq_equiv_set_published(struct eq_equiv *e, const char *method, const char *unihash, const char *pn,
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
EQ_API eq_err eq_build_index_load(const char *path, struct eq_build_index **ret, struct eq_error *err) EQ_MUST_CHECK;

/* Frees the index; NULL is a no-op. */
EQ_API void eq_build_index_free(struct eq_build_index *idx);

/* The taskhash of package @name (owned by @idx), or NULL if not listed. */
EQ_API const char *eq_build_index_lookup(const struct eq_build_index *idx, const char *name);

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
	char *release;         /* name */
	struct eq_manifest *m; /* owned */
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
/* Every object and delta @m names exists under @repo with its size and,
 * with @deep, its SHA-256: what `eqota-gen verify` checks after the
 * signatures. */
EQ_API eq_err eq_gen_check_files(const char *repo, const struct eq_manifest *m, bool deep,
				 struct eq_error *err) EQ_MUST_CHECK;

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
	const char *build_index;        /* NULL: default taskhashes */
	const char *store_path;         /* NULL: eq_store_default_path() */
	const char *hashserv;           /* non-NULL: this bitbake-hashserv instead of the store (eq_equiv_opts) */
	unsigned deltas_from;           /* deltas made from the last N distinct older payloads (default 3) */
	unsigned expires_days;          /* default 30 */
	int level;                      /* zstd level of objects and deltas, default 19 */
	enum eq_publish_policy policy;  /* default EQ_POLICY_DEFAULT */
	const char *const *path_owners; /* "PATH=PACKAGE" owner rules (eq_path_table_new()) */
	size_t n_path_owners;
	const char *path_owners_file; /* NULL: none */
	eq_progress_fn progress;      /* may be NULL */
	void *progress_ctx;
	unsigned jobs;          /* threads reading and compressing; 0: one per online core */
	const char *cache_path; /* input cache; NULL: eqg default (~/.cache/eqota/inputs.db) */
	bool no_cache;          /* read every package even when unchanged */
	/* The pin (eq_gen_root_newest()): needed in a repository with a root. */
	const char *trusted_root;
};

/* More threads than this gain nothing: batches are PUBLISH_BATCH long. */
#define EQ_PUBLISH_MAX_JOBS 64u

enum eq_publish_state {
	EQ_PUB_NEW,              /* new content: object written */
	EQ_PUB_REUSED,           /* unihash already published: object reused */
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
	size_t default_taskhashes; /* packages the build index does not list */
	size_t cached;             /* packages the input cache knew: not read */
	uint64_t bytes_written;
	double seconds;
	struct eq_publish_pkg *pkgs; /* n_packages entries, owned */
	/* The newest root, whose release role the manifest was verified
	 * against (NULL in a repository without one), owned; and the SHA-256 of
	 * the manifest bytes written. Together they let the timestamp step skip
	 * checking the same again (eq_timestamp_opts). */
	struct eq_root *root;
	uint8_t manifest_sha256[EQ_SHA256_LEN];
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

/* ---- promote ---------------------------------------------------------- */

struct eq_promote_opts {
	const char *repo;
	const char *board;
	const char *from_channel;
	const char *release; /* in @from_channel: its name, or its number */
	const char *to_channel;
	const char *const *key_paths; /* private keys that sign the new manifest */
	size_t n_keys;
	unsigned deltas_from; /* as eq_publish_opts; default 3 */
	unsigned expires_days;
	int level;     /* zstd level of new deltas */
	unsigned jobs; /* 0: one per online core */
	/* The pin (eq_gen_root_newest()): needed in a repository with a root. */
	const char *trusted_root;
};

/*
 * Publishes release @release of @from_channel as the next release of
 * @to_channel, under the same name: the same packages, objects and
 * unihashes, with the deltas the target channel's devices need (from its
 * own releases: existing ones offered, missing ones made from the objects,
 * as publish makes them). No package is read and no object written. The
 * source is checked first as its channel's devices check it (the newest
 * root's release role, or, in a repository without a root, the public keys
 * NAME.pub beside the signing keys), so nothing a device would refuse is
 * signed anew; and it must carry a valid signature by one of @key_paths
 * (EQ_ERR_VERIFY otherwise): other keys of the release role do not make a
 * release this signer vouches for. The root is the pinned one
 * (@trusted_root, eq_gen_root_newest()). Errors as eq_gen_publish(); EQ_ERR_NOTFOUND for an unknown
 * release or a missing object. Fills @ret (eq_publish_report_done()).
 */
EQ_API eq_err eq_gen_promote(const struct eq_promote_opts *o, struct eq_publish_report *ret,
			     struct eq_error *err) EQ_MUST_CHECK;

/* ---- prune ------------------------------------------------------------ */

struct eq_prune_opts {
	const char *repo;
	unsigned keep;        /* newest releases kept per board and channel, >= 1 */
	unsigned grace_hours; /* see eq_gen_prune() */
	bool dry_run;         /* report, remove nothing */
	int64_t now;          /* 0: the clock */
	/* Called for each path removed (or that would be), with its size. */
	void (*list)(void *ctx, const char *path, uint64_t size);
	void *list_ctx;
};

struct eq_prune_report {
	size_t releases, objects, deltas, manifest_deltas; /* removed (or would be) */
	size_t kept_releases;
	uint64_t bytes; /* freed: files' sizes; a release counts its manifest */
};

/*
 * Keeps the newest @keep releases of every board and channel (the current
 * manifest always) and removes, under the publish lock: older release
 * folders once the release after each has been out @grace_hours (a device
 * may be fetching it until then); objects and deltas no kept release of any
 * board or channel refers to, and manifest deltas that do not lead to a
 * channel's current manifest, once the file is @grace_hours old. Each
 * channel's publisher-history is rebuilt by the next publish.
 */
EQ_API eq_err eq_gen_prune(const struct eq_prune_opts *o, struct eq_prune_report *ret,
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
	const char *trusted_root; /* rotate, revoke: the pin (eq_gen_root_newest()); unused by init */
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

/* Follows <repo>/root/<N+1>.root.json from @start (consumed: freed on
 * error, or replaced) as far as the repository goes, each step checked by
 * eq_root_verify_next(); *ret is the newest. EQ_ERR_LIMIT past
 * EQ_ROOT_CHAIN_MAX * 64 versions. */
EQ_API eq_err eq_gen_root_follow(const char *repo, struct eq_root *start, struct eq_root **ret,
				 struct eq_error *err) EQ_MUST_CHECK;
/*
 * The newest root of @repo, its chain started from the root the operator
 * pinned and walked as a device walks it (eq_root_verify_next(): both
 * thresholds at every step). @trusted_root is a root file kept outside the
 * repository (a copy of root/<N>.root.json: the chain starts from root
 * version N, whose bytes in the repository must be the file's), or 64 hex
 * digits, the SHA-256 of root/1.root.json. A repository's own root proves
 * nothing: it signs itself, and whoever can write the repository can write
 * one. EQ_ERR_VERIFY, naming the file and both hashes, when the
 * repository's root differs from the pin, and when it has none (never
 * EQ_ERR_NOTFOUND: the caller must not sign as in a repository without a
 * root); errors of the chain as eq_gen_root_follow().
 */
EQ_API eq_err eq_gen_root_pinned(const char *repo, const char *trusted_root, struct eq_root **ret,
				 struct eq_error *err) EQ_MUST_CHECK;
/*
 * What every signing command calls: eq_gen_root_pinned() when
 * @trusted_root is not NULL. Without a pin, EQ_ERR_NOTFOUND for a
 * repository without a root (the keys-only mode, docs/security.md) and
 * EQ_ERR_STATE, saying how to pin, for one with a root: nothing is signed
 * against a root read from the repository alone.
 */
EQ_API eq_err eq_gen_root_newest(const char *repo, const char *trusted_root, struct eq_root **ret,
				 struct eq_error *err) EQ_MUST_CHECK;

struct eq_timestamp_opts {
	const char *repo, *board, *channel;
	const char *const *keys; /* the timestamp role's private keys */
	size_t n_keys;
	unsigned expires_hours;   /* default 24; never past the manifest's expiry */
	int64_t now;              /* 0: the clock */
	const char *trusted_root; /* the pin (eq_gen_root_newest()) when @root is NULL */
	/* Optional, from a publish in this process (eq_publish_report): the
	 * root to use instead of loading and verifying the newest again, and
	 * the SHA-256 of manifest bytes already verified against its release
	 * role; a manifest file with that hash is not verified again (its
	 * board, channel and expiry still are). */
	const struct eq_root *root;
	const uint8_t *verified_sha256;
	/* The staged rollout (docs/fleet.md). What is not set is kept from the
	 * published timestamp when that names the same manifest bytes (a
	 * refresh must never widen a staged rollout); a new manifest starts at
	 * 100 %, not halted. 100 % and not halted writes no rollout at all. */
	bool set_percent;
	unsigned percent; /* 0..100 */
	bool set_halt;
	bool halt;
	/* Nonzero: refuse (EQ_ERR_STATE) unless the channel's manifest has
	 * this release number, so that a rollout step meant for one release
	 * never lands on a newer one published meanwhile. */
	uint64_t expect_number;
};

/*
 * Writes boards/<b>/<c>/timestamp.json and .sig for the manifest there,
 * with the version after the published one and the rollout described in
 * struct eq_timestamp_opts, under the repository's publish lock (two
 * writers must never sign different timestamps of one version). The
 * manifest must verify under
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

/* ====================================================================== */
/* ==== Repository walker (gen_import.c) ================================ */
/* ====================================================================== */

/*
 * Visits every package of every release manifest
 * (boards/<b>/<c>/releases/<n>/manifest.json) of a repository, oldest
 * first. It knows nothing about stores: `eqota-gen equiv import` feeds the
 * local store with it, and any other consumer (a remote hashserv, "what
 * does this repository publish for a unihash") can do the same.
 *
 * A repository may be a copy from a CDN, so the walker can check each
 * manifest's signatures exactly as `eqota-gen verify` does. Whoever can
 * write an unverified manifest chooses which unihash a payload gets, and
 * with it which packages devices skip: reading without a check must be
 * asked for explicitly (@unverified).
 */

/* At most this many release manifests per walk (all are held in memory). */
#define EQ_REPO_WALK_MAX_MANIFESTS 100000u

struct eq_repo_walk_opts {
	/* Exactly one of the three: */
	const struct eq_manifest_trust *trust; /* every manifest must meet these keys and threshold
						* (verify --key / --trust) */
	const char *root_path; /* an installed root document: the repository's chain root/<N+1>.root.json...
				* is walked from it (each step eq_root_verify_next(), expiry not checked) and
				* every manifest must be signed by the newest root's release role
				* (the signature check of verify --root --release; no timestamp,
				* no expiry: old releases are past theirs) */
	bool unverified;       /* read without any signature check */
	/* Optional filters; NULL: every board, every channel. */
	const char *board, *channel;
};

/* One package of one manifest, for eq_repo_walk()'s callback. Every pointer
 * is owned by the walk and valid during the callback only. */
struct eq_repo_pkg_ref {
	const char *board, *channel;
	const char *release;                /* the manifest's release name */
	const char *path;                   /* the manifest file, for messages */
	uint64_t number;                    /* its release number */
	int64_t issued;                     /* its issue time, seconds since the epoch */
	size_t manifest_index, n_manifests; /* this manifest's place in the walk, 0-based */
	const struct eq_manifest_package *pkg;
};

/* Walk callback; anything but EQ_OK stops the walk and eq_repo_walk()
 * returns that code. */
typedef eq_err (*eq_repo_walk_fn)(void *ctx, const struct eq_repo_pkg_ref *ref, struct eq_error *err);

/*
 * Loads (and verifies, per @o) every release manifest of @repo, then calls
 * @fn for each package: manifests ordered by issue time, then board,
 * channel and release number (byte order for names), packages in manifest
 * (name) order. Nothing is called before every manifest has loaded, so a
 * bad manifest stops the walk before any package is seen.
 * Each manifest's board, channel and number must be those of its folder
 * (EQ_ERR_STATE otherwise, also unverified); folders in releases/ whose
 * names are not decimal numbers are ignored, a channel without releases/
 * has none.
 * Errors name the file: EQ_ERR_NOTFOUND (no boards/ folder, a missing .sig,
 * no root), EQ_ERR_VERIFY (a signature), EQ_ERR_PARSE (a malformed
 * manifest or root), EQ_ERR_LIMIT (more than EQ_REPO_WALK_MAX_MANIFESTS),
 * EQ_ERR_INVAL (not exactly one of trust, root_path, unverified), EQ_ERR_IO.
 */
EQ_API eq_err eq_repo_walk(const char *repo, const struct eq_repo_walk_opts *o, eq_repo_walk_fn fn, void *ctx,
			   struct eq_error *err) EQ_MUST_CHECK;

/* What eq_gen_equiv_import() did, per package visited. */
struct eq_import_report {
	size_t manifests, packages;
	size_t added;           /* taskhash mappings this import gave */
	size_t present;         /* already mapped to the manifest's unihash */
	size_t conflicts;       /* mapped to another unihash, or the unihash published with other bytes */
	size_t outhashes_added; /* (taskhash, outhash) rows recorded */
	size_t published_added; /* unihash -> payload rows recorded */
};

/* A conflict of eq_gen_equiv_import(): the store's answer is kept. @what
 * says which ("taskhash ... is mapped to ..."); @ref names the package. */
typedef void (*eq_import_conflict_fn)(void *ctx, const struct eq_repo_pkg_ref *ref, const char *what);

/*
 * Rebuilds the local store @s from the repository (eq_repo_walk() with @o),
 * method @method (NULL: EQ_PAYLOAD_METHOD). For each package, oldest first:
 *   1. report-equiv(taskhash -> unihash): insert-or-ignore;
 *   2. report(taskhash, outhash = payload sha256, proposed = unihash, pn, pv),
 *      so a later build with a new taskhash and the same output inherits
 *      the unihash;
 *   3. set_published(unihash -> payload and object), write-once.
 * A taskhash the store maps to another unihash is a conflict: steps 2 and
 * 3 are skipped for it. A unihash published with another payload is a
 * conflict too. Either way the store keeps its rows and @on_conflict (may
 * be NULL) is told. Importing twice adds nothing. @ret gets the counts,
 * on failure too: each row is its own transaction, so what was imported
 * before the failure stays (import again once the cause is fixed).
 * Errors: those of eq_repo_walk() (nothing is imported then, since every
 * manifest loads first) and of the store, prefixed with the manifest file
 * and package.
 */
EQ_API eq_err eq_gen_equiv_import(struct eq_store *s, const char *method, const char *repo,
				  const struct eq_repo_walk_opts *o, eq_import_conflict_fn on_conflict,
				  void *conflict_ctx, struct eq_import_report *ret, struct eq_error *err) EQ_MUST_CHECK;

/* ====================================================================== */
/* ==== Paths shipped by several packages (gen_conflict.c) ============== */
/* ====================================================================== */

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

/* ---- fleet (gen_fleet.c): where the fleet stands ------------------------
 *
 * Reads the reports devices POST (docs/fleet.md, "Reports"), one JSON
 * document per line as a web server appended them, and sums them up per
 * board, channel and release. Each line is checked; one that is not a
 * report is counted in `bad` (the first EQ_FLEET_MAX_ERRORS named as
 * "FILE:LINE: why") and changes nothing else.
 *
 * Who a report counts as: the "auth" member, which the collector
 * (eq_fleet_collect) writes from the TLS client certificate it verified and
 * which a device cannot set. The "device" member is chosen by the sender;
 * reports without "auth" are counted only with eq_fleet_opts.unauthenticated.
 * Each identity counts once per board, channel and release, by its last
 * report on it, however many device ids it writes.
 */
#define EQ_FLEET_REPORT_SCHEMA "eqota-report/1"
#define EQ_FLEET_DEVICE_LEN 32u
#define EQ_FLEET_AUTH_MEMBER "auth"
#define EQ_FLEET_IDENTITY_MAX 128u
#define EQ_FLEET_MAX_ERRORS 5u
#define EQ_FLEET_MAX_REASONS 5u

struct eq_fleet_reason {
	char *text; /* as the devices sent it (at most 256 bytes): hostile, escape it */
	size_t devices;
};

/* Sorted times (seconds since 1970), one per device. */
struct eq_fleet_times {
	int64_t *v;
	size_t n, cap;
};

/* One release, over the devices that reported on it. A device counts once
 * per release, by its reports on that release, the last one deciding. */
struct eq_fleet_release {
	uint64_t number;
	char release[EQ_MANIFEST_NAME_MAX + 1];
	size_t devices;                  /* reported anything on it */
	size_t running;                  /* their newest commit is this release: running it now */
	size_t committed;                /* committed it (some may have moved on) */
	size_t trying;                   /* installed it, no commit or rollback reported yet */
	size_t rolled_back;              /* last word: rolled back */
	size_t failed;                   /* failed to install it and never installed it */
	uint64_t bytes_total, bytes_max; /* downloaded for it, summed per device */
	struct eq_fleet_reason rolled_back_reasons[EQ_FLEET_MAX_REASONS];
	size_t n_rolled_back_reasons;
	struct eq_fleet_reason failed_reasons[EQ_FLEET_MAX_REASONS];
	size_t n_failed_reasons;
	/* For the chart: when each device first installed it, first committed
	 * it, and rolled back (devices whose last word is a rollback). */
	struct eq_fleet_times t_installed, t_committed, t_rolled_back;
};

struct eq_fleet_channel {
	char board[EQ_MANIFEST_NAME_MAX + 1];
	char channel[EQ_MANIFEST_NAME_MAX + 1];
	struct eq_fleet_release *releases; /* by number, ascending */
	size_t n_releases;
};

struct eq_fleet {
	size_t lines;           /* non-empty lines read */
	size_t reports;         /* lines that were reports */
	size_t bad;             /* lines that were not */
	size_t anonymous;       /* reports without a device id (counted nowhere else) */
	size_t unauthenticated; /* reports without "auth", not counted (opts.unauthenticated unset) */
	size_t uninventoried;   /* reports whose identity is not in opts.inventory, not counted */
	size_t devices;         /* distinct device ids per board and channel */
	int64_t first, last;
	char errors[EQ_FLEET_MAX_ERRORS][320];
	size_t n_errors;
	struct eq_fleet_channel *channels; /* in the order first seen */
	size_t n_channels;
};

struct eq_fleet_opts {
	/* Count reports without "auth" too, each under its "device" id: for a
	 * collector without client certificates, where anyone who reaches it
	 * can invent devices and their outcomes. */
	bool unauthenticated;
	/* A file of identities, one per line ('#' starts a comment): count only
	 * reports of these ("auth", or "device" for unauthenticated ones).
	 * NULL: every identity. */
	const char *inventory;
	/* Read only the reports on this board, channel and release number
	 * (NULL, NULL, 0: all): what `rollout --auto-halt` needs, and names
	 * other reports invent then fill no cap. */
	const char *board, *channel;
	uint64_t number;
};

/* Reads every file of @files (at most 20 million reports in all; a file
 * that cannot be read is an error naming it). @opts NULL: the defaults
 * (authenticated reports only, no inventory). The names a file can make
 * it hold are capped (1024 board/channel pairs, 65536 releases, 65536
 * distinct reasons kept, the rest counted as one): a line past a cap is a
 * bad line. EQ_ERR_PARSE for a bad inventory line. Free with eq_fleet_free(). */
EQ_API eq_err eq_fleet_read(const char *const *files, size_t n_files, const struct eq_fleet_opts *opts,
			    struct eq_fleet **ret, struct eq_error *err) EQ_MUST_CHECK;
/* The collector's check of one POSTed report (@body, @len bytes): it must
 * be a report eq_fleet_read() counts, without an "auth" member. Fills
 * *ret_line with the line to append (no newline; free with eq_free()): the
 * report printed again as one line of JSON, with "auth": @identity when
 * @identity is not NULL (the verified client certificate's name).
 * EQ_ERR_PARSE (not a report: why), EQ_ERR_VERIFY ("auth" sent by the
 * device, or @identity not 1 to EQ_FLEET_IDENTITY_MAX printable ASCII
 * characters without '"' or '\\'), EQ_ERR_LIMIT (over 4096 bytes), EQ_ERR_NOMEM. */
EQ_API eq_err eq_fleet_collect(const char *body, size_t len, const char *identity, char **ret_line,
			       struct eq_error *err) EQ_MUST_CHECK;
/* Whether @s (@len bytes) may be an identity: see eq_fleet_collect(). */
EQ_API bool eq_fleet_identity_ok(const char *s, size_t len);
EQ_API void eq_fleet_free(struct eq_fleet *f);
/* The release, NULL when no report names it. */
EQ_API const struct eq_fleet_release *eq_fleet_find(const struct eq_fleet *f, const char *board, const char *channel,
						    uint64_t number);
/* The share of the devices that installed @r which rolled back: what
 * `eqota-gen rollout --auto-halt` compares with its ratio. 0 when none. */
EQ_API double eq_fleet_rollback_share(const struct eq_fleet_release *r);

enum eq_fleet_format { EQ_FLEET_TEXT, EQ_FLEET_JSON, EQ_FLEET_HTML };
#define EQ_FLEET_JSON_SCHEMA "eqota-gen-fleet/1"
/* Writes the summary: text for people, JSON (EQ_FLEET_JSON_SCHEMA, see
 * docs/json-output.md) for tools, or one self-contained HTML page (no
 * script, font or image from elsewhere) with the rollout of each release
 * over time as an inline SVG chart. @now is printed as the time of the
 * summary. EQ_ERR_IO when @out fails. */
EQ_API eq_err eq_fleet_write(const struct eq_fleet *f, enum eq_fleet_format fmt, int64_t now, FILE *out,
			     struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
