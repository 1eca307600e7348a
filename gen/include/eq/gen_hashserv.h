/*
 * eq_gen, client of a bitbake-hashserv server (gen_hashserv.c). Part of the
 * eq_gen library (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_HASHSERV_H
#define EQ_GEN_HASHSERV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_HASHSERV_H */
