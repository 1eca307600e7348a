/*
 * Keys: generation, PEM loading, key ids, raw ECDSA sign/verify. The only
 * file that talks to mbedTLS's key API, so its error codes are translated
 * here, once (STYLE 13).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform_util.h>

#include "manifest_priv.h"

/*
 * mbedTLS 2.28 takes non-const contexts even to verify, so the contexts are
 * held by pointer: a const key can then still be used without casts.
 */
struct eq_manifest_key {
	mbedtls_pk_context *pk;
	char keyid[EQ_MANIFEST_KEYID_LEN + 1];
};

struct eqm_pubkey {
	mbedtls_pk_context *pk;
	char keyid[EQ_MANIFEST_KEYID_LEN + 1];
	char pem[]; /* canonical PEM written back by mbedTLS */
};

#define PEM_MAX 1024u

static eq_err tls_err(struct eq_error *err, eq_err code, int ret, const char *what)
{
	char msg[128];
	mbedtls_strerror(ret, msg, sizeof(msg));
	return eq_error_set(err, code, "%s: %s (mbedTLS -0x%04x)", what, msg, (unsigned)-ret);
}

static mbedtls_pk_context *pk_new(void)
{
	mbedtls_pk_context *pk = eq_malloc(sizeof(*pk));
	if (pk)
		mbedtls_pk_init(pk);
	return pk;
}

static void pk_free(mbedtls_pk_context *pk)
{
	if (!pk)
		return;
	mbedtls_pk_free(pk);
	eq_free(pk);
}

/* Only ECDSA P-256 is part of the format; anything else is refused by name. */
static eq_err check_p256(const mbedtls_pk_context *pk, struct eq_error *err)
{
	if (mbedtls_pk_get_type(pk) != MBEDTLS_PK_ECKEY)
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "key type %s is not supported (need EC P-256)",
				    mbedtls_pk_get_name(pk));
	if (mbedtls_pk_ec(*pk)->grp.id != MBEDTLS_ECP_DP_SECP256R1)
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "EC curve is not supported (need P-256)");
	return EQ_OK;
}

/* keyid = lower-case hex SHA-256 of the DER SubjectPublicKeyInfo. */
static eq_err key_id(mbedtls_pk_context *pk, char out[EQ_MANIFEST_KEYID_LEN + 1], struct eq_error *err)
{
	unsigned char der[256];
	int n = mbedtls_pk_write_pubkey_der(pk, der, sizeof(der));
	if (n <= 0)
		return tls_err(err, EQ_ERR_VERIFY, n, "cannot encode public key");
	uint8_t d[EQ_SHA256_LEN];
	eq_sha256(der + sizeof(der) - (size_t)n, (size_t)n, d);
	eq_hex_encode(d, sizeof(d), out);
	return EQ_OK;
}

/* A CTR-DRBG seeded from the platform entropy source, personalised per use. */
struct rng {
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
};

static eq_err rng_init(struct rng *g, const char *pers, struct eq_error *err)
{
	mbedtls_entropy_init(&g->entropy);
	mbedtls_ctr_drbg_init(&g->drbg);
	int ret = mbedtls_ctr_drbg_seed(&g->drbg, mbedtls_entropy_func, &g->entropy, (const unsigned char *)pers,
					strlen(pers));
	if (ret)
		return tls_err(err, EQ_ERR_VERIFY, ret, "cannot seed the random generator");
	return EQ_OK;
}

static void rng_done(struct rng *g)
{
	mbedtls_ctr_drbg_free(&g->drbg);
	mbedtls_entropy_free(&g->entropy);
}

/* ---- generation --------------------------------------------------------- */

