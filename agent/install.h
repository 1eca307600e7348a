/*
 * The installer (install.c), private to eq_agent and reached by its tests.
 */
#ifndef EQ_AGENT_INSTALL_H
#define EQ_AGENT_INSTALL_H

#include <eq/agent.h>

struct eq_persist; /* persist.h */

/* Fetches an object or delta for the installer; returns a local file path
 * (malloc'ed, caller frees) holding exactly the verified bytes. */
typedef eq_err (*eq_object_fn)(void *ctx, const char *rel_path, const char *sha256_hex, uint64_t size, char **ret_path,
			       struct eq_error *err);

struct eq_install {
	const char *running_root; /* root of the running slot, NULL when provisioning */
	const struct eq_manifest *running;
	const char *target_root; /* empty directory that becomes the new slot's root */
	const struct eq_manifest *next;
	const uint8_t *manifest_bytes; /* the signed bytes of @next and its .sig, recorded in the slot */
	size_t manifest_len;
	const uint8_t *sig_bytes;
	size_t sig_len;
	const char *work_dir; /* for temporary payloads */
	eq_object_fn fetch;
	void *fetch_ctx;
	bool owners; /* apply owners and xattrs (running as root) */
	eq_progress_fn progress;
	void *progress_ctx;
	const char *target_name;           /* added: slot name for messages ("B"); NULL: target_root */
	const volatile sig_atomic_t *stop; /* added: when set, stop before the next package (EQ_ERR_STOPPED) */
	/* Added: [persist] paths and cap, copied from the running slot once
	 * every package is in (eq_persist_copy(); its roots and owners are
	 * taken from here); NULL: none. */
	const struct eq_persist *persist;
};


/*
 * Builds the new slot in @in->target_root from scratch so that it holds
 * exactly @in->next: kept packages copied from the running slot with every
 * file checked against its recorded hash (a mismatch turns the package into
 * a download), changed packages from a delta against the payload rebuilt
 * from the running slot (checked against the running manifest's payload
 * hash; on mismatch the full object) or from the full object. Every payload
 * is checked against the manifest before it is extracted. Finally the
 * manifest, its signature and every package's file list are written under
 * EQ_SLOT_RECORD_DIR and everything is synced. The plan @plan must come from
 * eq_plan_make(in->running, in->next).
 */
eq_err eq_install_slot(const struct eq_install *in, const struct eq_plan *plan, struct eq_install_report *ret,
		       struct eq_error *err) EQ_MUST_CHECK;

/*
 * Added. The early space check eq_install_slot() runs before it fetches
 * anything (callers may run it alone, e.g. for `eqota check`), from the
 * sizes the manifest declares:
 *   - the work_dir filesystem must hold every download of the plan (the
 *     fetched files stay for resume until the caller removes them) plus the
 *     largest temporary payload set: one payload for a full object, the
 *     rebuilt old payload and the new one for a delta;
 *   - the target_root filesystem must hold the sum of the new payload sizes.
 * When both are on one filesystem the two needs are added. statvfs free
 * space as seen by an unprivileged user (f_bavail). EQ_ERR_LIMIT
 * "slot B has 120 MiB free, release needs 170 MiB", EQ_ERR_IO (statvfs).
 */
eq_err eq_install_check_space(const struct eq_install *in, const struct eq_plan *plan,
			      struct eq_error *err) EQ_MUST_CHECK;

#endif
