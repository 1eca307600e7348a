/*
 * eq_base: the error type, the logger, allocation with a test hook, bounded
 * buffers, SHA-256, hex and the atomic file write. Every module may use it;
 * it uses no module.
 */
#ifndef EQ_COMMON_H
#define EQ_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EQ_MUST_CHECK __attribute__((warn_unused_result))
#define EQ_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define EQ_API __attribute__((visibility("default")))

/* Error categories. Callers branch on these, never on the message text. */
typedef enum {
	EQ_OK = 0,
	EQ_ERR_NOMEM,       /* allocation failed */
	EQ_ERR_IO,          /* read/write/open of a file or device failed */
	EQ_ERR_PARSE,       /* malformed input: JSON, tar, config, delta header */
	EQ_ERR_VERIFY,      /* hash or signature mismatch, untrusted key */
	EQ_ERR_NETWORK,     /* transfer failed */
	EQ_ERR_LIMIT,       /* a size, count or length cap was exceeded */
	EQ_ERR_STATE,       /* operation not valid in the current state */
	EQ_ERR_INVAL,       /* bad argument or option value from the user */
	EQ_ERR_NOTFOUND,    /* file, package, release or key does not exist */
	EQ_ERR_UNSUPPORTED, /* format version or feature not supported */
	EQ_ERR_EXPIRED,     /* signed metadata past its expiry time */
	EQ_ERR_UNSAFE,      /* path escapes its root, or similar attack */
	EQ_ERR_STOPPED,     /* stopped on request (SIGTERM) at a safe point */
	EQ_ERR__COUNT
} eq_err;

#define EQ_ERROR_MSG_MAX 512

/*
 * Error detail filled by a failing function. Fixed size so the out-of-memory
 * path can report without allocating. Pass NULL where the detail is not
 * wanted.
 *
 * The rule, for every caller: the innermost failure (the root cause) writes
 * the message with eq_error_set() or eq_error_errno(); each layer above keeps
 * it and adds its context in front with eq_error_prefix(), giving
 * "manifest.json: packages[3].unihash: expected 64 hex chars". A layer calls
 * eq_error_set() on an @err a callee has filled only when it replaces a code
 * it tests for by name (r == EQ_ERR_NOTFOUND becoming "provision it
 * first"), where its own words say more than the callee's. A helper that
 * formats a message and adds fixed context takes a va_list, writes the
 * message with eq_error_setv() and the context with eq_error_prefix(), never
 * through a buffer of its own.
 */
struct eq_error {
	eq_err code;
	int sys_errno; /* errno saved at the failure, 0 if none */
	char msg[EQ_ERROR_MSG_MAX];
};

/* Static, never-NULL name of a code ("I/O error", ...). */
EQ_API const char *eq_err_str(eq_err code);

/* Resets @err to EQ_OK with an empty message. NULL is allowed. */
EQ_API void eq_error_clear(struct eq_error *err);

/* Writes code and message to @err (if not NULL) and returns @code, so
 * "return eq_error_set(err, EQ_ERR_IO, ...);" fits on one line. */
EQ_API eq_err eq_error_set(struct eq_error *err, eq_err code, const char *fmt, ...) EQ_PRINTF(3, 4);

/* Like eq_error_set() and appends ": strerror(errno)"; saves errno. */
EQ_API eq_err eq_error_errno(struct eq_error *err, eq_err code, const char *fmt, ...) EQ_PRINTF(3, 4);

/* eq_error_set() and eq_error_errno() for helpers that take "...": @ap is
 * consumed. eq_error_errnov() appends strerror(@saved_errno) (EIO if 0), the
 * errno the helper saved on entry, before its own calls could change it. */
EQ_API eq_err eq_error_setv(struct eq_error *err, eq_err code, const char *fmt, va_list ap) EQ_PRINTF(3, 0);
EQ_API eq_err eq_error_errnov(struct eq_error *err, eq_err code, int saved_errno, const char *fmt, va_list ap)
	EQ_PRINTF(4, 0);

/* Prepends "CONTEXT: " to the message already in @err, sets @err's code to
 * @code and returns @code, so "return eq_error_prefix(err, r, ...);" returns
 * the same code whether or not @err is NULL. @code must not be EQ_OK. */
