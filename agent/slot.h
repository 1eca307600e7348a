/*
 * Slots (slot.c) and their records (install.c), private to eq_agent and
 * reached by its tests.
 */
#ifndef EQ_AGENT_SLOT_H
#define EQ_AGENT_SLOT_H

#include <eq/agent.h>

/*
 * Where a slot describes itself, relative to its root:
 *   usr/lib/eqota/slot/manifest.json, manifest.json.sig   the release
 *   usr/lib/eqota/slot/packages/<name>.files              each package's files
 * A .files line: "TYPE MODE UID GID SIZE SHA256 PATH" (TYPE f d l h c b p;
 * SHA256 "-" for non-files; PATH percent-encoded for bytes <= 0x20, '%' and
 * >= 0x7f), in payload order; documented in docs/internals/slot-records.md.
 * Added: a first line "eqota-files 1", and an 8th field EXTRA for types l
 * (symlink target, percent-encoded), h (the path it links to) and c/b
 * ("MAJOR:MINOR"), so a kept package can be checked and copied from its
 * record alone.
 */
/* "usr/lib/eqota/slot": the folder payloads may not touch (<eq/delta.h>). */
#define EQ_SLOT_RECORD_DIR EQ_PAYLOAD_RESERVED_DIR

/*
 * Checks the slot at @root against its records for every package of @m,
 * with the checks an update makes before it copies a kept package: each
 * entry present with its type, mode, owner (when running as root; for
 * directories too), size, SHA-256 of its data, symlink target, hard link
 * and device number; then, for a package without such a problem, that the
 * payload rebuilt from the files its record lists hashes to the payload
 * SHA-256 @m signs (a record that lists files the package does not ship is
 * a problem too). A missing or damaged record is a problem of its package.
 * For an image release (format 2) a package's entry at a path the image
 * replaced or removed is checked in the version set aside (image_aside.h),
 * and a path of image.remove present in the slot is a problem (package
 * "eqota-image") unless it is at or below one of the @n_persist [persist]
 * @persist_paths, where the device may keep a file of its own.
 * Reads only (package files twice).
 * EQ_OK whatever it found (see *ret); an error only when it cannot look.
 */
eq_err eq_slot_verify(const char *root, const struct eq_manifest *m, char *const *persist_paths, size_t n_persist,
		      eq_verify_fn fn, void *ctx, struct eq_verify_report *ret, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Reads the release recorded in the slot at @root (manifest bytes, its .sig)
 * and verifies it against @trust (expiry not checked: a slot's own record is
 * never refused for its age). *ret_m is freed with eq_manifest_free();
 * EQ_ERR_NOTFOUND when the slot has no record.
 */
eq_err eq_slot_read_release(const char *root, const struct eq_manifest_trust *trust, const char *board,
			    struct eq_manifest **ret_m, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Prepares slot @name ("A"/"B") of @cfg for writing: a dir slot is emptied;
 * a block slot is formatted (cfg->mkfs) and mounted under
 * <data_dir>/mnt/<name>. *ret_root (malloc'ed) is the root to fill.
 * eq_slot_release() unmounts a block slot after syncing.
 */
eq_err eq_slot_prepare(const struct eq_config *cfg, const char *name, char **ret_root,
		       struct eq_error *err) EQ_MUST_CHECK;
/* Root of slot @name for reading (mounting a block slot read-only if needed). */
eq_err eq_slot_open(const struct eq_config *cfg, const char *name, char **ret_root, struct eq_error *err) EQ_MUST_CHECK;
eq_err eq_slot_release(const struct eq_config *cfg, const char *name, struct eq_error *err) EQ_MUST_CHECK;

#endif
