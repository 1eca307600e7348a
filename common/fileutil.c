#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eq/common.h"

eq_err eq_write_all(int fd, const void *data, size_t len, struct eq_error *err)
{
	const uint8_t *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return eq_error_errno(err, EQ_ERR_IO, "write failed");
		}
		p += n;
		len -= (size_t)n;
	}
	return EQ_OK;
}

eq_err eq_fsync_dir_of(const char *path, struct eq_error *err)
{
	struct stat st;
	char *copy = NULL;
	const char *dir = path;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		copy = eq_strdup(path);
		if (!copy)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		dir = dirname(copy);
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		eq_err r = eq_error_errno(err, EQ_ERR_IO, "cannot open directory '%s'", dir);
		eq_free(copy);
		return r;
	}
	eq_err r = EQ_OK;
	if (fsync(fd) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "fsync of directory '%s' failed", dir);
	close(fd);
	eq_free(copy);
	return r;
}

eq_err eq_file_replace_atomic(const char *path, const void *data, size_t len, mode_t mode, struct eq_error *err)
{
	EQ_AUTOFREE char *tmp = eq_asprintf("%s.tmp.XXXXXX", path);
	if (!tmp)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot create temporary file for '%s'", path);
	eq_err r = eq_write_all(fd, data, len, err);
	if (r) {
		eq_error_prefix(err, r, "%s", tmp);
		goto fail;
	}
	if (fchmod(fd, mode) != 0) {
		r = eq_error_errno(err, EQ_ERR_IO, "chmod of '%s' failed", tmp);
		goto fail;
	}
	if (fsync(fd) != 0) {
		r = eq_error_errno(err, EQ_ERR_IO, "fsync of '%s' failed", tmp);
		goto fail;
	}
	if (close(fd) != 0) {
		fd = -1;
		r = eq_error_errno(err, EQ_ERR_IO, "close of '%s' failed", tmp);
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		r = eq_error_errno(err, EQ_ERR_IO, "cannot rename '%s' to '%s'", tmp, path);
		goto fail;
	}
	return eq_fsync_dir_of(path, err);
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return r;
}

eq_err eq_file_read_all(const char *path, size_t max, uint8_t **ret_data, size_t *ret_len, struct eq_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot open '%s'", path);
	struct eq_buf b;
	eq_buf_init(&b, max);
	eq_err r = EQ_OK;
	uint8_t chunk[16384];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = eq_error_errno(err, EQ_ERR_IO, "cannot read '%s'", path);
			break;
		}
		if (n == 0)
			break;
		r = eq_buf_append(&b, chunk, (size_t)n, err);
		if (r) {
			if (r == EQ_ERR_LIMIT)
				eq_error_set(err, r, "'%s' is larger than the limit of %zu bytes", path, max);
			break;
		}
	}
	close(fd);
	if (r) {
		eq_buf_done(&b);
		return r;
	}
	if (!b.data) {
		r = eq_buf_append(&b, "", 0, err);
		if (r)
			return r;
	}
	*ret_data = eq_buf_steal(&b, ret_len);
	return EQ_OK;
}

eq_err eq_mkdir_p(const char *path, mode_t mode, struct eq_error *err)
{
	EQ_AUTOFREE char *p = eq_strdup(path);
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) != 0 && errno != EEXIST)
			return eq_error_errno(err, EQ_ERR_IO, "cannot create directory '%s'", p);
		*s = '/';
	}
	if (mkdir(p, mode) != 0 && errno != EEXIST)
		return eq_error_errno(err, EQ_ERR_IO, "cannot create directory '%s'", p);
	return EQ_OK;
}

static eq_err rm_at(int parent, const char *name, const char *shown, struct eq_error *err)
{
	struct stat st;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT)
			return EQ_OK;
		return eq_error_errno(err, EQ_ERR_IO, "cannot stat '%s'", shown);
	}
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", shown);
		DIR *d = fdopendir(fd);
		if (!d) {
			close(fd);
			return eq_error_errno(err, EQ_ERR_IO, "cannot read '%s'", shown);
		}
		struct dirent *de;
		eq_err r = EQ_OK;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			r = rm_at(dirfd(d), de->d_name, de->d_name, err);
			if (r)
				break;
		}
		closedir(d);
		if (r)
			return eq_error_prefix(err, r, "%s", shown);
		if (unlinkat(parent, name, AT_REMOVEDIR) != 0)
			return eq_error_errno(err, EQ_ERR_IO, "cannot remove '%s'", shown);
		return EQ_OK;
	}
	if (unlinkat(parent, name, 0) != 0 && errno != ENOENT)
		return eq_error_errno(err, EQ_ERR_IO, "cannot remove '%s'", shown);
	return EQ_OK;
}

eq_err eq_rm_rf(const char *path, struct eq_error *err)
{
	return rm_at(AT_FDCWD, path, path, err);
}

eq_err eq_rm_rf_at(int dirfd, const char *name, const char *shown, struct eq_error *err)
{
	return rm_at(dirfd, name, shown, err);
}

static bool number_name(const char *name, const char *suffix, unsigned width, uint64_t *ret)
{
	size_t n = strspn(name, "0123456789");
	if ((width && n != width) || strcmp(name + n, suffix) != 0)
		return false;
	/* A fixed width is written zero-padded (the report queue's names);
	 * without one, "007" beside "7" would name release 7 twice. */
	if (width)
		return eq_parse_u64_padded(name, n, UINT64_MAX, ret);
	return eq_parse_u64(name, n, UINT64_MAX, ret);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

eq_err eq_dir_numbers(const char *dir, const char *suffix, unsigned width, uint64_t **ret, size_t *ret_n,
		      struct eq_error *err)
{
	*ret = NULL;
	*ret_n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? EQ_OK : eq_error_errno(err, EQ_ERR_IO, "cannot read '%s'", dir);
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	eq_err r = EQ_OK;
	const struct dirent *de;
	while ((de = readdir(d))) {
		uint64_t x;
		if (!number_name(de->d_name, suffix, width, &x))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			uint64_t *nv = eq_realloc(v, nc * sizeof(*nv));
			if (!nv) {
				r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = x;
	}
	closedir(d);
	if (r) {
		eq_free(v);
		return r;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_u64);
	*ret = v;
	*ret_n = n;
	return EQ_OK;
}
