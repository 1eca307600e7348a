/*
 * Root and timestamp documents: the offline root that names the keys of
 * every role, its rotation step, and the short-lived timestamp that binds
 * a channel's current manifest. The device's store of what it accepted is
 * manifest_trust.c.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "manifest_priv.h"

static const char *const ROLE_NAMES[EQ_ROLE_COUNT] = {"root", "release", "timestamp"};

const char *eq_role_name(enum eq_role role)
{
	return (unsigned)role < EQ_ROLE_COUNT ? ROLE_NAMES[role] : "?";
}

struct eq_root {
	struct eq_root_info info;
	struct eq_manifest_trust *role[EQ_ROLE_COUNT];
};

void eq_root_free(struct eq_root *root)
{
	if (!root)
		return;
	for (int i = 0; i < EQ_ROLE_COUNT; i++)
		eq_manifest_trust_free(root->role[i]);
	eq_free(root);
}

void eq_root_get_info(const struct eq_root *root, struct eq_root_info *ret)
{
	*ret = root->info;
}

const struct eq_manifest_trust *eq_root_role(const struct eq_root *root, enum eq_role role)
{
	return (unsigned)role < EQ_ROLE_COUNT ? root->role[role] : NULL;
}

eq_err eq_manifest_trust_copy(const struct eq_manifest_trust *trust, const char *keyid, unsigned threshold,
			      struct eq_manifest_trust **ret_copy, bool *ret_removed, struct eq_error *err)
{
	unsigned th = threshold ? threshold : eq_manifest_trust_threshold(trust);
	struct eq_manifest_trust *c = eqm_trust_new(th);
	if (!c)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	bool removed = false;
	eq_err r = EQ_OK;
	for (size_t i = 0; !r && i < eq_manifest_trust_key_count(trust); i++) {
		const struct eqm_pubkey *k = eqm_trust_key(trust, i);
		if (keyid && strcmp(eqm_pubkey_id(k), keyid) == 0)
			removed = true;
		else
			r = eqm_trust_add(c, k, EQM_TRUST_CAP, err);
	}
	if (!r && eq_manifest_trust_key_count(c) < th)
		r = eq_error_set(err, EQ_ERR_STATE,
				 "%zu key(s) would be left, fewer than the threshold %u (add a key first)",
				 eq_manifest_trust_key_count(c), th);
	if (r) {
		eq_manifest_trust_free(c);
		return r;
	}
	*ret_copy = c;
	if (ret_removed)
		*ret_removed = removed;
	return EQ_OK;
}

/* ---- writing ------------------------------------------------------------ */

/* PEM is base64, dashes, spaces and newlines: only '\n' needs escaping. */
static eq_err put_pem(struct eq_buf *b, const char *pem, struct eq_error *err)
{
	eq_err r = EQ_OK;
	for (const char *p = pem; !r && *p; p++)
		r = *p == '\n' ? eq_buf_append(b, "\\n", 2, err) : eq_buf_append(b, p, 1, err);
	return r;
}