EQ_API eq_err eq_error_prefix(struct eq_error *err, eq_err code, const char *fmt, ...) EQ_PRINTF(3, 4);

/* Message text of @err, or the code's name when the message is empty. */
EQ_API const char *eq_error_msg(const struct eq_error *err);

/* ---- logging ---------------------------------------------------------- */

/* syslog levels. Library modules log only at EQ_LOG_DEBUG. */
enum eq_log_level {
	EQ_LOG_ERR = 3,
	EQ_LOG_WARNING = 4,
	EQ_LOG_NOTICE = 5,
	EQ_LOG_INFO = 6,
	EQ_LOG_DEBUG = 7,
};

/* The process-wide log threshold; messages above it are dropped. */
EQ_API void eq_log_set_level(enum eq_log_level level);
EQ_API enum eq_log_level eq_log_get_level(void);

/* Writes "<level>: message" to stderr (with the "<N>" syslog prefix
 * journald understands when stderr is not a terminal). Debug lines carry
 * file:line. Use the eq_log() macro. */
EQ_API void eq_log_at(enum eq_log_level level, const char *file, int line, const char *fmt, ...) EQ_PRINTF(4, 5);
#define eq_log(level, ...) eq_log_at((level), __FILE__, __LINE__, __VA_ARGS__)

/* ---- allocation ------------------------------------------------------- */

/* malloc family, with the allocation-failure hook in builds with test
 * hooks. Free with eq_free() (or free()). */
EQ_API void *eq_malloc(size_t n);
EQ_API void *eq_calloc(size_t n, size_t size);
EQ_API void *eq_realloc(void *p, size_t n);
EQ_API char *eq_strdup(const char *s);
EQ_API char *eq_strndup(const char *s, size_t n);
/* Returns a malloc'ed formatted string (caller frees), NULL on OOM. */
EQ_API char *eq_asprintf(const char *fmt, ...) EQ_PRINTF(1, 2);
EQ_API void eq_free(void *p);

#ifdef EQ_TEST_HOOKS
/* Builds with test hooks only (EQ_TEST_HOOKS): make the @n-th allocation
 * from now fail (0 disables). Returns how many allocations were made since
 * the last call. */
EQ_API unsigned long eq_alloc_fail_at(unsigned long n);
#endif

static inline void eq_freep(void *p)
{
	eq_free(*(void **)p);
}
#define EQ_AUTOFREE __attribute__((cleanup(eq_freep)))
static inline void *eq_steal_ptr_(void **p)
{
	void *r = *p;
	*p = NULL;
	return r;
}
#define eq_steal_ptr(p) eq_steal_ptr_((void **)&(p))

/* ---- bounded buffer --------------------------------------------------- */

/*
 * A growable byte buffer that refuses to grow past @max. Caller-owned
 * struct: eq_buf_init() cannot fail, eq_buf_done() frees the data. The data
 * is always NUL-terminated (not counted in len) so text can be used as a
 * C string.
 */
struct eq_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t max;
};

EQ_API void eq_buf_init(struct eq_buf *b, size_t max);
EQ_API void eq_buf_done(struct eq_buf *b);
EQ_API void eq_buf_reset(struct eq_buf *b);
/* EQ_ERR_LIMIT past max, EQ_ERR_NOMEM. */
EQ_API eq_err eq_buf_append(struct eq_buf *b, const void *data, size_t len, struct eq_error *err) EQ_MUST_CHECK;
EQ_API eq_err eq_buf_printf(struct eq_buf *b, struct eq_error *err, const char *fmt, ...) EQ_PRINTF(3, 4) EQ_MUST_CHECK;
/* Hands the data out (caller frees with eq_free) and resets the buffer. */
EQ_API uint8_t *eq_buf_steal(struct eq_buf *b, size_t *ret_len);

/* ---- files ------------------------------------------------------------ */

/*
 * Replaces @path with @len bytes of @data so that after a power cut the file
 * holds either the old or the new content: write a temporary file in the same
 * directory, fflush, fsync, rename over @path, fsync the directory.
 */
EQ_API eq_err eq_file_replace_atomic(const char *path, const void *data, size_t len, mode_t mode,
				     struct eq_error *err) EQ_MUST_CHECK;

