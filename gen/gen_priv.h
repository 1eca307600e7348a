/*
 * Helpers shared by the eq_gen sources; not part of the public headers <eq/gen_*.h>.
 */
#ifndef EQ_GEN_PRIV_H
#define EQ_GEN_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>
#include <eq/delta.h>
#include <eq/gen_conflict.h>
#include <eq/gen_publish.h>
#include <eq/gen_store.h>
#include <eq/manifest.h>

/*
 * Splits the next line off the text *p: returns it NUL-terminated in place,
 * without its "\n" or "\r\n", and moves *p past it; NULL at the end of the
 * text (a last line without a newline is still returned).
 */
char *eqg_next_line(char **p);

/*
 * Splits the next blank-separated (space or tab) field off the line *p:
 * returns it NUL-terminated in place and moves *p past it; NULL when only
 * blanks are left. For the line formats of build indexes and owner files.
 */
char *eqg_next_field(char **p);

/* ---- a channel's past releases, summarised (gen_history.c) ---------- */

/* Older payloads kept per package: the distinct ones publish looks at for
 * deltas (32), plus the one a new release may have again. */
#define EQG_HISTORY_DEPTH 33u

struct eqg_hist_payload {
	char payload_sha256[EQ_SHA256_HEX_LEN + 1];
	uint64_t payload_size;
	char object_sha256[EQ_SHA256_HEX_LEN + 1];
};
/* A package's payloads, newest first: ordered by the newest release that
 * had each (the order publish walked the releases in), at most
 * EQG_HISTORY_DEPTH. */
struct eqg_hist_pkg {
	char *name;
	struct eqg_hist_payload *v;
	size_t n;
};
struct eqg_history {
	uint64_t *numbers; /* every release, ascending */
	char **names;      /* their release names */
	size_t n_releases;
	struct eqg_hist_pkg *pkgs; /* every package ever published, by name */
	size_t n_pkgs, cap_pkgs;
	bool from_summary; /* read from the summary, not the manifests */
};

/*
 * The history of @repo/@board/@channel: from the summary the last publish
 * wrote, when it describes exactly the release folders there and the
 * newest manifest's bytes, else rebuilt from the manifests (read without
 * signature check, as eq_repo_history_load(); one at a time). No releases
 * gives an empty history. Free with eqg_history_done().
 */
eq_err eqg_history_open(const char *repo, const char *board, const char *channel, struct eqg_history *ret,
			struct eq_error *err);
void eqg_history_done(struct eqg_history *h);
/* Adds release @number (@release, manifest @m) as the newest. */
eq_err eqg_history_add(struct eqg_history *h, uint64_t number, const char *release, const struct eq_manifest *m,
		       struct eq_error *err);
const struct eqg_hist_pkg *eqg_history_find(const struct eqg_history *h, const char *name);
/* The release numbers with a folder under @dir (a channel's releases/),
 * ascending; *ret is malloc'ed; a missing folder gives none. */
eq_err eqg_release_numbers(const char *dir, uint64_t **ret, size_t *ret_n, struct eq_error *err);
/* A manifest file of this repository, parsed without a signature check
 * (the publisher's own files); errors name the file. */
eq_err eqg_manifest_read(const char *path, struct eq_manifest **ret, struct eq_error *err);
/* Takes @repo's publish lock (<repo>/.publish.lock, flock): one writer of
 * release numbers, objects and timestamps at a time. *ret_fd holds it until
 * closed. */
eq_err eqg_lock_repo(const char *repo, int *ret_fd, struct eq_error *err);
/* Writes the summary for the next publish; @head_sha256 is the hash of
 * the newest release's manifest.json bytes. */
eq_err eqg_history_write(const struct eqg_history *h, const char *repo, const char *board, const char *channel,
			 const uint8_t head_sha256[EQ_SHA256_LEN], struct eq_error *err);

