/*
 * Unit tests of the installer, the plan, slot records and dir slots, over
 * real data: small .deb packages and a tarball with xattrs built with
 * dpkg-deb and GNU tar, published as two releases with the real eqota-gen
 * (EQOTA_GEN), installed into temporary slot directories. Needs root
 * (owners, setuid, the tmpfs for the space check) like the device.
 * Block slots are exercised by the QEMU suite (tests/qemu/).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <eq/agent.h>

#include "../../agent/install.h"
#include "../../agent/plan.h"
#include "../../agent/records.h"
#include "../../agent/slot.h"

/* Builds the packages and publishes releases r1 and r2 (see the header). */
static const char SETUP_SH[] =
	"set -eu\n"
	"W=$1; GEN=$2; cd \"$W\"; mkdir -p src r1 r2\n"
	"ctl() { mkdir -p \"$1/DEBIAN\"; printf 'Package: %s\\nVersion: %s\\nArchitecture: all\\n"
	"Maintainer: t <t@example.org>\\nDescription: t\\n' \"$2\" \"$3\" > \"$1/DEBIAN/control\"; }\n"
	"deb() { dpkg-deb --root-owner-group -b \"$1\" \"$2\" >/dev/null; }\n"
	/* alpha: identical in both releases: kept */
	"p=src/alpha; ctl $p alpha 1.0; mkdir -p $p/usr/bin $p/usr/share/alpha\n"
	"head -c 8192 /dev/urandom > $p/usr/bin/alpha; chmod 0755 $p/usr/bin/alpha\n"
	"ln $p/usr/bin/alpha $p/usr/bin/alpha-hard; ln -s alpha $p/usr/bin/alpha-link\n"
	"printf 'suid\\n' > $p/usr/bin/alpha-suid; chmod 4755 $p/usr/bin/alpha-suid\n"
	"long=$(printf 'long-name-%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)\n"
	"echo long > \"$p/usr/share/alpha/$long\"; echo spaced > \"$p/usr/share/alpha/a file %41\"\n"
	"deb $p r1/alpha_1.0_all.deb; cp r1/alpha_1.0_all.deb r2/\n"
	/* beta: a few bytes changed: delta */
	"p=src/beta1; ctl $p beta 1.0; mkdir -p $p/usr/lib/beta $p/usr/bin\n"
	"head -c 65536 /dev/urandom > $p/usr/lib/beta/data\n"
	"printf '#!/bin/sh\\necho beta\\n' > $p/usr/bin/beta; chmod 0755 $p/usr/bin/beta\n"
	"deb $p r1/beta_1.0_all.deb; cp -a $p src/beta2; ctl src/beta2 beta 1.1\n"
	"printf XYZ | dd of=src/beta2/usr/lib/beta/data bs=1 seek=1000 conv=notrunc status=none\n"
	"printf XYZ | dd of=src/beta2/usr/lib/beta/data bs=1 seek=40000 conv=notrunc status=none\n"
	"deb src/beta2 r2/beta_1.1_all.deb\n"
	/* gamma: removed; epsilon: added (with a fifo and a directory shared with alpha) */
	"p=src/gamma; ctl $p gamma 1.0; mkdir -p $p/usr/share/gamma\n"
	"head -c 3000 /dev/urandom > $p/usr/share/gamma/g; deb $p r1/gamma_1.0_all.deb\n"
	"p=src/epsilon; ctl $p epsilon 2.0; mkdir -p $p/usr/share/epsilon $p/usr/share/alpha\n"
	"head -c 5000 /dev/urandom > $p/usr/share/epsilon/e; mkfifo $p/usr/share/epsilon/fifo\n"
	"deb $p r2/epsilon_2.0_all.deb\n"
	/* caps: a tarball with an extended attribute: kept */
	"p=src/caps; mkdir -p $p/usr/sbin; head -c 4000 /dev/urandom > $p/usr/sbin/capsd\n"
	"chmod 0750 $p/usr/sbin/capsd\n"
	"python3 -c 'import os,sys; os.setxattr(sys.argv[1], \"user.eqota.test\", b\"\\x01\\x02value\")' "
	"$p/usr/sbin/capsd\n"
	"tar --xattrs --xattrs-include='*' --format=pax --owner=0 --group=0 --numeric-owner "
	"-cf r1/caps_1.0.tar -C $p usr\n"
	"cp r1/caps_1.0.tar r2/\n"
	"\"$GEN\" keygen --out rel >/dev/null\n"
	"for r in r1 r2; do \"$GEN\" -q publish --repo repo --board tb --channel stable --release $r "
	"--packages $r --key rel.key --store store.db --level 3 >/dev/null; done\n";

#define BOARD "tb"

/*
 * An image release (manifest format 2), built before the publisher makes
 * one: the packages (channel "pk") and the image components (channel "im",
 * tarballs with the components' names) are published apart, since one
 * publish refuses two packages shipping etc/shells with other contents,
 * and joined in memory with eq_manifest_set_image(). Releases i1 and i2:
 * tool is the same in both (kept), beta changes (delta), the skeleton puts
 * "bin -> usr/bin" first, eqota-image.etc overrides tool's etc/shells and
 * beta's etc/beta.conf and changes in i2 (delta), eqota-image.usr gives
 * tool's usr/share/tool another mode; tool's usr/share/tool/old is removed.
 */
static const char IMAGE_SH[] =
	"set -eu\n"
	"W=$1; GEN=$2; cd \"$W\"\n"
	"ctl() { mkdir -p \"$1/DEBIAN\"; printf 'Package: %s\\nVersion: %s\\nArchitecture: all\\n"
	"Maintainer: t <t@example.org>\\nDescription: t\\n' \"$2\" \"$3\" > \"$1/DEBIAN/control\"; }\n"
	"deb() { dpkg-deb --root-owner-group -b \"$1\" \"$2\" >/dev/null; }\n"
	"ntar() { o=$1; d=$2; shift 2; tar --format=pax --owner=0 --group=0 --numeric-owner --no-recursion "
	"-cf \"$o\" -C \"$d\" \"$@\"; }\n"
	"mkdir -p isrc i1/pk i1/im i2/pk i2/im\n"
	"p=isrc/tool; ctl $p tool 1.0; mkdir -p $p/bin $p/etc $p/usr/share/tool\n"
	"printf '#!/bin/sh\\necho tool\\n' > $p/bin/tool; chmod 0755 $p/bin/tool\n"
	"printf '/bin/sh\\n' > $p/etc/shells\n"
	"head -c 20000 /dev/urandom > $p/usr/share/tool/data; echo old > $p/usr/share/tool/old\n"
	"deb $p i1/pk/tool_1.0_all.deb; cp i1/pk/tool_1.0_all.deb i2/pk/\n"
	"p=isrc/beta1; ctl $p beta 1.0; mkdir -p $p/bin $p/etc $p/usr/lib/beta\n"
	"printf '#!/bin/sh\\necho beta\\n' > $p/bin/beta; chmod 0755 $p/bin/beta\n"
	"printf 'conf=package\\n' > $p/etc/beta.conf; head -c 65536 /dev/urandom > $p/usr/lib/beta/data\n"
	"deb $p i1/pk/beta_1.0_all.deb; cp -a $p isrc/beta2; ctl isrc/beta2 beta 1.1\n"
	"printf XYZ | dd of=isrc/beta2/usr/lib/beta/data bs=1 seek=1000 conv=notrunc status=none\n"
	"deb isrc/beta2 i2/pk/beta_1.1_all.deb\n"
	"p=isrc/skel; mkdir -p $p/usr/bin; ln -s usr/bin $p/bin\n"
	"ntar i1/im/eqota-image-skeleton_1.tar $p bin usr usr/bin; cp i1/im/eqota-image-skeleton_1.tar i2/im/\n"
	"p=isrc/etc1; mkdir -p $p/etc; printf '/bin/sh\\n/bin/bash\\n' > $p/etc/shells\n"
	"printf 'conf=image\\n' > $p/etc/beta.conf; printf 'root:x:0:0::/root:/bin/sh\\n' > $p/etc/passwd\n"
	"head -c 30000 /dev/urandom > $p/etc/image.db\n"
	"ntar i1/im/eqota-image.etc_1.tar $p etc etc/shells etc/beta.conf etc/passwd etc/image.db\n"
	"cp -a $p isrc/etc2; printf '/bin/sh\\n/bin/bash\\n/usr/bin/zsh\\n' > isrc/etc2/etc/shells\n"
	"printf XYZ | dd of=isrc/etc2/etc/image.db bs=1 seek=500 conv=notrunc status=none\n"
	"ntar i2/im/eqota-image.etc_2.tar isrc/etc2 etc etc/shells etc/beta.conf etc/passwd etc/image.db\n"
	"p=isrc/usr; mkdir -p $p/usr/share/tool; chmod 0700 $p/usr/share/tool\n"
	"ntar i1/im/eqota-image.usr_1.tar $p usr/share/tool; cp i1/im/eqota-image.usr_1.tar i2/im/\n"
	"for r in i1 i2; do for c in pk im; do \"$GEN\" -q publish --repo repo --board tb --channel $c "
	"--release $r --packages $r/$c --key rel.key --store store.db --level 3 >/dev/null; done; done\n";

