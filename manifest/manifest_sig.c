/*
 * Signature files, trust sets, verification and the device entry point
 * eq_manifest_load_verified().
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <mbedtls/base64.h>

#include "manifest_priv.h"

/* ---- signature file ----------------------------------------------------- */

/* base64 of EQM_SIG_DER_MAX bytes */
#define SIG_B64_MAX (4u * ((EQM_SIG_DER_MAX + 2u) / 3u))

struct sig_entry {
	char keyid[EQ_MANIFEST_KEYID_LEN + 1];
	uint8_t der[EQM_SIG_DER_MAX];
	size_t der_len;
};

struct sigset {
	struct sig_entry e[EQ_MANIFEST_MAX_SIGNATURES];
	size_t n;
};

/*
 * Only the canonical encoding is accepted (re-encoding must give the same
 * text), so no two signature files differ in unused bits and a tampered
 * byte never decodes to the same signature.
 */
static eq_err decode_sig(const char *b64, const char *where, struct sig_entry *e, struct eq_error *err)
{
	size_t n = strnlen(b64, SIG_B64_MAX + 1), olen = 0;
	char again[SIG_B64_MAX + 1];
	if (n == 0)
		return eq_error_set(err, EQ_ERR_PARSE, "%s.sig: empty", where);
	if (n > SIG_B64_MAX)
		return eq_error_set(err, EQ_ERR_PARSE, "%s.sig: longer than %u characters", where, SIG_B64_MAX);
	if (mbedtls_base64_decode(e->der, sizeof(e->der), &e->der_len, (const unsigned char *)b64, n) != 0 ||
	    e->der_len == 0 ||
	    mbedtls_base64_encode((unsigned char *)again, sizeof(again), &olen, e->der, e->der_len) != 0 || olen != n ||
	    memcmp(again, b64, n) != 0)
		return eq_error_set(err, EQ_ERR_PARSE, "%s.sig: not canonical base64", where);
	return EQ_OK;
}

static eq_err parse_sigset(const uint8_t *sig, size_t sig_len, struct sigset *set, struct eq_error *err)
{
	static const struct eqm_field root_fields[] = {{"signatures", EQM_ARRAY}};
	static const struct eqm_field fields[] = {{"keyid", EQM_STRING}, {"sig", EQM_STRING}};
	const cJSON *rit[1], *it[2];
	cJSON *root = NULL;
	eq_err r;
	if (sig_len > EQ_MANIFEST_SIG_MAX_BYTES)
		return eq_error_set(err, EQ_ERR_LIMIT, "signature file is %zu bytes, more than the limit of %u",
				    sig_len, EQ_MANIFEST_SIG_MAX_BYTES);
	if ((r = eqm_json_parse(sig, sig_len, &root, err)))
		return r;
	set->n = 0;
	if ((r = eqm_fields(root, "", root_fields, 1, rit, err)))
		goto out;
	for (const cJSON *c = rit[0]->child; c; c = c->next) {
		char where[32];
		snprintf(where, sizeof(where), "signatures[%zu]", set->n);
		if (set->n == EQ_MANIFEST_MAX_SIGNATURES) {
			r = eq_error_set(err, EQ_ERR_LIMIT, "signatures: more than %u signatures",
					 EQ_MANIFEST_MAX_SIGNATURES);
			goto out;
		}
		if (!cJSON_IsObject(c)) {
			r = eq_error_set(err, EQ_ERR_PARSE, "%s: expected an object", where);
			goto out;
		}
		if ((r = eqm_fields(c, where, fields, 2, it, err)))
			goto out;
		struct sig_entry *e = &set->e[set->n];
		if (!eq_is_sha256_hex(it[0]->valuestring)) {
			r = eq_error_set(err, EQ_ERR_PARSE, "%s.keyid: expected 64 lower-case hex digits", where);
			goto out;
		}
		memcpy(e->keyid, it[0]->valuestring, EQ_MANIFEST_KEYID_LEN + 1);
		for (size_t j = 0; j < set->n; j++) {
			if (strcmp(set->e[j].keyid, e->keyid) == 0) {
				r = eq_error_set(err, EQ_ERR_PARSE, "%s.keyid: key %s signed twice", where, e->keyid);
				goto out;
			}
		}
		if ((r = decode_sig(it[1]->valuestring, where, e, err)))
			goto out;
		set->n++;
	}
out:
	cJSON_Delete(root);
	return r;
}

