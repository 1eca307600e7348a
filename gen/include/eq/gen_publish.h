/*
 * eq_gen, publish and promote (gen_publish.c). Part of the eq_gen library
 * (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_PUBLISH_H
#define EQ_GEN_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>
#include <eq/manifest.h>

#ifdef __cplusplus
extern "C" {
#endif

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
	/* Image mode (docs/eqota-gen.md "Image mode"): the built root
	 * filesystem (folder or possibly compressed tar) the release is; NULL:
	 * the packages alone (manifest format 1). Its components
	 * (eq_image_compose()) are published as packages of the release and
	 * the manifest is format 2. */
	const char *image;
	bool image_devices; /* the image may hold device nodes, under dev/ only */
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
	/* Image mode (opts.image): the image's entries the packages place and
	 * those the components place; the components (the last n_components
	 * of pkgs), their payload and object bytes, and the bytes a device
	 * one release behind fetches for them (per component its smallest
	 * delta from the previous release's, else the object). */
	bool image;
	uint64_t image_entries, image_from_packages, image_from_image;
	size_t n_components;
	uint64_t component_payload_bytes, component_object_bytes, component_update_bytes;
	size_t component_deltas; /* components with a delta from the previous release */
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

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_PUBLISH_H */