static const char *const IMG_BEFORE[] = {"eqota-image-skeleton"};
static const char *const IMG_AFTER[] = {"eqota-image.etc", "eqota-image.usr"};
/* "bin": tool and beta ship it as a folder, the image has a symlink there;
 * their "bin" is read from the folder set aside for it. */
static const char *const IMG_REPLACE[] = {"bin", "etc/beta.conf", "etc/shells", "usr/share/tool"};
static const char *const IMG_REMOVE[] = {"usr/share/tool/old"};

struct release {
	struct eq_manifest *m;
	uint8_t *bytes, *sig;
	size_t len, sig_len;
};

static struct {
	char dir[64];
	struct eq_manifest_trust *trust;
	struct release rel[2];
	unsigned ncase;
	/* The image releases i1, i2: their packages and components as
	 * published, and the joined release (bytes borrowed from pk). */
	struct release pk[2], im[2], img[2];
} G;

/* ---- helpers -------------------------------------------------------------- */

static int run(const char *const argv[])
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *P(const char *fmt, ...) EQ_PRINTF(1, 2);
static char *P(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	char *p = eq_strdup(buf);
	assert_non_null(p);
	return p;
}

/* Reads and verifies releases/<n>/manifest.json(.sig) of @channel. */
static eq_err release_load_ch(const char *repo, const char *board, const char *channel, int n, struct release *r,
			      struct eq_error *e)
{
	EQ_AUTOFREE char *mp = P("%s/boards/%s/%s/releases/%d/manifest.json", repo, board, channel, n);
	EQ_AUTOFREE char *sp = P("%s.sig", mp);
	eq_err rc = eq_file_read_all(mp, EQ_MANIFEST_MAX_BYTES, &r->bytes, &r->len, e);
	if (!rc)
		rc = eq_file_read_all(sp, EQ_MANIFEST_SIG_MAX_BYTES, &r->sig, &r->sig_len, e);
	struct eq_manifest_policy pol = {.board = board, .now = (int64_t)time(NULL), .check_expiry = true};
	if (!rc)
		rc = eq_manifest_load_verified(r->bytes, r->len, r->sig, r->sig_len, G.trust, &pol, &r->m, e);
	return rc;
}

static eq_err release_load(const char *repo, const char *board, int n, struct release *r, struct eq_error *e)
{
	return release_load_ch(repo, board, "stable", n, r, e);
}

/* G.img[n]: the packages of pk and im as one release that is an image,
 * with @img (NULL: the test's IMG_* lists). */
static eq_err image_join(int n, const struct eq_manifest_image *img, struct release *ret, struct eq_error *e)
{
	struct eq_manifest_image def = {IMG_BEFORE, 1, IMG_AFTER, 2, IMG_REPLACE, 4, IMG_REMOVE, 1};
	struct eq_manifest_header h;
	struct eq_manifest *m = NULL;
	eq_err r = eq_manifest_new(&m, e);
	if (!r)
		r = eq_manifest_get_header(G.pk[n].m, &h, e);
	if (!r)
		r = eq_manifest_set_header(m, &h, e);
	const struct eq_manifest *parts[] = {G.pk[n].m, G.im[n].m};
	for (size_t k = 0; k < 2 && !r; k++)
		for (size_t i = 0; i < eq_manifest_package_count(parts[k]) && !r; i++)
			r = eq_manifest_add_package(m, eq_manifest_package_at(parts[k], i), e);
	if (!r)
		r = eq_manifest_set_image(m, img ? img : &def, e);
	if (r) {
		eq_manifest_free(m);
		return r;
	}
	*ret = G.pk[n];
	ret->m = m;
	return EQ_OK;
}

static void release_free(struct release *r)
{
	eq_manifest_free(r->m);
	eq_free(r->bytes);
	eq_free(r->sig);
	memset(r, 0, sizeof(*r));
}

static void load_release(int n, struct release *r)
{
	struct eq_error e;
	EQ_AUTOFREE char *repo = P("%s/repo", G.dir);
	if (release_load(repo, BOARD, n, r, &e))
		fail_msg("release %d: %s", n, eq_error_msg(&e));
}

static int group_setup(void **state)
{
	(void)state;
	const char *gen = secure_getenv("EQOTA_GEN");
	if (!gen) {
		fprintf(stderr, "EQOTA_GEN is not set (run through ctest)\n");
		return -1;
	}
	strcpy(G.dir, "/tmp/eq-test-install.XXXXXX");
	if (!mkdtemp(G.dir))
		return -1;
	const char *argv[] = {"/bin/sh", "-c", SETUP_SH, "setup", G.dir, gen, NULL};
	if (run(argv) != 0) {
		fprintf(stderr, "building and publishing the test releases failed\n");
		return -1;
	}
	struct eq_error e;
	EQ_AUTOFREE char *pub = P("%s/rel.pub", G.dir);
	const char *paths[] = {pub};
	if (eq_manifest_trust_from_pubkeys(paths, 1, 1, &G.trust, &e)) {
		fprintf(stderr, "trust: %s\n", eq_error_msg(&e));
		return -1;
	}
	load_release(1, &G.rel[0]);
	load_release(2, &G.rel[1]);
	const char *iargv[] = {"/bin/sh", "-c", IMAGE_SH, "setup", G.dir, gen, NULL};
	if (run(iargv) != 0) {
		fprintf(stderr, "building and publishing the image test releases failed\n");
		return -1;
	}
	EQ_AUTOFREE char *repo = P("%s/repo", G.dir);
	for (int i = 0; i < 2; i++) {
		eq_err r = release_load_ch(repo, BOARD, "pk", i + 1, &G.pk[i], &e);
		if (!r)
			r = release_load_ch(repo, BOARD, "im", i + 1, &G.im[i], &e);
		if (!r)
			r = image_join(i, NULL, &G.img[i], &e);
		if (r) {
			fprintf(stderr, "image release i%d: %s\n", i + 1, eq_error_msg(&e));
			return -1;
		}
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		release_free(&G.rel[i]);
		release_free(&G.pk[i]);
		release_free(&G.im[i]);
		eq_manifest_free(G.img[i].m);
	}
	eq_manifest_trust_free(G.trust);
	struct eq_error e;
	return eq_rm_rf(G.dir, &e) ? -1 : 0;
}

/* The fetch callback: copies repository files, counts the requests, and
 * can corrupt what it hands out. */
struct fetcher {
	char *repo;
	char *dl;
	unsigned n;
	char req[32][160];
	uint64_t bytes;
	bool corrupt_objects;
};

static eq_err fetch_copy(void *ctx, const char *rel, const char *sha, uint64_t size, char **ret_path,
			 struct eq_error *err)
{
	struct fetcher *f = ctx;
	(void)size;
	if (f->n < 32)
		snprintf(f->req[f->n], sizeof(f->req[0]), "%s", rel);
	f->n++;
	EQ_AUTOFREE char *src = P("%s/%s", f->repo, rel);
	char *dst = P("%s/%s", f->dl, sha);
	uint8_t *data;
	size_t len;
	eq_err r = eq_file_read_all(src, 64u << 20, &data, &len, err);
	if (r) {
		eq_free(dst);
		return r;
	}
	f->bytes += len;
	if (f->corrupt_objects && !strncmp(rel, "objects/", 8) && len > 20)
		data[len / 2] ^= 0x40;
	r = eq_file_replace_atomic(dst, data, len, 0644, err);
	eq_free(data);
	if (r) {
		eq_free(dst);
		return r;
	}
	*ret_path = dst;
	return EQ_OK;
}

static unsigned count_req(const struct fetcher *f, const char *prefix)
{
	unsigned n = 0;
	for (unsigned i = 0; i < f->n && i < 32; i++)
		n += !strncmp(f->req[i], prefix, strlen(prefix));
	return n;
}

static bool requested(const struct fetcher *f, const char *rel)
{
	for (unsigned i = 0; i < f->n && i < 32; i++)
		if (!strcmp(f->req[i], rel))
			return true;
	return false;
}

/* One test's folders: slots A and B, work and download dirs. */
struct tc {
	char *base, *a, *b, *work;
	struct fetcher f;
};

static void tc_init(struct tc *t)
{
	memset(t, 0, sizeof(*t));
	struct eq_error e;
	t->base = P("%s/case%u", G.dir, G.ncase++);
	t->a = P("%s/A", t->base);
	t->b = P("%s/B", t->base);
	t->work = P("%s/work", t->base);
	t->f.repo = P("%s/repo", G.dir);
	t->f.dl = P("%s/dl", t->base);
	assert_int_equal(eq_mkdir_p(t->a, 0755, &e), EQ_OK);
	assert_int_equal(eq_mkdir_p(t->b, 0755, &e), EQ_OK);
	assert_int_equal(eq_mkdir_p(t->work, 0755, &e), EQ_OK);
	assert_int_equal(eq_mkdir_p(t->f.dl, 0755, &e), EQ_OK);
}

