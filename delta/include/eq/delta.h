/*
 * eq_delta: the canonical package payload (write, read, safe extract, hash),
 * full objects (zstd-compressed payloads) and binary deltas between payloads
 * (zstd with the old payload as reference, executables pre-filtered).
 *
 * Depends on eq_base and libzstd only; it runs on the device and on the host.
 */
#ifndef EQ_DELTA_H
#define EQ_DELTA_H

#include <eq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The outhash method name under which a payload's SHA-256 is reported. */
#define EQ_PAYLOAD_METHOD "eqota-payload-v1"

/* Byte sink used by writers: returns EQ_OK or fills @err. */
typedef eq_err (*eq_write_fn)(void *ctx, const void *data, size_t len, struct eq_error *err);
/* Byte source used by readers: stores the count read in *ret_n, 0 at end. */
typedef eq_err (*eq_read_fn)(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err);

/* Sinks and sources over a file descriptor (ctx points to an int). */
EQ_API eq_err eq_fd_write(void *ctx, const void *data, size_t len, struct eq_error *err);
EQ_API eq_err eq_fd_read(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err);
/* A source over bytes in memory (ctx points to a struct eq_mem_src), and a
 * sink appending to a struct eq_buf (ctx; EQ_ERR_LIMIT past its max). */
struct eq_mem_src {
	const uint8_t *data;
	size_t len, pos;
};
EQ_API eq_err eq_mem_read(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err);
EQ_API eq_err eq_buf_write(void *ctx, const void *data, size_t len, struct eq_error *err);

/* ---- limits ---------------------------------------------------------- */

/* Caps on everything a payload may declare. Zero fields mean "default". */
struct eq_payload_limits {
	uint64_t max_entries;   /* default 1,000,000 */
	size_t max_path;        /* bytes of a path, default 4096 */
	uint64_t max_file_size; /* default 4 GiB */
	uint64_t max_total;     /* sum of file sizes, default 64 GiB */
	size_t max_xattr_size;  /* one value, default 64 KiB */
	size_t max_xattrs;      /* per entry, default 64 */
};
EQ_API void eq_payload_limits_default(struct eq_payload_limits *l);
/* @out = the defaults, overridden by every non-zero field of @in (may be NULL). */
EQ_API void eq_payload_limits_resolve(const struct eq_payload_limits *in, struct eq_payload_limits *out);

/* ---- entries --------------------------------------------------------- */

enum eq_entry_type {
	EQ_ENTRY_FILE,
	EQ_ENTRY_DIR,
	EQ_ENTRY_SYMLINK,
	EQ_ENTRY_HARDLINK,
	EQ_ENTRY_CHR,
	EQ_ENTRY_BLK,
	EQ_ENTRY_FIFO,
};

struct eq_xattr {
	char *name;     /* e.g. "security.capability" */
	uint8_t *value; /* binary */
	size_t len;
};

/*
 * One payload entry. In entries handed out by the library every pointer is
 * owned by the object that handed it out and valid until its next call.
 * In entries handed in (eq_payload_builder_add) the builder copies what it
 * keeps.
 */
struct eq_payload_entry {
	const char *path; /* relative, '/'-separated, no "./", no trailing '/' */
	enum eq_entry_type type;
	uint32_t mode; /* permission bits including setuid/setgid/sticky (07777) */
	uint32_t uid, gid;
	uint64_t size;    /* regular files only */
	const char *link; /* symlink target, or hard link's target path */
	uint32_t devmajor, devminor;
	const struct eq_xattr *xattrs;
	size_t n_xattrs;
};

/* ---- writer ---------------------------------------------------------- */

/*
 * Collects entries and writes the canonical payload: a POSIX tar (ustar with
 * pax extended headers where needed) whose bytes depend on the content alone:
 * entries sorted by path, mtime 0, no user/group names, numeric owners, mode,
 * links, device numbers and xattrs kept.
 */
struct eq_payload_builder;

