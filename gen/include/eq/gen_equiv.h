/*
 * eq_gen, the equivalence backend (gen_equiv.c): a local store or a bitbake-
 * hashserv server behind one interface. Part of the eq_gen library
 * (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_EQUIV_H
#define EQ_GEN_EQUIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>
#include <eq/gen_store.h>

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_EQUIV_H */
