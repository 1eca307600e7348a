/*
 * The publisher's side of the root of trust: creating and rotating root
 * documents, refreshing a channel's timestamp, and checking a repository
 * the way a device does (eq_trust_refresh() over the files).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <eq/gen_repo.h>
#include <eq/gen_root.h>
#include <eq/repo_layout.h>

#include "gen_priv.h"

static int64_t clock_now(void)
{
	return (int64_t)time(NULL);
}

/* Signs @data with the private keys at @paths into a signature file. */
/* Signs with the keys in @paths; @checked_by (may be NULL) as
 * eq_manifest_sign_for(): the role the caller verifies the result against
 * next. */
static eq_err sign_with(const uint8_t *data, size_t len, const char *const *paths, size_t n,
			const struct eq_manifest_trust *checked_by, uint8_t **ret_sig, size_t *ret_len,
			struct eq_error *err)
{
	struct eq_manifest_key *keys[EQ_MANIFEST_MAX_SIGNATURES] = {NULL};
	if (n < 1 || n > EQ_MANIFEST_MAX_SIGNATURES)
		return eq_error_set(err, EQ_ERR_INVAL, "need 1 to %u signing keys, got %zu", EQ_MANIFEST_MAX_SIGNATURES,
				    n);
	eq_err r = EQ_OK;
	size_t got = 0;
	for (; !r && got < n; got++) {
		if ((r = eq_manifest_key_load(paths[got], &keys[got], err)))
			break;
	}
	const struct eq_manifest_key *const *kv = (const struct eq_manifest_key *const *)keys;
	if (!r)
		r = checked_by ? eq_manifest_sign_for(data, len, kv, n, checked_by, ret_sig, ret_len, err)
			       : eq_manifest_sign(data, len, kv, n, ret_sig, ret_len, err);
	for (size_t i = 0; i < n; i++)
		eq_manifest_key_free(keys[i]);
	return r;
}

eq_err eq_gen_root_follow(const char *repo, struct eq_root *start, struct eq_root **ret, struct eq_error *err)
{
	struct eq_root *cur = start;
	eq_err r = EQ_OK;
	/* A chain is a file per version, but a copy from elsewhere may hold
	 * anything: bounded. */
	for (unsigned steps = 1;; steps++) {
		if (steps >= EQ_ROOT_CHAIN_MAX * 64u) {
			r = eq_error_set(err, EQ_ERR_LIMIT, "%s/root: more than %u root versions", repo,
					 EQ_ROOT_CHAIN_MAX * 64u);
			break;
		}
		struct eq_root_info info;
		eq_root_get_info(cur, &info);
		EQ_AUTOFREE char *path = NULL;
		uint8_t *d = NULL, *s = NULL;
		size_t dl = 0, sl = 0;
		struct eq_root *next = NULL;
		r = eq_layout_root(repo, info.version + 1, &path, err);
		if (!r)
			r = eq_signed_file_read(path, EQ_ROOT_MAX_BYTES, &d, &dl, &s, &sl, err);
		if (r == EQ_ERR_NOTFOUND) {
			r = EQ_OK;
			break;
		}
		if (!r && (r = eq_root_verify_next(cur, d, dl, s, sl, &next, err)))
			eq_error_prefix(err, r, "%s", path);
		eq_free(d);
		eq_free(s);
		if (r)
			break;
		eq_root_free(cur);
		cur = next;
	}
	if (r) {
		eq_root_free(cur);
		return r;
	}
	*ret = cur;
	return EQ_OK;
}

/* The pin @trusted_root stands for: a root file kept outside the repository
 * (its version, and the SHA-256 of its bytes), or 64 hex digits, the
 * SHA-256 of root version 1 ('root init' prints it). */