eq_err eq_root_to_json(const struct eq_root_info *info, const struct eq_manifest_trust *const roles[EQ_ROLE_COUNT],
		       uint8_t **ret_data, size_t *ret_len, struct eq_error *err)
{
	if (info->version < 1 || info->version > EQ_MANIFEST_NUMBER_MAX)
		return eq_error_set(err, EQ_ERR_INVAL, "version: must be 1..2^53");
	if (info->issued < 0 || info->expires <= info->issued || info->expires > EQM_TIME_MAX)
		return eq_error_set(err, EQ_ERR_INVAL, "expires: must be later than issued");
	/* The distinct keys, in the order the roles name them. */
	const struct eqm_pubkey *keys[EQ_ROOT_MAX_KEYS];
	size_t n = 0;
	for (int ro = 0; ro < EQ_ROLE_COUNT; ro++) {
		size_t rn = eq_manifest_trust_key_count(roles[ro]);
		if (rn < 1 || rn > EQ_MANIFEST_TRUST_MAX_KEYS)
			return eq_error_set(err, EQ_ERR_INVAL, "roles.%s: needs 1 to %u keys, has %zu", ROLE_NAMES[ro],
					    EQ_MANIFEST_TRUST_MAX_KEYS, rn);
		unsigned th = eq_manifest_trust_threshold(roles[ro]);
		if (th < 1 || th > rn)
			return eq_error_set(err, EQ_ERR_INVAL, "roles.%s: threshold %u is not between 1 and %zu",
					    ROLE_NAMES[ro], th, rn);
		for (size_t i = 0; i < rn; i++) {
			const struct eqm_pubkey *k = eqm_trust_key(roles[ro], i);
			bool seen = false;
			for (size_t j = 0; j < n && !seen; j++)
				seen = strcmp(eqm_pubkey_id(keys[j]), eqm_pubkey_id(k)) == 0;
			if (seen)
				continue;
			if (n == EQ_ROOT_MAX_KEYS)
				return eq_error_set(err, EQ_ERR_INVAL, "keys: more than %u distinct keys",
						    EQ_ROOT_MAX_KEYS);
			keys[n++] = k;
		}
	}
	char issued[EQ_MANIFEST_TIME_LEN + 1], expires[EQ_MANIFEST_TIME_LEN + 1];
	eq_manifest_format_time(info->issued, issued);
	eq_manifest_format_time(info->expires, expires);
	struct eq_buf b;
	eq_buf_init(&b, EQ_ROOT_MAX_BYTES);
	eq_err r = eq_buf_printf(&b, err,
				 "{\n  \"type\": \"root\",\n  \"format\": %d,\n  \"version\": %" PRIu64
				 ",\n  \"issued\": \"%s\",\n  \"expires\": \"%s\",\n  \"keys\": [\n",
				 EQ_MANIFEST_FORMAT, info->version, issued, expires);
	for (size_t i = 0; !r && i < n; i++) {
		r = eq_buf_printf(&b, err, "    {\n      \"keyid\": \"%s\",\n      \"pem\": \"",
				  eqm_pubkey_id(keys[i]));
		if (!r)
			r = put_pem(&b, eqm_pubkey_pem(keys[i]), err);
		if (!r)
			r = eq_buf_printf(&b, err, "\"\n    }%s\n", i + 1 < n ? "," : "");
	}
	if (!r)
		r = eq_buf_printf(&b, err, "  ],\n  \"roles\": {\n");
	for (int ro = 0; !r && ro < EQ_ROLE_COUNT; ro++) {
		r = eq_buf_printf(&b, err, "    \"%s\": {\n      \"threshold\": %u,\n      \"keyids\": [\n",
				  ROLE_NAMES[ro], eq_manifest_trust_threshold(roles[ro]));
		size_t rn = eq_manifest_trust_key_count(roles[ro]);
		for (size_t i = 0; !r && i < rn; i++)
			r = eq_buf_printf(&b, err, "        \"%s\"%s\n", eq_manifest_trust_keyid(roles[ro], i),
					  i + 1 < rn ? "," : "");
		if (!r)
			r = eq_buf_printf(&b, err, "      ]\n    }%s\n", ro + 1 < EQ_ROLE_COUNT ? "," : "");
	}
	if (!r)
		r = eq_buf_printf(&b, err, "  }\n}\n");
	if (r) {
		eq_buf_done(&b);
		return r;
	}
	*ret_data = eq_buf_steal(&b, ret_len);
	return EQ_OK;
}

/* ---- reading ------------------------------------------------------------ */

/* "type" names the document, so a validly signed timestamp can never be
 * taken for a root or a manifest (their keys differ too). */
static eq_err check_type(const cJSON *item, const char *want, struct eq_error *err)
{
	if (strcmp(item->valuestring, want) != 0) {
		char q[68];
		eq_quote(q, sizeof(q), item->valuestring);
		return eq_error_set(err, EQ_ERR_PARSE, "type: '%s', expected '%s'", q, want);
	}
	return EQ_OK;
}

struct keylist {
	struct eqm_pubkey *k[EQ_ROOT_MAX_KEYS];
	bool used[EQ_ROOT_MAX_KEYS];
	size_t n;
};

static void keylist_done(struct keylist *kl)
{
	for (size_t i = 0; i < kl->n; i++)
		eqm_pubkey_free(kl->k[i]);
	kl->n = 0;
}

