/*
 * Private to eq_manifest: the manifest's layout and the helpers the .c files
 * share. Never on another target's include path (STYLE 4).
 */
#ifndef EQ_MANIFEST_PRIV_H
#define EQ_MANIFEST_PRIV_H

#include <cJSON.h>

#include <eq/manifest.h>

struct eq_manifest {
	bool has_header;
	char board[EQ_MANIFEST_NAME_MAX + 1];
	char channel[EQ_MANIFEST_NAME_MAX + 1];
	char release[EQ_MANIFEST_NAME_MAX + 1];
	uint64_t number;
	int64_t issued;
	int64_t expires;
	/* Sorted by name, unique. Each record is one allocation holding the
	 * struct, its deltas and its strings, so pointers handed out stay
	 * valid when the array grows. */
	struct eq_manifest_package **pkgs;
	size_t n_pkgs;
	size_t cap_pkgs;
	struct eqm_image *image; /* format 2 (manifest_image.c); NULL: format 1 */
};

/* Latest representable time: 9999-12-31T23:59:59Z. */
#define EQM_TIME_MAX INT64_C(253402300799)

/*
 * Validates @p and inserts a copy into @m. @where names the package in
 * messages ("packages[3]"); @bad is the code for a field that breaks its
 * rule (EQ_ERR_INVAL for API callers, EQ_ERR_PARSE for the parser).
 */
eq_err eqm_add_package(struct eq_manifest *m, const struct eq_manifest_package *p, const char *where, eq_err bad,
		       struct eq_error *err) EQ_MUST_CHECK;
eq_err eqm_set_header(struct eq_manifest *m, const struct eq_manifest_header *h, eq_err bad,
		      struct eq_error *err) EQ_MUST_CHECK;

/* true if @path could leave its folder: absolute, "..", "//" or "\\". */
bool eqm_path_unsafe(const char *path);

/* NULL when @s is a valid board or channel name, else why not. */
const char *eqm_check_name(const char *s);
/* NULL when @s is a valid package name, else why not. */
const char *eqm_check_package_name(const char *s);

/* ---- image of a format-2 manifest (manifest_image.c) ------------------- */

struct eqm_image;
struct eq_buf;
void eqm_image_free(struct eqm_image *img);
/* Every component name of @m's image is a package of @m; else @bad naming it. */
eq_err eqm_image_check_packages(const struct eq_manifest *m, eq_err bad, struct eq_error *err) EQ_MUST_CHECK;

/* ---- strict JSON (manifest_json.c) ------------------------------------ */

/*
 * Checks @data with a strict RFC 8259 scanner (UTF-8, no NUL, nesting at
 * most EQ_MANIFEST_MAX_DEPTH, arrays of at most EQ_MANIFEST_MAX_PACKAGES
 * elements, objects of at most EQM_MAX_MEMBERS members, a root object) and
 * only then builds the cJSON tree. Malformed input is EQ_ERR_PARSE
 * "line L column C: ...". The tree is freed with cJSON_Delete().
 */
#define EQM_MAX_MEMBERS 64u
eq_err eqm_json_parse(const uint8_t *data, size_t len, cJSON **ret_root, struct eq_error *err) EQ_MUST_CHECK;

enum eqm_type { EQM_STRING, EQM_NUMBER, EQM_OBJECT, EQM_ARRAY, EQM_BOOL };
struct eqm_field {
	const char *key;
	enum eqm_type type;
};

/*
 * Matches the members of object @obj against @fields: every member must be
 * one of them (else "WHERE: unknown key 'k'"), at most once ("duplicate key"),
 * of its type, and every field must be present. ret_items[i] receives the
 * member for fields[i]. All EQ_ERR_PARSE.
 */
eq_err eqm_fields(const cJSON *obj, const char *where, const struct eqm_field *fields, size_t n,
		  const cJSON **ret_items, struct eq_error *err) EQ_MUST_CHECK;

/* "format" of @root must be EQ_MANIFEST_FORMAT: EQ_ERR_UNSUPPORTED
 * otherwise, checked before the other keys so that a newer file says
 * "unsupported" rather than "unknown key". */