static eq_err pin_read(const char *trusted_root, uint64_t *ret_version, char ret_hex[EQ_SHA256_HEX_LEN + 1],
		       struct eq_error *err)
{
	if (eq_is_sha256_hex(trusted_root)) {
		snprintf(ret_hex, EQ_SHA256_HEX_LEN + 1, "%s", trusted_root);
		*ret_version = 1;
		return EQ_OK;
	}
	uint8_t *d = NULL;
	size_t dl = 0;
	struct eq_root *pinned = NULL;
	eq_err r = eq_file_read_all(trusted_root, EQ_ROOT_MAX_BYTES, &d, &dl, err);
	if (r)
		return eq_error_prefix(err, r, "trusted root (--trusted-root)");
	if ((r = eq_root_parse_unverified(d, dl, &pinned, err))) {
		eq_error_prefix(err, r, "trusted root '%s' (--trusted-root): not a root file", trusted_root);
	} else {
		struct eq_root_info info;
		eq_root_get_info(pinned, &info);
		*ret_version = info.version;
		uint8_t dg[EQ_SHA256_LEN];
		eq_sha256(d, dl, dg);
		eq_hex_encode(dg, sizeof(dg), ret_hex);
	}
	eq_root_free(pinned);
	eq_free(d);
	return r;
}

static eq_err pinned_newest(const char *repo, const char *trusted_root, struct eq_root **ret, struct eq_error *err)
{
	uint64_t version = 1;
	char pin_hex[EQ_SHA256_HEX_LEN + 1];
	eq_err r = pin_read(trusted_root, &version, pin_hex, err);
	if (r)
		return r;
	EQ_AUTOFREE char *path = NULL;
	if ((r = eq_layout_root(repo, version, &path, err)))
		return r;
	uint8_t *d = NULL, *s = NULL;
	size_t dl = 0, sl = 0;
	struct eq_root *cur = NULL;
	/* One read: the bytes compared are the bytes parsed. */
	r = eq_signed_file_read(path, EQ_ROOT_MAX_BYTES, &d, &dl, &s, &sl, err);
	if (r == EQ_ERR_NOTFOUND) {
		/* Not NOTFOUND: a caller must not take it for a repository
		 * without a root and sign as in one. */
		r = eq_error_set(err, EQ_ERR_VERIFY,
				 "%s is missing, but the trusted root '%s' is root version %" PRIu64
				 " of this repository: nothing is signed",
				 path, trusted_root, version);
		goto out;
	}
	if (r)
		goto out;
	uint8_t dg[EQ_SHA256_LEN];
	char found_hex[EQ_SHA256_HEX_LEN + 1];
	eq_sha256(d, dl, dg);
	eq_hex_encode(dg, sizeof(dg), found_hex);
	if (strcmp(found_hex, pin_hex) != 0) {
		r = eq_error_set(err, EQ_ERR_VERIFY,
				 "%s has SHA-256 %s, the trusted root (--trusted-root %s) has SHA-256 %s: this "
				 "repository's root is not the one pinned (planted or replaced?), nothing is signed",
				 path, found_hex, trusted_root, pin_hex);
		goto out;
	}
	/* As a device checks its installed root (eq_root_load_file()). */
	if ((r = eq_root_parse_unverified(d, dl, &cur, err)) ||
	    (r = eq_manifest_verify(d, dl, s, sl, eq_root_role(cur, EQ_ROLE_ROOT), err))) {
		eq_error_prefix(err, r, "%s", path);
		goto out;
	}
	r = eq_gen_root_follow(repo, cur, ret, err);
	cur = NULL; /* consumed */
out:
	eq_root_free(cur);
	eq_free(d);
	eq_free(s);
	return r;
}

eq_err eq_gen_root_pinned(const char *repo, const char *trusted_root, struct eq_root **ret, struct eq_error *err)
{
	eq_err r = pinned_newest(repo, trusted_root, ret, err);
	/* A missing file here (the pin, a .sig) must never read as "this
	 * repository has no root": callers would sign without one. */
	if (r == EQ_ERR_NOTFOUND)
		r = eq_error_prefix(err, EQ_ERR_VERIFY, "nothing is signed");
	return r;
}