static eq_err write_sigset(const struct sigset *set, uint8_t **ret, size_t *ret_len, struct eq_error *err)
{
	struct eq_buf b;
	eq_buf_init(&b, EQ_MANIFEST_SIG_MAX_BYTES);
	eq_err r = eq_buf_printf(&b, err, "{\n  \"signatures\": [%s", set->n ? "\n" : "");
	for (size_t i = 0; !r && i < set->n; i++) {
		const struct sig_entry *e = &set->e[i];
		char b64[SIG_B64_MAX + 1];
		size_t olen = 0;
		if (mbedtls_base64_encode((unsigned char *)b64, sizeof(b64), &olen, e->der, e->der_len) != 0) {
			r = eq_error_set(err, EQ_ERR_VERIFY, "cannot encode signature");
			break;
		}
		r = eq_buf_printf(&b, err, "    {\n      \"keyid\": \"%s\",\n      \"sig\": \"%s\"\n    }%s\n",
				  e->keyid, b64, i + 1 < set->n ? "," : "");
	}
	if (!r)
		r = eq_buf_printf(&b, err, "%s]\n}\n", set->n ? "  " : "");
	if (r) {
		eq_buf_done(&b);
		return r;
	}
	*ret = eq_buf_steal(&b, ret_len);
	return EQ_OK;
}

static eq_err add_signature(struct sigset *set, const uint8_t hash[EQ_SHA256_LEN], const struct eq_manifest_key *key,
			    bool self_check, struct eq_error *err)
{
	const char *id = eq_manifest_key_id(key);
	for (size_t j = 0; j < set->n; j++)
		if (strcmp(set->e[j].keyid, id) == 0)
			return eq_error_set(err, EQ_ERR_STATE, "key %s has already signed", id);
	if (set->n == EQ_MANIFEST_MAX_SIGNATURES)
		return eq_error_set(err, EQ_ERR_LIMIT, "more than %u signatures", EQ_MANIFEST_MAX_SIGNATURES);
	struct sig_entry *e = &set->e[set->n];
	eq_err r = eqm_key_sign(key, hash, self_check, e->der, &e->der_len, err);
	if (r)
		return r;
	memcpy(e->keyid, id, EQ_MANIFEST_KEYID_LEN + 1);
	set->n++;
	return EQ_OK;
}

static const struct eqm_pubkey *trust_find(const struct eq_manifest_trust *t, const char *keyid);

/* Signs with every key; @checked_by (may be NULL) names the keys whose
 * signatures the caller verifies next, which are not checked here too. */
static eq_err sign_all(const uint8_t *data, size_t len, const struct eq_manifest_key *const *keys, size_t n_keys,
		       const struct eq_manifest_trust *checked_by, uint8_t **ret_sig, size_t *ret_sig_len,
		       struct eq_error *err)
{
	assert(ret_sig && ret_sig_len);
	if (n_keys < 1 || n_keys > EQ_MANIFEST_MAX_SIGNATURES)
		return eq_error_set(err, EQ_ERR_INVAL, "need 1 to %u signing keys, got %zu", EQ_MANIFEST_MAX_SIGNATURES,
				    n_keys);
	struct sigset *set = eq_calloc(1, sizeof(*set));
	if (!set)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	uint8_t hash[EQ_SHA256_LEN];
	eq_sha256(data, len, hash);
	eq_err r = EQ_OK;
	for (size_t i = 0; !r && i < n_keys; i++) {
		bool self_check = !checked_by || !trust_find(checked_by, eq_manifest_key_id(keys[i]));
		r = add_signature(set, hash, keys[i], self_check, err);
		if (r == EQ_ERR_STATE)
			r = eq_error_set(err, EQ_ERR_INVAL, "key %s is given twice", eq_manifest_key_id(keys[i]));
	}
	if (!r)
		r = write_sigset(set, ret_sig, ret_sig_len, err);
	eq_free(set);
	return r;
}

eq_err eq_manifest_sign(const uint8_t *data, size_t len, const struct eq_manifest_key *const *keys, size_t n_keys,
			uint8_t **ret_sig, size_t *ret_sig_len, struct eq_error *err)
{
	return sign_all(data, len, keys, n_keys, NULL, ret_sig, ret_sig_len, err);
}

eq_err eq_manifest_sign_for(const uint8_t *data, size_t len, const struct eq_manifest_key *const *keys, size_t n_keys,
			    const struct eq_manifest_trust *trust, uint8_t **ret_sig, size_t *ret_sig_len,
			    struct eq_error *err)
{
	assert(trust);
	return sign_all(data, len, keys, n_keys, trust, ret_sig, ret_sig_len, err);
}