static eq_err write_file(int fd, const char *path, const void *data, size_t len, mode_t mode, struct eq_error *err)
{
	eq_err r;
	/* the umask may have cleared bits we want (0644 for the public key) */
	if (fchmod(fd, mode) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot chmod '%s'", path);
	if ((r = eq_write_all(fd, data, len, err)))
		return eq_error_prefix(err, r, "%s", path);
	if (fsync(fd) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot fsync '%s'", path);
	return EQ_OK;
}

static int create_excl(const char *path, mode_t mode, struct eq_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0) {
		if (errno == EEXIST)
			eq_error_set(err, EQ_ERR_STATE, "'%s' already exists, refusing to overwrite a key", path);
		else
			eq_error_errno(err, EQ_ERR_IO, "cannot create '%s'", path);
	}
	return fd;
}

eq_err eq_manifest_key_generate(const char *name_prefix, char ret_keyid[EQ_MANIFEST_KEYID_LEN + 1],
				struct eq_error *err)
{
	assert(name_prefix);
	struct rng g;
	mbedtls_pk_context pk;
	unsigned char keypem[PEM_MAX], pubpem[PEM_MAX];
	char keyid[EQ_MANIFEST_KEYID_LEN + 1];
	char *keypath = eq_asprintf("%s.key", name_prefix), *pubpath = eq_asprintf("%s.pub", name_prefix);
	int kfd = -1, pfd = -1, ret;
	bool created = false;
	eq_err r;

	mbedtls_pk_init(&pk);
	r = rng_init(&g, "eqota-keygen", err);
	if (!keypath || !pubpath) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (r)
		goto out;
	/* Everything that can fail in the crypto library happens before any
	 * file exists, so a failure leaves nothing behind. */
	if ((ret = mbedtls_pk_setup(&pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY))) ||
	    (ret = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(pk), mbedtls_ctr_drbg_random,
				       &g.drbg))) {
		r = tls_err(err, EQ_ERR_VERIFY, ret, "cannot generate key");
		goto out;
	}
	if ((ret = mbedtls_pk_write_key_pem(&pk, keypem, sizeof(keypem))) ||
	    (ret = mbedtls_pk_write_pubkey_pem(&pk, pubpem, sizeof(pubpem)))) {
		r = tls_err(err, EQ_ERR_VERIFY, ret, "cannot encode key");
		goto out;
	}
	if ((r = key_id(&pk, keyid, err)))
		goto out;

	kfd = create_excl(keypath, 0600, err);
	if (kfd < 0) {
		r = err ? err->code : EQ_ERR_IO;
		goto out;
	}
	created = true;
	pfd = create_excl(pubpath, 0644, err);
	if (pfd < 0) {
		r = err ? err->code : EQ_ERR_IO;
		goto out;
	}
	if ((r = write_file(kfd, keypath, keypem, strlen((char *)keypem), 0600, err)) ||
	    (r = write_file(pfd, pubpath, pubpem, strlen((char *)pubpem), 0644, err)) ||
	    (r = eq_fsync_dir_of(keypath, err)))
		goto out;
	if (ret_keyid)
		memcpy(ret_keyid, keyid, sizeof(keyid));

out:
	if (kfd >= 0)
		close(kfd);
	if (pfd >= 0)
		close(pfd);
	if (r && created) {
		/* only files this call created; an existing .pub is left alone */
		unlink(keypath);
		if (pfd >= 0)
			unlink(pubpath);
	}
	mbedtls_platform_zeroize(keypem, sizeof(keypem));
	mbedtls_pk_free(&pk);
	rng_done(&g);
	eq_free(keypath);
	eq_free(pubpath);
	return r;
}

/* ---- loading ------------------------------------------------------------ */

eq_err eq_manifest_key_load(const char *path, struct eq_manifest_key **ret_key, struct eq_error *err)
{
	assert(path && ret_key);
	uint8_t *data = NULL;
	size_t len = 0;
	eq_err r = eq_file_read_all(path, EQ_MANIFEST_KEYFILE_MAX_BYTES, &data, &len, err);
	if (r)
		return r;
	struct eq_manifest_key *k = eq_calloc(1, sizeof(*k));
	if (!k || !(k->pk = pk_new())) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* PEM input must include its terminating NUL in the length */
	int ret = mbedtls_pk_parse_key(k->pk, data, len + 1, NULL, 0);
	if (ret == MBEDTLS_ERR_PK_PASSWORD_REQUIRED) {
		r = eq_error_set(err, EQ_ERR_UNSUPPORTED, "%s: encrypted private keys are not supported", path);
		goto out;
	}
	if (ret) {
		r = tls_err(err, EQ_ERR_PARSE, ret, "not a PEM private key");
		(void)eq_error_prefix(err, r, "%s", path);
		goto out;
	}
	if ((r = check_p256(k->pk, err)) || (r = key_id(k->pk, k->keyid, err))) {
		(void)eq_error_prefix(err, r, "%s", path);
		goto out;
	}
	*ret_key = k;
	k = NULL;
out:
	mbedtls_platform_zeroize(data, len);
	eq_free(data);
	eq_manifest_key_free(k);
	return r;
}