eq_err eq_gen_root_newest(const char *repo, const char *trusted_root, struct eq_root **ret, struct eq_error *err)
{
	if (trusted_root)
		return eq_gen_root_pinned(repo, trusted_root, ret, err);
	EQ_AUTOFREE char *first = NULL;
	eq_err lr = eq_layout_root(repo, 1, &first, err);
	if (lr)
		return lr;
	struct stat st;
	if (lstat(first, &st) != 0 && errno == ENOENT)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "%s has no root/1.root.json: run 'eqota-gen root init' first",
				    repo);
	/* Whoever can write the repository could have put this root there:
	 * trust starts from a copy the operator keeps elsewhere. */
	return eq_error_set(err, EQ_ERR_STATE,
			    "%s: the repository has a root, but no trusted root is pinned; signing against a root "
			    "read from the repository itself would sign whatever its writers planted. Pass "
			    "--trusted-root FILE (a copy of root/1.root.json kept outside the repository) or "
			    "--trusted-root SHA256 (the hash 'root init' printed)",
			    first);
}

/* The role @ro of the new root: from .pub files when given, else @keep's. */
static eq_err role_for(const struct eq_root_opts *o, int ro, const struct eq_root *keep, struct eq_manifest_trust **ret,
		       struct eq_error *err)
{
	const struct eq_root_role_opts *ropt = &o->roles[ro];
	eq_err r;
	if (ropt->n_pubs) {
		unsigned th = ropt->threshold ? ropt->threshold : 1;
		r = eq_manifest_trust_from_pubkeys(ropt->pubs, ropt->n_pubs, th, ret, err);
		if (r)
			return eq_error_prefix(err, r, "%s role", eq_role_name((enum eq_role)ro));
		return EQ_OK;
	}
	if (!keep)
		return eq_error_set(err, EQ_ERR_INVAL, "the %s role needs at least one public key",
				    eq_role_name((enum eq_role)ro));
	const struct eq_manifest_trust *old = eq_root_role(keep, (enum eq_role)ro);
	if ((r = eq_manifest_trust_copy(old, o->revoke_keyid, ropt->threshold, ret, NULL, err)))
		return eq_error_prefix(err, r, "the %s role", eq_role_name((enum eq_role)ro));
	return EQ_OK;
}

eq_err eq_gen_root_write(const struct eq_root_opts *o, bool init, uint64_t *ret_version, struct eq_error *err)
{
	struct eq_root *cur = NULL;
	struct eq_manifest_trust *roles[EQ_ROLE_COUNT] = {NULL};
	uint8_t *doc = NULL, *sig = NULL;
	size_t dl = 0, sl = 0;
	eq_err r = EQ_OK;
	EQ_AUTOFREE char *rdir = eq_asprintf("%s/" EQ_LAYOUT_ROOT_DIR, o->repo);
	EQ_AUTOFREE char *first = NULL;
	if ((r = eq_layout_root(o->repo, 1, &first, err)))
		return r;
	if (!rdir)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (init) {
		if (access(first, F_OK) == 0)
			return eq_error_set(err, EQ_ERR_STATE,
					    "%s exists: this repository has a root already (use 'root rotate')", first);
		if (o->revoke_keyid)
			return eq_error_set(err, EQ_ERR_INVAL, "nothing to revoke in a new root");
	} else if ((r = eq_gen_root_newest(o->repo, o->trusted_root, &cur, err))) {
		return r;
	}
	bool changed = init || o->revoke_keyid;
	for (int ro = 0; !r && ro < EQ_ROLE_COUNT; ro++) {
		r = role_for(o, ro, cur, &roles[ro], err);
		changed = changed || o->roles[ro].n_pubs || o->roles[ro].threshold;
	}
	struct eq_root_info info = {.version = 1, .issued = o->now ? o->now : clock_now()};
	if (!r && !changed && !o->expires_days)
		r = eq_error_set(err, EQ_ERR_INVAL,
				 "nothing changes: give new keys, a threshold, --revoke or --expires");
	if (!r && cur) {
		struct eq_root_info ci;
		eq_root_get_info(cur, &ci);
		info.version = ci.version + 1;
		if (info.issued < ci.issued)
			info.issued = ci.issued; /* devices refuse a root issued before its predecessor */
	}
	info.expires = info.issued + (int64_t)(o->expires_days ? o->expires_days : 365) * 86400;
	if (!r)
		r = eq_root_to_json(&info, (const struct eq_manifest_trust *const *)roles, &doc, &dl, err);
	if (!r)
		r = sign_with(doc, dl, o->sign_keys, o->n_sign, NULL, &sig, &sl, err);
	/* Refuse to publish what devices would refuse: the same checks. */
	if (!r) {
		struct eq_root *check = NULL;
		if (cur)
			r = eq_root_verify_next(cur, doc, dl, sig, sl, &check, err);
		else if (!(r = eq_root_parse_unverified(doc, dl, &check, err)) &&
			 (r = eq_manifest_verify(doc, dl, sig, sl, eq_root_role(check, EQ_ROLE_ROOT), err)))
			eq_error_prefix(err, r, "not signed by its own root role");
		eq_root_free(check);
		if (r)
			eq_error_prefix(err, r, "root version %" PRIu64 " not written: sign with %s (--key)",
					info.version,
					cur ? "a threshold of the old root role and of the new one"
					    : "the new root role's keys");
	}
	/* root/ too must be the repository's own folder, not a link. */
	if (!r)
		r = eqg_repo_check_links(o->repo, err);
	if (!r)
		r = eq_mkdir_p(rdir, 0755, err);
	if (!r) {
		EQ_AUTOFREE char *path = NULL;
		if (!(r = eq_layout_root(o->repo, info.version, &path, err)))
			r = eq_signed_file_write(path, doc, dl, sig, sl, err);
	}
	if (!r && ret_version)
		*ret_version = info.version;
	for (int ro = 0; ro < EQ_ROLE_COUNT; ro++)
		eq_manifest_trust_free(roles[ro]);
	eq_root_free(cur);
	eq_free(doc);
	eq_free(sig);
	return r;
}

