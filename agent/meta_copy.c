/*
 * One metadata copy (meta_copy.h) for every place the agent copies files a
 * payload describes, so they cannot drift apart on which xattrs count.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <eq/delta.h>

#include "meta_copy.h"

eq_err eq_meta_copy_xattrs(int sfd, int tfd, void *scratch, bool *source_failed, struct eq_error *err)
{
	char *list = scratch;
	char *val = list + EQ_META_XATTR_LIST_LEN;
	bool src = true;
	eq_err r = EQ_OK;
	ssize_t n = flistxattr(sfd, list, EQ_META_XATTR_LIST_LEN);
	if (n < 0 && errno != ENOTSUP)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot list xattrs");
	for (ssize_t i = 0; !r && i < n; i += (ssize_t)strlen(list + i) + 1) {
		const char *name = list + i;
		if (!eq_payload_xattr_kept(name))
			continue;
		ssize_t vl = fgetxattr(sfd, name, val, EQ_META_XATTR_VALUE_LEN);
		if (vl < 0) {
			r = eq_error_errno(err, EQ_ERR_IO, "cannot read xattr '%s'", name);
		} else if (fsetxattr(tfd, name, val, (size_t)vl, 0) != 0) {
			src = false;
			r = eq_error_errno(err, EQ_ERR_IO, "cannot set xattr '%s'", name);
		}
	}
	if (source_failed)
		*source_failed = r && src;
	return r;
}

eq_err eq_meta_copy(int sfd, int tfd, uid_t uid, gid_t gid, mode_t mode, bool owners, void *scratch,
		    bool *source_failed, struct eq_error *err)
{
	if (source_failed)
		*source_failed = false;
	if (owners && fchown(tfd, uid, gid) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "chown");
	if (fchmod(tfd, mode & 07777) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "chmod");
	return owners ? eq_meta_copy_xattrs(sfd, tfd, scratch, source_failed, err) : EQ_OK;
}