void eq_manifest_key_free(struct eq_manifest_key *key)
{
	if (!key)
		return;
	pk_free(key->pk); /* mbedtls_pk_free wipes the key material */
	eq_free(key);
}

const char *eq_manifest_key_id(const struct eq_manifest_key *key)
{
	return key->keyid;
}

eq_err eqm_pubkey_parse(const char *pem, struct eqm_pubkey **ret_key, struct eq_error *err)
{
	mbedtls_pk_context *pk = pk_new();
	unsigned char canon[PEM_MAX];
	struct eqm_pubkey *k = NULL;
	eq_err r;
	int ret;
	if (!pk)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (strnlen(pem, PEM_MAX * 4) >= PEM_MAX * 4) {
		r = eq_error_set(err, EQ_ERR_LIMIT, "public key PEM is too long");
		goto out;
	}
	if ((ret = mbedtls_pk_parse_public_key(pk, (const unsigned char *)pem, strlen(pem) + 1))) {
		r = tls_err(err, EQ_ERR_PARSE, ret, "not a PEM public key");
		goto out;
	}
	if ((r = check_p256(pk, err)))
		goto out;
	if ((ret = mbedtls_pk_write_pubkey_pem(pk, canon, sizeof(canon)))) {
		r = tls_err(err, EQ_ERR_VERIFY, ret, "cannot encode public key");
		goto out;
	}
	size_t n = strlen((char *)canon) + 1;
	k = eq_malloc(sizeof(*k) + n);
	if (!k) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto out;
	}
	memcpy(k->pem, canon, n);
	if ((r = key_id(pk, k->keyid, err)))
		goto out;
	k->pk = pk;
	pk = NULL;
	*ret_key = k;
	k = NULL;
out:
	eq_free(k);
	pk_free(pk);
	return r;
}

void eqm_pubkey_free(struct eqm_pubkey *k)
{
	if (!k)
		return;
	pk_free(k->pk);
	eq_free(k);
}

const char *eqm_pubkey_id(const struct eqm_pubkey *k)
{
	return k->keyid;
}

const char *eqm_pubkey_pem(const struct eqm_pubkey *k)
{
	return k->pem;
}

/* ---- sign / verify ------------------------------------------------------ */

bool eqm_pubkey_verify(const struct eqm_pubkey *k, const uint8_t hash[EQ_SHA256_LEN], const uint8_t *der_sig,
		       size_t der_len)
{
	return mbedtls_pk_verify(k->pk, MBEDTLS_MD_SHA256, hash, EQ_SHA256_LEN, der_sig, der_len) == 0;
}

eq_err eqm_key_sign(const struct eq_manifest_key *key, const uint8_t hash[EQ_SHA256_LEN], bool self_check,
		    uint8_t out[EQM_SIG_DER_MAX], size_t *ret_len, struct eq_error *err)
{
	struct rng g;
	unsigned char sig[MBEDTLS_PK_SIGNATURE_MAX_SIZE];
	size_t len = 0;
	eq_err r = rng_init(&g, "eqota-sign", err);
	if (!r) {
		int ret = mbedtls_pk_sign(key->pk, MBEDTLS_MD_SHA256, hash, EQ_SHA256_LEN, sig, &len,
					  mbedtls_ctr_drbg_random, &g.drbg);
		if (ret)
			r = tls_err(err, EQ_ERR_VERIFY, ret, "cannot sign");
		else if (len > EQM_SIG_DER_MAX)
			r = eq_error_set(err, EQ_ERR_VERIFY, "signature is %zu bytes, expected at most %u", len,
					 EQM_SIG_DER_MAX);
		/* check our own output: a faulty signature must not be published */
		else if (self_check &&
			 (ret = mbedtls_pk_verify(key->pk, MBEDTLS_MD_SHA256, hash, EQ_SHA256_LEN, sig, len)))
			r = tls_err(err, EQ_ERR_VERIFY, ret, "fresh signature does not verify");
	}
	rng_done(&g);
	if (r)
		return r;
	memcpy(out, sig, len);
	*ret_len = len;
	return EQ_OK;
}