eq_err eqg_lock_repo(const char *repo, int *ret_fd, struct eq_error *err)
{
	EQ_AUTOFREE char *lock = eq_asprintf("%s/.publish.lock", repo);
	if (!lock)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", lock);
	if (flock(fd, LOCK_EX) != 0) {
		eq_err r = eq_error_errno(err, EQ_ERR_IO, "cannot lock '%s'", lock);
		close(fd);
		return r;
	}
	/* Every writer comes here before its first write: none may follow a
	 * link out of the repository. */
	eq_err r = eqg_repo_check_links(repo, err);
	if (r) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return EQ_OK;
}

eq_err eq_gen_timestamp(const struct eq_timestamp_opts *o, struct eq_timestamp *ret, struct eq_error *err)
{
	EQ_AUTOFREE char *mpath = NULL, *tpath = NULL;
	eq_err lr;
	if ((lr = eq_layout_channel(o->repo, o->board, o->channel, EQ_LAYOUT_MANIFEST, &mpath, err)) ||
	    (lr = eq_layout_channel(o->repo, o->board, o->channel, EQ_LAYOUT_TIMESTAMP, &tpath, err)))
		return lr;
	struct eq_root *own_root = NULL;
	const struct eq_root *root = o->root;
	eq_err r = root ? EQ_OK : eq_gen_root_newest(o->repo, o->trusted_root, &own_root, err);
	if (r)
		return r;
	if (!root)
		root = own_root;
	uint8_t *md = NULL, *ms = NULL, *doc = NULL, *sig = NULL, *old = NULL;
	size_t ml = 0, msl = 0, dl = 0, sl = 0, ol = 0;
	struct eq_manifest *m = NULL;
	struct eq_timestamp ts;
	memset(&ts, 0, sizeof(ts));
	int lock_fd = -1;
	/* A timestamp is a read-modify-write of the version, and a rollout
	 * step checks the release it is meant for. */
	if ((r = eqg_lock_repo(o->repo, &lock_fd, err)))
		goto out;
	ts.issued = o->now ? o->now : clock_now();
	/* The manifest it names must be one devices accept: signed by the
	 * release role of the newest root, for this board and channel. */
	if ((r = eq_signed_file_read(mpath, EQ_MANIFEST_MAX_BYTES, &md, &ml, &ms, &msl, err)))
		goto out;
	struct eq_manifest_policy pol = {
		.board = o->board, .channel = o->channel, .now = ts.issued, .check_expiry = true};
	uint8_t dg[EQ_SHA256_LEN];
	eq_sha256(md, ml, dg);
	/* The bytes a publish in this process verified: not again. */
	bool verified = o->verified_sha256 && memcmp(dg, o->verified_sha256, EQ_SHA256_LEN) == 0;
	if (verified && !(r = eq_manifest_parse_unverified(md, ml, &m, err)))
		r = eq_manifest_check_policy(m, &pol, err);
	else if (!verified)
		r = eq_manifest_load_verified(md, ml, ms, msl, eq_root_role(root, EQ_ROLE_RELEASE), &pol, &m, err);
	if (r) {
		eq_error_prefix(err, r, "%s", mpath);
		goto out;
	}
	struct eq_manifest_header h;
	if ((r = eq_manifest_get_header(m, &h, err)))
		goto out;
	/* The version grows from the one published (whatever it says, as long
	 * as it parses): devices refuse a lower one. */
	ts.version = 1;
	eq_hex_encode(dg, sizeof(dg), ts.sha256);
	r = eq_file_read_all(tpath, EQ_TIMESTAMP_MAX_BYTES, &old, &ol, err);
	if (r == EQ_OK) {
		struct eq_timestamp prev;
		if ((r = eq_timestamp_parse_unverified(old, ol, &prev, err))) {
			eq_error_prefix(err, r, "%s (remove it to start again at version 1)", tpath);
			goto out;
		}
		ts.version = prev.version + 1;
		if (ts.issued < prev.issued)
			ts.issued = prev.issued;
		if (strcmp(prev.sha256, ts.sha256) == 0 && prev.number == h.number)
			ts.rollout = prev.rollout;
	} else if (r != EQ_ERR_NOTFOUND) {
		goto out;
	}
	if (o->expect_number && o->expect_number != h.number) {
		r = eq_error_set(err, EQ_ERR_STATE,
				 "%s is release number %" PRIu64 ", not %" PRIu64
				 " (a newer release was published?): nothing changed",
				 mpath, h.number, o->expect_number);
		goto out;
	}
	if (o->set_percent || o->set_halt) {
		unsigned pct = ts.rollout.present ? ts.rollout.percent : 100;
		bool halt = ts.rollout.present && ts.rollout.halted;
		if (o->set_percent)
			pct = o->percent;
		if (o->set_halt)
			halt = o->halt;
		if (pct > 100) {
			r = eq_error_set(err, EQ_ERR_INVAL, "rollout percent %u: must be 0..100", pct);
			goto out;
		}
		ts.rollout.present = pct < 100 || halt;
		ts.rollout.percent = pct;
		ts.rollout.halted = halt;
	}
	snprintf(ts.board, sizeof(ts.board), "%s", o->board);
	snprintf(ts.channel, sizeof(ts.channel), "%s", o->channel);
	ts.expires = ts.issued + (int64_t)(o->expires_hours ? o->expires_hours : 24) * 3600;
	if (ts.expires > h.expires)
		ts.expires = h.expires; /* never vouch past the manifest's own expiry */
	if (ts.expires <= ts.issued) {
		r = eq_error_set(err, EQ_ERR_EXPIRED, "%s expires before the timestamp would be issued", mpath);
		goto out;
	}
	ts.number = h.number;
	ts.size = ml;
	if ((r = eq_timestamp_to_json(&ts, &doc, &dl, err)) ||
	    (r = sign_with(doc, dl, o->keys, o->n_keys, eq_root_role(root, EQ_ROLE_TIMESTAMP), &sig, &sl, err)))
		goto out;
	struct eq_timestamp check;
	if ((r = eq_timestamp_load_verified(doc, dl, sig, sl, root, &check, err))) {
		eq_error_prefix(err, r, "%s not written: sign with the timestamp role's keys (--key)", tpath);
		goto out;
	}
	if ((r = eq_signed_file_write(tpath, doc, dl, sig, sl, err)))
		goto out;
	if (ret)
		*ret = ts;
out:
	if (lock_fd >= 0)
		close(lock_fd);
	eq_manifest_free(m);
	eq_root_free(own_root);
	eq_free(md);
	eq_free(ms);
	eq_free(doc);
	eq_free(sig);
	eq_free(old);
	return r;
}