eq_err eq_manifest_sign_append(const uint8_t *data, size_t len, const uint8_t *sig, size_t sig_len,
			       const struct eq_manifest_key *key, uint8_t **ret_sig, size_t *ret_sig_len,
			       struct eq_error *err)
{
	assert(ret_sig && ret_sig_len);
	struct sigset *set = eq_calloc(1, sizeof(*set));
	if (!set)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	uint8_t hash[EQ_SHA256_LEN];
	eq_sha256(data, len, hash);
	eq_err r = parse_sigset(sig, sig_len, set, err);
	if (r)
		eq_error_prefix(err, r, "existing signature file");
	else
		r = add_signature(set, hash, key, true, err);
	if (!r)
		r = write_sigset(set, ret_sig, ret_sig_len, err);
	eq_free(set);
	return r;
}

/* ---- trust -------------------------------------------------------------- */

struct eq_manifest_trust {
	unsigned threshold;
	size_t n;
	struct eqm_pubkey *keys[EQM_TRUST_CAP];
};

struct eq_manifest_trust *eqm_trust_new(unsigned threshold)
{
	struct eq_manifest_trust *t = eq_calloc(1, sizeof(*t));
	if (t)
		t->threshold = threshold;
	return t;
}

eq_err eqm_trust_add(struct eq_manifest_trust *t, const struct eqm_pubkey *k, size_t cap, struct eq_error *err)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(eqm_pubkey_id(t->keys[i]), eqm_pubkey_id(k)) == 0)
			return EQ_OK;
	if (t->n >= cap || t->n >= EQM_TRUST_CAP)
		return eq_error_set(err, EQ_ERR_LIMIT, "more than %zu keys", cap < EQM_TRUST_CAP ? cap : EQM_TRUST_CAP);
	struct eqm_pubkey *c = NULL;
	eq_err r = eqm_pubkey_parse(eqm_pubkey_pem(k), &c, err);
	if (r)
		return r;
	t->keys[t->n++] = c;
	return EQ_OK;
}

const struct eqm_pubkey *eqm_trust_key(const struct eq_manifest_trust *t, size_t i)
{
	return i < t->n ? t->keys[i] : NULL;
}

void eqm_trust_set_threshold(struct eq_manifest_trust *t, unsigned threshold)
{
	t->threshold = threshold;
}

void eq_manifest_trust_free(struct eq_manifest_trust *trust)
{
	if (!trust)
		return;
	for (size_t i = 0; i < trust->n; i++)
		eqm_pubkey_free(trust->keys[i]);
	eq_free(trust);
}

unsigned eq_manifest_trust_threshold(const struct eq_manifest_trust *trust)
{
	return trust->threshold;
}

size_t eq_manifest_trust_key_count(const struct eq_manifest_trust *trust)
{
	return trust->n;
}

const char *eq_manifest_trust_keyid(const struct eq_manifest_trust *trust, size_t i)
{
	return i < trust->n ? eqm_pubkey_id(trust->keys[i]) : NULL;
}

static const struct eqm_pubkey *trust_find(const struct eq_manifest_trust *t, const char *keyid)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(eqm_pubkey_id(t->keys[i]), keyid) == 0)
			return t->keys[i];
	return NULL;
}

