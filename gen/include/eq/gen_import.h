/*
 * eq_gen, repository walker and equivalence import (gen_import.c). Part of
 * the eq_gen library (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_IMPORT_H
#define EQ_GEN_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>
#include <eq/manifest.h>
#include <eq/gen_store.h>

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_IMPORT_H */