/* ---- verify as a device does ------------------------------------------- */

static eq_err file_fetch(void *ctx, const char *path, size_t max, const char *expect, const char *have, uint8_t **ret,
			 size_t *ret_len, struct eq_error *err)
{
	(void)expect;
	(void)have;
	EQ_AUTOFREE char *full = eq_asprintf("%s/%s", (const char *)ctx, path);
	if (!full)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	return eq_file_read_all(full, max, ret, ret_len, err);
}

eq_err eq_gen_verify_trusted(const char *repo, const char *root_path, const char *board, const char *channel,
			     int64_t clock, struct eq_trust_result *ret, uint64_t *ret_root_version,
			     struct eq_error *err)
{
	char dir[] = "/tmp/eqota-gen-verify-XXXXXX";
	if (!mkdtemp(dir))
		return eq_error_errno(err, EQ_ERR_IO, "cannot create a temporary folder");
	struct eq_trust *t = NULL;
	EQ_AUTOFREE char *ctx = eq_strdup(repo);
	eq_err r = ctx ? eq_trust_open(dir, root_path, &t, err) : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (!r)
		r = eq_trust_refresh(t, file_fetch, ctx, board, channel, clock, ret, err);
	if (!r && ret_root_version) {
		struct eq_root_info info;
		eq_root_get_info(eq_trust_root(t), &info);
		*ret_root_version = info.version;
	}
	eq_trust_free(t);
	struct eq_error e2;
	if (eq_rm_rf(dir, &e2) != EQ_OK && !r)
		r = eq_error_set(err, EQ_ERR_IO, "%s", e2.msg);
	return r;
}

