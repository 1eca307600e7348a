/*
 * eq_manifest: the release manifest (model, JSON form version 1), its
 * signatures (ECDSA P-256 with SHA-256) and the keys that make and check
 * them. Used on the device (load_verified) and by the host generator
 * (build, to_json, sign). docs/manifest-format.md is the user-facing
 * reference; docs/internals/manifest.md explains the design choices.
 *
 * The device entry point is eq_manifest_load_verified(): it checks the
 * signatures over the exact bytes first and only then parses them. The
 * parser that skips verification is named eq_manifest_parse_unverified() so
 * that a wrong call is visible in review.
 *
 * Thread safety: no function keeps global state; objects may be used from
 * several threads as long as one object is not modified concurrently.
 * cJSON allocates through its process-wide hooks; a program that wants
 * cJSON's allocations to go through eq_malloc() sets them once at startup.
 */
#ifndef EQ_MANIFEST_H
#define EQ_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits (hard caps on everything that comes from outside) --------- */

#define EQ_MANIFEST_FORMAT 1                        /* a release of packages alone */
#define EQ_MANIFEST_FORMAT_IMAGE 2                  /* a release that is an image: packages + image (issue 31) */
#define EQ_MANIFEST_MAX_BYTES (16u * 1024u * 1024u) /* manifest.json */
#define EQ_MANIFEST_MAX_PACKAGES 100000u
#define EQ_MANIFEST_MAX_DELTAS 16u                 /* per package */
#define EQ_MANIFEST_MAX_DEPTH 8u                   /* JSON nesting of objects/arrays */
#define EQ_MANIFEST_NAME_MAX 64u                   /* board, channel, release, arch */
#define EQ_MANIFEST_PKG_MAX 128u                   /* package name and version */
#define EQ_MANIFEST_NUMBER_MAX (UINT64_C(1) << 53) /* release number and sizes */
#define EQ_MANIFEST_SIG_MAX_BYTES (64u * 1024u)    /* manifest.json.sig */
#define EQ_MANIFEST_MAX_SIGNATURES 16u
#define EQ_MANIFEST_TRUST_MAX_BYTES (64u * 1024u) /* root-of-trust file */
#define EQ_MANIFEST_TRUST_MAX_KEYS 16u
#define EQ_MANIFEST_KEYFILE_MAX_BYTES (16u * 1024u) /* .key / .pub PEM files */

#define EQ_MANIFEST_MAX_COMPONENTS 1024u    /* image.before + image.after */
#define EQ_MANIFEST_MAX_IMAGE_PATHS 100000u /* image.replace, and image.remove */
#define EQ_MANIFEST_IMAGE_PATH_MAX 4096u    /* bytes of one path in those lists */
#define EQ_MANIFEST_HASH_LEN 64u            /* lower-case hex SHA-256 */
#define EQ_MANIFEST_KEYID_LEN 64u
/* "objects/" + 64 hex, "deltas/" + 64 hex + "-" + 64 hex */
#define EQ_MANIFEST_OBJECT_PATH_LEN (8u + 64u)
#define EQ_MANIFEST_DELTA_PATH_LEN (7u + 64u + 1u + 64u)

/* ---- model ------------------------------------------------------------ */

/* The manifest: opaque, built with the functions below or by a parser. */
struct eq_manifest;

/*
 * The header fields. Strings are NUL-terminated. When filled by
 * eq_manifest_get_header() they point into the manifest and stay valid
 * until eq_manifest_set_header() or eq_manifest_free() on it; when passed
 * to eq_manifest_set_header() they are copied.
 */
struct eq_manifest_header {
	const char *board;   /* 1..64 chars [A-Za-z0-9._-], first alphanumeric */
	const char *channel; /* same rule as board */
	const char *release; /* 1..64 chars [A-Za-z0-9._+-] */
	uint64_t number;     /* 1..2^53, increases with every release (anti-rollback) */
	int64_t issued;      /* seconds since the epoch, UTC, >= 0 */
	int64_t expires;     /* seconds since the epoch, UTC, > issued, <= 9999-12-31 */
};

/* A binary delta from an older payload to this package's payload. */
struct eq_manifest_delta {
	char from[EQ_MANIFEST_HASH_LEN + 1];       /* payload sha256 of the old payload */
	char path[EQ_MANIFEST_DELTA_PATH_LEN + 1]; /* "deltas/<from>-<payload sha256>" */
	char sha256[EQ_MANIFEST_HASH_LEN + 1];     /* of the delta file */
	uint64_t size;                             /* of the delta file, 0..2^53 */
};

struct eq_manifest_payload {
	char sha256[EQ_MANIFEST_HASH_LEN + 1]; /* canonical payload (the outhash) */
	uint64_t size;
};

struct eq_manifest_object {
	char path[EQ_MANIFEST_OBJECT_PATH_LEN + 1]; /* "objects/<sha256>" */
	char sha256[EQ_MANIFEST_HASH_LEN + 1];      /* of the compressed object */
	uint64_t size;
};