static void tc_done(struct tc *t)
{
	struct eq_error e;
	if (eq_rm_rf(t->base, &e))
		print_message("cleanup: %s\n", eq_error_msg(&e));
	eq_free(t->base);
	eq_free(t->a);
	eq_free(t->b);
	eq_free(t->work);
	eq_free(t->f.repo);
	eq_free(t->f.dl);
}

static eq_err install(struct tc *t, const char *running_root, const struct release *running, const char *target,
		      const struct release *next, struct eq_install_report *rep, struct eq_error *e)
{
	struct eq_plan plan;
	eq_err r = eq_plan_make(running ? running->m : NULL, next->m, &plan, e);
	if (r)
		return r;
	struct eq_install in = {
		.running_root = running_root,
		.running = running ? running->m : NULL,
		.target_root = target,
		.next = next->m,
		.manifest_bytes = next->bytes,
		.manifest_len = next->len,
		.sig_bytes = next->sig,
		.sig_len = next->sig_len,
		.work_dir = t->work,
		.fetch = fetch_copy,
		.fetch_ctx = &t->f,
		.owners = geteuid() == 0,
		.target_name = "B",
	};
	r = eq_install_slot(&in, &plan, rep, e);
	eq_plan_done(&plan);
	return r;
}

static void provision_a(struct tc *t)
{
	struct eq_install_report rep;
	struct eq_error e;
	eq_err r = install(t, NULL, NULL, t->a, &G.rel[0], &rep, &e);
	if (r)
		fail_msg("provision: %s", eq_error_msg(&e));
	t->f.n = 0;
}

static eq_err hash_sink(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	(void)ctx;
	(void)data;
	(void)len;
	(void)err;
	return EQ_OK;
}

/* Every path a slot may hold: the records' entries, the record folder. */
struct pathset {
	char **v;
	size_t n, cap;
};

static void pathset_add(struct pathset *s, const char *p)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		assert_non_null(s->v);
	}
	s->v[s->n++] = strdup(p);
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static struct pathset *walk_set;
static const char *walk_root;
static char walk_extra[512];

static int walk_fn(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	const char *rel = path + strlen(walk_root);
	if (*rel == '/')
		rel++;
	if (!*rel || !strncmp(rel, EQ_SLOT_RECORD_DIR, strlen(EQ_SLOT_RECORD_DIR)) || !strcmp(rel, "usr/lib/eqota") ||
	    !strcmp(rel, "usr/lib") || !strcmp(rel, "usr"))
		return 0;
	if (!bsearch(&rel, walk_set->v, walk_set->n, sizeof(char *), cmp_strp)) {
		snprintf(walk_extra, sizeof(walk_extra), "%s", rel);
		return 1;
	}
	return 0;
}

/*
 * The slot at @root holds exactly release @rel: each package's payload,
 * rebuilt from the slot over its record, has the manifest's hash (so every
 * file, mode, owner, link, device and xattr is right), the recorded
 * manifest verifies, and nothing else is in the tree. On failure @why says
 * what differs.
 */
static bool check_slot(const char *root, const struct release *rel, const char *board, char *why, size_t why_len)
{
	struct eq_error e;
	struct pathset all = {0};
	bool ok = true;
	for (size_t i = 0; ok && i < eq_manifest_package_count(rel->m); i++) {
		const struct eq_manifest_package *pkg = eq_manifest_package_at(rel->m, i);
		EQ_AUTOFREE char *rp = P("%s/" EQ_SLOT_RECORD_DIR "/packages/%s.files", root, pkg->name);
		struct eq_rec_list l;
		if (eq_rec_load(rp, &l, &e)) {
			snprintf(why, why_len, "%s: %s", pkg->name, eq_error_msg(&e));
			ok = false;
			break;
		}
		const char **paths = calloc(l.n + 1, sizeof(*paths));
		assert_non_null(paths);
		for (size_t k = 0; k < l.n; k++) {
			paths[k] = l.v[k].path;
			pathset_add(&all, l.v[k].path);
		}
		struct eq_payload_builder *b = NULL;
		uint8_t d[EQ_SHA256_LEN];
		uint64_t size = 0;
		eq_err r = eq_payload_builder_new(NULL, &b, &e);
		if (!r)
			r = eq_payload_builder_add_paths(b, root, paths, l.n, &e);
		if (!r)
			r = eq_payload_builder_write(b, hash_sink, NULL, d, &size, &e);
		char hex[EQ_SHA256_HEX_LEN + 1];
		eq_hex_encode(d, sizeof(d), hex);
		if (r) {
			snprintf(why, why_len, "%s: %s", pkg->name, eq_error_msg(&e));
			ok = false;
		} else if (strcmp(hex, pkg->payload.sha256) || size != pkg->payload.size) {
			snprintf(why, why_len, "package '%s' in '%s': payload %s, the manifest says %s", pkg->name,
				 root, hex, pkg->payload.sha256);
			ok = false;
		}
		eq_payload_builder_free(b);
		free(paths);
		eq_rec_list_done(&l);
	}
	if (ok) {
		qsort(all.v, all.n, sizeof(char *), cmp_strp);
		walk_set = &all;
		walk_root = root;
		walk_extra[0] = '\0';
		if (nftw(root, walk_fn, 16, FTW_PHYS)) {
			snprintf(why, why_len, "'%s' holds '%s', which no package of the release has", root,
				 walk_extra);
			ok = false;
		}
	}
	for (size_t i = 0; i < all.n; i++)
		free(all.v[i]);
	free(all.v);
	struct eq_manifest *m = NULL;
	if (ok && eq_slot_read_release(root, G.trust, board, &m, &e)) {
		snprintf(why, why_len, "slot record: %s", eq_error_msg(&e));
		ok = false;
	}
	struct eq_manifest_header h, h2;
	if (ok &&
	    (eq_manifest_get_header(m, &h, &e) || eq_manifest_get_header(rel->m, &h2, &e) || h.number != h2.number)) {
		snprintf(why, why_len, "slot record: not the installed release");
		ok = false;
	}
	eq_manifest_free(m);
	return ok;
}

static void assert_slot_is(const char *root, const struct release *rel)
{
	char why[1024];
	if (!check_slot(root, rel, BOARD, why, sizeof(why)))
		fail_msg("%s", why);
}

/* ---- plan ----------------------------------------------------------------- */

static void test_plan_counts(void **state)
{
	(void)state;
	struct eq_plan p;
	struct eq_error e;
	assert_int_equal(eq_plan_make(G.rel[0].m, G.rel[1].m, &p, &e), EQ_OK);
	assert_int_equal(p.count[EQ_PLAN_KEEP], 2);   /* alpha, caps */
	assert_int_equal(p.count[EQ_PLAN_DELTA], 1);  /* beta */
	assert_int_equal(p.count[EQ_PLAN_FULL], 1);   /* epsilon */
	assert_int_equal(p.count[EQ_PLAN_REMOVE], 1); /* gamma */
	assert_int_equal(p.n, 5);
	uint64_t dl = 0, inst = 0, full = 0;
	for (size_t i = 0; i < p.n; i++) {
		const struct eq_plan_item *it = &p.items[i];
		dl += it->download;
		if (it->action == EQ_PLAN_REMOVE) {
			assert_string_equal(it->old->name, "gamma");
			assert_null(it->pkg);
			continue;
		}
		inst += it->pkg->payload.size;
		full += it->pkg->object.size;
		if (!strcmp(it->pkg->name, "beta")) {
			assert_int_equal(it->action, EQ_PLAN_DELTA);
			assert_non_null(it->delta);
			assert_int_equal(it->download, it->delta->size);
			assert_true(it->delta->size < it->pkg->object.size);
		}
		if (!strcmp(it->pkg->name, "epsilon"))
			assert_int_equal(it->download, it->pkg->object.size);
	}
	assert_int_equal(p.download_bytes, dl);
	assert_int_equal(p.install_bytes, inst);
	assert_int_equal(p.full_bytes, full);
	assert_string_equal(eq_plan_action_name(EQ_PLAN_DELTA), "delta");
	eq_plan_done(&p);

	/* Provisioning: everything full. */
	assert_int_equal(eq_plan_make(NULL, G.rel[0].m, &p, &e), EQ_OK);
	assert_int_equal(p.count[EQ_PLAN_FULL], 4);
	assert_int_equal(p.download_bytes, p.full_bytes);
	eq_plan_done(&p);
}

/* ---- install -------------------------------------------------------------- */