static eq_err parse_keys(const cJSON *arr, struct keylist *kl, struct eq_error *err)
{
	static const struct eqm_field fields[] = {{"keyid", EQM_STRING}, {"pem", EQM_STRING}};
	const cJSON *it[2];
	eq_err r;
	for (const cJSON *c = arr->child; c; c = c->next) {
		char where[32];
		snprintf(where, sizeof(where), "keys[%zu]", kl->n);
		if (kl->n == EQ_ROOT_MAX_KEYS)
			return eq_error_set(err, EQ_ERR_LIMIT, "keys: more than %u keys", EQ_ROOT_MAX_KEYS);
		if (!cJSON_IsObject(c))
			return eq_error_set(err, EQ_ERR_PARSE, "%s: expected an object", where);
		if ((r = eqm_fields(c, where, fields, 2, it, err)))
			return r;
		if (!eq_is_sha256_hex(it[0]->valuestring))
			return eq_error_set(err, EQ_ERR_PARSE, "%s.keyid: expected 64 lower-case hex digits", where);
		struct eqm_pubkey *k = NULL;
		if ((r = eqm_pubkey_parse(it[1]->valuestring, &k, err)))
			return eq_error_prefix(err, r, "%s.pem", where);
		if (strcmp(eqm_pubkey_id(k), it[0]->valuestring) != 0) {
			r = eq_error_set(err, EQ_ERR_VERIFY, "%s.keyid: does not match its key (the key's id is %s)",
					 where, eqm_pubkey_id(k));
			eqm_pubkey_free(k);
			return r;
		}
		for (size_t j = 0; j < kl->n; j++) {
			if (strcmp(eqm_pubkey_id(kl->k[j]), eqm_pubkey_id(k)) == 0) {
				eqm_pubkey_free(k);
				return eq_error_set(err, EQ_ERR_PARSE, "%s: key %s is listed twice", where,
						    it[0]->valuestring);
			}
		}
		kl->used[kl->n] = false;
		kl->k[kl->n++] = k;
	}
	if (kl->n == 0)
		return eq_error_set(err, EQ_ERR_PARSE, "keys: empty");
	return EQ_OK;
}

static eq_err parse_role(const cJSON *obj, int ro, struct keylist *kl, struct eq_manifest_trust **ret,
			 struct eq_error *err)
{
	static const struct eqm_field fields[] = {{"threshold", EQM_NUMBER}, {"keyids", EQM_ARRAY}};
	const cJSON *it[2];
	char where[32];
	snprintf(where, sizeof(where), "roles.%s", ROLE_NAMES[ro]);
	eq_err r = eqm_fields(obj, where, fields, 2, it, err);
	if (r)
		return r;
	struct eq_manifest_trust *t = eqm_trust_new(1);
	if (!t)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	size_t i = 0;
	for (const cJSON *c = it[1]->child; !r && c; c = c->next, i++) {
		if (i == EQ_MANIFEST_TRUST_MAX_KEYS) {
			r = eq_error_set(err, EQ_ERR_LIMIT, "%s.keyids: more than %u keys", where,
					 EQ_MANIFEST_TRUST_MAX_KEYS);
			break;
		}
		if (!cJSON_IsString(c) || !eq_is_sha256_hex(c->valuestring)) {
			r = eq_error_set(err, EQ_ERR_PARSE, "%s.keyids[%zu]: expected 64 lower-case hex digits", where,
					 i);
			break;
		}
		size_t j = 0;
		while (j < kl->n && strcmp(eqm_pubkey_id(kl->k[j]), c->valuestring) != 0)
			j++;
		if (j == kl->n) {
			r = eq_error_set(err, EQ_ERR_PARSE, "%s.keyids[%zu]: key %s is not in keys", where, i,
					 c->valuestring);
			break;
		}
		size_t before = eq_manifest_trust_key_count(t);
		if ((r = eqm_trust_add(t, kl->k[j], EQ_MANIFEST_TRUST_MAX_KEYS, err)))
			break;
		if (eq_manifest_trust_key_count(t) == before)
			r = eq_error_set(err, EQ_ERR_PARSE, "%s.keyids[%zu]: key %s is listed twice", where, i,
					 c->valuestring);
		kl->used[j] = true;
	}
	if (!r && i == 0)
		r = eq_error_set(err, EQ_ERR_PARSE, "%s.keyids: empty", where);
	uint64_t th = 0;
	if (!r)
		r = eqm_uint(it[0], where, "threshold", 1, eq_manifest_trust_key_count(t), &th, err);
	if (r) {
		eq_manifest_trust_free(t);
		return r;
	}
	eqm_trust_set_threshold(t, (unsigned)th);
	*ret = t;
	return EQ_OK;
}