/*
 * One package. As input to eq_manifest_add_package() everything is copied
 * (strings and the deltas array), so the caller keeps ownership of what it
 * passed. As output (eq_manifest_package_at(), eq_manifest_find_package())
 * the record and everything it points to belong to the manifest and stay
 * valid until eq_manifest_free(); adding packages does not move existing
 * records.
 */
struct eq_manifest_package {
	const char *name;    /* 1..128 chars [A-Za-z0-9._+-], first alphanumeric */
	const char *version; /* 1..128 chars [A-Za-z0-9._+~:-] */
	const char *arch;    /* 1..64 chars [A-Za-z0-9._-] */
	char taskhash[EQ_MANIFEST_HASH_LEN + 1];
	char unihash[EQ_MANIFEST_HASH_LEN + 1];
	struct eq_manifest_payload payload;
	struct eq_manifest_object object;
	const struct eq_manifest_delta *deltas; /* n_deltas entries, distinct "from" */
	size_t n_deltas;                        /* 0..16 */
};

/*
 * Creates an empty manifest: no header set (eq_manifest_to_json() refuses it
 * until eq_manifest_set_header() succeeded), no packages. Free with
 * eq_manifest_free(). EQ_ERR_NOMEM.
 */
EQ_API eq_err eq_manifest_new(struct eq_manifest **ret_m, struct eq_error *err) EQ_MUST_CHECK;

/* Frees @m and every record and string it owns. NULL is a no-op. */
EQ_API void eq_manifest_free(struct eq_manifest *m);

/*
 * Validates @h (rules in struct eq_manifest_header) and copies it into @m.
 * EQ_ERR_INVAL names the bad field ("release: ..."); @m is unchanged then.
 */
EQ_API eq_err eq_manifest_set_header(struct eq_manifest *m, const struct eq_manifest_header *h,
				     struct eq_error *err) EQ_MUST_CHECK;

/*
 * Fills @ret_h with the header of @m; the strings belong to @m (see
 * struct eq_manifest_header). EQ_ERR_STATE if no header was set.
 */
EQ_API eq_err eq_manifest_get_header(const struct eq_manifest *m, struct eq_manifest_header *ret_h,
				     struct eq_error *err) EQ_MUST_CHECK;

/*
 * Validates @p and adds a deep copy. Packages are kept sorted by name (byte
 * order); adding in name order is cheap, adding out of order moves the
 * pointers after the insertion point. Errors: EQ_ERR_INVAL (a field breaks
 * its rule; the message names it), EQ_ERR_UNSAFE (a path leaves its
 * folder), EQ_ERR_STATE (a package of that name exists), EQ_ERR_LIMIT (more
 * than EQ_MANIFEST_MAX_PACKAGES or EQ_MANIFEST_MAX_DELTAS), EQ_ERR_NOMEM.
 */
EQ_API eq_err eq_manifest_add_package(struct eq_manifest *m, const struct eq_manifest_package *p,
				      struct eq_error *err) EQ_MUST_CHECK;

/* Number of packages in @m. */
EQ_API size_t eq_manifest_package_count(const struct eq_manifest *m);

/*
 * The @i-th package in name order (0-based), NULL if @i is out of range.
 * Owned by @m (see struct eq_manifest_package).
 */
EQ_API const struct eq_manifest_package *eq_manifest_package_at(const struct eq_manifest *m, size_t i);

/* The package called @name (binary search), NULL if none. Owned by @m. */
EQ_API const struct eq_manifest_package *eq_manifest_find_package(const struct eq_manifest *m, const char *name);

/*
 * What makes a release an image (manifest format 2, docs/manifest-format.md
 * "image"). Image components are packages of the manifest (same fields,
 * objects and deltas; their names are listed here) holding what the image
 * has beyond its packages. A device builds the slot in this order:
 *  1. the components named in @before (the image's directory symlinks that
 *     package paths lead through, "bin -> usr/bin", and the folders they
 *     lead to), in this order;
 *  2. every package not named in @before or @after, in name order;
 *  3. the paths of @replace and @remove are set aside (the package's
 *     version kept in the slot's record folder, so the package still
 *     rebuilds and is kept by the next update); those of @remove are then
 *     gone from the slot;
 *  4. the components named in @after, in this order: they place the image's
 *     version of every replaced path and everything else only the image has.
 * @replace and @remove are paths as the packages ship them (relative, no
 * empty, "." or ".." component, at most EQ_MANIFEST_IMAGE_PATH_MAX bytes,
 * no control character), each list sorted by strcmp and unique, the two
 * disjoint. A name appears at most once in @before and @after together and
 * must be a package of the manifest (checked by eq_manifest_to_json() and
 * the parser, as packages may be added after the image is set).
 * As input to eq_manifest_set_image() everything is copied; as output of
 * eq_manifest_get_image() it belongs to the manifest.
 */
struct eq_manifest_image {
	const char *const *before;
	size_t n_before;
	const char *const *after;
	size_t n_after;
	const char *const *replace;
	size_t n_replace;
	const char *const *remove;
	size_t n_remove;
};