eq_err eqm_check_format(const cJSON *root, struct eq_error *err) EQ_MUST_CHECK;

/* An integral JSON number in [min, max] (max <= 2^53). */
eq_err eqm_uint(const cJSON *item, const char *where, const char *key, uint64_t min, uint64_t max, uint64_t *ret,
		struct eq_error *err) EQ_MUST_CHECK;

/* "where.key", or "key" when @where is empty, into @out. */
void eqm_path(char *out, size_t size, const char *where, const char *key);


/* ---- keys (manifest_keys.c) ------------------------------------------- */

/* A parsed public key with its id; the mbedTLS context stays private to
 * manifest_keys.c. */
struct eqm_pubkey;
eq_err eqm_pubkey_parse(const char *pem, struct eqm_pubkey **ret_key, struct eq_error *err) EQ_MUST_CHECK;
void eqm_pubkey_free(struct eqm_pubkey *k);
const char *eqm_pubkey_id(const struct eqm_pubkey *k);
const char *eqm_pubkey_pem(const struct eqm_pubkey *k);
/* true when @der_sig is a valid ECDSA signature by @k over @hash. */
bool eqm_pubkey_verify(const struct eqm_pubkey *k, const uint8_t hash[EQ_SHA256_LEN], const uint8_t *der_sig,
		       size_t der_len);
/* DER ECDSA signature by @key over @hash into @out (EQM_SIG_DER_MAX bytes);
 * verified with the key's own public half when @self_check (a faulty
 * signature must not be published), which a caller about to verify it
 * anyway may leave to that. */
#define EQM_SIG_DER_MAX 80u
eq_err eqm_key_sign(const struct eq_manifest_key *key, const uint8_t hash[EQ_SHA256_LEN], bool self_check,
		    uint8_t out[EQM_SIG_DER_MAX], size_t *ret_len, struct eq_error *err) EQ_MUST_CHECK;

/* ---- trust sets and signature files (manifest_sig.c) ------------------ */

/* Keys a trust set can hold: EQ_MANIFEST_TRUST_MAX_KEYS from a file or a
 * root role, more for the union of release keys over a root chain
 * (eq_trust_installed_keys()). */
#define EQM_TRUST_CAP 64u
/* An empty trust set with @threshold (set the keys with eqm_trust_add()). */
struct eq_manifest_trust *eqm_trust_new(unsigned threshold);
/* Adds a parsed copy of @k unless a key with its id is there; EQ_ERR_LIMIT
 * past @cap keys, EQ_ERR_NOMEM. */
eq_err eqm_trust_add(struct eq_manifest_trust *t, const struct eqm_pubkey *k, size_t cap,
		     struct eq_error *err) EQ_MUST_CHECK;
const struct eqm_pubkey *eqm_trust_key(const struct eq_manifest_trust *t, size_t i);
void eqm_trust_set_threshold(struct eq_manifest_trust *t, unsigned threshold);

/* The "image" member @obj into @m (EQ_ERR_PARSE naming the element). */
eq_err eqm_image_parse(struct eq_manifest *m, const cJSON *obj, struct eq_error *err) EQ_MUST_CHECK;
/* Writes @m's image as the "image" member (two spaces of indentation, no
 * comma before or after). */
eq_err eqm_image_write(struct eq_buf *b, const struct eq_manifest *m, struct eq_error *err) EQ_MUST_CHECK;

/* "format" of @root: 1, or 2 when @allow_image; *ret_format (may be NULL)
 * receives it. Same errors as eqm_check_format(). */
eq_err eqm_check_format_max(const cJSON *root, bool allow_image, int *ret_format, struct eq_error *err) EQ_MUST_CHECK;

/* UTC time @item (a JSON string "YYYY-MM-DDTHH:MM:SSZ") into *ret. */
eq_err eqm_time(const cJSON *item, const char *key, int64_t *ret, struct eq_error *err) EQ_MUST_CHECK;

#endif
