/*
 * Copying an entry's metadata (owner, mode, the xattrs a payload keeps) from
 * one open file or folder to another: the keep copy of the installer, the
 * [persist] copy and the set-aside folders of an image release apply one
 * rule. Private to eq_agent.
 */
#ifndef EQ_AGENT_META_COPY_H
#define EQ_AGENT_META_COPY_H

#include <stdbool.h>
#include <sys/types.h>

#include <eq/common.h>

/* Scratch a copy needs: the list of xattr names, then one value; each at the
 * kernel's limit (XATTR_LIST_MAX, XATTR_SIZE_MAX) so nothing is cut short. */
#define EQ_META_XATTR_LIST_LEN (64u * 1024u)
#define EQ_META_XATTR_VALUE_LEN (64u * 1024u)
#define EQ_META_SCRATCH_LEN (EQ_META_XATTR_LIST_LEN + EQ_META_XATTR_VALUE_LEN)

/*
 * Copies the xattrs of @sfd that eq_payload_xattr_kept() keeps onto @tfd,
 * through @scratch (EQ_META_SCRATCH_LEN bytes). A source on a filesystem
 * without xattrs (ENOTSUP) has none. Fails with EQ_ERR_IO and "cannot list
 * xattrs", "cannot read xattr 'NAME'" or "cannot set xattr 'NAME'"; when
 * @source_failed is not NULL it is set to whether reading @sfd failed (not
 * writing @tfd), for a caller whose source may have changed under it.
 */
eq_err eq_meta_copy_xattrs(int sfd, int tfd, void *scratch, bool *source_failed, struct eq_error *err);

/*
 * Owner @uid:@gid when @owners, mode @mode & 07777, and when @owners the kept
 * xattrs of @sfd (eq_meta_copy_xattrs()), onto @tfd. Owner first: chown
 * clears setuid bits and security.capability. Messages as
 * eq_meta_copy_xattrs(), or "chown", "chmod"; the caller adds the path.
 */
eq_err eq_meta_copy(int sfd, int tfd, uid_t uid, gid_t gid, mode_t mode, bool owners, void *scratch,
		    bool *source_failed, struct eq_error *err);

#endif