/*
 * Makes @m an image release (format 2) with a deep copy of @img, replacing
 * any image set before. EQ_ERR_INVAL names the list and element that break
 * a rule above (EQ_ERR_UNSAFE for a path with ".." or a leading "/"),
 * EQ_ERR_LIMIT for more than the caps, EQ_ERR_NOMEM; @m is unchanged on
 * failure.
 */
EQ_API eq_err eq_manifest_set_image(struct eq_manifest *m, const struct eq_manifest_image *img,
				    struct eq_error *err) EQ_MUST_CHECK;

/* The image of @m, owned by @m; NULL for a release of packages alone
 * (format 1). */
EQ_API const struct eq_manifest_image *eq_manifest_get_image(const struct eq_manifest *m);

/* Whether package @name of @m is an image component (in image.before or
 * image.after). False for format 1. */
EQ_API bool eq_manifest_is_component(const struct eq_manifest *m, const char *name);

/* Whether @path is in the sorted list @list (binary search). */
EQ_API bool eq_manifest_path_listed(const char *const *list, size_t n, const char *path);

/*
 * Serialises @m as manifest format 1, or 2 when an image is set ("image"
 * after "packages"): keys in the documented order, two
 * spaces of indentation, "\n" line ends and a final newline; the same model
 * always gives the same bytes, and parsing them gives the same model back.
 * *ret_data is NUL-terminated (not counted in *ret_len); the caller frees it
 * with eq_free(). EQ_ERR_STATE (no header), EQ_ERR_LIMIT (the result would
 * exceed EQ_MANIFEST_MAX_BYTES, so devices would refuse it), EQ_ERR_NOMEM.
 */
EQ_API eq_err eq_manifest_to_json(const struct eq_manifest *m, uint8_t **ret_data, size_t *ret_len,
				  struct eq_error *err) EQ_MUST_CHECK;

/*
 * Parses and strictly validates manifest JSON WITHOUT checking any
 * signature. For the generator's own freshly written output, tests and
 * fuzzers; a device uses eq_manifest_load_verified(). The result is freed
 * with eq_manifest_free().
 * Errors (messages name the line and column, or the field path such as
 * "packages[3].unihash"):
 *   EQ_ERR_LIMIT       more than EQ_MANIFEST_MAX_BYTES, nesting deeper than
 *                      EQ_MANIFEST_MAX_DEPTH, too many packages or deltas
 *   EQ_ERR_PARSE       malformed JSON ("line L column C: ..."), unknown or
 *                      duplicate key, wrong type, missing field, bad value,
 *                      packages not sorted or not unique
 *   EQ_ERR_UNSUPPORTED "format" is neither 1 nor 2
 *   EQ_ERR_UNSAFE      a path that leaves its folder ("..", absolute)
 *   EQ_ERR_NOMEM
 */
EQ_API eq_err eq_manifest_parse_unverified(const uint8_t *data, size_t len, struct eq_manifest **ret_m,
					   struct eq_error *err) EQ_MUST_CHECK;

/*
 * Anti-rollback: EQ_OK if @m's release number is greater than
 * @installed_number, else EQ_ERR_STATE "release number 3 is not newer than
 * the installed 5".
 */
EQ_API eq_err eq_manifest_check_newer(const struct eq_manifest *m, uint64_t installed_number,
				      struct eq_error *err) EQ_MUST_CHECK;

/*
 * A release named by a person (eqota-gen diff --from, eqota provision
 * --release) as an argument ARG: ARG is the release whose name it is
 * exactly; when no release of the channel has that name and ARG is decimal
 * digits only, it is the release with that number. So a release named "7"
 * is found by "7" whatever its number, and release names with a letter or
 * a dot are never mistaken for numbers.
 *
 * eq_manifest_release_match() rates one release (@name, @number) against
 * @arg; the larger value wins. A caller looking through the releases of a
 * channel takes an EQ_RELEASE_BY_NAME match at once and keeps an
 * EQ_RELEASE_BY_NUMBER one only while no release matches by name.
 */
enum eq_release_match {
	EQ_RELEASE_NO_MATCH = 0,
	EQ_RELEASE_BY_NUMBER, /* @arg is decimal digits equal to @number */
	EQ_RELEASE_BY_NAME,   /* @arg is exactly @name */
};
EQ_API enum eq_release_match eq_manifest_release_match(const char *name, uint64_t number, const char *arg);

/* True, with *ret_number, when @arg is decimal digits only (leading zeros
 * allowed) with a value that fits in uint64_t: what a release number looks
 * like on a command line. *ret_number is untouched otherwise. */
EQ_API bool eq_manifest_release_number_arg(const char *arg, uint64_t *ret_number);

/*
 * Formats @t (seconds since the epoch) as "YYYY-MM-DDTHH:MM:SSZ" into @out.
 * Out-of-range values (before 1970 or after 9999) give
 * "0000-00-00T00:00:00Z".
 */
#define EQ_MANIFEST_TIME_LEN 20u
EQ_API void eq_manifest_format_time(int64_t t, char out[EQ_MANIFEST_TIME_LEN + 1]);