/*
 * Writes what saves devices most of the manifest download beside the
 * channel's manifest of @repo/@board/@channel: manifest.json.zst and
 * deltas from the manifests of the last releases in @hist (before the new
 * one). @json are the new manifest's bytes, also in release @number's
 * folder.
 */
eq_err eqg_manifest_companions(const char *repo, const char *board, const char *channel, const struct eqg_history *hist,
			       uint64_t number, const uint8_t *json, size_t json_len, struct eq_error *err);

/* ---- the repository's own folders (gen_repo.c) ---- */

/*
 * Refuses (EQ_ERR_UNSAFE, naming it) a symbolic link anywhere in what
 * eqota-gen writes or removes in @repo (objects/, deltas/, boards/,
 * root/, .publish.lock, .tmp-*): one there could send a write or a
 * removal outside the repository (objects/ pointing at the folder of the
 * signing key). Other entries of @repo are left alone; @repo itself may
 * be a link, the operator's choice; a missing @repo passes.
 * Every writer runs it under the publish lock (eqg_lock_repo() does).
 */
eq_err eqg_repo_check_links(const char *repo, struct eq_error *err);
/*
 * Removes @path ("@repo/..."), a file or a folder with what it holds,
 * reaching it one component at a time without following a link, so that
 * a link put there after the check still cannot lead outside; a link on
 * the way is refused. A missing @path is not an error.
 */
eq_err eqg_repo_remove(const char *repo, const char *path, struct eq_error *err);

/* ---- small containers and the cache's byte format (gen_inputs.c) ---- */

/* A growable list of owned strings; zero-initialise, free with
 * eqg_strv_done(). */
struct eqg_strv {
	char **v;
	size_t n, cap;
};
eq_err eqg_strv_add(struct eqg_strv *s, const char *str, struct eq_error *err);
void eqg_strv_done(struct eqg_strv *s);

/* Little-endian u64 and length-prefixed strings (NULL allowed) into @b. */
eq_err eqg_put_u64(struct eq_buf *b, uint64_t v, struct eq_error *err);
eq_err eqg_put_str(struct eq_buf *b, const char *s, struct eq_error *err);

/* Reading that format back from bytes nobody vouches for: any short or
 * malformed field sets .bad and returns zero, NULL or nothing; .nomem too
 * when it was an allocation that failed (not the bytes' fault). */
struct eqg_unpack {
	const uint8_t *p;
	size_t n;
	bool bad;
	bool nomem;
};
uint64_t eqg_get_u64(struct eqg_unpack *u);
void eqg_get_bytes(struct eqg_unpack *u, void *out, size_t len);
/* A new string (NULL for a stored NULL or when .bad); caller frees. */
char *eqg_get_str(struct eqg_unpack *u);

/* ---- the path table, split for parallel and cached publishing ---- */

/* One entry of a package's payload as the table keeps it. */
struct rec {
	char *path;
	size_t pkg;
	enum eq_entry_type type;
	uint32_t mode, uid, gid, devmajor, devminor;
	uint64_t size;
	char *link;
	uint8_t sha[EQ_SHA256_LEN];  /* regular files: content */
	uint8_t xsha[EQ_SHA256_LEN]; /* xattrs, all zero without any */
	bool linked;                 /* a hard link, or the target of one */
};

/* The records of one package's payload, read without the table (so any
 * thread may), then handed to it in order. */
struct eqg_path_recs {
	struct rec *v;
	size_t n, cap;
};
/* Reads and hashes every entry of payload file @payload_path into a new
 * list (*ret, free with eqg_path_recs_free()). */
eq_err eqg_path_recs_read(const char *payload_path, struct eqg_path_recs **ret, struct eq_error *err);
void eqg_path_recs_free(struct eqg_path_recs *rs);
/* Marks package @pkg_name (added if new) as an image component: the
 * shipped-by-several rule of eq_path_table_check() leaves it out, and a
 * symlink it ships lets the packages ship a folder there. Its entries
 * are still followed and checked for where they land. */
