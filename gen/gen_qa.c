#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/gen_package.h>
#include <eq/gen_qa.h>
#include <eq/gen_repo.h>


/* Streams the payload of one package into the reader through a temporary
 * file: the builder writes, the reader then looks at each file's bytes. */
static eq_err scan_package(const char *file, const char *needle, eq_qa_fn fn, void *ctx, size_t *found,
			   struct eq_error *err)
{
	struct eq_pkg *pkg = NULL;
	eq_err r = eq_pkg_read(file, NULL, &pkg, err);
	if (r)
		return r;
	const char *tmpdir = secure_getenv("TMPDIR");
	EQ_AUTOFREE char *tmp = eq_asprintf("%s/eqota-qa-XXXXXX", tmpdir ? tmpdir : "/tmp");
	if (!tmp) {
		eq_pkg_free(pkg);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		eq_pkg_free(pkg);
		return eq_error_errno(err, EQ_ERR_IO, "cannot create '%s'", tmp);
	}
	(void)unlink(tmp);
	uint8_t sha[EQ_SHA256_LEN];
	uint64_t size;
	r = eq_pkg_write_payload(pkg, eq_fd_write, &fd, sha, &size, err);
	eq_pkg_free(pkg);
	if (r || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return r ? r : eq_error_errno(err, EQ_ERR_IO, "cannot rewind '%s'", tmp);
	}
	struct eq_payload_reader *rd = NULL;
	r = eq_payload_reader_new(eq_fd_read, &fd, NULL, &rd, err);
	size_t nlen = strlen(needle);
	/* A match may straddle two reads: keep the last nlen-1 bytes. */
	size_t bufsz = 65536 + nlen;
	uint8_t *buf = r ? NULL : eq_malloc(bufsz);
	if (!r && !buf)
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	while (!r) {
		const struct eq_payload_entry *e;
		r = eq_payload_reader_next(rd, &e, err);
		if (r || !e)
			break;
		if (e->type != EQ_ENTRY_FILE)
			continue;
		uint64_t hits = 0;
		size_t keep = 0;
		for (;;) {
			size_t n;
			r = eq_payload_reader_read(rd, buf + keep, 65536, &n, err);
			if (r || n == 0)
				break;
			size_t have = keep + n;
			for (size_t off = 0; have - off >= nlen;) {
				uint8_t *m = memmem(buf + off, have - off, needle, nlen);
				if (!m)
					break;
				hits++;
				off = (size_t)(m - buf) + nlen;
			}
			keep = nlen > 1 ? (have < nlen - 1 ? have : nlen - 1) : 0;
			memmove(buf, buf + have - keep, keep);
		}
		if (!r && hits) {
			(*found)++;
			if (fn)
				fn(ctx, file, e->path, hits);
		}
	}
	eq_free(buf);
	eq_payload_reader_free(rd);
	close(fd);
	return r;
}

eq_err eq_gen_qa(const char *packages, const char *build_dir, eq_qa_fn fn, void *ctx, size_t *ret_found,
		 struct eq_error *err)
{
	if (build_dir[0] != '/')
		return eq_error_set(err, EQ_ERR_INVAL, "--build-dir '%s' must be an absolute path", build_dir);
	/* "/build/dir/" and "/build/dir" name the same folder. */
	EQ_AUTOFREE char *needle = eq_strdup(build_dir);
	if (!needle)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	size_t nl = strlen(needle);
	while (nl > 1 && needle[nl - 1] == '/')
		needle[--nl] = '\0';

	struct stat st;
	if (stat(packages, &st) != 0)
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot open '%s'", packages);
	size_t found = 0;
	eq_err r = EQ_OK;
	if (S_ISDIR(st.st_mode)) {
		char **files = NULL;
		size_t n = 0;
		r = eq_gen_list_packages(packages, &files, &n, err);
		for (size_t i = 0; !r && i < n; i++) {
			r = scan_package(files[i], needle, fn, ctx, &found, err);
			if (r)
				eq_error_prefix(err, r, "%s", files[i]);
		}
		for (size_t i = 0; i < n; i++)
			eq_free(files[i]);
		eq_free(files);
	} else {
		r = scan_package(packages, needle, fn, ctx, &found, err);
		if (r)
			eq_error_prefix(err, r, "%s", packages);
	}
	if (!r)
		*ret_found = found;
	return r;
}