static void test_provision(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	struct eq_install_report rep;
	struct eq_error e;
	eq_err r = install(&t, NULL, NULL, t.a, &G.rel[0], &rep, &e);
	if (r)
		fail_msg("%s", eq_error_msg(&e));
	assert_int_equal(rep.full, 4);
	assert_int_equal(rep.kept + rep.delta + rep.fallback, 0);
	assert_int_equal(count_req(&t.f, "objects/"), 4);
	assert_slot_is(t.a, &G.rel[0]);

	/* Spot checks of what the payload comparison covers. */
	EQ_AUTOFREE char *suid = P("%s/usr/bin/alpha-suid", t.a);
	EQ_AUTOFREE char *bin = P("%s/usr/bin/alpha", t.a);
	EQ_AUTOFREE char *hard = P("%s/usr/bin/alpha-hard", t.a);
	EQ_AUTOFREE char *caps = P("%s/usr/sbin/capsd", t.a);
	struct stat s1, s2;
	assert_int_equal(stat(suid, &s1), 0);
	assert_int_equal(s1.st_mode & 07777, 04755);
	assert_int_equal(stat(bin, &s1), 0);
	assert_int_equal(stat(hard, &s2), 0);
	assert_true(s1.st_ino == s2.st_ino);
	uint8_t v[32];
	assert_int_equal(getxattr(caps, "user.eqota.test", v, sizeof(v)), 7);
	assert_memory_equal(v, "\x01\x02value", 7);
	tc_done(&t);
}

static void test_update(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	provision_a(&t);
	struct eq_install_report rep;
	struct eq_error e;
	eq_err r = install(&t, t.a, &G.rel[0], t.b, &G.rel[1], &rep, &e);
	if (r)
		fail_msg("%s", eq_error_msg(&e));
	assert_int_equal(rep.kept, 2);
	assert_int_equal(rep.delta, 1);
	assert_int_equal(rep.full, 1);
	assert_int_equal(rep.fallback, 0);
	/* Kept packages are not fetched, beta comes as a delta. */
	const struct eq_manifest_package *alpha = eq_manifest_find_package(G.rel[1].m, "alpha");
	const struct eq_manifest_package *caps = eq_manifest_find_package(G.rel[1].m, "caps");
	const struct eq_manifest_package *beta = eq_manifest_find_package(G.rel[1].m, "beta");
	const struct eq_manifest_package *eps = eq_manifest_find_package(G.rel[1].m, "epsilon");
	assert_false(requested(&t.f, alpha->object.path));
	assert_false(requested(&t.f, caps->object.path));
	assert_false(requested(&t.f, beta->object.path));
	assert_true(requested(&t.f, beta->deltas[0].path));
	assert_true(requested(&t.f, eps->object.path));
	assert_int_equal(t.f.n, 2);
	assert_slot_is(t.b, &G.rel[1]);
	/* The removed package left nothing behind. */
	EQ_AUTOFREE char *g = P("%s/usr/share/gamma", t.b);
	assert_int_equal(access(g, F_OK), -1);
	/* No temporary payload is left in the work dir. */
	DIR *d = opendir(t.work);
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			fail_msg("left in work dir: %s", de->d_name);
	closedir(d);
	/* And back: B -> a fresh A of release 2 again works from B's records. */
	struct tc t2;
	tc_init(&t2);
	r = install(&t2, t.b, &G.rel[1], t2.a, &G.rel[1], &rep, &e);
	if (r)
		fail_msg("%s", eq_error_msg(&e));
	assert_int_equal(rep.kept, 4);
	assert_int_equal(t2.f.n, 0);
	assert_slot_is(t2.a, &G.rel[1]);
	tc_done(&t2);
	tc_done(&t);
}

/* Flips byte 100 of a file: the test files are random, so writing a fixed
 * byte would leave one in 256 of them unchanged. */
static void modify(const char *root, const char *rel)
{
	EQ_AUTOFREE char *p = P("%s/%s", root, rel);
	int fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	unsigned char c;
	assert_int_equal(pread(fd, &c, 1, 100), 1);
	c ^= 0xff;
	assert_int_equal(pwrite(fd, &c, 1, 100), 1);
	close(fd);
}

static void test_modified_kept_file(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	provision_a(&t);
	modify(t.a, "usr/bin/alpha");
	struct eq_install_report rep;
	struct eq_error e;
	eq_err r = install(&t, t.a, &G.rel[0], t.b, &G.rel[1], &rep, &e);
	if (r)
		fail_msg("%s", eq_error_msg(&e));
	assert_int_equal(rep.fallback, 1);
	assert_int_equal(rep.kept, 1); /* caps */
	assert_int_equal(rep.delta, 1);
	assert_int_equal(rep.full, 2); /* alpha (fallback), epsilon */
	assert_true(requested(&t.f, eq_manifest_find_package(G.rel[1].m, "alpha")->object.path));
	assert_slot_is(t.b, &G.rel[1]);
	tc_done(&t);
}

/* Rewrites alpha's record in slot @root: @how "extra" adds a line for a
 * file planted at zzz-planted (sorted last), "dir" makes the first 0755
 * directory 0777. */
static void forge_record(const char *root, const char *how)
{
	EQ_AUTOFREE char *rec = P("%s/%s/packages/alpha.files", root, EQ_SLOT_RECORD_DIR);
	uint8_t *data = NULL;
	size_t len = 0;
	struct eq_error e;
	assert_int_equal(eq_file_read_all(rec, 1u << 24, &data, &len, &e), EQ_OK);
	EQ_AUTOFREE char *text = eq_strndup((const char *)data, len);
	eq_free(data);
	EQ_AUTOFREE char *out = NULL;
	if (!strcmp(how, "extra")) {
		EQ_AUTOFREE char *planted = P("%s/zzz-planted", root);
		FILE *f = fopen(planted, "w");
		assert_non_null(f);
		fputs("x\n", f);
		fclose(f);
		assert_int_equal(chmod(planted, 0644), 0);
		uint8_t d[EQ_SHA256_LEN];
		char hex[EQ_SHA256_HEX_LEN + 1];
		eq_sha256("x\n", 2, d);
		eq_hex_encode(d, sizeof(d), hex);
		out = eq_asprintf("%sf 0644 %u %u 2 %s zzz-planted\n", text, (unsigned)getuid(), (unsigned)getgid(),
				  hex);
	} else {
		char *at = strstr(text, "\nd 0755 ");
		assert_non_null(at);
		memcpy(at, "\nd 0777 ", 8);
		out = eq_strdup(text);
	}
	assert_non_null(out);
	FILE *f = fopen(rec, "w");
	assert_non_null(f);
	fputs(out, f);
	fclose(f);
}

/* Issue 29, finding 2: a record a package forged (through another
 * package's symlink, once) is not kept: it must rebuild the payload the
 * running release signed, and directories' modes are compared. */
static void test_forged_kept_record(void **state)
{
	(void)state;
	static const char *const how[] = {"extra", "dir"};
	for (size_t i = 0; i < 2; i++) {
		struct tc t;
		tc_init(&t);
		provision_a(&t);
		forge_record(t.a, how[i]);
		struct eq_install_report rep;
		struct eq_error e;
		eq_err r = install(&t, t.a, &G.rel[0], t.b, &G.rel[1], &rep, &e);
		if (r)
			fail_msg("%s: %s", how[i], eq_error_msg(&e));
		if (rep.fallback != 1)
			fail_msg("%s: %zu fallbacks, expected alpha's", how[i], rep.fallback);
		assert_true(requested(&t.f, eq_manifest_find_package(G.rel[1].m, "alpha")->object.path));
		EQ_AUTOFREE char *planted = P("%s/zzz-planted", t.b);
		assert_int_equal(access(planted, F_OK), -1);
		assert_slot_is(t.b, &G.rel[1]);
		tc_done(&t);
	}
}

static void test_delta_reference_mismatch(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	provision_a(&t);
	modify(t.a, "usr/lib/beta/data");
	struct eq_install_report rep;
	struct eq_error e;
	eq_err r = install(&t, t.a, &G.rel[0], t.b, &G.rel[1], &rep, &e);
	if (r)
		fail_msg("%s", eq_error_msg(&e));
	const struct eq_manifest_package *beta = eq_manifest_find_package(G.rel[1].m, "beta");
	assert_int_equal(rep.fallback, 1);
	assert_int_equal(rep.delta, 0);
	assert_int_equal(rep.full, 2);
	assert_int_equal(rep.kept, 2);
	assert_false(requested(&t.f, beta->deltas[0].path));
	assert_true(requested(&t.f, beta->object.path));
	assert_slot_is(t.b, &G.rel[1]);
	tc_done(&t);
}

static void test_corrupt_object(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	t.f.corrupt_objects = true;
	struct eq_install_report rep;
	struct eq_error e;
	eq_err r = install(&t, NULL, NULL, t.a, &G.rel[0], &rep, &e);
	assert_int_equal(r, EQ_ERR_VERIFY);
	assert_non_null(strstr(e.msg, "package 'alpha'"));
	assert_non_null(strstr(e.msg, "SHA-256"));
	/* No manifest: the slot is not a release. */
	struct eq_manifest *m = NULL;
	assert_int_equal(eq_slot_read_release(t.a, G.trust, BOARD, &m, &e), EQ_ERR_NOTFOUND);
	tc_done(&t);
}