static eq_err trust_build(const cJSON *root, struct eq_manifest_trust *t, struct eq_error *err)
{
	static const struct eqm_field fields[] = {
		{"format", EQM_NUMBER}, {"threshold", EQM_NUMBER}, {"keys", EQM_ARRAY}};
	static const struct eqm_field key_fields[] = {{"keyid", EQM_STRING}, {"pem", EQM_STRING}};
	const cJSON *it[3], *kit[2];
	eq_err r;
	if ((r = eqm_check_format(root, err)) || (r = eqm_fields(root, "", fields, 3, it, err)))
		return r;
	for (const cJSON *c = it[2]->child; c; c = c->next) {
		char where[32];
		snprintf(where, sizeof(where), "keys[%zu]", t->n);
		if (t->n == EQ_MANIFEST_TRUST_MAX_KEYS)
			return eq_error_set(err, EQ_ERR_LIMIT, "keys: more than %u keys", EQ_MANIFEST_TRUST_MAX_KEYS);
		if (!cJSON_IsObject(c))
			return eq_error_set(err, EQ_ERR_PARSE, "%s: expected an object", where);
		if ((r = eqm_fields(c, where, key_fields, 2, kit, err)))
			return r;
		const char *keyid = kit[0]->valuestring;
		if (!eq_is_sha256_hex(keyid))
			return eq_error_set(err, EQ_ERR_PARSE, "%s.keyid: expected 64 lower-case hex digits", where);
		struct eqm_pubkey *k = NULL;
		if ((r = eqm_pubkey_parse(kit[1]->valuestring, &k, err)))
			return eq_error_prefix(err, r, "%s.pem", where);
		if (strcmp(eqm_pubkey_id(k), keyid) != 0) {
			r = eq_error_set(err, EQ_ERR_VERIFY, "%s.keyid: does not match its key (the key's id is %s)",
					 where, eqm_pubkey_id(k));
			eqm_pubkey_free(k);
			return r;
		}
		if (trust_find(t, keyid)) {
			eqm_pubkey_free(k);
			return eq_error_set(err, EQ_ERR_PARSE, "%s: key %s is listed twice", where, keyid);
		}
		t->keys[t->n++] = k;
	}
	if (t->n == 0)
		return eq_error_set(err, EQ_ERR_PARSE, "keys: empty");
	uint64_t th;
	if ((r = eqm_uint(it[1], "", "threshold", 1, t->n, &th, err)))
		return r;
	t->threshold = (unsigned)th;
	return EQ_OK;
}

eq_err eq_manifest_trust_parse(const uint8_t *data, size_t len, struct eq_manifest_trust **ret_trust,
			       struct eq_error *err)
{
	assert(ret_trust);
	if (len > EQ_MANIFEST_TRUST_MAX_BYTES)
		return eq_error_set(err, EQ_ERR_LIMIT, "trust file is %zu bytes, more than the limit of %u", len,
				    EQ_MANIFEST_TRUST_MAX_BYTES);
	cJSON *root = NULL;
	eq_err r = eqm_json_parse(data, len, &root, err);
	if (r)
		return r;
	struct eq_manifest_trust *t = eq_calloc(1, sizeof(*t));
	if (!t)
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	else
		r = trust_build(root, t, err);
	cJSON_Delete(root);
	if (r) {
		eq_manifest_trust_free(t);
		return r;
	}
	*ret_trust = t;
	return EQ_OK;
}

eq_err eq_manifest_trust_load(const char *path, struct eq_manifest_trust **ret_trust, struct eq_error *err)
{
	uint8_t *data = NULL;
	size_t len = 0;
	eq_err r = eq_file_read_all(path, EQ_MANIFEST_TRUST_MAX_BYTES, &data, &len, err);
	if (r)
		return r;
	r = eq_manifest_trust_parse(data, len, ret_trust, err);
	eq_free(data);
	if (r)
		return eq_error_prefix(err, r, "%s", path);
	return EQ_OK;
}

eq_err eq_manifest_trust_from_pubkeys(const char *const *paths, size_t n_paths, unsigned threshold,
				      struct eq_manifest_trust **ret_trust, struct eq_error *err)
{
	assert(ret_trust);
	if (n_paths < 1 || n_paths > EQ_MANIFEST_TRUST_MAX_KEYS)
		return eq_error_set(err, EQ_ERR_INVAL, "need 1 to %u public keys, got %zu", EQ_MANIFEST_TRUST_MAX_KEYS,
				    n_paths);
	if (threshold < 1 || threshold > n_paths)
		return eq_error_set(err, EQ_ERR_INVAL, "threshold %u is not between 1 and the %zu keys given",
				    threshold, n_paths);
	struct eq_manifest_trust *t = eq_calloc(1, sizeof(*t));
	if (!t)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	eq_err r = EQ_OK;
	for (size_t i = 0; !r && i < n_paths; i++) {
		uint8_t *data = NULL;
		size_t len = 0;
		struct eqm_pubkey *k = NULL;
		r = eq_file_read_all(paths[i], EQ_MANIFEST_KEYFILE_MAX_BYTES, &data, &len, err);
		if (r)
			break;
		if (memchr(data, '\0', len))
			r = eq_error_set(err, EQ_ERR_PARSE, "%s: not a PEM public key (contains NUL)", paths[i]);
		else if ((r = eqm_pubkey_parse((const char *)data, &k, err)))
			eq_error_prefix(err, r, "%s", paths[i]);
		eq_free(data);
		if (r)
			break;
		for (size_t j = 0; j < t->n; j++) {
			if (strcmp(eqm_pubkey_id(t->keys[j]), eqm_pubkey_id(k)) == 0) {
				r = eq_error_set(err, EQ_ERR_INVAL, "%s: same key as %s", paths[i], paths[j]);
				break;
			}
		}
		if (r) {
			eqm_pubkey_free(k);
			break;
		}
		t->keys[t->n++] = k;
	}
	if (r) {
		eq_manifest_trust_free(t);
		return r;
	}
	t->threshold = threshold;
	*ret_trust = t;
	return EQ_OK;
}