eq_err eqg_path_table_mark_component(struct eq_path_table *t, const char *pkg_name, struct eq_error *err);
/* Adds the records under package @pkg_name (as eq_path_table_add()); they
 * move into the table and @rs is left empty. */
eq_err eqg_path_table_add_recs(struct eq_path_table *t, const char *pkg_name, const char *pkg_file,
			       struct eqg_path_recs *rs, struct eq_error *err);
eq_err eqg_path_recs_pack(const struct eqg_path_recs *rs, struct eq_buf *b, struct eq_error *err);
/* false (nothing allocated) when the bytes do not hold a valid list. */
bool eqg_path_recs_unpack(struct eqg_unpack *u, struct eqg_path_recs **ret);

/* eq_path_table_apply() in two halves: the rules applied to a package's
 * builder (reads the table only; adds the removed paths to @removed), and
 * what the table remembers of it (in package order). */
eq_err eqg_path_table_strip(const struct eq_path_table *t, const char *pkg_name, struct eq_payload_builder *b,
			    struct eqg_strv *removed, struct eq_error *err);
eq_err eqg_path_table_note_removed(struct eq_path_table *t, const char *pkg_name, const struct eqg_strv *removed,
				   struct eq_error *err);
/* A digest of the owner rules, part of the input cache's key. */
void eqg_path_table_rules_sha(const struct eq_path_table *t, uint8_t out[EQ_SHA256_LEN]);

/*
 * Makes the folder of database @db_path private (0700, with missing
 * parents), or refuses one others may write to; @what ("store") and
 * @option ("--store") name it in messages (gen_store.c).
 */
eq_err eqg_make_private_dir(const char *db_path, const char *what, const char *option, struct eq_error *err);

/* The default path of database @file in eqota's XDG folder,
 * $@xdg_var/eqota/@file or else ~/@home_rel/eqota/@file, its folder made
 * private as above (*ret malloc'ed). */
eq_err eqg_xdg_path(const char *xdg_var, const char *home_rel, const char *file, const char *what, const char *option,
		    char **ret, struct eq_error *err);

/* ---- the input cache (gen_inputs.c) ---- */

/*
 * What publishing learnt from one package file, kept so that a republish
 * of unchanged files reads none of them (docs/internals/publish.md).
 */
struct eqg_input {
	char *name, *version, *arch;
	uint8_t payload_sha256[EQ_SHA256_LEN];
	uint64_t payload_size;
	struct eqg_strv special; /* eq_payload_findings.special */
	struct eqg_strv removed; /* paths the owner rules removed */
	struct eqg_path_recs *recs;
};
void eqg_input_done(struct eqg_input *in);

struct eqg_input_cache;

/* Opens (creating it) the cache database @path. */
eq_err eqg_input_cache_open(const char *path, struct eqg_input_cache **ret, struct eq_error *err);
void eqg_input_cache_close(struct eqg_input_cache *c);
/* The default path: $XDG_CACHE_HOME/eqota/inputs.db or
 * ~/.cache/eqota/inputs.db (malloc'ed). */
eq_err eqg_input_cache_default_path(char **ret, struct eq_error *err);

/*
 * The key of package file @file: its path, device, inode, size, mtime and
 * ctime, this program's build, and @context (what else decides the result: rules, limits).
 * *ret_stable is false for a file changed in the last seconds, whose
 * timestamps may not yet tell a later change apart: it is not stored.
 */
eq_err eqg_input_cache_key(const struct eqg_input_cache *c, const char *file, const uint8_t context[EQ_SHA256_LEN],
			   uint8_t key[EQ_SHA256_LEN], bool *ret_stable, struct eq_error *err);
/* *ret_hit and *ret filled on a hit; a miss, or an entry that does not
 * decode (it is then ignored), is no hit. EQ_ERR_NOMEM. */
eq_err eqg_input_cache_get(struct eqg_input_cache *c, const uint8_t key[EQ_SHA256_LEN], struct eqg_input *ret,
			   bool *ret_hit, struct eq_error *err);