static void test_no_space(void **state)
{
	(void)state;
	if (geteuid() != 0)
		EQ_SKIP("needs root to mount a small tmpfs");
	struct tc t;
	tc_init(&t);
	if (mount("tmpfs", t.b, "tmpfs", 0, "size=16k") != 0)
		fail_msg("mount tmpfs: %s", strerror(errno));
	struct eq_install_report rep;
	struct eq_error e;
	eq_err r = install(&t, t.a, NULL, t.b, &G.rel[0], &rep, &e);
	assert_int_equal(umount2(t.b, 0), 0);
	assert_int_equal(r, EQ_ERR_LIMIT);
	assert_non_null(strstr(e.msg, "slot B has "));
	assert_non_null(strstr(e.msg, " free, release needs "));
	assert_int_equal(t.f.n, 0); /* refused before any download */
	tc_done(&t);
}

static void test_target_not_empty(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	EQ_AUTOFREE char *junk = P("%s/junk", t.b);
	assert_int_equal(mkdir(junk, 0755), 0);
	struct eq_install_report rep;
	struct eq_error e;
	assert_int_equal(install(&t, NULL, NULL, t.b, &G.rel[0], &rep, &e), EQ_ERR_STATE);
	assert_non_null(strstr(e.msg, "not empty"));
	tc_done(&t);
}

/* ---- hostile packages (issue 12, finding 1) -------------------------------- */

/* Publishes release "e1" of repository <dir>/e-CASE/repo from tarballs
 * built here; the publisher's own check is switched off (a test hook) so
 * the device's defences are what is tested. $V is the victim file. */
static const char EVIL_SH[] =
	"set -eu\n"
	"W=$1; GEN=$2; CASE=$3; V=$4; rm -rf \"$W/e-$CASE\"; mkdir -p \"$W/e-$CASE/p\"; cd \"$W/e-$CASE\"\n"
	"case $CASE in\n"
	/* a symlink where the agent writes the next package's record */
	"reserved) mkdir -p t/evil/usr/lib/eqota/slot/packages\n"
	"  ln -s \"$V\" t/evil/usr/lib/eqota/slot/packages/zeta.files.tmp ;;\n"
	/* the same through another package's symlink to the record folder:
	 * no single package breaks a path rule */
	"viadir) mkdir -p t/linka t/linkb/lnk; ln -s /usr/lib/eqota/slot/packages t/linka/lnk\n"
	"  ln -s \"$V\" t/linkb/lnk/zeta.files.tmp ;;\n"
	"esac\n"
	"mkdir -p t/zeta/usr/share/zeta; echo zeta > t/zeta/usr/share/zeta/z\n"
	"for d in t/*; do n=${d#t/}; tar --format=pax --owner=0 --group=0 --numeric-owner "
	"-cf \"p/${n}_1.0.tar\" -C \"$d\" .; done\n"
	"EQ_TEST_PUBLISH_UNCHECKED=1 \"$GEN\" -q publish --repo repo --board tb --channel stable --release e1 "
	"--packages p --key ../rel.key --store store.db --level 3 >/dev/null\n";

static void evil_release(const char *kase, const char *victim, struct release *rel)
{
	const char *argv[] = {"/bin/sh", "-c", EVIL_SH, "evil", G.dir, secure_getenv("EQOTA_GEN"), kase, victim, NULL};
	if (run(argv) != 0)
		fail_msg("publishing the hostile release '%s' failed", kase);
	struct eq_error e;
	EQ_AUTOFREE char *repo = P("%s/e-%s/repo", G.dir, kase);
	if (release_load(repo, BOARD, 1, rel, &e))
		fail_msg("release %s: %s", kase, eq_error_msg(&e));
}

static const char VICTIM_TEXT[] = "root:x:0:0:the host's file:/root:/bin/sh\n";

static char *make_victim(const struct tc *t)
{
	char *v = P("%s/victim", t->base);
	struct eq_error e;
	assert_int_equal(eq_file_replace_atomic(v, VICTIM_TEXT, strlen(VICTIM_TEXT), 0644, &e), EQ_OK);
	return v;
}

/* The victim outside the slot still holds exactly what it held. */
static void assert_victim_intact(const char *v)
{
	struct stat st;
	assert_int_equal(lstat(v, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	uint8_t *data = NULL;
	size_t len = 0;
	struct eq_error e;
	assert_int_equal(eq_file_read_all(v, 4096, &data, &len, &e), EQ_OK);
	if (len != strlen(VICTIM_TEXT) || memcmp(data, VICTIM_TEXT, len))
		fail_msg("the agent wrote outside the slot into '%s': '%.*s'", v, (int)(len > 200 ? 200 : len),
			 (const char *)data);
	eq_free(data);
}

/* A payload entry in eqota's own folder: the extractor refuses it (naming
 * it), so nothing is written through the planted symlink. */
static void test_reserved_path_payload(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	EQ_AUTOFREE char *victim = make_victim(&t);
	struct release rel = {0};
	evil_release("reserved", victim, &rel);
	eq_free(t.f.repo);
	t.f.repo = P("%s/e-reserved/repo", G.dir);
	struct eq_install_report rep;
	struct eq_error e;
	eq_err r = install(&t, NULL, NULL, t.b, &rel, &rep, &e);
	assert_victim_intact(victim);
	if (r != EQ_ERR_UNSAFE)
		fail_msg("install returned %d (%s), expected EQ_ERR_UNSAFE", r, r ? eq_error_msg(&e) : "success");
	assert_non_null(strstr(e.msg, "package 'evil'"));
	assert_non_null(strstr(e.msg, "entry 'usr/lib/eqota/slot"));
	assert_non_null(strstr(e.msg, "reserved"));
	release_free(&rel);
	tc_done(&t);
}

/* Two packages that each pass the path rules put a symlink into the record
 * folder together: the agent's own writes (O_EXCL | O_NOFOLLOW through the
 * folder's descriptor) refuse to go through it. */
static void test_record_symlink_via_other_package(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	EQ_AUTOFREE char *victim = make_victim(&t);
	struct release rel = {0};
	evil_release("viadir", victim, &rel);
	eq_free(t.f.repo);
	t.f.repo = P("%s/e-viadir/repo", G.dir);
	struct eq_install_report rep;
	struct eq_error e;
	eq_err r = install(&t, NULL, NULL, t.b, &rel, &rep, &e);
	assert_victim_intact(victim);
	if (r != EQ_ERR_UNSAFE)
		fail_msg("install returned %d (%s), expected EQ_ERR_UNSAFE", r, r ? eq_error_msg(&e) : "success");
	/* With openat2 the record write is refused; without it, extraction
	 * already refuses to resolve the package's path through a symlink. */
	assert_true(strstr(e.msg, "zeta.files.tmp' already exists") || strstr(e.msg, "through a symlink"));
	release_free(&rel);
	tc_done(&t);
}

/* Replaces @rel below @root by a symlink to a copy outside the slot. */
static void symlink_outside(const struct tc *t, const char *root, const char *rel)
{
	EQ_AUTOFREE char *in = P("%s/%s", root, rel);
	EQ_AUTOFREE char *out = P("%s/outside-%u", t->base, (unsigned)strlen(rel));
	assert_int_equal(rename(in, out), 0);
	assert_int_equal(symlink(out, in), 0);
}

/* A record in the running slot that is a symlink (a package could have
 * planted it) is not followed: the package is downloaded instead. */
static void test_running_record_symlink(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	provision_a(&t);
	symlink_outside(&t, t.a, EQ_SLOT_RECORD_DIR "/packages/alpha.files");
	struct eq_install_report rep;
	struct eq_error e;
	eq_err r = install(&t, t.a, &G.rel[0], t.b, &G.rel[1], &rep, &e);
	if (r)
		fail_msg("%s", eq_error_msg(&e));
	assert_int_equal(rep.fallback, 1);
	assert_true(requested(&t.f, eq_manifest_find_package(G.rel[1].m, "alpha")->object.path));
	assert_slot_is(t.b, &G.rel[1]);
	tc_done(&t);
}

/* The slot's release record is read without following symlinks either. */
static void test_slot_manifest_symlink(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	provision_a(&t);
	symlink_outside(&t, t.a, EQ_SLOT_RECORD_DIR "/manifest.json");
	struct eq_manifest *m = NULL;
	struct eq_error e;
	eq_err r = eq_slot_read_release(t.a, G.trust, BOARD, &m, &e);
	eq_manifest_free(m);
	if (r != EQ_ERR_UNSAFE)
		fail_msg("eq_slot_read_release returned %d (%s), expected EQ_ERR_UNSAFE", r,
			 r ? eq_error_msg(&e) : "success");
	assert_non_null(strstr(e.msg, "manifest.json"));
	tc_done(&t);
}

/* ---- records -------------------------------------------------------------- */

static void test_records_round_trip(void **state)
{
	(void)state;
	struct eq_rec_entry in[] = {
		{.type = 'd', .mode = 0755, .path = "dev"},
		{.type = 'c', .mode = 0666, .path = "dev/null", .devmajor = 1, .devminor = 3},
		{.type = 'b', .mode = 0660, .gid = 6, .path = "dev/sda", .devmajor = 8, .devminor = 0},
		{.type = 'p', .mode = 0600, .path = "dev/z-fifo"},
		{.type = 'd', .mode = 01777, .path = "tmp"},
		{.type = 'f', .mode = 04755, .uid = 4000000000u, .gid = 7, .size = 5, .path = "x y%z\x7f\xc3\xa9"},
		{.type = 'h',
		 .mode = 04755,
		 .uid = 4000000000u,
		 .gid = 7,
		 .path = "x y%z\x7f\xc3\xa9-2",
		 .link = "x y%z\x7f\xc3\xa9"},
		{.type = 'l', .mode = 0777, .path = "z", .link = "../a b/\t"},
	};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		memset(in[i].sha256, (int)i + 1, EQ_SHA256_LEN);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct eq_error e;
	assert_int_equal(eq_rec_write_header(f, &e), EQ_OK);
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		assert_int_equal(eq_rec_write_entry(f, &in[i], &e), EQ_OK);
	fclose(f);
	assert_non_null(strstr(buf, "f 4755 4000000000 7 5 0606"));
	assert_non_null(strstr(buf, " x%20y%25z%7F%C3%A9\n"));
	assert_non_null(strstr(buf, "c 0666 0 0 0 - dev/null 1:3\n"));
	f = fmemopen(buf, len, "r");
	struct eq_rec_list l;
	eq_err r = eq_rec_parse(f, "mem.files", &l, &e);
	fclose(f);
	if (r)
		fail_msg("%s", eq_error_msg(&e));
	assert_int_equal(l.n, sizeof(in) / sizeof(in[0]));
	for (size_t i = 0; i < l.n; i++) {
		assert_int_equal(l.v[i].type, in[i].type);
		assert_int_equal(l.v[i].mode, in[i].mode);
		assert_int_equal(l.v[i].uid, in[i].uid);
		assert_int_equal(l.v[i].gid, in[i].gid);
		assert_int_equal(l.v[i].size, in[i].size);
		assert_string_equal(l.v[i].path, in[i].path);
		if (in[i].link)
			assert_string_equal(l.v[i].link, in[i].link);
		else
			assert_null(l.v[i].link);
		assert_int_equal(l.v[i].devmajor, in[i].devmajor);
		assert_int_equal(l.v[i].devminor, in[i].devminor);
		if (in[i].type == 'f')
			assert_memory_equal(l.v[i].sha256, in[i].sha256, EQ_SHA256_LEN);
	}
	/* Writing the parsed list again gives the same bytes. */
	char *buf2 = NULL;
	size_t len2 = 0;
	f = open_memstream(&buf2, &len2);
	assert_int_equal(eq_rec_write_header(f, &e), EQ_OK);
	for (size_t i = 0; i < l.n; i++)
		assert_int_equal(eq_rec_write_entry(f, &l.v[i], &e), EQ_OK);
	fclose(f);
	assert_int_equal(len, len2);
	assert_memory_equal(buf, buf2, len);
	eq_rec_list_done(&l);
	free(buf);
	free(buf2);
}

static const char *const ERR_NAMES[] = {
	"EQ_OK",         "EQ_ERR_NOMEM", "EQ_ERR_IO",    "EQ_ERR_PARSE",    "EQ_ERR_VERIFY",      "EQ_ERR_NETWORK",
	"EQ_ERR_LIMIT",  "EQ_ERR_STATE", "EQ_ERR_INVAL", "EQ_ERR_NOTFOUND", "EQ_ERR_UNSUPPORTED", "EQ_ERR_EXPIRED",
	"EQ_ERR_UNSAFE",
};

static void test_records_bad_corpus(void **state)
{
	(void)state;
	const char *data = secure_getenv("EQ_TEST_DATA");
	assert_non_null(data);
	EQ_AUTOFREE char *dir = P("%s/bad/records", data);
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	unsigned cases = 0;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 7 || strcmp(de->d_name + n - 6, ".files"))
			continue;
		EQ_AUTOFREE char *path = P("%s/%s", dir, de->d_name);
		EQ_AUTOFREE char *exp = P("%s/%.*s.expect", dir, (int)(n - 6), de->d_name);
		uint8_t *ex;
		size_t exlen;
		struct eq_error e;
		assert_int_equal(eq_file_read_all(exp, 4096, &ex, &exlen, &e), EQ_OK);
		char *nl = strchr((char *)ex, '\n');
		assert_non_null(nl);
		*nl = '\0';
		char *want = nl + 1;
		char *nl2 = strchr(want, '\n');
		if (nl2)
			*nl2 = '\0';
		struct eq_rec_list l;
		eq_err r = eq_rec_load(path, &l, &e);
		if (!r) {
			eq_rec_list_done(&l);
			fail_msg("%s: accepted", de->d_name);
		}
		if (strcmp(ERR_NAMES[r], (char *)ex) || !strstr(e.msg, want))
			fail_msg("%s: got %s '%s', expected %s '%s'", de->d_name, ERR_NAMES[r], e.msg, (char *)ex,
				 want);
		eq_free(ex);
		cases++;
	}
	closedir(d);
	assert_true(cases >= 10);
}

