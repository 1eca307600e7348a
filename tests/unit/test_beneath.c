#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <eq/beneath.h>

/*
 * eq_open_beneath() on both of its implementations: every case runs as
 * "openat2/<case>" (the kernel's resolver) and "walker/<case>" (the walker
 * for kernels without openat2, chosen with the EQ_TEST_NO_OPENAT2 hook).
 *
 * Each case builds, in a fresh temporary folder:
 *   top/outside/secret      a file that must never be opened
 *   top/root/               the root handed to eq_open_beneath()
 *   top/root/usr/d/f        an ordinary file deep inside
 */

struct fx {
	bool walker;
	char top[64];
	int topfd;
	int rootfd;
	ino_t secret_ino;
};

static bool kernel_has_openat2(void)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH};
	long fd = syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof(how));
	if (fd >= 0)
		close((int)fd);
	return fd >= 0;
}

static void put_file(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

static int setup(void **state, bool walker)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	/* Owned by the state from here: a failed setup fails the case. */
	*state = f;
	f->walker = walker;
	snprintf(f->top, sizeof(f->top), "/tmp/eq_beneath_XXXXXX");
	if (!mkdtemp(f->top))
		return -1;
	f->topfd = open(f->top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->topfd < 0 || mkdirat(f->topfd, "outside", 0755) || mkdirat(f->topfd, "root", 0755))
		return -1;
	int out = openat(f->topfd, "outside", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	put_file(out, "secret");
	struct stat st;
	if (fstatat(out, "secret", &st, 0))
		return -1;
	f->secret_ino = st.st_ino;
	close(out);
	f->rootfd = openat(f->topfd, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->rootfd < 0 || mkdirat(f->rootfd, "usr", 0755) || mkdirat(f->rootfd, "usr/d", 0755))
		return -1;
	put_file(f->rootfd, "usr/d/f");
	if (walker)
		setenv("EQ_TEST_NO_OPENAT2", "1", 1);
	else
		unsetenv("EQ_TEST_NO_OPENAT2");
	return 0;
}

static int setup_openat2(void **state)
{
	return setup(state, false);
}

static int setup_walker(void **state)
{
	return setup(state, true);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	unsetenv("EQ_TEST_NO_OPENAT2");
	close(f->rootfd);
	close(f->topfd);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->top);
	int rc = system(cmd);
	free(f);
	return rc == 0 ? 0 : -1;
}

/* The fixture for @state, skipping where that implementation cannot run. */
static struct fx *fx_of(void **state)
{
	struct fx *f = *state;
#ifndef EQ_TEST_HOOKS
	if (f->walker)
		EQ_SKIP("the walker is chosen through a test hook: configure with -DEQ_TEST_HOOKS=ON");
#endif
	if (!f->walker && !kernel_has_openat2())
		EQ_SKIP("this kernel has no openat2 (before 5.6, or refused by seccomp): the walker cases cover it");
	return f;
}

static ino_t ino_of(int fd)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

