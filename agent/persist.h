/*
 * [persist]: device-local files (machine id, ssh host keys, hostname) copied
 * from the running slot into the new slot after it is complete and before
 * the bootloader switch (persist.c; docs/agent.md "Persistent files").
 * Private to eq_agent; reached by the installer, the config parser and
 * tests/unit/test_persist.c.
 */
#ifndef EQ_AGENT_PERSIST_H
#define EQ_AGENT_PERSIST_H

#include <eq/agent.h>

#include "slot.h"

/*
 * Where a slot keeps the release's own version of a path it persisted, so
 * that `eqota verify` and the next update's kept packages still find the
 * bytes the release signed: <slot>/EQ_PERSIST_IMAGE_DIR/<path>, and the
 * list of such paths, one per line, in <slot>/EQ_PERSIST_LIST.
 */
#define EQ_PERSIST_DIR EQ_SLOT_RECORD_DIR "/persist"
#define EQ_PERSIST_IMAGE_DIR EQ_PERSIST_DIR "/image"
#define EQ_PERSIST_LIST EQ_PERSIST_DIR "/list"
/* Nesting depth of a persisted folder. */
#define EQ_PERSIST_MAX_DEPTH 32u

/* What one persist step is asked to do. */
struct eq_persist {
	const char *running_root; /* NULL when provisioning: nothing is copied */
	const char *target_root;  /* the new slot, complete */
	char *const *paths;       /* absolute, as eq_persist_path_problem() accepts */
	size_t n_paths;
	uint64_t max_bytes; /* file data copied, in all */
	bool owners;        /* keep owners and xattrs (running as root) */
};

/* What it did. */
struct eq_persist_report {
	size_t files, dirs; /* copied */
	size_t skipped;     /* symlinks and special files in the running slot, not copied */
	size_t missing;     /* configured paths (or globs) with nothing in the running slot */
	size_t saved;       /* paths whose release version went to EQ_PERSIST_IMAGE_DIR */
	uint64_t bytes;     /* file data copied */
};

/*
 * Copies each configured path from the running slot into the new one. No
 * symlink is followed in either slot, the last component included; a
 * symlink or special file in the running slot is skipped with a warning,
 * a path missing there keeps the release's version (info). What the
 * release put at a persisted path (a symlink included) is moved to
 * EQ_PERSIST_IMAGE_DIR first, so the copy is never written through it;
 * the copy goes to a temporary name (O_EXCL), is fsynced and renamed into
 * place, with mode, owner and xattrs (when @p->owners) of the original.
 * EQ_ERR_LIMIT when the files would exceed max_bytes, EQ_ERR_UNSAFE when a
 * folder on the way in the new slot is a symlink, EQ_ERR_IO. On error the
 * new slot is left half-changed (the caller does not boot it); the running
 * slot is only read.
 */
eq_err eq_persist_copy(const struct eq_persist *p, struct eq_persist_report *ret, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Why @path cannot be a [persist] path, or NULL when it can: absolute,
 * normalized (no "." or ".." component, no "//", no trailing "/"), not "/",
 * glob characters (* ? [) in the last component only, and not on, in or
 * above eqota's folder EQ_SLOT_RECORD_DIR. Static text.
 */
const char *eq_persist_path_problem(const char *path);

/* Whether two valid [persist] paths name the same entry or one lies in the
 * other (wildcards matched as fnmatch(3) with FNM_PATHNAME). */
bool eq_persist_paths_overlap(const char *a, const char *b);

/* The paths a slot persisted (EQ_PERSIST_LIST), relative, sorted. */
struct eq_persist_list {
	char **v; /* owned */
	size_t n;
};
/* Loads the list of the slot at @rootfd, never through a symlink; a slot
 * without one gives an empty list. Free with eq_persist_list_done(). */
eq_err eq_persist_list_load(int rootfd, struct eq_persist_list *ret, struct eq_error *err) EQ_MUST_CHECK;
void eq_persist_list_done(struct eq_persist_list *l);
/* The same for any such list of eqota's folder: @rel below @rootfd, at most
 * @max bytes (EQ_ERR_LIMIT), one path per line, empty lines skipped, in
 * file order; never read through a symlink (EQ_ERR_UNSAFE), none gives an
 * empty list. Used for the image's aside.list too (image_aside.c). */
eq_err eq_path_list_load(int rootfd, const char *rel, size_t max, struct eq_persist_list *ret,
			 struct eq_error *err) EQ_MUST_CHECK;
/* Whether relative @path is a listed path or below one. */
bool eq_persist_list_covers(const struct eq_persist_list *l, const char *path);

#endif