/* ---- dir slots ------------------------------------------------------------ */

static void test_dir_slots(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	EQ_AUTOFREE char *f1 = P("%s/file", t.a);
	EQ_AUTOFREE char *d1 = P("%s/sub/deeper", t.a);
	struct eq_error e;
	assert_int_equal(eq_mkdir_p(d1, 0755, &e), EQ_OK);
	assert_int_equal(eq_file_replace_atomic(f1, "x", 1, 0644, &e), EQ_OK);
	struct eq_config cfg = {.slot_type = EQ_SLOT_DIR, .slot_a = t.a, .slot_b = t.b, .data_dir = t.work};
	char *root = NULL;
	assert_int_equal(eq_slot_prepare(&cfg, "A", &root, &e), EQ_OK);
	assert_string_equal(root, t.a);
	eq_free(root);
	struct stat st;
	assert_int_equal(stat(t.a, &st), 0); /* the directory stays */
	DIR *d = opendir(t.a);
	struct dirent *de;
	unsigned n = 0;
	while ((de = readdir(d)))
		n++;
	closedir(d);
	assert_int_equal(n, 2); /* only . and .. */
	assert_int_equal(eq_slot_open(&cfg, "B", &root, &e), EQ_OK);
	assert_string_equal(root, t.b);
	eq_free(root);
	assert_int_equal(eq_slot_release(&cfg, "A", &e), EQ_OK);
	assert_int_equal(eq_slot_prepare(&cfg, "C", &root, &e), EQ_ERR_INVAL);
	/* Never the root directory, however it is spelled. */
	cfg.slot_b = "/";
	assert_int_equal(eq_slot_prepare(&cfg, "B", &root, &e), EQ_ERR_UNSAFE);
	cfg.slot_b = "//./";
	assert_int_equal(eq_slot_prepare(&cfg, "B", &root, &e), EQ_ERR_UNSAFE);
	cfg.slot_b = "";
	assert_int_equal(eq_slot_prepare(&cfg, "B", &root, &e), EQ_ERR_INVAL);
	/* A slot without a record. */
	struct eq_manifest *m = NULL;
	assert_int_equal(eq_slot_read_release(t.a, G.trust, BOARD, &m, &e), EQ_ERR_NOTFOUND);
	tc_done(&t);
}

/*
 * Driver for tests/integration/install_debs.sh (real Debian packages):
 *   test_install --install REPO BOARD PUBKEY FROM RUNNING_ROOT TO TARGET WORK
 * installs release number TO of channel "stable" into the empty TARGET,
 * from the slot RUNNING_ROOT holding release FROM (FROM 0 and RUNNING_ROOT
 * "-": provisioning), checks the slot as the unit tests do and prints
 *   kept=K delta=D full=F fallback=B requests=N fetched=X planned=Y full_release=Z
 * Exit status 0 on success, 1 on failure, 2 on usage errors.
 */

/* ---- image releases (manifest format 2) ---------------------------------- */

#define ASIDE EQ_SLOT_RECORD_DIR "/image/aside"
#define ASIDE_LIST EQ_SLOT_RECORD_DIR "/image/aside.list"

static void assert_file_is(const char *root, const char *rel, const char *text)
{
	EQ_AUTOFREE char *p = P("%s/%s", root, rel);
	uint8_t *d = NULL;
	size_t len = 0;
	struct eq_error e;
	if (eq_file_read_all(p, 1u << 20, &d, &len, &e))
		fail_msg("%s", eq_error_msg(&e));
	if (len != strlen(text) || memcmp(d, text, len))
		fail_msg("'%s' holds '%.*s', expected '%s'", p, (int)len, (const char *)d, text);
	eq_free(d);
}

static bool exists(const char *root, const char *rel)
{
	EQ_AUTOFREE char *p = P("%s/%s", root, rel);
	struct stat st;
	return lstat(p, &st) == 0;
}

/* Without openat2 no symlink is followed in a slot, the image's
 * "bin -> usr/bin" included: image releases need Linux 5.6 (install.md). */
static bool no_openat2(void)
{
	return secure_getenv("EQ_TEST_NO_OPENAT2") != NULL;
}

