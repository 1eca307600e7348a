/*
 * Slots: where the A and B roots live (a directory, or a block device with
 * ext4 mounted under <data_dir>/mnt), and the release a slot records about
 * itself. Block slots are exercised by the QEMU suite (tests/qemu/), the
 * unit tests cover dir slots.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <eq/agent.h>
#include <eq/beneath.h>

#include "slot.h"

#define MAX_MKFS_ARGS 32

/*
 * Reads @name (at most @max bytes) from eqota's folder of the slot at
 * @root. No symlink is followed, on the way or at the end, and only a
 * regular file is read: a package could have planted a symlink there
 * (through one of its own) to make the agent read the host's files, or a
 * fifo to make it hang. On success the caller frees *ret with eq_free().
 */
static eq_err read_own(const char *root, const char *name, size_t max, uint8_t **ret, size_t *ret_len,
		       struct eq_error *err)
{
	/* @name is one of eqota's own file names, never longer than NAME_MAX. */
	char rel[sizeof(EQ_SLOT_RECORD_DIR) + NAME_MAX + 1];
	snprintf(rel, sizeof(rel), EQ_SLOT_RECORD_DIR "/%s", name);
	int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = -1;
	if (rootfd >= 0 && eq_open_beneath(rootfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0,
					   EQ_BENEATH_NO_SYMLINKS, &fd, NULL) != EQ_OK)
		fd = -1;
	int e = errno;
	if (rootfd >= 0)
		close(rootfd);
	errno = e;
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			return eq_error_set(err, EQ_ERR_UNSAFE,
					    "%s/" EQ_SLOT_RECORD_DIR "/%s: a symlink on the way, refusing to follow it",
					    root, name);
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO,
				      "cannot open '%s/" EQ_SLOT_RECORD_DIR "/%s'", root, name);
	}
	struct stat st;
	eq_err r = EQ_OK;
	uint8_t *buf = NULL;
	if (fstat(fd, &st) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot stat '%s/" EQ_SLOT_RECORD_DIR "/%s'", root, name);
	else if (!S_ISREG(st.st_mode))
		r = eq_error_set(err, EQ_ERR_UNSAFE, "%s/" EQ_SLOT_RECORD_DIR "/%s: not a regular file", root, name);
	else if ((uint64_t)st.st_size > max)
		r = eq_error_set(err, EQ_ERR_LIMIT, "%s/" EQ_SLOT_RECORD_DIR "/%s: larger than %zu bytes", root, name,
				 max);
	else if (!(buf = eq_malloc((size_t)st.st_size + 1)))
		r = eq_error_set(err, EQ_ERR_NOMEM, "slot: out of memory");
	size_t len = 0;
	while (!r) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = eq_error_errno(err, EQ_ERR_IO, "reading '%s/" EQ_SLOT_RECORD_DIR "/%s'", root, name);
		else if (n == 0)
			break;
		else if ((len += (size_t)n) > (size_t)st.st_size)
			r = eq_error_set(err, EQ_ERR_STATE, "%s/" EQ_SLOT_RECORD_DIR "/%s: grew while read", root,
					 name);
	}
	close(fd);
	if (r) {
		eq_free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = len;
	return EQ_OK;
}

eq_err eq_slot_read_release(const char *root, const struct eq_manifest_trust *trust, const char *board,
			    struct eq_manifest **ret_m, struct eq_error *err)
{
	EQ_AUTOFREE uint8_t *m = NULL;
	EQ_AUTOFREE uint8_t *sig = NULL;
	size_t mlen = 0, slen = 0;
	/* EQ_ERR_NOTFOUND for a missing manifest: a slot never filled. */
	eq_err r = read_own(root, "manifest.json", EQ_MANIFEST_MAX_BYTES, &m, &mlen, err);
	if (!r)
		r = read_own(root, "manifest.json.sig", EQ_MANIFEST_SIG_MAX_BYTES, &sig, &slen, err);
	if (r)
		return r;
	struct eq_manifest_policy pol = {.board = board, .now = (int64_t)time(NULL), .check_expiry = false};
	r = eq_manifest_load_verified(m, mlen, sig, slen, trust, &pol, ret_m, err);
	if (r)
		return eq_error_prefix(err, r, "%s/" EQ_SLOT_RECORD_DIR "/manifest.json", root);
	return EQ_OK;
}

static eq_err slot_path(const struct eq_config *cfg, const char *name, const char **ret, struct eq_error *err)
{
	const char *p = NULL;
	if (name && !strcmp(name, "A"))
		p = cfg->slot_a;
	else if (name && !strcmp(name, "B"))
		p = cfg->slot_b;
	else
		return eq_error_set(err, EQ_ERR_INVAL, "slot: unknown slot '%s' (A or B)", name ? name : "");
	if (!p || !p[0])
		return eq_error_set(err, EQ_ERR_INVAL, "slot %s: no path configured", name);
	*ret = p;
	return EQ_OK;
}