static eq_err root_build(const cJSON *doc, struct eq_root *root, struct eq_error *err)
{
	static const struct eqm_field fields[] = {
		{"type", EQM_STRING},    {"format", EQM_NUMBER}, {"version", EQM_NUMBER}, {"issued", EQM_STRING},
		{"expires", EQM_STRING}, {"keys", EQM_ARRAY},    {"roles", EQM_OBJECT}};
	static const struct eqm_field role_fields[] = {
		{"root", EQM_OBJECT}, {"release", EQM_OBJECT}, {"timestamp", EQM_OBJECT}};
	const cJSON *it[7], *rit[3];
	struct keylist kl = {.n = 0};
	eq_err r;
	if ((r = eqm_check_format(doc, err)) || (r = eqm_fields(doc, "", fields, 7, it, err)) ||
	    (r = check_type(it[0], "root", err)) ||
	    (r = eqm_uint(it[2], "", "version", 1, EQ_MANIFEST_NUMBER_MAX, &root->info.version, err)) ||
	    (r = eqm_time(it[3], "issued", &root->info.issued, err)) ||
	    (r = eqm_time(it[4], "expires", &root->info.expires, err)))
		return r;
	if (root->info.expires <= root->info.issued)
		return eq_error_set(err, EQ_ERR_PARSE, "expires: not later than issued");
	if ((r = parse_keys(it[5], &kl, err)) || (r = eqm_fields(it[6], "roles", role_fields, 3, rit, err)))
		goto out;
	for (int ro = 0; !r && ro < EQ_ROLE_COUNT; ro++)
		r = parse_role(rit[ro], ro, &kl, &root->role[ro], err);
	for (size_t i = 0; !r && i < kl.n; i++)
		if (!kl.used[i])
			r = eq_error_set(err, EQ_ERR_PARSE, "keys[%zu]: key %s is in no role", i,
					 eqm_pubkey_id(kl.k[i]));
out:
	keylist_done(&kl);
	return r;
}

eq_err eq_root_parse_unverified(const uint8_t *data, size_t len, struct eq_root **ret_root, struct eq_error *err)
{
	assert(ret_root);
	if (len > EQ_ROOT_MAX_BYTES)
		return eq_error_set(err, EQ_ERR_LIMIT, "root is %zu bytes, more than the limit of %u", len,
				    EQ_ROOT_MAX_BYTES);
	cJSON *doc = NULL;
	eq_err r = eqm_json_parse(data, len, &doc, err);
	if (r)
		return r;
	struct eq_root *root = eq_calloc(1, sizeof(*root));
	if (!root)
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	else
		r = root_build(doc, root, err);
	cJSON_Delete(doc);
	if (r) {
		eq_root_free(root);
		return r;
	}
	*ret_root = root;
	return EQ_OK;
}

eq_err eq_root_load_file(const char *path, struct eq_root **ret_root, struct eq_error *err)
{
	uint8_t *data = NULL, *sig = NULL;
	size_t len = 0, sig_len = 0;
	struct eq_root *root = NULL;
	eq_err r;
	if ((r = eq_signed_file_read(path, EQ_ROOT_MAX_BYTES, &data, &len, &sig, &sig_len, err)))
		goto out;
	if ((r = eq_root_parse_unverified(data, len, &root, err)))
		goto prefix;
	if ((r = eq_manifest_verify(data, len, sig, sig_len, root->role[EQ_ROLE_ROOT], err))) {
		eq_error_prefix(err, r, "not signed by its own root role");
		goto prefix;
	}
	*ret_root = root;
	root = NULL;
	goto out;
prefix:
	eq_error_prefix(err, r, "%s", path);
out:
	eq_root_free(root);
	eq_free(data);
	eq_free(sig);
	return r;
}