static void assert_image_refused_without_openat2(struct tc *t)
{
	struct eq_install_report rep;
	struct eq_error e;
	assert_int_equal(install(t, NULL, NULL, t->a, &G.img[0], &rep, &e), EQ_ERR_UNSAFE);
	assert_non_null(strstr(e.msg, "symlink"));
	assert_false(exists(t->a, "usr/bin/tool"));
}

static void verify_clean(const char *root, const struct release *rel, struct eq_verify_report *ret)
{
	struct eq_error e;
	struct eq_verify_report rep;
	if (eq_slot_verify(root, rel->m, NULL, 0, NULL, NULL, &rep, &e))
		fail_msg("verify: %s", eq_error_msg(&e));
	if (rep.damaged)
		fail_msg("verify of '%s': %zu packages damaged, %zu problems", root, rep.damaged, rep.problems);
	if (ret)
		*ret = rep;
}

/* The slot holds image release @n: the image's layout, with the image's
 * version of every path it overrides and none of the removed ones. */
static void assert_image_layout(const char *root, int n)
{
	EQ_AUTOFREE char *bin = P("%s/bin", root);
	char target[64];
	ssize_t len = readlink(bin, target, sizeof(target) - 1);
	assert_true(len > 0);
	target[len] = '\0';
	assert_string_equal(target, "usr/bin");
	assert_file_is(root, "usr/bin/tool", "#!/bin/sh\necho tool\n");
	assert_file_is(root, "usr/bin/beta", "#!/bin/sh\necho beta\n");
	assert_file_is(root, "etc/shells", n ? "/bin/sh\n/bin/bash\n/usr/bin/zsh\n" : "/bin/sh\n/bin/bash\n");
	assert_file_is(root, "etc/beta.conf", "conf=image\n");
	assert_file_is(root, "etc/passwd", "root:x:0:0::/root:/bin/sh\n");
	assert_false(exists(root, "usr/share/tool/old"));
	assert_true(exists(root, "usr/share/tool/data"));
	EQ_AUTOFREE char *tooldir = P("%s/usr/share/tool", root);
	struct stat st;
	assert_int_equal(lstat(tooldir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	/* The packages' versions, beside the records. */
	assert_file_is(root, ASIDE "/etc/shells", "/bin/sh\n");
	assert_file_is(root, ASIDE "/etc/beta.conf", "conf=package\n");
	assert_file_is(root, ASIDE "/usr/share/tool/old", "old\n");
	EQ_AUTOFREE char *abin = P("%s/" ASIDE "/bin", root);
	assert_int_equal(lstat(abin, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	EQ_AUTOFREE char *atool = P("%s/" ASIDE "/usr/share/tool", root);
	assert_int_equal(lstat(atool, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
}

static void provision_image(struct tc *t, const char *root)
{
	struct eq_install_report rep;
	struct eq_error e;
	if (install(t, NULL, NULL, root, &G.img[0], &rep, &e))
		fail_msg("provision: %s", eq_error_msg(&e));
	assert_int_equal(rep.full, 5);
	assert_int_equal(rep.components, 3);
	/* bin (usr/bin's folder), etc/shells, etc/beta.conf, usr/share/tool, usr/share/tool/old */
	assert_int_equal(rep.aside, 5);
	t->f.n = 0;
}

/* Collects "package:path;" of each problem verify reports. */
static void verify_seen(void *ctx, const char *package, const char *path, const char *problem)
{
	(void)problem;
	char *seen = ctx;
	size_t len = strlen(seen);
	snprintf(seen + len, 256 - len, "%s:%s;", package, path);
}

static void test_image_update(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	if (no_openat2()) {
		assert_image_refused_without_openat2(&t);
		tc_done(&t);
		return;
	}
	provision_image(&t, t.a);
	assert_image_layout(t.a, 0);
	struct eq_verify_report vr;
	verify_clean(t.a, &G.img[0], &vr);
	assert_int_equal(vr.components, 3);
	/* tool: bin, etc/shells, usr/share/tool, usr/share/tool/old; beta: bin, etc/beta.conf */
	assert_int_equal(vr.aside, 6);

	/* The packages the image overrides are kept all the same. */
	struct eq_install_report rep;
	struct eq_error e;
	if (install(&t, t.a, &G.img[0], t.b, &G.img[1], &rep, &e))
		fail_msg("update: %s", eq_error_msg(&e));
	assert_int_equal(rep.fallback, 0);
	assert_int_equal(rep.kept, 3);  /* tool, the skeleton, eqota-image.usr */
	assert_int_equal(rep.delta, 2); /* beta, eqota-image.etc */
	assert_int_equal(rep.full, 0);
	assert_int_equal(rep.components, 3);
	const struct eq_manifest_package *tool = eq_manifest_find_package(G.img[1].m, "tool");
	const struct eq_manifest_package *beta = eq_manifest_find_package(G.img[1].m, "beta");
	const struct eq_manifest_package *etc = eq_manifest_find_package(G.img[1].m, "eqota-image.etc");
	assert_false(requested(&t.f, tool->object.path));
	assert_true(requested(&t.f, beta->deltas[0].path));
	assert_true(requested(&t.f, etc->deltas[0].path));
	assert_int_equal(t.f.n, 2);
	assert_image_layout(t.b, 1);
	verify_clean(t.b, &G.img[1], NULL);

	/* A device changing a file the image placed is damage verify sees. */
	modify(t.b, "etc/image.db");
	EQ_AUTOFREE char *lp = P("%s/etc/passwd", t.b);
	assert_int_equal(unlink(lp), 0);
	struct eq_verify_report vb;
	assert_int_equal(eq_slot_verify(t.b, G.img[1].m, NULL, 0, NULL, NULL, &vb, &e), EQ_OK);
	assert_int_equal(vb.damaged, 1);
	/* A removed path back in the slot too. */
	EQ_AUTOFREE char *old = P("%s/usr/share/tool/old", t.b);
	FILE *f = fopen(old, "w");
	assert_non_null(f);
	fclose(f);
	char seen[256] = "";
	assert_int_equal(eq_slot_verify(t.b, G.img[1].m, NULL, 0, verify_seen, seen, &vb, &e), EQ_OK);
	assert_int_equal(vb.damaged, 2);
	assert_non_null(strstr(seen, "eqota-image:usr/share/tool/old;"));
	/* Unless the device persists it: then its own file may be there. */
	char *const persisted[] = {(char *)(uintptr_t) "/usr/share/tool/o*"};
	assert_int_equal(eq_slot_verify(t.b, G.img[1].m, persisted, 1, NULL, NULL, &vb, &e), EQ_OK);
	assert_int_equal(vb.damaged, 1);
	tc_done(&t);
}

/* A package version in the aside folder that is not what the record says:
 * that package is downloaded, and the new slot is right. */
static void test_image_tampered_aside(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	if (no_openat2()) {
		assert_image_refused_without_openat2(&t);
		tc_done(&t);
		return;
	}
	provision_image(&t, t.a);
	EQ_AUTOFREE char *sh = P("%s/" ASIDE "/etc/shells", t.a);
	FILE *f = fopen(sh, "r+");
	assert_non_null(f);
	assert_int_equal(fputs("/bin/xx\n", f) >= 0, 1);
	fclose(f);
	struct eq_verify_report vr;
	struct eq_error e;
	assert_int_equal(eq_slot_verify(t.a, G.img[0].m, NULL, 0, NULL, NULL, &vr, &e), EQ_OK);
	assert_int_equal(vr.damaged, 1);
	struct eq_install_report rep;
	if (install(&t, t.a, &G.img[0], t.b, &G.img[1], &rep, &e))
		fail_msg("update: %s", eq_error_msg(&e));
	assert_int_equal(rep.fallback, 1);
	assert_true(requested(&t.f, eq_manifest_find_package(G.img[1].m, "tool")->object.path));
	assert_image_layout(t.b, 1);
	verify_clean(t.b, &G.img[1], NULL);
	tc_done(&t);
}

/* Lines of aside.list that are not the release's, and an aside folder that
 * is a symlink: ignored, never followed; the slot built is right. */
static void test_image_hostile_aside(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	if (no_openat2()) {
		assert_image_refused_without_openat2(&t);
		tc_done(&t);
		return;
	}
	provision_image(&t, t.a);
	/* If "usr/share/tool/data" (signed in no list) were taken, tool would
	 * be read from the forged copy beside it and fall back. */
	EQ_AUTOFREE char *lst = P("%s/" ASIDE_LIST, t.a);
	FILE *f = fopen(lst, "a");
	assert_non_null(f);
	fputs("../x\n/etc/passwd\nusr/share/tool/data\nusr/../etc/shells\n", f);
	fclose(f);
	EQ_AUTOFREE char *forged = P("%s/" ASIDE "/usr/share/tool/data", t.a);
	f = fopen(forged, "w");
	assert_non_null(f);
	fputs("forged\n", f);
	fclose(f);
	struct eq_install_report rep;
	struct eq_error e;
	if (install(&t, t.a, &G.img[0], t.b, &G.img[1], &rep, &e))
		fail_msg("update: %s", eq_error_msg(&e));
	assert_int_equal(rep.fallback, 0);
	assert_int_equal(rep.kept, 3);
	assert_image_layout(t.b, 1);

	/* The aside folder a symlink to a faithful copy elsewhere: not
	 * followed, so tool and beta come whole (beta's delta needs its
	 * etc/beta.conf), and the slot is still right. */
	struct tc t2;
	tc_init(&t2);
	EQ_AUTOFREE char *aside = P("%s/" ASIDE, t.b);
	EQ_AUTOFREE char *moved = P("%s/aside-elsewhere", t.base);
	assert_int_equal(rename(aside, moved), 0);
	assert_int_equal(symlink(moved, aside), 0);
	if (install(&t2, t.b, &G.img[1], t2.a, &G.img[1], &rep, &e))
		fail_msg("update: %s", eq_error_msg(&e));
	assert_int_equal(rep.fallback, 2); /* tool, and beta (kept from i2 to i2) */
	assert_image_layout(t2.a, 1);
	verify_clean(t2.a, &G.img[1], NULL);

	/* aside.list itself a symlink: ignored as a whole. */
	struct tc t3;
	tc_init(&t3);
	assert_int_equal(unlink(aside), 0);
	assert_int_equal(rename(moved, aside), 0);
	EQ_AUTOFREE char *lst_b = P("%s/" ASIDE_LIST, t.b);
	EQ_AUTOFREE char *lst_moved = P("%s/list-elsewhere", t.base);
	assert_int_equal(rename(lst_b, lst_moved), 0);
	assert_int_equal(symlink(lst_moved, lst_b), 0);
	if (install(&t3, t.b, &G.img[1], t3.a, &G.img[1], &rep, &e))
		fail_msg("update: %s", eq_error_msg(&e));
	assert_true(rep.fallback >= 1);
	assert_image_layout(t3.a, 1);
	tc_done(&t3);
	tc_done(&t2);
	tc_done(&t);
}

/* A signed image whose lists name a path in eqota's own folder: the step
 * refuses it and moves nothing of the records. */
static void test_image_aside_own_folder(void **state)
{
	(void)state;
	if (no_openat2())
		return; /* provisioning fails earlier (test_image_update) */
	struct tc t;
	tc_init(&t);
	static const char *const replace[] = {"etc/shells", EQ_SLOT_RECORD_DIR "/packages/tool.files"};
	struct eq_manifest_image img = {IMG_BEFORE, 1, IMG_AFTER, 2, replace, 2, NULL, 0};
	struct release evil;
	struct eq_error e;
	if (image_join(0, &img, &evil, &e))
		fail_msg("%s", eq_error_msg(&e));
	struct eq_install_report rep;
	assert_int_equal(install(&t, NULL, NULL, t.a, &evil, &rep, &e), EQ_ERR_UNSAFE);
	assert_non_null(strstr(e.msg, "eqota's own folder"));
	assert_true(exists(t.a, EQ_SLOT_RECORD_DIR "/packages/tool.files"));
	assert_false(exists(t.a, ASIDE "/" EQ_SLOT_RECORD_DIR));
	eq_manifest_free(evil.m);
	tc_done(&t);

	/* The same after a path outside (set aside first: the lists are
	 * walked backwards) taught the step that usr/lib is outside eqota's
	 * folder: the walk up from the next path still meets the folder. */
	struct tc t2;
	tc_init(&t2);
	static const char *const replace2[] = {EQ_SLOT_RECORD_DIR "/packages/tool.files", "usr/lib/zz-outside"};
	struct eq_manifest_image img2 = {IMG_BEFORE, 1, IMG_AFTER, 2, replace2, 2, NULL, 0};
	if (image_join(0, &img2, &evil, &e))
		fail_msg("%s", eq_error_msg(&e));
	assert_int_equal(install(&t2, NULL, NULL, t2.a, &evil, &rep, &e), EQ_ERR_UNSAFE);
	assert_non_null(strstr(e.msg, "eqota's own folder"));
	assert_true(exists(t2.a, EQ_SLOT_RECORD_DIR "/packages/tool.files"));
	eq_manifest_free(evil.m);
	tc_done(&t2);
}

/* An image (built in memory, not parsed) naming a component the release
 * does not have: refused before anything is fetched, the name given. */
static void test_image_component_missing(void **state)
{
	(void)state;
	struct tc t;
	tc_init(&t);
	static const char *const after[] = {"eqota-image.etc", "eqota-image.nope"};
	struct eq_manifest_image img = {IMG_BEFORE, 1, after, 2, IMG_REPLACE, 4, IMG_REMOVE, 1};
	struct release bad;
	struct eq_error e;
	if (image_join(0, &img, &bad, &e))
		fail_msg("%s", eq_error_msg(&e));
	struct eq_install_report rep;
	assert_int_equal(install(&t, NULL, NULL, t.a, &bad, &rep, &e), EQ_ERR_INVAL);
	if (!strstr(e.msg, "'eqota-image.nope' is not in the release"))
		fail_msg("%s", e.msg);
	assert_int_equal(t.f.n, 0);
	eq_manifest_free(bad.m);
	tc_done(&t);
}

static int driver(int argc, char **argv)
{
	if (argc != 10) {
		fprintf(stderr, "usage: test_install --install REPO BOARD PUBKEY FROM RUNNING_ROOT|- TO TARGET WORK\n");
		return 2;
	}
	const char *repo = argv[2], *board = argv[3], *pub = argv[4], *running_root = argv[6];
	const char *target = argv[8], *work = argv[9];
	char *end;
	long from = strtol(argv[5], &end, 10);
	long to = *end ? -1 : strtol(argv[7], &end, 10);
	if (*end || from < 0 || to < 1) {
		fprintf(stderr, "FROM and TO are release numbers\n");
		return 2;
	}
	struct eq_error e;
	const char *paths[] = {pub};
	struct release running = {0}, next = {0};
	struct eq_plan plan = {0};
	struct eq_install_report rep = {0};
	struct fetcher f = {.repo = eq_strdup(repo), .dl = eq_asprintf("%s/dl", work)};
	eq_err r = eq_manifest_trust_from_pubkeys(paths, 1, 1, &G.trust, &e);
	if (!r && from)
		r = release_load(repo, board, (int)from, &running, &e);
	if (!r)
		r = release_load(repo, board, (int)to, &next, &e);
	if (!r)
		r = eq_mkdir_p(f.dl, 0755, &e);
	if (!r)
		r = eq_plan_make(from ? running.m : NULL, next.m, &plan, &e);
	if (!r) {
		struct eq_install in = {
			.running_root = from ? running_root : NULL,
			.running = from ? running.m : NULL,
			.target_root = target,
			.next = next.m,
			.manifest_bytes = next.bytes,
			.manifest_len = next.len,
			.sig_bytes = next.sig,
			.sig_len = next.sig_len,
			.work_dir = work,
			.fetch = fetch_copy,
			.fetch_ctx = &f,
			.owners = geteuid() == 0,
		};
		r = eq_install_slot(&in, &plan, &rep, &e);
	}
	int status = 0;
	if (r) {
		fprintf(stderr, "install: %s\n", eq_error_msg(&e));
		status = 1;
	} else {
		printf("kept=%zu delta=%zu full=%zu fallback=%zu requests=%u fetched=%" PRIu64 " planned=%" PRIu64
		       " full_release=%" PRIu64 "\n",
		       rep.kept, rep.delta, rep.full, rep.fallback, f.n, f.bytes, plan.download_bytes, plan.full_bytes);
		char why[1024];
		if (!check_slot(target, &next, board, why, sizeof(why))) {
			fprintf(stderr, "slot check: %s\n", why);
			status = 1;
		}
	}
	eq_plan_done(&plan);
	release_free(&running);
	release_free(&next);
	eq_manifest_trust_free(G.trust);
	eq_free(f.repo);
	eq_free(f.dl);
	return status;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--install"))
		return driver(argc, argv);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records_round_trip),
		cmocka_unit_test(test_records_bad_corpus),
		cmocka_unit_test(test_plan_counts),
		cmocka_unit_test(test_provision),
		cmocka_unit_test(test_update),
		cmocka_unit_test(test_modified_kept_file),
		cmocka_unit_test(test_forged_kept_record),
		cmocka_unit_test(test_delta_reference_mismatch),
		cmocka_unit_test(test_corrupt_object),
		cmocka_unit_test(test_no_space),
		cmocka_unit_test(test_target_not_empty),
		cmocka_unit_test(test_dir_slots),
		cmocka_unit_test(test_reserved_path_payload),
		cmocka_unit_test(test_record_symlink_via_other_package),
		cmocka_unit_test(test_running_record_symlink),
		cmocka_unit_test(test_slot_manifest_symlink),
		cmocka_unit_test(test_image_update),
		cmocka_unit_test(test_image_tampered_aside),
		cmocka_unit_test(test_image_hostile_aside),
		cmocka_unit_test(test_image_aside_own_folder),
		cmocka_unit_test(test_image_component_missing),
	};
	return eq_test_run(tests, group_setup, group_teardown, argc, argv);
}