eq_err eq_manifest_trust_to_json(const struct eq_manifest_trust *trust, uint8_t **ret_data, size_t *ret_len,
				 struct eq_error *err)
{
	struct eq_buf b;
	eq_buf_init(&b, EQ_MANIFEST_TRUST_MAX_BYTES);
	eq_err r = eq_buf_printf(&b, err, "{\n  \"format\": %d,\n  \"threshold\": %u,\n  \"keys\": [\n",
				 EQ_MANIFEST_FORMAT, trust->threshold);
	for (size_t i = 0; !r && i < trust->n; i++) {
		r = eq_buf_printf(&b, err, "    {\n      \"keyid\": \"%s\",\n      \"pem\": \"",
				  eqm_pubkey_id(trust->keys[i]));
		/* PEM is base64, dashes, spaces and newlines: only '\n' needs escaping */
		for (const char *p = eqm_pubkey_pem(trust->keys[i]); !r && *p; p++)
			r = *p == '\n' ? eq_buf_append(&b, "\\n", 2, err) : eq_buf_append(&b, p, 1, err);
		if (!r)
			r = eq_buf_printf(&b, err, "\"\n    }%s\n", i + 1 < trust->n ? "," : "");
	}
	if (!r)
		r = eq_buf_printf(&b, err, "  ]\n}\n");
	if (r) {
		eq_buf_done(&b);
		return r;
	}
	*ret_data = eq_buf_steal(&b, ret_len);
	return EQ_OK;
}

/* ---- signed files ------------------------------------------------------- */

eq_err eq_signed_file_read(const char *path, size_t max, uint8_t **ret_data, size_t *ret_len, uint8_t **ret_sig,
			   size_t *ret_sig_len, struct eq_error *err)
{
	EQ_AUTOFREE char *sp = eq_asprintf("%s.sig", path);
	if (!sp)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	eq_err r = eq_file_read_all(path, max, ret_data, ret_len, err);
	if (!r && (r = eq_file_read_all(sp, EQ_MANIFEST_SIG_MAX_BYTES, ret_sig, ret_sig_len, err))) {
		eq_free(*ret_data);
		*ret_data = NULL;
	}
	return r;
}

eq_err eq_signed_file_write(const char *path, const uint8_t *data, size_t len, const uint8_t *sig, size_t sig_len,
			    struct eq_error *err)
{
	EQ_AUTOFREE char *sp = eq_asprintf("%s.sig", path);
	if (!sp)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	eq_err r = eq_file_replace_atomic(sp, sig, sig_len, 0644, err);
	if (!r)
		r = eq_file_replace_atomic(path, data, len, 0644, err);
	return r;
}

/* ---- verification ------------------------------------------------------- */

eq_err eq_manifest_verify(const uint8_t *data, size_t len, const uint8_t *sig, size_t sig_len,
			  const struct eq_manifest_trust *trust, struct eq_error *err)
{
	assert(trust);
	struct sigset *set = eq_malloc(sizeof(*set));
	if (!set)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	eq_err r = parse_sigset(sig, sig_len, set, err);
	if (r) {
		eq_error_prefix(err, r, "signature file");
		goto out;
	}
	uint8_t hash[EQ_SHA256_LEN];
	eq_sha256(data, len, hash);
	unsigned valid = 0;
	const char *unknown = NULL;
	for (size_t i = 0; i < set->n; i++) {
		const struct eqm_pubkey *k = trust_find(trust, set->e[i].keyid);
		if (!k) {
			if (!unknown)
				unknown = set->e[i].keyid;
			continue;
		}
		if (!eqm_pubkey_verify(k, hash, set->e[i].der, set->e[i].der_len)) {
			r = eq_error_set(err, EQ_ERR_VERIFY, "signature by key %s does not verify", set->e[i].keyid);
			goto out;
		}
		valid++; /* keyids are distinct (parse_sigset), so this counts keys */
	}
	if (valid < trust->threshold) {
		if (unknown && valid == 0)
			r = eq_error_set(err, EQ_ERR_VERIFY, "signed by unknown key %s, 0 of %u required signatures",
					 unknown, trust->threshold);
		else if (unknown)
			r = eq_error_set(err, EQ_ERR_VERIFY,
					 "%u of %u required signatures (also signed by unknown key %s)", valid,
					 trust->threshold, unknown);
		else
			r = eq_error_set(err, EQ_ERR_VERIFY, "%u of %u required signatures", valid, trust->threshold);
	}
out:
	eq_free(set);
	return r;
}