/* Reads a whole file of at most @max bytes into a new NUL-terminated buffer
 * (caller frees with eq_free). EQ_ERR_LIMIT if larger, EQ_ERR_NOTFOUND if
 * missing. */
EQ_API eq_err eq_file_read_all(const char *path, size_t max, uint8_t **ret_data, size_t *ret_len,
			       struct eq_error *err) EQ_MUST_CHECK;

/* fsync of the directory containing @path (or of @path if a directory). */
EQ_API eq_err eq_fsync_dir_of(const char *path, struct eq_error *err) EQ_MUST_CHECK;

/* mkdir -p with @mode for the created components. */
EQ_API eq_err eq_mkdir_p(const char *path, mode_t mode, struct eq_error *err) EQ_MUST_CHECK;

/* rm -rf; a missing @path is not an error. */
EQ_API eq_err eq_rm_rf(const char *path, struct eq_error *err) EQ_MUST_CHECK;

/* rm -rf of entry @name of the open folder @dirfd, following no symbolic
 * link (a link is removed, not what it points to); @shown names it in
 * messages. A missing entry is not an error. */
EQ_API eq_err eq_rm_rf_at(int dirfd, const char *name, const char *shown, struct eq_error *err) EQ_MUST_CHECK;

/*
 * The numbers that name entries of @dir, ascending: names made of decimal
 * digits (exactly @width of them when @width > 0) followed by @suffix
 * ("" for none). Other names, and numbers beyond 64 bits, are skipped. A
 * missing @dir gives none. *ret is allocated; the caller frees it with eq_free.
 */
EQ_API eq_err eq_dir_numbers(const char *dir, const char *suffix, unsigned width, uint64_t **ret, size_t *ret_n,
			     struct eq_error *err) EQ_MUST_CHECK;

/* Writes all of @len bytes, retrying on EINTR and short writes. */
EQ_API eq_err eq_write_all(int fd, const void *data, size_t len, struct eq_error *err) EQ_MUST_CHECK;

/* ---- SHA-256 and hex -------------------------------------------------- */

#define EQ_SHA256_LEN 32
#define EQ_SHA256_HEX_LEN 64

/* Streaming SHA-256 (FIPS 180-4; the x86-64 SHA instructions where the
 * processor has them). Caller-owned, no cleanup needed beyond
 * eq_sha256_final(). */
struct eq_sha256 {
	_Alignas(16) unsigned char opaque[256];
};
EQ_API void eq_sha256_init(struct eq_sha256 *s);
EQ_API void eq_sha256_update(struct eq_sha256 *s, const void *data, size_t len);
EQ_API void eq_sha256_final(struct eq_sha256 *s, uint8_t out[EQ_SHA256_LEN]);
EQ_API void eq_sha256(const void *data, size_t len, uint8_t out[EQ_SHA256_LEN]);
/* Which compression this process uses: "portable" or "x86-64 SHA extensions". */
EQ_API const char *eq_sha256_impl(void);
/* Hashes a file's content. */
EQ_API eq_err eq_sha256_file(const char *path, uint8_t out[EQ_SHA256_LEN], uint64_t *ret_size,
			     struct eq_error *err) EQ_MUST_CHECK;

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32() and U-Boot's
 * environment use) of @len bytes. Bitwise: for small buffers only. */
EQ_API uint32_t eq_crc32(const void *data, size_t len);

/* Lower-case hex of @len bytes into @out (2*len+1 bytes, NUL-terminated). */
EQ_API void eq_hex_encode(const uint8_t *in, size_t len, char *out);
/* Value of one hex digit (either case), -1 for anything else. */
EQ_API int eq_hex_digit(char c);
/* Parses exactly 2*@len hex digits (either case). false on any other input. */
EQ_API bool eq_hex_decode(const char *hex, uint8_t *out, size_t len);
/* true if @s is exactly 64 lower-case hex digits. */
EQ_API bool eq_is_sha256_hex(const char *s);

/* ---- decimal numbers --------------------------------------------------- */