/*
 * Parses exactly "YYYY-MM-DDTHH:MM:SSZ" (the RFC 3339 UTC subset the
 * manifest uses). false on any other text or an impossible date.
 */
EQ_API bool eq_manifest_parse_time(const char *s, int64_t *ret_t);

/* ---- keys ------------------------------------------------------------- */

/* A private signing key (ECDSA P-256). Opaque; free with eq_manifest_key_free(). */
struct eq_manifest_key;

/*
 * Generates a new P-256 key pair with a CTR-DRBG seeded from the system
 * entropy source and writes @name_prefix + ".key" (PEM EC private key, mode
 * 0600) and @name_prefix + ".pub" (PEM public key, mode 0644). Both files
 * are created with O_EXCL: if either exists, nothing is written and
 * EQ_ERR_STATE is returned. On a write error both files are removed.
 * @ret_keyid (may be NULL) receives the key id (lower-case hex SHA-256 of
 * the DER SubjectPublicKeyInfo). Errors: EQ_ERR_STATE, EQ_ERR_IO,
 * EQ_ERR_VERIFY (the crypto library failed; message from mbedTLS).
 */
EQ_API eq_err eq_manifest_key_generate(const char *name_prefix, char ret_keyid[EQ_MANIFEST_KEYID_LEN + 1],
				       struct eq_error *err) EQ_MUST_CHECK;

/*
 * Loads a PEM EC P-256 private key (unencrypted) from @path. Free the
 * result with eq_manifest_key_free(), which wipes it. EQ_ERR_NOTFOUND,
 * EQ_ERR_IO, EQ_ERR_LIMIT (file > EQ_MANIFEST_KEYFILE_MAX_BYTES),
 * EQ_ERR_PARSE (not a PEM private key), EQ_ERR_UNSUPPORTED (not P-256),
 * EQ_ERR_NOMEM.
 */
EQ_API eq_err eq_manifest_key_load(const char *path, struct eq_manifest_key **ret_key,
				   struct eq_error *err) EQ_MUST_CHECK;

/* Wipes and frees @key. NULL is a no-op. */
EQ_API void eq_manifest_key_free(struct eq_manifest_key *key);

/* The key id of @key (64 lower-case hex digits); owned by @key. */
EQ_API const char *eq_manifest_key_id(const struct eq_manifest_key *key);

/* ---- signatures ------------------------------------------------------- */

/*
 * Signs the exact bytes @data/@len with each of the @n_keys keys and returns
 * the signature file (manifest.json.sig):
 *   {"signatures":[{"keyid":"<64 hex>","sig":"<base64 DER ECDSA>"}, ...]}
 * in the same deterministic layout as the manifest. *ret_sig is
 * NUL-terminated, caller frees with eq_free(). 1..EQ_MANIFEST_MAX_SIGNATURES
 * keys, all distinct (EQ_ERR_INVAL otherwise). EQ_ERR_VERIFY if mbedTLS
 * fails, EQ_ERR_NOMEM.
 */
EQ_API eq_err eq_manifest_sign(const uint8_t *data, size_t len, const struct eq_manifest_key *const *keys,
			       size_t n_keys, uint8_t **ret_sig, size_t *ret_sig_len,
			       struct eq_error *err) EQ_MUST_CHECK;

struct eq_manifest_trust;

/*
 * eq_manifest_sign() for a caller that verifies the result against @trust
 * right after (publishing checks a release or timestamp against the root's
 * role, as devices will): signatures by keys of @trust are left to that
 * verification (eq_manifest_verify() checks every one of them), instead of
 * being verified twice; signatures by other keys are checked here. The
 * caller must verify against @trust before the signature leaves it.
 */