eq_err eq_manifest_check_policy(const struct eq_manifest *m, const struct eq_manifest_policy *policy,
				struct eq_error *err)
{
	assert(m && policy);
	if (policy->board && strcmp(m->board, policy->board) != 0) {
		char q[68];
		eq_quote(q, sizeof(q), policy->board);
		return eq_error_set(err, EQ_ERR_STATE, "manifest is for board '%s', this device is '%s'", m->board, q);
	}
	/* A validly signed file of another channel or release served in place
	 * of the one asked for (mix-and-match) must not be installed: a beta
	 * release committed on a stable device would also make it refuse
	 * stable's lower numbers as downgrades. */
	if (policy->channel && strcmp(m->channel, policy->channel) != 0) {
		char q[68];
		eq_quote(q, sizeof(q), policy->channel);
		return eq_error_set(err, EQ_ERR_STATE, "manifest is for channel '%s', this device follows '%s'",
				    m->channel, q);
	}
	if (policy->number && m->number != policy->number) {
		return eq_error_set(err, EQ_ERR_STATE,
				    "manifest is release number %" PRIu64 ", not the %" PRIu64 " asked for", m->number,
				    policy->number);
	}
	if (policy->check_expiry && policy->now >= m->expires) {
		char exp[EQ_MANIFEST_TIME_LEN + 1], now[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(m->expires, exp);
		eq_manifest_format_time(policy->now, now);
		return eq_error_set(err, EQ_ERR_EXPIRED, "expired at %s (now %s)", exp, now);
	}
	return EQ_OK;
}

eq_err eq_manifest_load_verified(const uint8_t *data, size_t len, const uint8_t *sig, size_t sig_len,
				 const struct eq_manifest_trust *trust, const struct eq_manifest_policy *policy,
				 struct eq_manifest **ret_m, struct eq_error *err)
{
	assert(trust && policy && ret_m);
	struct eq_manifest *m = NULL;
	eq_err r;
	if (len > EQ_MANIFEST_MAX_BYTES)
		return eq_error_set(err, EQ_ERR_LIMIT, "manifest is %zu bytes, more than the limit of %u", len,
				    EQ_MANIFEST_MAX_BYTES);
	/* The order is the point of this function: nothing in @data reaches
	 * the JSON parser until the signatures over its exact bytes hold. */
	if ((r = eq_manifest_verify(data, len, sig, sig_len, trust, err)))
		return r;
	if ((r = eq_manifest_parse_unverified(data, len, &m, err)))
		return r;
	if ((r = eq_manifest_check_policy(m, policy, err)))
		goto out;
	*ret_m = m;
	m = NULL;
out:
	eq_manifest_free(m);
	return r;
}

eq_err eq_manifest_load_verified_file(const char *manifest_path, const char *sig_path,
				      const struct eq_manifest_trust *trust, const struct eq_manifest_policy *policy,
				      struct eq_manifest **ret_m, struct eq_error *err)
{
	assert(manifest_path);
	uint8_t *data = NULL, *sig = NULL;
	size_t len = 0, sig_len = 0;
	char *default_sig = NULL;
	eq_err r;
	if (!sig_path) {
		default_sig = eq_asprintf("%s.sig", manifest_path);
		if (!default_sig)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		sig_path = default_sig;
	}
	if ((r = eq_file_read_all(manifest_path, EQ_MANIFEST_MAX_BYTES, &data, &len, err)) ||
	    (r = eq_file_read_all(sig_path, EQ_MANIFEST_SIG_MAX_BYTES, &sig, &sig_len, err)))
		goto out;
	if ((r = eq_manifest_load_verified(data, len, sig, sig_len, trust, policy, ret_m, err)))
		eq_error_prefix(err, r, "%s", manifest_path);
out:
	eq_free(data);
	eq_free(sig);
	eq_free(default_sig);
	return r;
}