/*
 * The one parser of decimal numbers from outside the program (files,
 * network, reports, names in a folder): exactly the @len bytes at @s (no NUL
 * needed), decimal digits only (no sign, no space, no "0x"), no leading zero
 * except "0" itself, at most @max. One rule everywhere, so "007" and "7" can
 * never name one thing twice. Returns false, *@ret untouched, for anything
 * else.
 */
EQ_API bool eq_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *ret) EQ_MUST_CHECK;
/* As eq_parse_u64() with leading zeros accepted ("007" is 7). Only where a
 * real producer writes them (fixed-width names such as the report queue's,
 * a number a person types); say which at the call. */
EQ_API bool eq_parse_u64_padded(const char *s, size_t len, uint64_t max, uint64_t *ret) EQ_MUST_CHECK;

/* ---- text for messages ---------------------------------------------------- */

/*
 * Text from outside (a file name in a payload, a variable's value, a key)
 * made safe to quote in a message: printable ASCII is kept, every other
 * byte and the quote mark ' become '?', so the text cannot forge message or
 * log lines nor end its quotes; at most @size - 4 bytes, then "...". @size
 * is at least 4; returns @out. A NULL @s quotes as "".
 */
EQ_API const char *eq_quote(char *out, size_t size, const char *s);
/* The same for @len bytes that need not end in a NUL. */
EQ_API const char *eq_quote_n(char *out, size_t size, const char *s, size_t len);

/* How eq_format_size() rounds: to the nearest tenth, or up (a need) or
 * down (what is free), so "needs 1.3 MiB, has 1.2 MiB" never reads as
 * enough. */
enum eq_size_round { EQ_SIZE_NEAREST, EQ_SIZE_UP, EQ_SIZE_DOWN };
#define EQ_SIZE_STR_MAX 32
/* A byte count for people: "512 B", "1.5 KiB", ... up to TiB, one decimal
 * in binary units. Returns @out. */
EQ_API const char *eq_format_size(uint64_t v, enum eq_size_round round, char out[EQ_SIZE_STR_MAX]);

/* ---- parallel --------------------------------------------------------- */

/* Threads eq_parallel() runs at most. */
#define EQ_PARALLEL_MAX 64u

/*
 * Calls @fn(@ctx, i) for every i in [0, @n) on up to @threads threads (this
 * one included; at most EQ_PARALLEL_MAX) and returns when every call has
 * returned. Calls for different i run at once: @fn must only touch what
 * belongs to its i, or lock. A thread that cannot be started leaves its
 * share to the others, so this cannot fail.
 */
EQ_API void eq_parallel(size_t n, size_t threads, void (*fn)(void *ctx, size_t i), void *ctx);

/* ---- progress --------------------------------------------------------- */

/*
 * Progress of long work, reported through a callback and never through the
 * logger (STYLE 24). Units are bytes and items (packages).
 */
struct eq_progress {
	const char *what; /* "publish", "download", ... */
	const char *item; /* current item's name, may be NULL */
	uint64_t items_done, items_total;
	uint64_t bytes_done, bytes_total;
	double elapsed_s;
};
typedef void (*eq_progress_fn)(const struct eq_progress *p, void *ctx);

/* A ready-made reporter: on a terminal a live "\r" line with rate and time
 * left, otherwise a plain line at most every @interval_s seconds. @ctx must
 * point to a struct eq_progress_printer. */
struct eq_progress_printer {
	int fd;
	bool tty;
	double interval_s;
	double last_s;
};
EQ_API void eq_progress_printer_init(struct eq_progress_printer *pp, int fd);
EQ_API void eq_progress_print(const struct eq_progress *p, void *ctx);
/* Ends a live line with a newline (no-op when not a terminal). */
EQ_API void eq_progress_printer_done(struct eq_progress_printer *pp);

/* Monotonic seconds. */
EQ_API double eq_now_s(void);

/* ---- common/json.c ---------------------------------------------------- */

/*
 * Writes @s to @f as a quoted JSON string (RFC 8259): '"' and '\\' escaped,
 * control characters and DEL as \u00XX, valid UTF-8 as it is, and every byte
 * that is not part of a valid UTF-8 sequence as \ufffd. Whatever @s holds
 * (a release name, an error quoting a server), the output stays valid JSON.
 */
EQ_API void eq_json_put_str(FILE *f, const char *s);

#ifdef __cplusplus
}
#endif
#endif
