/*
 * eq_gen, the publisher's view of a repository (gen_repo.c): release
 * history, diff of two releases, package listing. Part of the eq_gen library
 * (<eq/gen.h> includes every part). Where each file of a repository
 * lives is <eq/repo_layout.h>, shared with the device.
 */
#ifndef EQ_GEN_REPO_H
#define EQ_GEN_REPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>
#include <eq/manifest.h>

#ifdef __cplusplus
extern "C" {
#endif

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
/* The channel's current release, read from its manifest without checking
 * the signature (a read-only view for messages and to match --release):
 * *ret_number and its name in @ret_name. */
EQ_API eq_err eq_repo_current(const char *repo, const char *board, const char *channel, uint64_t *ret_number,
			      char ret_name[EQ_MANIFEST_NAME_MAX + 1], struct eq_error *err) EQ_MUST_CHECK;

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
	bool component; /* an image component (manifest format 2), not a package */
};
/* Components are counted apart so that the package counts mean what they
 * meant before image mode; an equivalent component counts as kept. */
struct eq_diff {
	struct eq_diff_entry *v;
	size_t n;
	size_t count[5];           /* packages, by state */
	size_t component_count[5]; /* image components, by state */
	uint64_t download_bytes;   /* sum of bytes: package_bytes + component_bytes */
	uint64_t package_bytes;
	uint64_t component_bytes;
	uint64_t full_bytes; /* every object of the new release */
};

/* Compares two releases; entries point into @from and @to, which must
 * outlive the result. Free with eq_diff_done(). */
EQ_API eq_err eq_gen_diff(const struct eq_manifest *from, const struct eq_manifest *to, struct eq_diff *ret,
			  struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_diff_done(struct eq_diff *d);

/* Lists the package files (.deb .ipk .rpm .tar .tar.*) of a folder, sorted.
 * Caller frees each string and the array with eq_free(). */
EQ_API eq_err eq_gen_list_packages(const char *dir, char ***ret_paths, size_t *ret_n,
				   struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_REPO_H */
