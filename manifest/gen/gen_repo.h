/* Publisher, repository reader, diff, show and qa: declarations that move
 * into <eq/gen.h> (section "publisher") once that header's first part is
 * settled. */
#ifndef EQ_GEN_REPO_H
#define EQ_GEN_REPO_H

#include <eq/common.h>
#include <eq/delta.h>
#include <eq/manifest.h>

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
/* Release by name or by number (decimal); NULL if none. Owned by @h. */
EQ_API const struct eq_repo_release *eq_repo_history_find(const struct eq_repo_history *h, const char *name_or_number);

/* ---- publish -------------------------------------------------------- */

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

#endif
