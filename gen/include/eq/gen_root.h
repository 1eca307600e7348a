/*
 * eq_gen, root of trust and timestamp (gen_root.c). Part of the eq_gen
 * library (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_ROOT_H
#define EQ_GEN_ROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>
#include <eq/manifest.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One role of a new root: .pub files and a threshold. No files keeps the
 * previous root's keys (threshold 0 keeps its threshold too). */
struct eq_root_role_opts {
	const char *const *pubs;
	size_t n_pubs;
	unsigned threshold; /* 0: 1 for new keys, else unchanged */
};

struct eq_root_opts {
	const char *repo;
	const char *const *sign_keys; /* private keys that sign the new root */
	size_t n_sign;
	struct eq_root_role_opts roles[EQ_ROLE_COUNT];
	const char *revoke_keyid; /* rotate: drop this key from every role */
	unsigned expires_days;    /* default 365 */
	const char *trusted_root; /* rotate, revoke: the pin (eq_gen_root_newest()); unused by init */
	int64_t now;              /* 0: the clock (tests pass a time) */
};

/*
 * Writes <repo>/root/<N>.root.json and .sig: N = 1 with @init (every role
 * needs keys; refused when a root exists), else the newest root + 1 (the
 * chain from root/1 is verified first; roles not given are copied, minus
 * @revoke_keyid). Before anything is written the new root is checked as a
 * device would check it (eq_root_verify_next()): signed by a threshold of
 * the old root role and of the new one. *ret_version gets N.
 */
EQ_API eq_err eq_gen_root_write(const struct eq_root_opts *o, bool init, uint64_t *ret_version,
				struct eq_error *err) EQ_MUST_CHECK;

/* Follows <repo>/root/<N+1>.root.json from @start (consumed: freed on
 * error, or replaced) as far as the repository goes, each step checked by
 * eq_root_verify_next(); *ret is the newest. EQ_ERR_LIMIT past
 * EQ_ROOT_CHAIN_MAX * 64 versions. */
EQ_API eq_err eq_gen_root_follow(const char *repo, struct eq_root *start, struct eq_root **ret,
				 struct eq_error *err) EQ_MUST_CHECK;
/*
 * The newest root of @repo, its chain started from the root the operator
 * pinned and walked as a device walks it (eq_root_verify_next(): both
 * thresholds at every step). @trusted_root is a root file kept outside the
 * repository (a copy of root/<N>.root.json: the chain starts from root
 * version N, whose bytes in the repository must be the file's), or 64 hex
 * digits, the SHA-256 of root/1.root.json. A repository's own root proves
 * nothing: it signs itself, and whoever can write the repository can write
 * one. EQ_ERR_VERIFY, naming the file and both hashes, when the
 * repository's root differs from the pin, and when it has none (never
 * EQ_ERR_NOTFOUND: the caller must not sign as in a repository without a
 * root); errors of the chain as eq_gen_root_follow().
 */
EQ_API eq_err eq_gen_root_pinned(const char *repo, const char *trusted_root, struct eq_root **ret,
				 struct eq_error *err) EQ_MUST_CHECK;
/*
 * What every signing command calls: eq_gen_root_pinned() when
 * @trusted_root is not NULL. Without a pin, EQ_ERR_NOTFOUND for a
 * repository without a root (the keys-only mode, docs/security.md) and
 * EQ_ERR_STATE, saying how to pin, for one with a root: nothing is signed
 * against a root read from the repository alone.
 */
EQ_API eq_err eq_gen_root_newest(const char *repo, const char *trusted_root, struct eq_root **ret,
				 struct eq_error *err) EQ_MUST_CHECK;

struct eq_timestamp_opts {
	const char *repo, *board, *channel;
	const char *const *keys; /* the timestamp role's private keys */
	size_t n_keys;
	unsigned expires_hours;   /* default 24; never past the manifest's expiry */
	int64_t now;              /* 0: the clock */
	const char *trusted_root; /* the pin (eq_gen_root_newest()) when @root is NULL */
	/* Optional, from a publish in this process (eq_publish_report): the
	 * root to use instead of loading and verifying the newest again, and
	 * the SHA-256 of manifest bytes already verified against its release
	 * role; a manifest file with that hash is not verified again (its
	 * board, channel and expiry still are). */
	const struct eq_root *root;
	const uint8_t *verified_sha256;
	/* The staged rollout (docs/fleet.md). What is not set is kept from the
	 * published timestamp when that names the same manifest bytes (a
	 * refresh must never widen a staged rollout); a new manifest starts at
	 * 100 %, not halted. 100 % and not halted writes no rollout at all. */
	bool set_percent;
	unsigned percent; /* 0..100 */
	bool set_halt;
	bool halt;
	/* Nonzero: refuse (EQ_ERR_STATE) unless the channel's manifest has
	 * this release number, so that a rollout step meant for one release
	 * never lands on a newer one published meanwhile. */
	uint64_t expect_number;
};

/*
 * Writes boards/<b>/<c>/timestamp.json and .sig for the manifest there,
 * with the version after the published one and the rollout described in
 * struct eq_timestamp_opts, under the repository's publish lock (two
 * writers must never sign different timestamps of one version). The
 * manifest must verify under
 * the newest root's release role; the result must verify under its
 * timestamp role. @ret (may be NULL) receives what was written.
 */
EQ_API eq_err eq_gen_timestamp(const struct eq_timestamp_opts *o, struct eq_timestamp *ret,
			       struct eq_error *err) EQ_MUST_CHECK;

/*
 * Checks @repo's board/channel exactly as a device with the installed root
 * @root_path does (eq_trust_refresh() over the files, with a throw-away
 * trust store): root chain, timestamp, manifest. @clock is "now".
 * *ret as eq_trust_refresh(); *ret_root_version the newest root.
 */
EQ_API eq_err eq_gen_verify_trusted(const char *repo, const char *root_path, const char *board, const char *channel,
				    int64_t clock, struct eq_trust_result *ret, uint64_t *ret_root_version,
				    struct eq_error *err) EQ_MUST_CHECK;

/*
 * An earlier release of @repo's board/channel (@release: a name or a
 * number), checked as provision checks it: no timestamp names it, so the
 * chain from the installed root @root_path must verify (as
 * eq_gen_verify_trusted()), and the newest root's release role must have
 * signed the kept manifest; expiry is not checked. *ret (free with
 * eq_manifest_free()) is the manifest, *ret_root_version the newest root.
 * EQ_ERR_NOTFOUND when nothing or no such release is published.
 */
EQ_API eq_err eq_gen_verify_release(const char *repo, const char *root_path, const char *board, const char *channel,
				    const char *release, int64_t clock, struct eq_manifest **ret,
				    uint64_t *ret_root_version, struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_ROOT_H */
