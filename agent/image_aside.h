/*
 * Image releases (manifest format 2, docs/internals/install.md "Image
 * releases"): the package versions of the paths the image replaces or
 * removes are set aside in the new slot, so that the next update still
 * rebuilds and keeps those packages, and `eqota verify` still checks them.
 * Private to eq_agent; reached by the installer and tests/unit/test_install.c.
 */
#ifndef EQ_AGENT_IMAGE_ASIDE_H
#define EQ_AGENT_IMAGE_ASIDE_H

#include <sys/stat.h>

#include <eq/agent.h>

#include "persist.h"
#include "slot.h"

/*
 * <slot>/EQ_ASIDE_IMAGE_DIR/<path>: a package's entry at a path of
 * image.replace or image.remove, as the packages left it; the paths set
 * aside, one per line, in <slot>/EQ_ASIDE_LIST.
 */
#define EQ_ASIDE_DIR EQ_SLOT_RECORD_DIR "/image"
#define EQ_ASIDE_IMAGE_DIR EQ_ASIDE_DIR "/aside"
#define EQ_ASIDE_LIST EQ_ASIDE_DIR "/aside.list"

struct eq_aside_report {
	size_t moved;   /* non-directories renamed into the aside folder */
	size_t dirs;    /* directories (or symlinks to one) given an aside directory */
	size_t removed; /* paths of image.remove taken out of the slot */
	size_t missing; /* paths not in the slot: skipped */
};

/*
 * The set-aside step in the new slot @tfd (O_PATH root), after every package
 * and before the `after` components: every path of @img->replace and
 * @img->remove, children first. A non-directory is renamed to the aside
 * folder; a directory, or a symlink resolving in the slot to one, gets a
 * directory there with its mode, and owner and kept xattrs when @owners;
 * a directory of remove is then rmdir'ed, a symlink of remove unlinked.
 * Package paths are resolved in the slot (EQ_BENEATH_IN_ROOT); one that
 * resolves into eqota's folder (@own: the identity of EQ_SLOT_RECORD_DIR)
 * is refused (EQ_ERR_UNSAFE). The aside folder must not exist yet
 * (EQ_ERR_UNSAFE) and is opened without following any symlink.
 * EQ_ERR_STATE: a folder of remove still holds an entry the image keeps.
 */
eq_err eq_aside_set(int tfd, const struct stat *own, const struct eq_manifest_image *img, bool owners,
		    struct eq_aside_report *ret, struct eq_error *err) EQ_MUST_CHECK;

/* The running slot's aside folder, as the installer and verify read it. */
struct eq_aside_read {
	struct eq_persist_list list; /* valid lines, sorted, unique */
	int fd;                      /* <root>/EQ_ASIDE_IMAGE_DIR, O_PATH; -1 when no path is set aside */
	char *root;                  /* its path, for the payload builder */
};

/*
 * Loads the aside list of the slot at @rootfd (@root for messages and the
 * builder) that holds release @m. A line that is absolute, has a "..", "."
 * or empty component, or is in neither image.replace nor image.remove of
 * @m is ignored with a warning; a list or folder that is damaged or a
 * symlink is ignored as a whole with a warning. Ignored paths are read in
 * the slot, where the package's version no longer is: its package is
 * downloaded. EQ_ERR_NOMEM only. Free with eq_aside_read_done().
 */
eq_err eq_aside_read_open(int rootfd, const char *root, const struct eq_manifest *m, struct eq_aside_read *ret,
			  struct eq_error *err) EQ_MUST_CHECK;
void eq_aside_read_done(struct eq_aside_read *a);
/* Whether the package version of relative @path is in the aside folder. */
bool eq_aside_read_has(const struct eq_aside_read *a, const char *path);

/* Whether @path is eqota's folder EQ_SLOT_RECORD_DIR or a folder above it:
 * one of image.remove that stays (it holds eqota's records). */
bool eq_aside_holds_own_dir(const char *path);

#endif