static ino_t ino_at(int dfd, const char *path)
{
	struct stat st;
	assert_int_equal(fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_ino;
}

/* Expects eq_open_beneath() to refuse, with @code, an errno among @e1/@e2
 * and a message naming @path and @comp. */
static void refused(struct fx *f, const char *path, int oflags, unsigned how, eq_err code, int e1, int e2,
		    const char *comp)
{
	struct eq_error err;
	eq_error_clear(&err);
	int fd = -1;
	eq_err r = eq_open_beneath(f->rootfd, path, oflags, 0644, how, &fd, &err);
	int e = errno;
	if (r == EQ_OK) {
		bool secret = ino_of(fd) == f->secret_ino;
		close(fd);
		fail_msg("'%s' was opened (%s)", path, secret ? "the file outside the root" : "inside");
	}
	assert_int_equal(fd, -1);
	if (r != code || (e != e1 && e != e2))
		fail_msg("'%s': %s, errno %d (%s): %s", path, eq_err_str(r), e, strerror(e), err.msg);
	assert_int_equal(err.code, code);
	char want[PATH_MAX + 8];
	snprintf(want, sizeof(want), "'%.*s", 100, path);
	if (!strstr(err.msg, want))
		fail_msg("message does not name the path '%s': %s", path, err.msg);
	snprintf(want, sizeof(want), "'%.*s'", 100, comp ? comp : "");
	if (comp && !strstr(err.msg, want))
		fail_msg("message does not name the component '%s': %s", comp, err.msg);
}

static int opened(struct fx *f, const char *path, int oflags, unsigned how)
{
	struct eq_error err;
	eq_error_clear(&err);
	int fd = -1;
	eq_err r = eq_open_beneath(f->rootfd, path, oflags, 0640, how, &fd, &err);
	if (r)
		fail_msg("'%s': %s", path, err.msg);
	assert_true(fd >= 0);
	assert_true(ino_of(fd) != f->secret_ino);
	return fd;
}

static void test_plain(void **state)
{
	struct fx *f = fx_of(state);
	int fd = opened(f, "usr/d/f", O_RDONLY, 0);
	assert_int_equal(ino_of(fd), ino_at(f->rootfd, "usr/d/f"));
	close(fd);
	/* "" and "." are the root; "//" and "./" are nothing. */
	fd = opened(f, "", O_PATH | O_DIRECTORY, EQ_BENEATH_IN_ROOT);
	assert_int_equal(ino_of(fd), ino_of(f->rootfd));
	close(fd);
	fd = opened(f, "./usr//./d/", O_RDONLY | O_DIRECTORY, EQ_BENEATH_NO_SYMLINKS);
	assert_int_equal(ino_of(fd), ino_at(f->rootfd, "usr/d"));
	close(fd);
	refused(f, "usr/nothing/f", O_RDONLY, 0, EQ_ERR_NOTFOUND, ENOENT, ENOENT, "nothing");
	/* A file on the way is no directory. */
	refused(f, "usr/d/f/g", O_RDONLY, EQ_BENEATH_IN_ROOT, EQ_ERR_STATE, ENOTDIR, ENOTDIR, "f");
}

/* A symlink out of the root as a middle component: absolute, and
 * relative with enough ".." to climb out. */
static void test_symlink_middle(void **state)
{
	struct fx *f = fx_of(state);
	char abs[128];
	snprintf(abs, sizeof(abs), "%s/outside", f->top);
	assert_int_equal(symlinkat(abs, f->rootfd, "usr/abs"), 0);
	assert_int_equal(symlinkat("../../outside", f->rootfd, "usr/rel"), 0);
	/* Beneath: the escape is refused (EXDEV from the kernel, ELOOP from the
	 * walker, which follows no symlink). */
	refused(f, "usr/abs/secret", O_RDONLY, 0, EQ_ERR_UNSAFE, EXDEV, ELOOP, "abs");
	refused(f, "usr/rel/secret", O_RDONLY, 0, EQ_ERR_UNSAFE, EXDEV, ELOOP, "rel");
	/* In the root: the kernel resolves both inside it, where there is no
	 * "outside"; the walker refuses the symlink. Never the secret. */
	if (f->walker) {
		refused(f, "usr/abs/secret", O_RDONLY, EQ_BENEATH_IN_ROOT, EQ_ERR_UNSAFE, ELOOP, ELOOP, "abs");
		refused(f, "usr/rel/secret", O_RDONLY, EQ_BENEATH_IN_ROOT, EQ_ERR_UNSAFE, ELOOP, ELOOP, "rel");
	} else {
		refused(f, "usr/abs/secret", O_RDONLY, EQ_BENEATH_IN_ROOT, EQ_ERR_NOTFOUND, ENOENT, ENOENT, "abs");
		refused(f, "usr/rel/secret", O_RDONLY, EQ_BENEATH_IN_ROOT, EQ_ERR_NOTFOUND, ENOENT, ENOENT, "rel");
	}
	/* No symlinks: refused everywhere, even one that stays inside. */
	assert_int_equal(symlinkat("d", f->rootfd, "usr/in"), 0);
	refused(f, "usr/in/f", O_RDONLY, EQ_BENEATH_NO_SYMLINKS, EQ_ERR_UNSAFE, ELOOP, ELOOP, "in");
}

/* A slot's absolute symlink ("lib -> /usr") means the slot's /usr: the
 * kernel follows it inside the root, the walker refuses it. */
static void test_in_root_symlink(void **state)
{
	struct fx *f = fx_of(state);
	assert_int_equal(symlinkat("/usr", f->rootfd, "lib"), 0);
	if (f->walker) {
		refused(f, "lib/d/f", O_RDONLY, EQ_BENEATH_IN_ROOT, EQ_ERR_UNSAFE, ELOOP, ELOOP, "lib");
		return;
	}
	int fd = opened(f, "lib/d/f", O_RDONLY, EQ_BENEATH_IN_ROOT);
	assert_int_equal(ino_of(fd), ino_at(f->rootfd, "usr/d/f"));
	close(fd);
	refused(f, "lib/d/f", O_RDONLY, 0, EQ_ERR_UNSAFE, EXDEV, EXDEV, "lib");
}

/* The last component a symlink: O_NOFOLLOW refuses any, and without it one
 * that leads out is refused all the same. */
static void test_symlink_final(void **state)
{
	struct fx *f = fx_of(state);
	char abs[128];
	snprintf(abs, sizeof(abs), "%s/outside/secret", f->top);
	assert_int_equal(symlinkat(abs, f->rootfd, "usr/d/s"), 0);
	assert_int_equal(symlinkat("f", f->rootfd, "usr/d/near"), 0);
	refused(f, "usr/d/s", O_RDONLY | O_NOFOLLOW, EQ_BENEATH_IN_ROOT, EQ_ERR_UNSAFE, ELOOP, ELOOP, "s");
	refused(f, "usr/d/near", O_RDONLY | O_NOFOLLOW, 0, EQ_ERR_UNSAFE, ELOOP, ELOOP, "near");
	refused(f, "usr/d/s", O_RDONLY, 0, EQ_ERR_UNSAFE, EXDEV, ELOOP, "s");
	refused(f, "usr/d/near", O_RDONLY, EQ_BENEATH_NO_SYMLINKS, EQ_ERR_UNSAFE, ELOOP, ELOOP, "near");
	/* O_PATH | O_NOFOLLOW asks for the link itself, as open(2) does. */
	int fd = opened(f, "usr/d/s", O_PATH | O_NOFOLLOW, EQ_BENEATH_IN_ROOT);
	assert_int_equal(ino_of(fd), ino_at(f->rootfd, "usr/d/s"));
	close(fd);
	/* O_CREAT | O_EXCL never writes through a planted name. */
	refused(f, "usr/d/s", O_WRONLY | O_CREAT | O_EXCL, 0, EQ_ERR_IO, EEXIST, EEXIST, "s");
	if (f->walker) {
		refused(f, "usr/d/near", O_RDONLY, EQ_BENEATH_IN_ROOT, EQ_ERR_UNSAFE, ELOOP, ELOOP, "near");
	} else {
		fd = opened(f, "usr/d/near", O_RDONLY, EQ_BENEATH_IN_ROOT);
		assert_int_equal(ino_of(fd), ino_at(f->rootfd, "usr/d/f"));
		close(fd);
	}
}

/* ".." and absolute paths are refused before any lookup, whatever is on
 * the disk and whether or not they would stay inside. */
static void test_dotdot_absolute(void **state)
{
	struct fx *f = fx_of(state);
	const unsigned hows[] = {0, EQ_BENEATH_IN_ROOT, EQ_BENEATH_NO_SYMLINKS};
	for (size_t i = 0; i < sizeof(hows) / sizeof(hows[0]); i++) {
		refused(f, "..", O_RDONLY | O_DIRECTORY, hows[i], EQ_ERR_UNSAFE, EXDEV, EXDEV, "..");
		refused(f, "../outside/secret", O_RDONLY, hows[i], EQ_ERR_UNSAFE, EXDEV, EXDEV, "..");
		refused(f, "usr/d/../d/f", O_RDONLY, hows[i], EQ_ERR_UNSAFE, EXDEV, EXDEV, "..");
		refused(f, "usr/..", O_PATH, hows[i] | EQ_BENEATH_MKDIRS, EQ_ERR_UNSAFE, EXDEV, EXDEV, "..");
		refused(f, "/usr/d/f", O_RDONLY, hows[i], EQ_ERR_UNSAFE, EXDEV, EXDEV, "/usr/d/f");
	}
	/* Names that only start with dots are names. */
	put_file(f->rootfd, "usr/d/..f");
	close(opened(f, "usr/d/..f", O_RDONLY, 0));
}

/* Components up to NAME_MAX, in the middle and at the end, with a path
 * far longer than any fixed component buffer; one byte more is refused. */
static void test_long_components(void **state)
{
	struct fx *f = fx_of(state);
	char a[NAME_MAX + 1], b[NAME_MAX + 1];
	memset(a, 'a', NAME_MAX);
	a[NAME_MAX] = '\0';
	memset(b, 'b', NAME_MAX);
	b[NAME_MAX] = '\0';
	char path[3 * (NAME_MAX + 1) + 8];
	snprintf(path, sizeof(path), "%s/%s/%s", a, b, a);
	int fd = opened(f, path, O_WRONLY | O_CREAT | O_EXCL, EQ_BENEATH_MKDIRS);
	close(fd);
	fd = opened(f, path, O_RDONLY | O_NOFOLLOW, EQ_BENEATH_NO_SYMLINKS);
	close(fd);
	char dir[2 * (NAME_MAX + 1) + 1];
	snprintf(dir, sizeof(dir), "%s/%s", a, b);
	fd = opened(f, dir, O_PATH | O_DIRECTORY, EQ_BENEATH_IN_ROOT);
	close(fd);
	char big[NAME_MAX + 2];
	memset(big, 'c', NAME_MAX + 1);
	big[NAME_MAX + 1] = '\0';
	snprintf(path, sizeof(path), "%s/%s", a, big);
	refused(f, path, O_RDONLY, EQ_BENEATH_IN_ROOT, EQ_ERR_LIMIT, ENAMETOOLONG, ENAMETOOLONG, NULL);
	/* A whole path of PATH_MAX bytes is more than one lookup takes. */
	char huge[PATH_MAX + 1];
	for (size_t i = 0; i < PATH_MAX; i++)
		huge[i] = i % 2 ? '/' : 'x';
	huge[PATH_MAX] = '\0';
	refused(f, huge, O_RDONLY, 0, EQ_ERR_LIMIT, ENAMETOOLONG, ENAMETOOLONG, NULL);
}

/* Creating: the mode is used, missing folders are made (0755) with
 * EQ_BENEATH_MKDIRS and not without, O_EXCL refuses what exists. */
static void test_create(void **state)
{
	struct fx *f = fx_of(state);
	mode_t old = umask(022);
	refused(f, "new/sub/file", O_WRONLY | O_CREAT | O_EXCL, 0, EQ_ERR_NOTFOUND, ENOENT, ENOENT, "new");
	int fd = opened(f, "new/sub/file", O_WRONLY | O_CREAT | O_EXCL, EQ_BENEATH_MKDIRS);
	close(fd);
	struct stat st;
	assert_int_equal(fstatat(f->rootfd, "new/sub/file", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(fstatat(f->rootfd, "new/sub", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	refused(f, "new/sub/file", O_WRONLY | O_CREAT | O_EXCL, EQ_BENEATH_MKDIRS, EQ_ERR_IO, EEXIST, EEXIST, "file");
	/* A folder made to the end, as eqota's own folders are. */
	fd = opened(f, "own/a/b", O_RDONLY | O_DIRECTORY, EQ_BENEATH_MKDIRS | EQ_BENEATH_NO_SYMLINKS);
	assert_int_equal(ino_of(fd), ino_at(f->rootfd, "own/a/b"));
	close(fd);
	/* No folder is made through a symlink that leads out. */
	char abs[128];
	snprintf(abs, sizeof(abs), "%s/outside", f->top);
	assert_int_equal(symlinkat(abs, f->rootfd, "out"), 0);
	refused(f, "out/made/x", O_WRONLY | O_CREAT, EQ_BENEATH_MKDIRS, EQ_ERR_UNSAFE, EXDEV, ELOOP, "out");
	refused(f, "out/made", O_RDONLY | O_DIRECTORY, EQ_BENEATH_MKDIRS | EQ_BENEATH_NO_SYMLINKS, EQ_ERR_UNSAFE, ELOOP,
		ELOOP, "out");
	assert_int_equal(faccessat(f->topfd, "outside/made", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	umask(old);
}

/* A directory swapped for a symlink between two opens: the second lookup
 * sees the symlink and refuses it; a descriptor opened before keeps
 * pointing at the directory it opened. */
static void test_swapped_dir(void **state)
{
	struct fx *f = fx_of(state);
	int before = opened(f, "usr/d", O_PATH | O_DIRECTORY, EQ_BENEATH_IN_ROOT);
	char abs[128];
	snprintf(abs, sizeof(abs), "%s/outside", f->top);
	assert_int_equal(renameat(f->rootfd, "usr/d", f->rootfd, "usr/gone"), 0);
	assert_int_equal(symlinkat(abs, f->rootfd, "usr/d"), 0);
	refused(f, "usr/d/secret", O_RDONLY, 0, EQ_ERR_UNSAFE, EXDEV, ELOOP, "d");
	refused(f, "usr/d/secret", O_RDONLY, EQ_BENEATH_NO_SYMLINKS, EQ_ERR_UNSAFE, ELOOP, ELOOP, "d");
	refused(f, "usr/d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW, EQ_BENEATH_IN_ROOT, EQ_ERR_UNSAFE, ELOOP, ELOOP, "d");
	if (f->walker)
		refused(f, "usr/d/secret", O_RDONLY, EQ_BENEATH_IN_ROOT, EQ_ERR_UNSAFE, ELOOP, ELOOP, "d");
	else
		refused(f, "usr/d/secret", O_RDONLY, EQ_BENEATH_IN_ROOT, EQ_ERR_NOTFOUND, ENOENT, ENOENT, "d");
	int fd = openat(before, "f", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ino_of(fd), ino_at(f->rootfd, "usr/gone/f"));
	close(fd);
	close(before);
}

/* Each case as "openat2/<case>" and "walker/<case>". */
#define CASE(impl, fn) ((struct CMUnitTest){#impl "/" #fn, fn, setup_##impl, teardown, NULL})
#define BOTH(fn) CASE(openat2, fn), CASE(walker, fn)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_plain),         BOTH(test_symlink_middle),  BOTH(test_in_root_symlink),
		BOTH(test_symlink_final), BOTH(test_dotdot_absolute), BOTH(test_long_components),
		BOTH(test_create),        BOTH(test_swapped_dir),
	};
	return eq_test_run(tests, NULL, NULL, argc, argv);
}