/* True when @path names the running root ("/" however spelled). */
static bool is_root_dir(const char *path)
{
	struct stat a, b;
	if (stat(path, &a) != 0 || stat("/", &b) != 0)
		return false;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* True when block device @dev holds the running root filesystem. */
static bool is_root_device(const char *dev)
{
	struct stat d, r;
	if (stat(dev, &d) != 0 || stat("/", &r) != 0)
		return false;
	return S_ISBLK(d.st_mode) && d.st_rdev == r.st_dev;
}

/* True when something is mounted on @dir (its device differs from its
 * parent's, or it is the root of a mount namespace). */
static bool is_mountpoint(const char *dir)
{
	struct stat a, b;
	EQ_AUTOFREE char *parent = eq_asprintf("%s/..", dir);
	if (!parent || stat(dir, &a) != 0 || stat(parent, &b) != 0)
		return false;
	return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

static eq_err empty_dir(const char *path, struct eq_error *err)
{
	DIR *d = opendir(path);
	if (!d)
		return eq_error_errno(err, EQ_ERR_IO, "slot: cannot open '%s'", path);
	struct stat top;
	if (fstat(dirfd(d), &top) != 0) {
		closedir(d);
		return eq_error_errno(err, EQ_ERR_IO, "slot: cannot stat '%s'", path);
	}
	eq_err r = EQ_OK;
	struct dirent *de;
	while (!r && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		EQ_AUTOFREE char *p = eq_asprintf("%s/%s", path, de->d_name);
		if (!p) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "slot: out of memory");
			break;
		}
		/* Never delete into another filesystem mounted inside the slot. */
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev != top.st_dev) {
			r = eq_error_set(err, EQ_ERR_STATE, "slot: '%s' is a mount point, not emptying it", p);
			break;
		}
		r = eq_rm_rf(p, err);
	}
	closedir(d);
	return r;
}

static eq_err mnt_dir(const struct eq_config *cfg, const char *name, const char *suffix, char **ret,
		      struct eq_error *err)
{
	const char *data = cfg->data_dir && cfg->data_dir[0] ? cfg->data_dir : EQ_CONFIG_DEFAULT_DATA_DIR;
	char *p = eq_asprintf("%s/mnt/%s%s", data, name, suffix);
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "slot: out of memory");
	eq_err r = eq_mkdir_p(p, 0755, err);
	if (r) {
		eq_free(p);
		return r;
	}
	*ret = p;
	return EQ_OK;
}

/* Runs cfg->mkfs split at spaces, plus @dev; no shell, so nothing in the
 * config is interpreted beyond the split. */
static eq_err run_mkfs(const char *mkfs, const char *dev, struct eq_error *err)
{
	EQ_AUTOFREE char *copy = eq_strdup(mkfs && mkfs[0] ? mkfs : EQ_CONFIG_DEFAULT_MKFS);
	if (!copy)
		return eq_error_set(err, EQ_ERR_NOMEM, "slot: out of memory");
	char *argv[MAX_MKFS_ARGS + 2];
	size_t n = 0;
	for (char *c = copy; *c;) {
		while (*c == ' ')
			*c++ = '\0';
		if (!*c)
			break;
		if (n == MAX_MKFS_ARGS)
			return eq_error_set(err, EQ_ERR_LIMIT, "slot: mkfs command has more than %d words",
					    MAX_MKFS_ARGS);
		argv[n++] = c;
		while (*c && *c != ' ')
			c++;
	}
	if (!n)
		return eq_error_set(err, EQ_ERR_INVAL, "slot: empty mkfs command");
	argv[n++] = (char *)(uintptr_t)dev;
	argv[n] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		return eq_error_errno(err, EQ_ERR_IO, "slot: fork for '%s'", argv[0]);
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return eq_error_errno(err, EQ_ERR_IO, "slot: waiting for '%s'", argv[0]);
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return EQ_OK;
	if (WIFEXITED(st))
		return eq_error_set(err, EQ_ERR_IO, "slot: '%s %s' exited with status %d%s", argv[0], dev,
				    WEXITSTATUS(st), WEXITSTATUS(st) == 127 ? " (not found?)" : "");
	return eq_error_set(err, EQ_ERR_IO, "slot: '%s %s' killed by signal %d", argv[0], dev,
			    WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static eq_err unmount_if(const char *dir, struct eq_error *err)
{
	if (!is_mountpoint(dir))
		return EQ_OK;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)syncfs(fd);
		close(fd);
	}
	if (umount2(dir, 0) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "slot: umount '%s'", dir);
	return EQ_OK;
}