eq_err eqg_input_cache_put(struct eqg_input_cache *c, const uint8_t key[EQ_SHA256_LEN], const struct eqg_input *in,
			   struct eq_error *err);
/* Groups puts into one transaction (one sync instead of one per package). */
eq_err eqg_input_cache_begin(struct eqg_input_cache *c, struct eq_error *err);
eq_err eqg_input_cache_commit(struct eqg_input_cache *c, struct eq_error *err);

/* ---- gen_names.c: a set of byte strings, each numbered in the order added.
 * Open addressing with a seeded hash, so lookups stay O(1) whatever names
 * a report file holds; at most @max names (the cap on hostile input). */
struct eqg_names {
	char **keys; /* owned, NUL-terminated copies; keys[i] has lens[i] bytes */
	size_t *lens;
	size_t n, cap, max;
	uint32_t *slots; /* 0: empty, else index + 1 */
	size_t n_slots;  /* a power of two, or 0 */
	uint64_t seed;
};
/* Cannot fail; @max at most UINT32_MAX - 1. Free with eqg_names_done(). */
void eqg_names_init(struct eqg_names *t, size_t max);
void eqg_names_done(struct eqg_names *t);
/* The number of @key in @t, added when new: EQ_ERR_LIMIT (message set)
 * when it is new and @t holds @max names already, EQ_ERR_NOMEM. */
eq_err eqg_names_add(struct eqg_names *t, const void *key, size_t len, uint32_t *ret,
		     struct eq_error *err) EQ_MUST_CHECK;
/* true and *ret when @key is in @t. */
bool eqg_names_find(const struct eqg_names *t, const void *key, size_t len, uint32_t *ret);

/* ---- image mode: what gen_image.c hands gen_image_compose.c and publish ---- */

struct eq_image;
struct archive;
struct archive_entry;

/* eq_image_attribute() from a package's records (its published payload,
 * as the path table reads or the input cache keeps them). */
eq_err eqg_image_attribute_recs(struct eq_image *img, const char *name, const struct eqg_path_recs *rs,
				struct eq_error *err);

/* What eq_image_attribute() found beyond the classes (arrays per image
 * entry, owned by the image). */
struct eqg_image_found {
	const uint8_t *skel;       /* a symlink some package path leads through */
	const uint32_t *last_name; /* the shipping package last in name order, or EQ_IMAGE_NO_PKG */
	const uint8_t *last_same;  /* ... whose entry is identical to the image's */
	size_t n_replace;          /* package paths whose entry is not the image's */
	size_t n_remove;           /* package folders where the image has a non-folder */
	const struct eq_payload_limits *lim;
};
/* Fills @ret (sorting the path lists in place). */
void eqg_image_found(struct eq_image *img, struct eqg_image_found *ret);
/* Path @i of the replace (or, with @remove, remove) list, sorted; may
 * repeat. */
const char *eqg_image_found_path(const struct eq_image *img, bool remove, size_t i);

/* Reads the tar @path again, calling @fn for every entry with its path
 * as the image spells it. */
typedef eq_err (*eqg_image_tar_fn)(void *ctx, struct archive *a, struct archive_entry *ae, const char *path,
				   struct eq_error *err);
eq_err eqg_image_tar_walk(const struct eq_image *img, const char *path, eqg_image_tar_fn fn, void *ctx,
			  struct eq_error *err);

/* ---- one publish run, shared by gen_publish.c and gen_publish_image.c ---- */