EQ_API eq_err eq_payload_builder_new(const struct eq_payload_limits *limits, struct eq_payload_builder **ret,
				     struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_payload_builder_free(struct eq_payload_builder *b);

/*
 * Adds one entry. For regular files the data is read at write time from
 * @data_fd at @data_offset (@e->size bytes); the fd stays owned by the caller
 * and must stay open until eq_payload_builder_write() returns. Duplicate
 * paths are an error.
 */
EQ_API eq_err eq_payload_builder_add(struct eq_payload_builder *b, const struct eq_payload_entry *e, int data_fd,
				     uint64_t data_offset, struct eq_error *err) EQ_MUST_CHECK;

/* Adds every entry below directory @root (the root itself is not an entry). */
EQ_API eq_err eq_payload_builder_add_tree(struct eq_payload_builder *b, const char *root,
					  struct eq_error *err) EQ_MUST_CHECK;

/*
 * Adds the listed paths (relative to @root) as found on disk: how a device
 * rebuilds the payload of a package it has installed from the package's
 * recorded file list. Symlinks are not followed.
 */
EQ_API eq_err eq_payload_builder_add_paths(struct eq_payload_builder *b, const char *root, const char *const *paths,
					   size_t n_paths, struct eq_error *err) EQ_MUST_CHECK;

/* Number of entries added so far. */
EQ_API size_t eq_payload_builder_count(const struct eq_payload_builder *b);

/*
 * Removes the entry @path (as added: relative, a leading "./" is ignored)
 * so the payload is written without it; nothing else changes (a removed
 * directory's children stay). When entries of the payload are hard links to
 * @path, the first of them in path order becomes the file in its place
 * (same data, metadata and xattrs) and the others link to it. The
 * publisher uses this to leave a path a package shares with another to its
 * owner (eqota-gen publish --path-owner). *ret_removed (may be NULL) tells
 * whether the path was there; a missing path is not an error.
 * EQ_ERR_NOMEM only; on failure the builder is unchanged.
 */
EQ_API eq_err eq_payload_builder_remove(struct eq_payload_builder *b, const char *path, bool *ret_removed,
					struct eq_error *err) EQ_MUST_CHECK;

/*
 * Writes the canonical payload to @sink. On success returns its SHA-256 and
 * size. A file whose size changed since it was added is an error.
 */
EQ_API eq_err eq_payload_builder_write(struct eq_payload_builder *b, eq_write_fn sink, void *sink_ctx,
				       uint8_t ret_sha256[EQ_SHA256_LEN], uint64_t *ret_size,
				       struct eq_error *err) EQ_MUST_CHECK;

/* ---- reader ---------------------------------------------------------- */

/* Streaming reader of a payload (any POSIX tar this module writes). */
struct eq_payload_reader;

EQ_API eq_err eq_payload_reader_new(eq_read_fn src, void *src_ctx, const struct eq_payload_limits *limits,
				    struct eq_payload_reader **ret, struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_payload_reader_free(struct eq_payload_reader *r);

/*
 * Reads the next header. On success *ret_entry points into the reader (valid
 * until the next call) or is NULL at the end of the payload. Errors name the
 * entry and its byte offset.
 */
EQ_API eq_err eq_payload_reader_next(struct eq_payload_reader *r, const struct eq_payload_entry **ret_entry,
				     struct eq_error *err) EQ_MUST_CHECK;

/* Reads up to @len bytes of the current file's data; *ret_n is 0 at its end.
 * Unread data is skipped by the next eq_payload_reader_next(). */
EQ_API eq_err eq_payload_reader_read(struct eq_payload_reader *r, void *buf, size_t len, size_t *ret_n,
				     struct eq_error *err) EQ_MUST_CHECK;

/* Whether the payload keeps xattr @name (docs/internals/payload.md): user.*
 * and security.* except LSM labels (SELinux, Smack, AppArmor), which the
 * policy of the system the files sit on assigns. Whoever copies files that a
 * payload describes (the device's keep copy, [persist]) uses the same rule. */
EQ_API bool eq_payload_xattr_kept(const char *name);

/* A digest of @n xattrs, in the order given (a payload's: by name): SHA-256
 * over each name with its NUL, its value's length as a uint64_t in host byte
 * order, and its value; all zero when @n is 0. Two entries have the same
 * xattrs, sorted by name, exactly when their digests match, so whoever
 * compares entries (image-check, the publisher's path table) keeps the
 * digest, not the values. Kept in the publisher's cache, never in a payload. */
EQ_API void eq_payload_xattr_digest(const struct eq_xattr *x, size_t n, uint8_t ret_sha256[EQ_SHA256_LEN]);

/* Reads the rest of the current file's data through @buf (@len bytes, the
 * caller's) and returns its SHA-256 and the number of bytes read, which the
 * caller compares with the entry's size where it matters. */
EQ_API eq_err eq_payload_reader_hash(struct eq_payload_reader *r, void *buf, size_t len,
				     uint8_t ret_sha256[EQ_SHA256_LEN], uint64_t *ret_n,
				     struct eq_error *err) EQ_MUST_CHECK;

/* ---- path rules ------------------------------------------------------ */

/*
 * The rules every payload entry must pass, in one function that both the
 * device (eq_payload_extract) and the publisher (eqota-gen publish) run:
 *  - the path is relative, not empty, with no empty, "." or ".." component,
 *    at most limits->max_path bytes, each component at most
 *    EQ_PAYLOAD_NAME_MAX bytes (EQ_ERR_UNSAFE, EQ_ERR_LIMIT);
 *  - it is not EQ_PAYLOAD_RESERVED_DIR or below it, and no non-directory
 *    replaces a folder on the way to it ("usr", "usr/lib", "usr/lib/eqota"):
 *    the agent writes its own records there (EQ_ERR_UNSAFE);
 *  - it appears once (EQ_ERR_PARSE "duplicate entry");
 *  - no parent is a symlink or another non-directory of the same payload
 *    (EQ_ERR_UNSAFE);
 *  - a hard link names an earlier non-directory of the payload; link
 *    targets are not empty and at most max_path bytes.
 * Entries must be handed in payload order. Messages describe the problem
 * only; callers name the entry.
 */
#define EQ_PAYLOAD_RESERVED_DIR "usr/lib/eqota/slot"
#define EQ_PAYLOAD_NAME_MAX 255u

struct eq_payload_checker;
/* Free with eq_payload_checker_free() (NULL allowed). */
EQ_API eq_err eq_payload_checker_new(const struct eq_payload_limits *limits, struct eq_payload_checker **ret,
				     struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_payload_checker_free(struct eq_payload_checker *c);
/* Checks @e against the rules and the entries added before; remembers it
 * on EQ_OK (the checker copies what it keeps). */
EQ_API eq_err eq_payload_checker_add(struct eq_payload_checker *c, const struct eq_payload_entry *e,
				     struct eq_error *err) EQ_MUST_CHECK;

/* What eq_payload_check() saw that is allowed but deserves a look. */
struct eq_payload_findings {
	uint64_t entries;
	char **special;   /* "PATH (setuid)", "PATH (character device)", ...; owned */
	size_t n_special; /* setuid/setgid files and device nodes */
};
EQ_API void eq_payload_findings_done(struct eq_payload_findings *f);

/*
 * Reads a whole payload and runs the path rules over it as a device does.
 * Errors name the entry and its byte offset ("payload: entry 'P' at byte
 * N: ..."). On success *ret (may be NULL) is filled; free it with
 * eq_payload_findings_done().
 */
EQ_API eq_err eq_payload_check(eq_read_fn src, void *src_ctx, const struct eq_payload_limits *limits,
			       struct eq_payload_findings *ret, struct eq_error *err) EQ_MUST_CHECK;

/* ---- extract --------------------------------------------------------- */

/*
 * Extracts a payload under @root, which must exist. Every entry must pass
 * the path rules above (eq_payload_checker_add()), so entries in
 * EQ_PAYLOAD_RESERVED_DIR are refused. Every path is resolved inside @root
 * (openat2 RESOLVE_IN_ROOT where the kernel has it): absolute paths, ".."
 * and symlinks leading outside are refused with EQ_ERR_UNSAFE naming the
 * entry. Where an entry lands after the symlinks already under @root
 * (another package's "lib -> usr/lib") is judged too, by device and inode:
 * in EQ_PAYLOAD_RESERVED_DIR, on it, or a non-directory on a folder on the
 * way to it is EQ_ERR_UNSAFE ("resolves into eqota's own folder"), as is a
 * hard link whose target lands there. Modes are always applied; owners and xattrs only with
 * @flags & EQ_EXTRACT_OWNERS (which needs root). Files are written under a temporary name
 * and renamed into place when complete; on failure every entry this call
 * created is removed again. If @ret_sha256 is not NULL it receives the hash
 * of the payload bytes read.
 */
#define EQ_EXTRACT_OWNERS 0x1u
EQ_API eq_err eq_payload_extract(eq_read_fn src, void *src_ctx, const char *root,
				 const struct eq_payload_limits *limits, unsigned flags,
				 uint8_t ret_sha256[EQ_SHA256_LEN], struct eq_error *err) EQ_MUST_CHECK;

/* ---- full objects ---------------------------------------------------- */

/* Window of objects: what a device's decoder allocates for one object. */
#define EQ_OBJECT_WINDOW_LOG 21
/* Says eq_object_compress's source did not say how many bytes it yields. */
#define EQ_OBJECT_SIZE_UNKNOWN UINT64_MAX
/* zstd-compresses @src into @sink at @level (1..22; 19 for publishing).
 * @src_size is the exact number of bytes @src yields, or
 * EQ_OBJECT_SIZE_UNKNOWN. A known size is written into the frame and lets
 * zstd size its tables to the input: without it every object, however
 * small, pays for tables sized to the whole window (measured: a 20 KB
 * payload at level 12 costs 180 ms instead of 11 ms). A source that yields
 * another number of bytes than @src_size is EQ_ERR_VERIFY. */
EQ_API eq_err eq_object_compress(eq_read_fn src, void *src_ctx, uint64_t src_size, eq_write_fn sink, void *sink_ctx,
				 int level, struct eq_error *err) EQ_MUST_CHECK;

/* Decompresses an object; refuses to produce more than @max_out bytes or to
 * use a window larger than 2^@max_window_log (0 = 27). */
EQ_API eq_err eq_object_decompress(eq_read_fn src, void *src_ctx, eq_write_fn sink, void *sink_ctx, uint64_t max_out,
				   unsigned max_window_log, struct eq_error *err) EQ_MUST_CHECK;

/* ---- deltas ---------------------------------------------------------- */

struct eq_delta_params {
	int level;               /* zstd level, default 19 */
	unsigned window_log;     /* method 0: 0 = smallest power of two covering the reference */
	bool exec_filter;        /* pre-filter ELF code (x86-64, AArch64), default true */
	unsigned methods;        /* mask of 1u << EQ_DELTA_METHOD_* to try; 0 = all built in (default) */
	unsigned max_window_log; /* method 0 only when its window fits 2^this (device memory
				  * beyond the reference); default EQ_DELTA_DEVICE_WINDOW_LOG */
	bool deflate;            /* see through gzip files (EQ_DELTA_FILTER_DEFLATE), default true */
	unsigned threads;        /* filter trials run at once, 1..EQ_DELTA_MAX_THREADS, default 1;
				  * each holds its own copy of the payloads (see eq_delta_create()) */
};
/* More trials than this never run at once. */
#define EQ_DELTA_MAX_THREADS 8u
/* Method 0 keeps reference + result window in memory; above 4 MiB of window
 * the bsdiff-class method (1 MiB stream windows) serves small devices better. */
#define EQ_DELTA_DEVICE_WINDOW_LOG 22u
EQ_API void eq_delta_params_default(struct eq_delta_params *p);

/*
 * Creates a delta that turns payload @old_path into payload @new_path and
 * writes it to @sink. The delta records both payloads' SHA-256 and the new
 * size; *ret_size receives the delta's size. With @p->exec_filter the delta
 * is made without the executable filter and with each of its modes
 * (branches, data references, both), and the smallest one is kept. Where
 * built with EQ_DELTA_CREATE_BSD (host tools), method 1 (bsdiff-class) is
 * also tried, unfiltered and with the best filter mode of method 0, and the
 * smallest delta of all is written; the same inputs always give the same
 * bytes. @p NULL means defaults; levels 1..22 (20..22 are zstd's "ultra"
 * levels: better and much more memory on the host, none more on the
 * device). Host-side: both payloads are held in memory (twice with the
 * filter), plus 4 bytes per reference byte for method 1's suffix array.
 * EQ_ERR_INVAL for bad parameters, EQ_ERR_UNSUPPORTED if @p->methods names
 * only methods not built in.
 */
EQ_API eq_err eq_delta_create(const char *old_path, const char *new_path, const struct eq_delta_params *p,
			      eq_write_fn sink, void *sink_ctx, uint64_t *ret_size, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Applies a delta read from @src to the reference payload in file @ref_path
 * and streams the result to @sink. Fails with EQ_ERR_VERIFY if the reference
 * is not the one the delta was made from, or the result's SHA-256 is not
 * @expect_sha256 (which may be NULL to trust the delta's own record).
 * Memory: see eq_delta_apply_mem_bound(). Nothing is written to @sink
 * beyond what the delta declares. Output is verified only at the end: write
 * it to a temporary file and use that only after EQ_OK. Default caps and
 * error codes: see eq_delta_apply_limited().
 */
EQ_API eq_err eq_delta_apply(const char *ref_path, eq_read_fn src, void *src_ctx, eq_write_fn sink, void *sink_ctx,
			     const uint8_t expect_sha256[EQ_SHA256_LEN], struct eq_error *err) EQ_MUST_CHECK;

/* Upper bound in bytes of the memory eq_delta_apply() uses for a reference
 * of @ref_size bytes and a delta whose header says window 2^@window_log,
 * for either method: ref_size + 2^window_log + 4 MiB (zstd contexts, block
 * and stream buffers, method 1's segment buffer, the executable filter's
 * 256 KiB). Of this, only 2^window_log + 4 MiB is anonymous memory: the
 * reference is read through a read-only mapping of its file, and its
 * filtered (and expanded) image is written to an unnamed scratch file in
 * the reference's folder (blocks allocated up front) mapped shared, so its
 * pages are page cache the kernel may write back and drop. Only where no
 * scratch file can be made is the image in memory. For method 1 the
 * header's window covers its three stream windows together. The formula
 * and its measurement are in docs/internals/delta.md.
 * Saturates at UINT64_MAX. A deflate-aware delta also holds the expanded
 * reference and its region table: see eq_delta_apply_mem_bound_deflate(). */
EQ_API uint64_t eq_delta_apply_mem_bound(uint64_t ref_size, unsigned window_log);

/* The bound for a delta with EQ_DELTA_FILTER_DEFLATE, whose preamble
 * declares an expanded reference of @xref_size bytes and @regions gzip
 * regions: eq_delta_apply_mem_bound(ref_size, window_log) + xref_size +
 * 24 * regions + 3 KiB (the reference image is unmapped once expanded, but
 * both exist while expanding). The images are file-backed as above, so the
 * anonymous part is 2^window_log + 4 MiB + 24 * regions + 3 KiB. */
EQ_API uint64_t eq_delta_apply_mem_bound_deflate(uint64_t ref_size, uint64_t xref_size, uint64_t regions,
						 unsigned window_log);

/*
 * The delta format ("EQD1", docs/internals/delta.md): a fixed header of
 * EQ_DELTA_HEADER_SIZE bytes, then the body of the header's method.
 * Method 0: one zstd frame whose content is the new payload (filtered if
 * the header says so) compressed with the (filtered) reference payload as
 * prefix. Method 1: bsdiff-class control, diff and extra streams, each one
 * zstd frame, in segments. All integers little-endian.
 *
 *   0  magic "EQD1"        4  version (1)     5  filter mask (0..7)
 *   6  window log          7  method (0, 1)   8  reference size (u64)
 *  16  reference SHA-256  48  result size (u64)
 *  56  result SHA-256     88  first 8 bytes of SHA-256 of bytes 0..87
 *
 * Byte 7 was a flags byte that had to be 0, so method-0 deltas are
 * unchanged and older decoders refuse method 1 as unsupported.
 */
#define EQ_DELTA_HEADER_SIZE 96
#define EQ_DELTA_METHOD_ZSTD 0u /* zstd with the reference as prefix */
#define EQ_DELTA_METHOD_BSD 1u  /* bsdiff-class streams, zstd-compressed */
/* The filter byte is a mask; 0 means no filter. */
#define EQ_DELTA_FILTER_NONE 0u
#define EQ_DELTA_FILTER_BRANCH 0x1u /* x86-64 call/jmp rel32, AArch64 BL */
#define EQ_DELTA_FILTER_DATA 0x2u   /* x86-64 RIP-relative disp32, AArch64 ADRP */
/* gzip files inside the payloads are diffed in their puffed form; a
 * preamble after the header records the expanded sizes and the regions
 * to re-encode (docs/internals/delta.md, "Deflate-aware deltas"). */
#define EQ_DELTA_FILTER_DEFLATE 0x4u

/* What a delta header records. Plain value struct. */
struct eq_delta_info {
	unsigned version;
	unsigned method;     /* EQ_DELTA_METHOD_* */
	unsigned filter;     /* mask of EQ_DELTA_FILTER_* */
	unsigned window_log; /* the decoder needs a 2^window_log window */
	uint64_t ref_size, result_size;
	uint8_t ref_sha256[EQ_SHA256_LEN];
	uint8_t result_sha256[EQ_SHA256_LEN];
};

/* Parses the first EQ_DELTA_HEADER_SIZE bytes of a delta. EQ_ERR_PARSE for
 * a short or corrupted header, EQ_ERR_UNSUPPORTED for an unknown version,
 * filter or method. */
EQ_API eq_err eq_delta_info_parse(const uint8_t *data, size_t len, struct eq_delta_info *ret_info,
				  struct eq_error *err) EQ_MUST_CHECK;

/* Caps the decoder enforces before it allocates anything. Zero = default. */
struct eq_delta_limits {
	unsigned max_window_log;  /* default 31 on 64-bit hosts, 30 on 32-bit */
	uint64_t max_ref_size;    /* default 4 GiB (1 GiB on 32-bit) */
	uint64_t max_result_size; /* default 4 GiB */
};
EQ_API void eq_delta_limits_default(struct eq_delta_limits *l);

/*
 * eq_delta_apply() with explicit caps (NULL = defaults): a delta needing a
 * larger window, reference or result fails with EQ_ERR_LIMIT before any
 * allocation. Other errors: EQ_ERR_PARSE (bad header, corrupted or
 * truncated frame, output longer or shorter than declared), EQ_ERR_VERIFY
 * (wrong reference, which is checked before anything is written; zstd
 * checksum; result hash), EQ_ERR_IO/EQ_ERR_NOTFOUND (reference file), or
 * whatever @src and @sink return.
 *
 * Output reaches @sink while it is produced and is verified only at the
 * end, so a failing delta may already have written up to the declared
 * result size: callers write to a temporary file and use it only after
 * success (the installer does).
 */
EQ_API eq_err eq_delta_apply_limited(const char *ref_path, eq_read_fn src, void *src_ctx, eq_write_fn sink,
				     void *sink_ctx, const uint8_t expect_sha256[EQ_SHA256_LEN],
				     const struct eq_delta_limits *limits, struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