EQ_API eq_err eq_manifest_sign_for(const uint8_t *data, size_t len, const struct eq_manifest_key *const *keys,
				   size_t n_keys, const struct eq_manifest_trust *trust, uint8_t **ret_sig,
				   size_t *ret_sig_len, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Adds a signature by @key over @data to the existing signature file
 * @sig/@sig_len (for signers who hold their keys on different machines) and
 * returns the new file (caller frees with eq_free()). EQ_ERR_PARSE (the
 * existing file is malformed), EQ_ERR_STATE (@key already signed),
 * EQ_ERR_LIMIT (would exceed EQ_MANIFEST_MAX_SIGNATURES), EQ_ERR_NOMEM.
 * The existing signatures are not verified here.
 */
EQ_API eq_err eq_manifest_sign_append(const uint8_t *data, size_t len, const uint8_t *sig, size_t sig_len,
				      const struct eq_manifest_key *key, uint8_t **ret_sig, size_t *ret_sig_len,
				      struct eq_error *err) EQ_MUST_CHECK;

/* ---- trust ------------------------------------------------------------ */

/*
 * The set of public keys a device trusts and how many of them must sign
 * (threshold). Opaque; free with eq_manifest_trust_free().
 */
struct eq_manifest_trust;

/*
 * Parses a root-of-trust file:
 *   {"format":1,"threshold":N,"keys":[{"keyid":"<64 hex>","pem":"-----BEGIN PUBLIC KEY-----\n..."}]}
 * 1..EQ_MANIFEST_TRUST_MAX_KEYS keys, distinct, each a P-256 public key
 * whose id must equal "keyid"; 1 <= threshold <= number of keys. The result
 * is freed with eq_manifest_trust_free(). EQ_ERR_LIMIT, EQ_ERR_PARSE
 * ("keys[1].pem: ..."), EQ_ERR_UNSUPPORTED (format, key type),
 * EQ_ERR_VERIFY (keyid does not match its key), EQ_ERR_NOMEM.
 */
EQ_API eq_err eq_manifest_trust_parse(const uint8_t *data, size_t len, struct eq_manifest_trust **ret_trust,
				      struct eq_error *err) EQ_MUST_CHECK;

/* eq_manifest_trust_parse() of the file at @path (errors prefixed with it);
 * EQ_ERR_NOTFOUND, EQ_ERR_IO as well. */
EQ_API eq_err eq_manifest_trust_load(const char *path, struct eq_manifest_trust **ret_trust,
				     struct eq_error *err) EQ_MUST_CHECK;

/*
 * Builds a trust set from @n_paths PEM public key files (the .pub files
 * eq_manifest_key_generate() writes) with the given @threshold
 * (1..@n_paths; host tools pass 1 unless told otherwise). Duplicate keys
 * are EQ_ERR_INVAL. Errors as eq_manifest_trust_load(), prefixed with the
 * file name. Free with eq_manifest_trust_free().
 */
EQ_API eq_err eq_manifest_trust_from_pubkeys(const char *const *paths, size_t n_paths, unsigned threshold,
					     struct eq_manifest_trust **ret_trust, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Writes @trust as a root-of-trust file (the format eq_manifest_trust_parse()
 * reads). *ret_data is NUL-terminated, caller frees with eq_free().
 */
EQ_API eq_err eq_manifest_trust_to_json(const struct eq_manifest_trust *trust, uint8_t **ret_data, size_t *ret_len,
					struct eq_error *err) EQ_MUST_CHECK;

/* Frees @trust. NULL is a no-op. */
EQ_API void eq_manifest_trust_free(struct eq_manifest_trust *trust);

/* Threshold and keys of @trust; eq_manifest_trust_keyid() returns NULL past
 * the end, otherwise a string owned by @trust. */
EQ_API unsigned eq_manifest_trust_threshold(const struct eq_manifest_trust *trust);
EQ_API size_t eq_manifest_trust_key_count(const struct eq_manifest_trust *trust);
EQ_API const char *eq_manifest_trust_keyid(const struct eq_manifest_trust *trust, size_t i);

/*
 * Checks the signature file @sig/@sig_len over the exact bytes @data/@len
 * against @trust. Nothing in @data is parsed. Rules:
 *   - the signature file must be well-formed (EQ_ERR_PARSE, EQ_ERR_LIMIT:
 *     > EQ_MANIFEST_SIG_MAX_BYTES or > EQ_MANIFEST_MAX_SIGNATURES entries),
 *     with each keyid at most once;
 *   - every signature by a trusted key must verify, otherwise EQ_ERR_VERIFY
 *     "signature by key <id> does not verify" (a trusted signer's bad
 *     signature means the bytes or the file were altered);
 *   - signatures by keys not in @trust are ignored when the threshold is met
 *     (so a publisher can add keys before every device knows them);
 *   - the number of distinct trusted keys with a valid signature must be
 *     >= the threshold, otherwise EQ_ERR_VERIFY
 *     "signed by unknown key <id>, 0 of 1 required signatures" when no
 *     trusted key signed but an unknown one did, else
 *     "1 of 2 required signatures" (with the first unknown key id appended).
 * Returns EQ_OK only when all of this holds.
 */
EQ_API eq_err eq_manifest_verify(const uint8_t *data, size_t len, const uint8_t *sig, size_t sig_len,
				 const struct eq_manifest_trust *trust, struct eq_error *err) EQ_MUST_CHECK;

/*
 * A signed file and its signature file beside it (@path + ".sig"): read
 * both (@path at most @max bytes, the .sig at most EQ_MANIFEST_SIG_MAX_BYTES;
 * the caller frees both with eq_free(); nothing is returned on error), or
 * write both atomically, the signature first, so a reader that sees the new
 * file never finds an older signature file beside it.
 */
EQ_API eq_err eq_signed_file_read(const char *path, size_t max, uint8_t **ret_data, size_t *ret_len, uint8_t **ret_sig,
				  size_t *ret_sig_len, struct eq_error *err) EQ_MUST_CHECK;
EQ_API eq_err eq_signed_file_write(const char *path, const uint8_t *data, size_t len, const uint8_t *sig,
				   size_t sig_len, struct eq_error *err) EQ_MUST_CHECK;

/* ---- the device entry point ------------------------------------------- */

/* What eq_manifest_load_verified() checks besides the signatures. */
struct eq_manifest_policy {
	const char *board;   /* this device's board; NULL skips the check (host tools) */
	const char *channel; /* the channel the device follows; NULL skips the check */
	uint64_t number;     /* the release number asked for (0: any), e.g. releases/<n>/ */
	int64_t now;         /* current time, seconds since the epoch (UTC) */
	bool check_expiry;   /* false to accept an expired manifest (boot, confirm, rollback) */
};

/*
 * The one way a device should read a manifest: checks the size cap, then
 * the signatures over the exact bytes (eq_manifest_verify()), and only then
 * parses (as eq_manifest_parse_unverified()) and checks the policy:
 *   board    EQ_ERR_STATE "manifest is for board 'x', this device is 'y'"
 *   channel  EQ_ERR_STATE "manifest is for channel 'x', this device follows 'y'"
 *   number   EQ_ERR_STATE "manifest is release number 4, not the 3 asked for"
 *   expiry   EQ_ERR_EXPIRED "expired at 2027-01-02T08:00:00Z (now ...)"
 *            when policy->check_expiry and now >= expires.
 * The release number is not checked here: see eq_manifest_check_newer().
 * On success *ret_m is a new manifest, freed with eq_manifest_free().
 */
EQ_API eq_err eq_manifest_load_verified(const uint8_t *data, size_t len, const uint8_t *sig, size_t sig_len,
					const struct eq_manifest_trust *trust, const struct eq_manifest_policy *policy,
					struct eq_manifest **ret_m, struct eq_error *err) EQ_MUST_CHECK;

/* The policy checks of eq_manifest_load_verified() alone, for a manifest
 * whose exact bytes the caller has already verified (same errors). */
EQ_API eq_err eq_manifest_check_policy(const struct eq_manifest *m, const struct eq_manifest_policy *policy,
				       struct eq_error *err) EQ_MUST_CHECK;

/*
 * eq_manifest_load_verified() of the files @manifest_path and @sig_path
 * (NULL means @manifest_path + ".sig"), each read with its size cap; errors
 * are prefixed with the file name.
 */
EQ_API eq_err eq_manifest_load_verified_file(const char *manifest_path, const char *sig_path,
					     const struct eq_manifest_trust *trust,
					     const struct eq_manifest_policy *policy, struct eq_manifest **ret_m,
					     struct eq_error *err) EQ_MUST_CHECK;

/* ---- root of trust: root and timestamp documents ----------------------
 *
 * docs/manifest-format.md ("Root and timestamp") and docs/security.md are
 * the reference. A repository in root mode has:
 *   root/<N>.root.json (+ .sig)   root version N: keys, roles, thresholds
 *   boards/<b>/<c>/timestamp.json (+ .sig)  binds the current manifest
 * Root N+1 is valid only when signed by a threshold of root N's root role
 * AND of its own root role; the release role signs manifests, the
 * timestamp role signs timestamps. All three documents use the signature
 * file format of manifest.json.sig over their exact bytes.
 */

#define EQ_ROOT_MAX_BYTES (64u * 1024u)      /* N.root.json */
#define EQ_ROOT_MAX_KEYS 32u                 /* distinct keys in one root */
#define EQ_ROOT_CHAIN_MAX 1024u              /* root versions one refresh may walk */
#define EQ_TIMESTAMP_MAX_BYTES (16u * 1024u) /* timestamp.json */
/* How far past a device's clock (when it is set) a timestamp may be issued;
 * eq_trust_refresh() refuses one issued later (seconds). */
#define EQ_TIMESTAMP_MAX_AHEAD (24 * 3600)

enum eq_role { EQ_ROLE_ROOT = 0, EQ_ROLE_RELEASE, EQ_ROLE_TIMESTAMP, EQ_ROLE_COUNT };

/* "root", "release", "timestamp" */
EQ_API const char *eq_role_name(enum eq_role role);

/* A parsed root document. Opaque; free with eq_root_free(). */
struct eq_root;

struct eq_root_info {
	uint64_t version; /* 1..2^53; root N+1 follows root N */
	int64_t issued;   /* seconds since the epoch, UTC */
	int64_t expires;  /* > issued */
};

/*
 * Builds root document bytes from @info and the three role key sets
 * (threshold and keys of each; a key may serve several roles). The same
 * input always gives the same bytes. *ret_data is NUL-terminated, caller
 * frees with eq_free(). EQ_ERR_INVAL (version 0, expires <= issued, more
 * than EQ_ROOT_MAX_KEYS distinct keys), EQ_ERR_NOMEM.
 */
EQ_API eq_err eq_root_to_json(const struct eq_root_info *info,
			      const struct eq_manifest_trust *const roles[EQ_ROLE_COUNT], uint8_t **ret_data,
			      size_t *ret_len, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Parses a root document WITHOUT checking a signature (host tools, fuzzers,
 * and eq_root_verify_next() after it checked the old root's signatures).
 * Strict like the manifest: unknown keys, a keyid that does not match its
 * PEM, a role naming a key not in "keys", a threshold above its role's keys
 * are EQ_ERR_PARSE / EQ_ERR_VERIFY; "format" other than 1 and "type" other
 * than "root" are EQ_ERR_UNSUPPORTED / EQ_ERR_PARSE. Free with eq_root_free().
 */
EQ_API eq_err eq_root_parse_unverified(const uint8_t *data, size_t len, struct eq_root **ret_root,
				       struct eq_error *err) EQ_MUST_CHECK;

/*
 * A root the device starts from (the one installed in its image): parsed,
 * and its signature file must meet its own root role's threshold (a root
 * that cannot sign itself could never be rotated). The signature file is
 * @path + ".sig". Errors prefixed with the file name.
 */
EQ_API eq_err eq_root_load_file(const char *path, struct eq_root **ret_root, struct eq_error *err) EQ_MUST_CHECK;

/*
 * The step of a root rotation: @data/@sig must be signed by a threshold of
 * @cur's root role (checked before parsing), parse as a root whose version
 * is exactly @cur's + 1, be signed by a threshold of its own root role too,
 * and not be issued before @cur. Expiry is not checked here: only the
 * newest root of a chain must be unexpired (a device that was off for a
 * year walks through expired intermediate roots). EQ_ERR_VERIFY (a
 * signature), EQ_ERR_STATE ("root version 5, expected 4"; issued earlier),
 * parse errors. On success *ret_next is new, freed with eq_root_free().
 */
EQ_API eq_err eq_root_verify_next(const struct eq_root *cur, const uint8_t *data, size_t len, const uint8_t *sig,
				  size_t sig_len, struct eq_root **ret_next, struct eq_error *err) EQ_MUST_CHECK;

EQ_API void eq_root_free(struct eq_root *root);
EQ_API void eq_root_get_info(const struct eq_root *root, struct eq_root_info *ret);
/* The keys and threshold of @role in @root; owned by @root. */
EQ_API const struct eq_manifest_trust *eq_root_role(const struct eq_root *root, enum eq_role role);

/*
 * Copies @trust, leaving out the key @keyid if it is there (NULL: none;
 * *ret_removed, if not NULL, says whether it was), with @threshold (0:
 * @trust's). EQ_ERR_STATE when the keys left are fewer than the threshold
 * (revoking would make the role unusable: add a key first). Used to revoke
 * a key or change a threshold; free the copy with eq_manifest_trust_free().
 */
EQ_API eq_err eq_manifest_trust_copy(const struct eq_manifest_trust *trust, const char *keyid, unsigned threshold,
				     struct eq_manifest_trust **ret_copy, bool *ret_removed,
				     struct eq_error *err) EQ_MUST_CHECK;

/* The signed timestamp of one board and channel. */
struct eq_timestamp {
	uint64_t version; /* 1..2^53, grows with every timestamp */
	char board[EQ_MANIFEST_NAME_MAX + 1];
	char channel[EQ_MANIFEST_NAME_MAX + 1];
	int64_t issued;
	int64_t expires;                       /* > issued; hours, not weeks */
	uint64_t number;                       /* the manifest's release number */
	char sha256[EQ_MANIFEST_HASH_LEN + 1]; /* of manifest.json's exact bytes */
	uint64_t size;                         /* of manifest.json, 1..EQ_MANIFEST_MAX_BYTES */
	/* The staged rollout of that release (docs/fleet.md). Absent (all
	 * zero, as memset leaves it): every device may take it. Written only
	 * when it holds anyone back, so a timestamp of a release out to every
	 * device stays readable by agents that predate rollouts. */
	struct {
		bool present;
		unsigned percent; /* 0..100: devices whose bucket is below it may install */
		bool halted;      /* no device that has not installed it does */
	} rollout;
};

/* Timestamp document bytes (deterministic); caller frees *ret_data with
 * eq_free(). EQ_ERR_INVAL names the bad field. */
EQ_API eq_err eq_timestamp_to_json(const struct eq_timestamp *ts, uint8_t **ret_data, size_t *ret_len,
				   struct eq_error *err) EQ_MUST_CHECK;
/* Parses a timestamp document without checking a signature (strict). */
EQ_API eq_err eq_timestamp_parse_unverified(const uint8_t *data, size_t len, struct eq_timestamp *ret,
					    struct eq_error *err) EQ_MUST_CHECK;
/* Checks the signatures of @data under @root's timestamp role, then parses. */
EQ_API eq_err eq_timestamp_load_verified(const uint8_t *data, size_t len, const uint8_t *sig, size_t sig_len,
					 const struct eq_root *root, struct eq_timestamp *ret,
					 struct eq_error *err) EQ_MUST_CHECK;

/* ---- the device's trust store ------------------------------------------
 *
 * What a device has accepted, kept in a folder of its own (the agent uses
 * <data-dir>/trust): every root it accepted after the installed one
 * (root/<N>.root.json + .sig) and the newest timestamp (timestamp.json +
 * .sig). Opening re-verifies the chain from the installed root, so a
 * damaged or planted file in that folder never adds trust; it only ends
 * the chain early. The stored timestamp is verified with the newest root's
 * timestamp role only, and is deleted when a newer root changes that role
 * (keys or threshold): what a leaked timestamp key signed then no longer
 * bounds versions, issue times or "now" (TUF's fast-forward recovery).
 */
struct eq_trust;

/*
 * Opens the store in @dir (created if missing) starting from the installed
 * root @root_path (eq_root_load_file()). A stored root that does not verify
 * ends the chain there (logged by the caller from *ret's warning, see
 * eq_trust_warning()). Free with eq_trust_free().
 */
EQ_API eq_err eq_trust_open(const char *dir, const char *root_path, struct eq_trust **ret,
			    struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_trust_free(struct eq_trust *t);

/* A problem eq_trust_open() or eq_trust_refresh() worked around (a stored
 * file that did not verify), "" if none; owned by @t. */
EQ_API const char *eq_trust_warning(const struct eq_trust *t);

/* The newest accepted root; owned by @t, valid until the next refresh. */
EQ_API const struct eq_root *eq_trust_root(const struct eq_trust *t);

/* The newest root's release role: what a new manifest must be signed by. */
EQ_API const struct eq_manifest_trust *eq_trust_release_keys(const struct eq_trust *t);

/*
 * Every release key of every root in the accepted chain, threshold 1. Only
 * for manifests the agent itself wrote into a slot after verifying them (a
 * revoked key must stop new installs, not the boot of an installed slot).
 */
EQ_API const struct eq_manifest_trust *eq_trust_installed_keys(const struct eq_trust *t);

/*
 * The device's idea of "now": the later of @clock, the newest issue time of
 * the accepted roots and the issue time of the stored timestamp. A device
 * without a real-time clock that boots in 1970 thus never accepts what
 * expired before metadata it saw. The timestamp's part goes with the
 * timestamp when a new root rotates the timestamp role; the roots' stays.
 */
EQ_API int64_t eq_trust_now(const struct eq_trust *t, int64_t clock);

/* The newest accepted timestamp (version 0 when none yet); owned by @t. */
EQ_API const struct eq_timestamp *eq_trust_timestamp(const struct eq_trust *t);

/*
 * Reads one file of the repository for eq_trust_refresh(): @path is
 * relative to the repository ("root/3.root.json"); at most @max bytes (more
 * is EQ_ERR_LIMIT, without reading them all); EQ_ERR_NOTFOUND when the
 * server says the file does not exist (404/410), any other code for other
 * failures. @expect_sha256 is NULL or the hash the bytes must have (a
 * fetcher may answer from a cache holding those bytes). @have_sha256 is
 * NULL or the hash of the copy the caller already holds (the timestamp):
 * the fetcher may then ask conditionally (If-None-Match with an ETag it
 * kept for exactly those bytes) and, when the server says the file is
 * unchanged, return EQ_OK with *ret_data NULL and *ret_len 0; the caller
 * then uses its copy. Otherwise *ret_data is set and freed by the caller
 * with eq_free().
 */
typedef eq_err (*eq_trust_fetch_fn)(void *ctx, const char *path, size_t max, const char *expect_sha256,
				    const char *have_sha256, uint8_t **ret_data, size_t *ret_len, struct eq_error *err);

/* What eq_trust_refresh() verified. Free with eq_trust_result_done(). */
struct eq_trust_result {
	uint8_t *manifest, *sig; /* the exact bytes of manifest.json and its .sig */
	size_t manifest_len, sig_len;
	struct eq_manifest *m; /* parsed from them */
	uint64_t roots_walked; /* root versions accepted by this refresh */
};
EQ_API void eq_trust_result_done(struct eq_trust_result *res);

/*
 * The device's update check in root mode, in TUF's order:
 *   1. walks root/<N+1>.root.json... (eq_root_verify_next()) until the
 *      server has no next version, at most EQ_ROOT_CHAIN_MAX per call, and
 *      stores each accepted root at once;
 *   2. the newest root must be unexpired at eq_trust_now();
 *   3. boards/<board>/<channel>/timestamp.json, signed by the timestamp
 *      role, for this board and channel, not older (version, issued) than
 *      the newest accepted, unexpired, and, when @clock is set (not before
 *      the newest root's issue time), issued at most
 *      EQ_TIMESTAMP_MAX_AHEAD after @clock; it is stored. A root accepted
 *      in step 1 that changes the timestamp role first deletes the stored
 *      timestamp (see the trust store above). It is asked for with
 *      the stored copy's hash (see eq_trust_fetch_fn), and its .sig only
 *      when the bytes changed: an unchanged check costs one small request;
 *      a stored pair that no longer verifies is fetched again plainly;
 *   4. manifest.json, at most the timestamp's size and with its sha256,
 *      then its .sig under the release role, and the policy (board,
 *      channel, the timestamp's release number, expiry at eq_trust_now()).
 * @clock is the system clock (seconds since the epoch). Errors name the
 * file; EQ_ERR_EXPIRED for expired metadata, EQ_ERR_STATE for rollback
 * and mix-and-match, EQ_ERR_VERIFY for signatures and hashes.
 */
EQ_API eq_err eq_trust_refresh(struct eq_trust *t, eq_trust_fetch_fn fetch, void *ctx, const char *board,
			       const char *channel, int64_t clock, struct eq_trust_result *ret,
			       struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