/* Everything one publish run holds open; released by ctx_done(). */
struct eqg_pub {
	const struct eq_publish_opts *o;
	char *tmpdir;
	int lock_fd;
	struct eqg_history hist; /* the releases before this one */
	struct eq_equiv *equiv;
	struct eq_build_index *index;
	struct eq_path_table *paths; /* who ships which path (gen_conflict.c) */
	struct eq_buf unindexed;     /* names the build index does not list */
	bool unindexed_more;         /* ... and more than fit */
	struct eq_manifest *m;
	struct eq_publish_report rep;
	char **files;
	size_t n_files;
	size_t jobs;                   /* threads that read and compress */
	struct eqg_input_cache *cache; /* NULL: --no-cache */
	uint8_t cache_context[EQ_SHA256_LEN];
	struct eq_image *img; /* image mode: the root filesystem, packages attributed in order */
};

/* What one package's work added to the report, summed in order. */
struct eqg_pub_stats {
	size_t objects_written, deltas_written;
	uint64_t bytes_written;
};

/* The deltas a package's entry offers. */
struct eqg_delta_list {
	struct eq_manifest_delta v[EQ_MANIFEST_MAX_DELTAS];
	size_t n;
};

/*
 * One package on its way into the release. A batch of them goes through
 * phases: read (in parallel; skipped when the input cache knows the file),
 * named and reported in order, decided in order (the store), worked on in
 * parallel (objects and deltas), then entered in order (store, path table,
 * manifest). Any thread touches only its own prep.
 */
struct eqg_prep {
	const char *file; /* borrowed from eqg_pub.files */
	struct eqg_input in;
	bool cached;    /* @in came from the input cache */
	bool cache_put; /* @in is new and may be stored */
	uint8_t key[EQ_SHA256_LEN];
	char *payload; /* temporary payload file; NULL until one is needed */
	char outhash[EQ_SHA256_HEX_LEN + 1];
	char taskhash[EQ_SHA256_HEX_LEN + 1];
	/* decided */
	enum eq_publish_state state;
	bool new_object;   /* nothing published for the unihash yet */
	bool write_object; /* the object is missing from this repository */
	struct eq_store_published pub;
	/* worked on */
	char *stored_payload;              /* non-reproducible: the published one */
	struct eqg_strv stored_special;    /* ... its findings */
	struct eqg_path_recs *stored_recs; /* ... and records */
	struct eqg_delta_list dl;
	struct eqg_pub_stats st;
	eq_err r;
	struct eq_error err;
};

/* A temporary file in the run's private folder; *ret_path is malloc'ed. */
eq_err eqg_pub_tmp_file(struct eqg_pub *c, const char *what, int *ret_fd, char **ret_path, struct eq_error *err);
/* Frees what @p holds (its temporary files removed) and zeroes it. */
void eqg_prep_done(struct eqg_prep *p);
/* The device's path rules over payload file @path; setuid/setgid files and
 * device nodes to @special, for eqg_pub_apply_policy(). */
eq_err eqg_pub_scan_payload(const char *path, struct eqg_strv *special, struct eq_error *err);
/* The policy on setuid/setgid files and device nodes; @what names the
 * package in messages. */
eq_err eqg_pub_apply_policy(struct eqg_pub *c, const struct eqg_strv *special, const char *what, struct eq_error *err);
/* The phases of struct eqg_prep: decide (in order), work (any thread, run
 * by eqg_pub_run_parallel() on each prep that has not failed), enter (in
 * order). */
eq_err eqg_pub_decide(struct eqg_pub *c, struct eqg_prep *p, const char *unihash, struct eq_error *err);
void eqg_pub_work(struct eqg_pub *c, struct eqg_prep *p);
eq_err eqg_pub_enter(struct eqg_pub *c, struct eqg_prep *p, const char *unihash, struct eq_publish_pkg *out,
		     struct eq_error *err);
void eqg_pub_run_parallel(struct eqg_pub *c, struct eqg_prep *p, size_t n,
			  void (*fn)(struct eqg_pub *, struct eqg_prep *));

/* Image mode (gen_publish_image.c), once every package is in: the image's
 * components computed and published as packages, the manifest made format
 * 2, the report's image counts filled. */
eq_err eqg_pub_image(struct eqg_pub *c, struct eq_error *err);

#endif