eq_err eq_slot_prepare(const struct eq_config *cfg, const char *name, char **ret_root, struct eq_error *err)
{
	const char *path = NULL;
	eq_err r = slot_path(cfg, name, &path, err);
	if (r)
		return r;
	if (cfg->slot_type == EQ_SLOT_DIR) {
		if (!strcmp(path, "/") || is_root_dir(path))
			return eq_error_set(err, EQ_ERR_UNSAFE, "slot %s: refusing to empty the root directory '%s'",
					    name, path);
		r = eq_mkdir_p(path, 0755, err);
		if (!r)
			r = empty_dir(path, err);
		if (r)
			return eq_error_prefix(err, r, "slot %s", name);
		char *root = eq_strdup(path);
		if (!root)
			return eq_error_set(err, EQ_ERR_NOMEM, "slot: out of memory");
		*ret_root = root;
		return EQ_OK;
	}
	if (is_root_device(path))
		return eq_error_set(err, EQ_ERR_STATE, "slot %s: '%s' holds the running root, refusing to format it",
				    name, path);
	EQ_AUTOFREE char *mnt = NULL;
	EQ_AUTOFREE char *ro = NULL;
	r = mnt_dir(cfg, name, "", &mnt, err);
	if (!r)
		r = mnt_dir(cfg, name, "-ro", &ro, err);
	/* A mount left by an interrupted run would make mkfs fail (busy). */
	if (!r)
		r = unmount_if(ro, err);
	if (!r)
		r = unmount_if(mnt, err);
	if (!r)
		r = run_mkfs(cfg->mkfs, path, err);
	if (!r && mount(path, mnt, "ext4", 0, NULL) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "slot: mount '%s' on '%s'", path, mnt);
	if (r)
		return eq_error_prefix(err, r, "slot %s", name);
	*ret_root = eq_steal_ptr(mnt);
	return EQ_OK;
}

eq_err eq_slot_open(const struct eq_config *cfg, const char *name, char **ret_root, struct eq_error *err)
{
	const char *path = NULL;
	eq_err r = slot_path(cfg, name, &path, err);
	if (r)
		return r;
	char *root = NULL;
	if (cfg->slot_type == EQ_SLOT_DIR) {
		root = eq_strdup(path);
	} else if (is_root_device(path)) {
		/* Not "/" itself: /proc, /dev, /run, /tmp or the data partition
		 * are mounted on the slot's own directories, and a rebuilt
		 * payload would record those file systems' roots (mode 0555
		 * for /proc, 1777 for a tmpfs) instead of what the package
		 * installed. A bind mount without MS_REC shows the slot's own
		 * tree, read-only like any other slot we read. */
		r = mnt_dir(cfg, name, "-ro", &root, err);
		if (r)
			return eq_error_prefix(err, r, "slot %s", name);
		if (!is_mountpoint(root) && (mount("/", root, NULL, MS_BIND, NULL) != 0 ||
					     mount(NULL, root, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0)) {
			r = eq_error_errno(err, EQ_ERR_IO, "slot %s: bind mount of the running root on '%s'", name,
					   root);
			(void)umount2(root, MNT_DETACH);
			eq_free(root);
			return r;
		}
	} else {
		r = mnt_dir(cfg, name, "-ro", &root, err);
		if (r)
			return eq_error_prefix(err, r, "slot %s", name);
		if (!is_mountpoint(root) && mount(path, root, "ext4", MS_RDONLY, NULL) != 0) {
			r = eq_error_errno(err, EQ_ERR_IO, "slot %s: mount '%s' read-only on '%s'", name, path, root);
			eq_free(root);
			return r;
		}
	}
	if (!root)
		return eq_error_set(err, EQ_ERR_NOMEM, "slot: out of memory");
	*ret_root = root;
	return EQ_OK;
}

eq_err eq_slot_release(const struct eq_config *cfg, const char *name, struct eq_error *err)
{
	const char *path = NULL;
	eq_err r = slot_path(cfg, name, &path, err);
	if (r)
		return r;
	if (cfg->slot_type == EQ_SLOT_DIR) {
		int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return eq_error_errno(err, EQ_ERR_IO, "slot %s: cannot open '%s'", name, path);
		int rc = syncfs(fd);
		close(fd);
		if (rc != 0)
			return eq_error_errno(err, EQ_ERR_IO, "slot %s: syncfs '%s'", name, path);
		return EQ_OK;
	}
	EQ_AUTOFREE char *mnt = NULL;
	EQ_AUTOFREE char *ro = NULL;
	r = mnt_dir(cfg, name, "", &mnt, err);
	if (!r)
		r = mnt_dir(cfg, name, "-ro", &ro, err);
	if (!r)
		r = unmount_if(mnt, err);
	if (!r)
		r = unmount_if(ro, err);
	return r ? eq_error_prefix(err, r, "slot %s", name) : EQ_OK;
}