eq_err eq_gen_verify_release(const char *repo, const char *root_path, const char *board, const char *channel,
			     const char *release, int64_t clock, struct eq_manifest **ret, uint64_t *ret_root_version,
			     struct eq_error *err)
{
	*ret = NULL;
	struct eq_trust_result res;
	eq_err r = eq_gen_verify_trusted(repo, root_path, board, channel, clock, &res, ret_root_version, err);
	if (r)
		return r;
	eq_trust_result_done(&res);
	/* From the installed root the operator named, as the chain just
	 * checked: never from the repository's own root/1. */
	struct eq_root *root = NULL;
	if ((r = eq_root_load_file(root_path, &root, err)) || (r = eq_gen_root_follow(repo, root, &root, err))) {
		eq_root_free(root);
		return r;
	}
	struct eq_repo_history h;
	if ((r = eq_repo_history_load(repo, board, channel, &h, err))) {
		eq_root_free(root);
		return r;
	}
	const struct eq_repo_release *rel = h.n ? eq_repo_history_find(&h, release) : NULL;
	EQ_AUTOFREE char *mpath = NULL;
	if (h.n == 0)
		r = eq_error_set(err, EQ_ERR_NOTFOUND, "%s: nothing published for %s/%s", repo, board, channel);
	else if (!rel)
		r = eq_error_set(err, EQ_ERR_NOTFOUND, "no release '%s' (by name or number) is published", release);
	else
		r = eq_layout_release(repo, board, channel, rel->number, EQ_LAYOUT_MANIFEST, &mpath, err);
	if (!r) {
		struct eq_manifest_policy pol = {
			.board = board, .channel = channel, .number = rel->number, .now = clock, .check_expiry = false};
		r = eq_manifest_load_verified_file(mpath, NULL, eq_root_role(root, EQ_ROLE_RELEASE), &pol, ret, err);
	}
	eq_repo_history_done(&h);
	eq_root_free(root);
	return r;
}