eq_err eq_root_verify_next(const struct eq_root *cur, const uint8_t *data, size_t len, const uint8_t *sig,
			   size_t sig_len, struct eq_root **ret_next, struct eq_error *err)
{
	assert(cur && ret_next);
	struct eq_root *next = NULL;
	eq_err r;
	if (len > EQ_ROOT_MAX_BYTES)
		return eq_error_set(err, EQ_ERR_LIMIT, "root is %zu bytes, more than the limit of %u", len,
				    EQ_ROOT_MAX_BYTES);
	/* The old root's keys vouch for the new document before any of it is
	 * parsed, as for the manifest. */
	if ((r = eq_manifest_verify(data, len, sig, sig_len, cur->role[EQ_ROLE_ROOT], err)))
		return eq_error_prefix(err, r, "not signed by root version %" PRIu64 "'s root role", cur->info.version);
	if ((r = eq_root_parse_unverified(data, len, &next, err)))
		return r;
	if (next->info.version != cur->info.version + 1) {
		r = eq_error_set(err, EQ_ERR_STATE, "root version %" PRIu64 ", expected %" PRIu64, next->info.version,
				 cur->info.version + 1);
		goto fail;
	}
	/* Its own keys too: a new root nobody holding its keys signed could
	 * lock the operator out of the next rotation. */
	if ((r = eq_manifest_verify(data, len, sig, sig_len, next->role[EQ_ROLE_ROOT], err))) {
		eq_error_prefix(err, r, "not signed by its own root role");
		goto fail;
	}
	if (next->info.issued < cur->info.issued) {
		char a[EQ_MANIFEST_TIME_LEN + 1], b[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(next->info.issued, a);
		eq_manifest_format_time(cur->info.issued, b);
		r = eq_error_set(err, EQ_ERR_STATE, "issued %s, before root version %" PRIu64 " (%s)", a,
				 cur->info.version, b);
		goto fail;
	}
	*ret_next = next;
	return EQ_OK;
fail:
	eq_root_free(next);
	return r;
}

/* ---- timestamp ---------------------------------------------------------- */

static eq_err ts_check(const struct eq_timestamp *ts, eq_err bad, struct eq_error *err)
{
	const char *why;
	if (ts->version < 1 || ts->version > EQ_MANIFEST_NUMBER_MAX)
		return eq_error_set(err, bad, "version: must be 1..2^53");
	if ((why = eqm_check_name(ts->board)))
		return eq_error_set(err, bad, "board: %s", why);
	if ((why = eqm_check_name(ts->channel)))
		return eq_error_set(err, bad, "channel: %s", why);
	if (ts->issued < 0 || ts->expires <= ts->issued || ts->expires > EQM_TIME_MAX)
		return eq_error_set(err, bad, "expires: not later than issued");
	if (ts->number < 1 || ts->number > EQ_MANIFEST_NUMBER_MAX)
		return eq_error_set(err, bad, "manifest.number: must be 1..2^53");
	if (!eq_is_sha256_hex(ts->sha256))
		return eq_error_set(err, bad, "manifest.sha256: expected 64 lower-case hex digits");
	if (ts->size < 1 || ts->size > EQ_MANIFEST_MAX_BYTES)
		return eq_error_set(err, bad, "manifest.size: must be 1..%u", EQ_MANIFEST_MAX_BYTES);
	if (ts->rollout.present && ts->rollout.percent > 100)
		return eq_error_set(err, bad, "rollout.percent: must be 0..100");
	return EQ_OK;
}

eq_err eq_timestamp_to_json(const struct eq_timestamp *ts, uint8_t **ret_data, size_t *ret_len, struct eq_error *err)
{
	eq_err r = ts_check(ts, EQ_ERR_INVAL, err);
	if (r)
		return r;
	char issued[EQ_MANIFEST_TIME_LEN + 1], expires[EQ_MANIFEST_TIME_LEN + 1];
	eq_manifest_format_time(ts->issued, issued);
	eq_manifest_format_time(ts->expires, expires);
	char rollout[96] = "";
	if (ts->rollout.present)
		snprintf(rollout, sizeof(rollout), ",\n  \"rollout\": {\n    \"percent\": %u,\n    \"halted\": %s\n  }",
			 ts->rollout.percent, ts->rollout.halted ? "true" : "false");
	struct eq_buf b;
	eq_buf_init(&b, EQ_TIMESTAMP_MAX_BYTES);
	r = eq_buf_printf(
		&b, err,
		"{\n  \"type\": \"timestamp\",\n  \"format\": %d,\n  \"version\": %" PRIu64
		",\n  \"board\": \"%s\",\n  \"channel\": \"%s\",\n  \"issued\": \"%s\",\n  \"expires\": \"%s\",\n"
		"  \"manifest\": {\n    \"number\": %" PRIu64 ",\n    \"sha256\": \"%s\",\n    \"size\": %" PRIu64
		"\n  }%s\n}\n",
		EQ_MANIFEST_FORMAT, ts->version, ts->board, ts->channel, issued, expires, ts->number, ts->sha256,
		ts->size, rollout);
	if (r) {
		eq_buf_done(&b);
		return r;
	}
	*ret_data = eq_buf_steal(&b, ret_len);
	return EQ_OK;
}

static eq_err copy_name(char *dst, const cJSON *item, const char *key, struct eq_error *err)
{
	const char *why = eqm_check_name(item->valuestring);
	if (why)
		return eq_error_set(err, EQ_ERR_PARSE, "%s: %s", key, why);
	snprintf(dst, EQ_MANIFEST_NAME_MAX + 1, "%s", item->valuestring);
	return EQ_OK;
}

eq_err eq_timestamp_parse_unverified(const uint8_t *data, size_t len, struct eq_timestamp *ret, struct eq_error *err)
{
	static const struct eqm_field fields[] = {
		{"type", EQM_STRING},    {"format", EQM_NUMBER},   {"version", EQM_NUMBER},
		{"board", EQM_STRING},   {"channel", EQM_STRING},  {"issued", EQM_STRING},
		{"expires", EQM_STRING}, {"manifest", EQM_OBJECT}, {"rollout", EQM_OBJECT}};
	static const struct eqm_field mfields[] = {
		{"number", EQM_NUMBER}, {"sha256", EQM_STRING}, {"size", EQM_NUMBER}};
	static const struct eqm_field rfields[] = {{"percent", EQM_NUMBER}, {"halted", EQM_BOOL}};
	const cJSON *it[9], *mit[3], *rit[2];
	struct eq_timestamp ts;
	memset(&ts, 0, sizeof(ts));
	if (len > EQ_TIMESTAMP_MAX_BYTES)
		return eq_error_set(err, EQ_ERR_LIMIT, "timestamp is %zu bytes, more than the limit of %u", len,
				    EQ_TIMESTAMP_MAX_BYTES);
	cJSON *doc = NULL;
	eq_err r = eqm_json_parse(data, len, &doc, err);
	if (r)
		return r;
	/* "rollout" is the one optional member (see struct eq_timestamp). */
	size_t nf = cJSON_GetObjectItemCaseSensitive(doc, "rollout") ? 9 : 8;
	if ((r = eqm_check_format(doc, err)) || (r = eqm_fields(doc, "", fields, nf, it, err)) ||
	    (r = check_type(it[0], "timestamp", err)) ||
	    (r = eqm_uint(it[2], "", "version", 1, EQ_MANIFEST_NUMBER_MAX, &ts.version, err)) ||
	    (r = copy_name(ts.board, it[3], "board", err)) || (r = copy_name(ts.channel, it[4], "channel", err)) ||
	    (r = eqm_time(it[5], "issued", &ts.issued, err)) || (r = eqm_time(it[6], "expires", &ts.expires, err)) ||
	    (r = eqm_fields(it[7], "manifest", mfields, 3, mit, err)) ||
	    (r = eqm_uint(mit[0], "manifest", "number", 1, EQ_MANIFEST_NUMBER_MAX, &ts.number, err)) ||
	    (r = eqm_uint(mit[2], "manifest", "size", 1, EQ_MANIFEST_MAX_BYTES, &ts.size, err)))
		goto out;
	if (!eq_is_sha256_hex(mit[1]->valuestring)) {
		r = eq_error_set(err, EQ_ERR_PARSE, "manifest.sha256: expected 64 lower-case hex digits");
		goto out;
	}
	memcpy(ts.sha256, mit[1]->valuestring, EQ_MANIFEST_HASH_LEN + 1);
	if (nf == 9) {
		uint64_t pct;
		if ((r = eqm_fields(it[8], "rollout", rfields, 2, rit, err)) ||
		    (r = eqm_uint(rit[0], "rollout", "percent", 0, 100, &pct, err)))
			goto out;
		ts.rollout.present = true;
		ts.rollout.percent = (unsigned)pct;
		ts.rollout.halted = cJSON_IsTrue(rit[1]);
	}
	if ((r = ts_check(&ts, EQ_ERR_PARSE, err)))
		goto out;
	*ret = ts;
out:
	cJSON_Delete(doc);
	return r;
}

eq_err eq_timestamp_load_verified(const uint8_t *data, size_t len, const uint8_t *sig, size_t sig_len,
				  const struct eq_root *root, struct eq_timestamp *ret, struct eq_error *err)
{
	if (len > EQ_TIMESTAMP_MAX_BYTES)
		return eq_error_set(err, EQ_ERR_LIMIT, "timestamp is %zu bytes, more than the limit of %u", len,
				    EQ_TIMESTAMP_MAX_BYTES);
	eq_err r = eq_manifest_verify(data, len, sig, sig_len, root->role[EQ_ROLE_TIMESTAMP], err);
	if (r)
		return eq_error_prefix(err, r, "not signed by the timestamp role of root version %" PRIu64,
				       root->info.version);
	return eq_timestamp_parse_unverified(data, len, ret, err);
}
