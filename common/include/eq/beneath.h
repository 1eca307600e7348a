/*
 * eq_open_beneath(): open a path below a directory without ever leaving it.
 * The one resolver for every open inside a slot or a payload root, so that
 * the rules (no "..", no absolute path, which symlinks may be followed) are
 * written once. Part of eq_base.
 */
#ifndef EQ_BENEATH_H
#define EQ_BENEATH_H

#include <stdbool.h>
#include <sys/types.h>

#include <eq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* @how bits of eq_open_beneath(). */
enum {
	/*
	 * Symlinks on the way resolve as if @rootfd were "/" (openat2's
	 * RESOLVE_IN_ROOT): a slot's absolute symlinks ("lib -> /usr/lib")
	 * point into the slot, never into the host. Without it a symlink that
	 * leads out is refused (RESOLVE_BENEATH).
	 */
	EQ_BENEATH_IN_ROOT = 1u << 0,
	/* No symlink anywhere, the last component included (RESOLVE_NO_SYMLINKS):
	 * for eqota's own folders, where any symlink was planted. */
	EQ_BENEATH_NO_SYMLINKS = 1u << 1,
	/* Make the missing directories of @path (0755), and @path itself when
	 * @oflags has O_DIRECTORY. */
	EQ_BENEATH_MKDIRS = 1u << 2,
};

/*
 * Opens @path below directory @rootfd with open(2) flags @oflags (O_CLOEXEC
 * is added; O_NOFOLLOW refuses a symlink as the last component; O_CREAT
 * uses @mode; O_DIRECTORY, O_PATH as in open(2)). "" opens the root itself.
 * An absolute @path and any ".." component are refused before any lookup,
 * so no caller depends on how the kernel would treat them.
 *
 * Uses openat2(2) with RESOLVE_BENEATH or RESOLVE_IN_ROOT and
 * RESOLVE_NO_MAGICLINKS. Where the kernel lacks it (before 5.6: ENOSYS) or
 * a seccomp filter refuses it (EPERM), a walker opens one component at a
 * time and follows no symlink at all: stricter than RESOLVE_IN_ROOT, never
 * outside. Builds with test hooks take the walker whenever the environment
 * has EQ_TEST_NO_OPENAT2.
 *
 * On failure errno is set as open(2) would set it (ELOOP for a refused
 * symlink in the walker, EXDEV for "..", an absolute path or an escape) and
 * the message names @path and the component that failed. Codes:
 * EQ_ERR_UNSAFE (escape, refused symlink), EQ_ERR_NOTFOUND, EQ_ERR_STATE
 * (not a directory), EQ_ERR_LIMIT (a component over NAME_MAX, a path of
 * PATH_MAX bytes or more), EQ_ERR_IO. It allocates nothing.
 */
EQ_API eq_err eq_open_beneath(int rootfd, const char *path, int oflags, mode_t mode, unsigned how, int *ret_fd,
			      struct eq_error *err) EQ_MUST_CHECK;

/*
 * A set of directories by device and inode, for the walks up with ".."
 * that decide whether a directory is below one of eqota's own folders: a
 * directory known to be outside such a folder has only directories outside
 * it above it, so a later walk stops at the first one it meets. The table
 * is bounded and emptied when three quarters full (a later walk is only
 * longer). eq_dirset_new() returns NULL without memory; every other
 * function takes NULL as an always empty set. The caller of eq_dirset_new()
 * frees the set with eq_dirset_free(). A set is valid while none of its directories is
 * removed or moved, which its users guarantee for the set's lifetime.
 */
struct stat;
struct eq_dirset;
EQ_API struct eq_dirset *eq_dirset_new(void);
EQ_API bool eq_dirset_has(const struct eq_dirset *s, const struct stat *st);
EQ_API void eq_dirset_add(struct eq_dirset *s, const struct stat *st);
EQ_API void eq_dirset_clear(struct eq_dirset *s);
EQ_API void eq_dirset_free(struct eq_dirset *s);

#ifdef __cplusplus
}
#endif

#endif
