#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <eq/gen_conflict.h>
#include <eq/gen_equiv.h>
#include <eq/gen_image.h>
#include <eq/gen_index.h>
#include <eq/gen_package.h>
#include <eq/gen_publish.h>
#include <eq/gen_repo.h>
#include <eq/gen_root.h>
#include <eq/gen_store.h>
#include <eq/repo_layout.h>

#include "gen_priv.h"


static void ctx_done(struct eqg_pub *c)
{
	if (c->tmpdir) {
		/* Best effort: a left-over .tmp-* folder is harmless and named. */
		if (eq_rm_rf(c->tmpdir, NULL) != EQ_OK)
			eq_log(EQ_LOG_DEBUG, "cannot remove '%s'", c->tmpdir);
		eq_free(c->tmpdir);
	}
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	eqg_history_done(&c->hist);
	eq_equiv_close(c->equiv);
	eq_build_index_free(c->index);
	eq_path_table_free(c->paths);
	eq_buf_done(&c->unindexed);
	eq_manifest_free(c->m);
	eqg_input_cache_close(c->cache);
	eq_image_free(c->img);
	for (size_t i = 0; i < c->n_files; i++)
		eq_free(c->files[i]);
	eq_free(c->files);
}

void eq_publish_report_done(struct eq_publish_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_packages; i++) {
		eq_free(r->pkgs[i].name);
		eq_free(r->pkgs[i].version);
	}
	eq_free(r->pkgs);
	eq_root_free(r->root);
	memset(r, 0, sizeof(*r));
}

/* A temporary file in the run's private folder; *ret_path is malloc'ed. */
eq_err eqg_pub_tmp_file(struct eqg_pub *c, const char *what, int *ret_fd, char **ret_path, struct eq_error *err)
{
	char *p = eq_asprintf("%s/%s-XXXXXX", c->tmpdir, what);
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	int fd = mkostemp(p, O_CLOEXEC);
	if (fd < 0) {
		eq_err r = eq_error_errno(err, EQ_ERR_IO, "cannot create temporary file '%s'", p);
		eq_free(p);
		return r;
	}
	*ret_fd = fd;
	*ret_path = p;
	return EQ_OK;
}

static bool file_has_size(const char *path, uint64_t size)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size;
}

/* Hashing sink: writes to a file and hashes what passes. */
struct hash_sink {
	int fd;
	struct eq_sha256 sha;
	uint64_t n;
};
static eq_err hash_sink_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	struct hash_sink *h = ctx;
	eq_sha256_update(&h->sha, data, len);
	h->n += len;
	return eq_write_all(h->fd, data, len, err);
}

/* Moves @tmp (whose bytes hash to @sha) to @dest. A @dest already there
 * with other bytes was planted or damaged (the publish lock keeps other
 * publishers out): it is replaced, never taken for ours. */
static eq_err install_file(const char *tmp, const char *dest, const uint8_t sha[EQ_SHA256_LEN], struct eq_error *err)
{
	if (link(tmp, dest) == 0) {
		(void)unlink(tmp);
		return EQ_OK;
	}
	if (errno != EEXIST)
		return eq_error_errno(err, EQ_ERR_IO, "cannot create '%s'", dest);
	uint8_t have[EQ_SHA256_LEN];
	if (eq_sha256_file(dest, have, NULL, NULL) == EQ_OK && !memcmp(have, sha, EQ_SHA256_LEN)) {
		(void)unlink(tmp);
		return EQ_OK;
	}
	eq_log(EQ_LOG_WARNING, "'%s' existed with other bytes than the ones made for it: replaced", dest);
	if (rename(tmp, dest) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot rename '%s' to '%s'", tmp, dest);
	return EQ_OK;
}

/*
 * Checks that objects/@sha_hex holds the bytes its name says: a file put
 * there by anyone but this publisher must not be signed as the object.
 * EQ_ERR_VERIFY naming the file when it does not.
 */
static eq_err check_object(struct eqg_pub *c, const char *sha_hex, struct eq_error *err)
{
	EQ_AUTOFREE char *path = NULL;
	eq_err r = eq_layout_object(c->o->repo, sha_hex, &path, err);
	if (r)
		return r;
	uint8_t sha[EQ_SHA256_LEN];
	char hex[EQ_SHA256_HEX_LEN + 1];
	r = eq_sha256_file(path, sha, NULL, err);
	if (r)
		return r;
	eq_hex_encode(sha, sizeof(sha), hex);
	if (strcmp(hex, sha_hex))
		return eq_error_set(err, EQ_ERR_VERIFY, "'%s' hashes to %s: not the object its name says", path, hex);
	return EQ_OK;
}

/* Compresses payload file @payload into objects/; fills object sha/size. */
static eq_err write_object(struct eqg_pub *c, const char *payload, struct eq_store_published *pub,
			   struct eqg_pub_stats *st, struct eq_error *err)
{
	int in = open(payload, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", payload);
	int out = -1;
	EQ_AUTOFREE char *tmp = NULL;
	eq_err r = eqg_pub_tmp_file(c, "object", &out, &tmp, err);
	if (r) {
		close(in);
		return r;
	}
	struct hash_sink hs = {.fd = out};
	eq_sha256_init(&hs.sha);
	struct stat sb;
	r = fstat(in, &sb) != 0
		    ? eq_error_errno(err, EQ_ERR_IO, "cannot stat '%s'", payload)
		    : eq_object_compress(eq_fd_read, &in, (uint64_t)sb.st_size, hash_sink_write, &hs, c->o->level, err);
	uint8_t sha[EQ_SHA256_LEN];
	eq_sha256_final(&hs.sha, sha);
	close(in);
	if (close(out) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot write '%s'", tmp);
	if (r)
		return r;
	eq_hex_encode(sha, EQ_SHA256_LEN, pub->object_sha256);
	pub->object_size = hs.n;
	EQ_AUTOFREE char *dest = NULL;
	if ((r = eq_layout_object(c->o->repo, pub->object_sha256, &dest, err)))
		return r;
	r = install_file(tmp, dest, sha, err);
	if (!r) {
		st->objects_written++;
		st->bytes_written += hs.n;
	}
	return r;
}
/* A reader that hashes what passes through it. */
struct hash_src {
	int fd;
	struct eq_sha256 sha;
	uint64_t n;
};
static eq_err hash_src_read(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	struct hash_src *h = ctx;
	eq_err r = eq_fd_read(&h->fd, buf, len, ret_n, err);
	if (!r) {
		eq_sha256_update(&h->sha, buf, *ret_n);
		h->n += *ret_n;
	}
	return r;
}

/*
 * Decompresses objects/<@object_sha> into a new temporary payload file.
 * The object's bytes must hash to its name and, with @payload_sha, the
 * payload to that (EQ_ERR_VERIFY naming the file): a file planted there
 * would otherwise become the reference of a delta, or a promoted payload.
 */
static eq_err object_to_payload(struct eqg_pub *c, const char *object_sha, const char *payload_sha,
				uint64_t payload_size, char **ret_path, struct eq_error *err)
{
	EQ_AUTOFREE char *src = NULL;
	eq_err lr = eq_layout_object(c->o->repo, object_sha, &src, err);
	if (lr)
		return lr;
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot open object '%s'",
				      src);
	int out = -1;
	char *tmp = NULL;
	eq_err r = eqg_pub_tmp_file(c, "ref", &out, &tmp, err);
	if (r) {
		close(in);
		return r;
	}
	struct hash_src hsrc = {.fd = in};
	struct hash_sink hs = {.fd = out};
	eq_sha256_init(&hsrc.sha);
	eq_sha256_init(&hs.sha);
	r = eq_object_decompress(hash_src_read, &hsrc, hash_sink_write, &hs, payload_size, 0, err);
	/* What decompression left unread counts too. */
	for (size_t n = 1; !r && n;) {
		uint8_t rest[4096];
		r = hash_src_read(&hsrc, rest, sizeof(rest), &n, err);
	}
	close(in);
	if (close(out) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot write '%s'", tmp);
	uint8_t sha[EQ_SHA256_LEN];
	char hex[EQ_SHA256_HEX_LEN + 1];
	if (!r) {
		eq_sha256_final(&hsrc.sha, sha);
		eq_hex_encode(sha, sizeof(sha), hex);
		if (strcmp(hex, object_sha))
			r = eq_error_set(err, EQ_ERR_VERIFY, "hashes to %s: not the object its name says", hex);
	}
	if (!r && payload_sha) {
		eq_sha256_final(&hs.sha, sha);
		eq_hex_encode(sha, sizeof(sha), hex);
		if (strcmp(hex, payload_sha))
			r = eq_error_set(err, EQ_ERR_VERIFY, "decompresses to payload %s, not %s", hex, payload_sha);
	}
	if (r) {
		eq_error_prefix(err, r, "%s", src);
		(void)unlink(tmp);
		eq_free(tmp);
		return r;
	}
	*ret_path = tmp;
	return EQ_OK;
}

/* Distinct older payloads of a package whose existing deltas are offered. */
#define DELTA_LOOKBACK (EQG_HISTORY_DEPTH - 1u)

/* Packages read ahead before their unihashes are asked for. The payloads
 * of a batch wait on disk, so this also bounds the temporary space. */
#define PUBLISH_BATCH 64

static void drop_temp(char *path)
{
	if (path) {
		(void)unlink(path);
		eq_free(path);
	}
}

void eqg_prep_done(struct eqg_prep *p)
{
	drop_temp(p->payload);
	drop_temp(p->stored_payload);
	eqg_input_done(&p->in);
	eqg_strv_done(&p->stored_special);
	eqg_path_recs_free(p->stored_recs);
	memset(p, 0, sizeof(*p));
}

/*
 * Runs the device's path rules over the payload in file @path (what devices
 * will extract), so a package every device would refuse is refused here,
 * naming the entry; setuid/setgid files and device nodes go to @special
 * for eqg_pub_apply_policy().
 */
eq_err eqg_pub_scan_payload(const char *path, struct eqg_strv *special, struct eq_error *err)
{
#ifdef EQ_TEST_HOOKS
	/* Test hook: publish a package devices must refuse, to test them. */
	if (secure_getenv("EQ_TEST_PUBLISH_UNCHECKED"))
		return EQ_OK;
#endif
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", path);
	struct eq_payload_findings f;
	eq_err r = eq_payload_check(eq_fd_read, &fd, NULL, &f, err);
	close(fd);
	if (r)
		return eq_error_prefix(err, r, "package refused, devices would refuse it");
	for (size_t i = 0; i < f.n_special && !r; i++)
		r = eqg_strv_add(special, f.special[i], err);
	eq_payload_findings_done(&f);
	return r;
}

/* Special files listed in a warning or an error, at most this many. */
#define SPECIAL_LIST_MAX 8

/* The policy on setuid/setgid files and device nodes; @what names the
 * package in messages. */
eq_err eqg_pub_apply_policy(struct eqg_pub *c, const struct eqg_strv *special, const char *what, struct eq_error *err)
{
	if (!special->n)
		return EQ_OK;
	char list[1024] = "";
	size_t len = 0;
	for (size_t i = 0; i < special->n && i < SPECIAL_LIST_MAX && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s'%s'", i ? ", " : "", special->v[i]);
	const char *more = special->n > SPECIAL_LIST_MAX ? ", ..." : "";
	if (c->o->policy == EQ_POLICY_STRICT)
		return eq_error_set(err, EQ_ERR_UNSAFE,
				    "refused by --policy strict: %zu setuid/setgid files or device nodes: %s%s",
				    special->n, list, more);
	eq_log(EQ_LOG_WARNING, "%s: %zu setuid/setgid files or device nodes: %s%s, continuing", what, special->n, list,
	       more);
	return EQ_OK;
}

/* Names of packages the build index does not list, for one warning. */
static eq_err note_unindexed(struct eqg_pub *c, const char *name, struct eq_error *err)
{
	c->rep.default_taskhashes++;
	if (c->unindexed.len > 512) {
		c->unindexed_more = true;
		return EQ_OK;
	}
	eq_err r = eq_buf_append(&c->unindexed, c->unindexed.len ? ", " : "", c->unindexed.len ? 2 : 0, err);
	if (!r)
		r = eq_buf_append(&c->unindexed, name, strlen(name), err);
	return r;
}

/* Reads the package and writes its payload (the owner rules applied) to a
 * temporary file; the removed paths go to @removed. */
static eq_err make_payload(struct eqg_pub *c, const char *file, struct eqg_strv *removed, char **ret_path,
			   uint8_t sha[EQ_SHA256_LEN], uint64_t *ret_size, struct eq_pkg **ret_pkg,
			   struct eq_error *err)
{
	struct eq_pkg *pkg = NULL;
	eq_err r = eq_pkg_read(file, NULL, &pkg, err);
	if (!r)
		r = eqg_path_table_strip(c->paths, eq_pkg_get_info(pkg)->name, eq_pkg_get_builder(pkg), removed, err);
	int pfd = -1;
	if (!r)
		r = eqg_pub_tmp_file(c, "payload", &pfd, ret_path, err);
	if (!r) {
		r = eq_pkg_write_payload(pkg, eq_fd_write, &pfd, sha, ret_size, err);
		close(pfd);
	}
	if (r || !ret_pkg)
		eq_pkg_free(pkg);
	else
		*ret_pkg = pkg;
	return r;
}

/* Phase "read" (any thread): all the input cache would have told. */
static void read_one(struct eqg_pub *c, struct eqg_prep *p)
{
	if (p->cached)
		return;
	struct eq_pkg *pkg = NULL;
	p->r = make_payload(c, p->file, &p->in.removed, &p->payload, p->in.payload_sha256, &p->in.payload_size, &pkg,
			    &p->err);
	if (!p->r) {
		const struct eq_pkg_info *info = eq_pkg_get_info(pkg);
		p->in.name = eq_strdup(info->name);
		p->in.version = eq_strdup(info->version);
		p->in.arch = eq_strdup(info->arch);
		if (!p->in.name || !p->in.version || !p->in.arch)
			p->r = eq_error_set(&p->err, EQ_ERR_NOMEM, "out of memory");
	}
	eq_pkg_free(pkg); /* its file list can be large: gone before the scans */
	if (!p->r)
		p->r = eqg_pub_scan_payload(p->payload, &p->in.special, &p->err);
	if (!p->r)
		p->r = eqg_path_recs_read(p->payload, &p->in.recs, &p->err);
}

/*
 * The payload of a promoted package (no package file): its object
 * decompressed, and it must hash to what the signed manifest says, or
 * deltas would be made for bytes no device has.
 */
static eq_err promoted_payload(struct eqg_pub *c, struct eqg_prep *p, struct eq_error *err)
{
	eq_err r = object_to_payload(c, p->pub.object_sha256, p->pub.payload_sha256, p->pub.payload_size, &p->payload,
				     err);
	return r ? eq_error_prefix(err, r, "package '%s'", p->in.name) : EQ_OK;
}

/*
 * The payload file of a package the input cache knew (any thread): made
 * again from the package, and it must be the cached one.
 */
static eq_err ensure_payload(struct eqg_pub *c, struct eqg_prep *p, struct eq_error *err)
{
	if (p->payload)
		return EQ_OK;
	if (!p->file)
		return promoted_payload(c, p, err);
	struct eqg_strv removed = {0};
	uint8_t sha[EQ_SHA256_LEN];
	uint64_t size;
	eq_err r = make_payload(c, p->file, &removed, &p->payload, sha, &size, NULL, err);
	eqg_strv_done(&removed);
	if (!r && (memcmp(sha, p->in.payload_sha256, EQ_SHA256_LEN) || size != p->in.payload_size))
		r = eq_error_set(err, EQ_ERR_STATE,
				 "its payload is not the one the input cache recorded for this file (changed without "
				 "its size or times changing?); publish again with --no-cache");
	return r;
}

/* A sink that counts and drops what a delta makes. */
static eq_err count_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	(void)data, (void)err;
	*(uint64_t *)ctx += len;
	return EQ_OK;
}

/*
 * Checks that the delta in file @path, applied to the reference payload
 * in file @ref, gives payload @to_sha (hex): EQ_ERR_VERIFY (or the
 * decoder's error) otherwise. Fills the delta file's hash and size.
 */
static eq_err check_delta(const char *path, const char *ref, const char *to_sha, uint8_t ret_sha[EQ_SHA256_LEN],
			  uint64_t *ret_size, struct eq_error *err)
{
	uint8_t want[EQ_SHA256_LEN];
	if (!eq_hex_decode(to_sha, want, sizeof(want)))
		return eq_error_set(err, EQ_ERR_INVAL, "payload hash '%s'", to_sha);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", path);
	struct hash_src hs = {.fd = fd};
	eq_sha256_init(&hs.sha);
	uint64_t made = 0;
	eq_err r = eq_delta_apply(ref, hash_src_read, &hs, count_write, &made, want, err);
	/* The signed hash covers the whole file, bytes after the delta too. */
	for (size_t n = 1; !r && n;) {
		uint8_t rest[4096];
		r = hash_src_read(&hs, rest, sizeof(rest), &n, err);
	}
	close(fd);
	if (r)
		return r;
	eq_sha256_final(&hs.sha, ret_sha);
	*ret_size = hs.n;
	return EQ_OK;
}

/*
 * Offers deltas to the package's payload from its older payloads, newest
 * first: for the last N distinct ones (N = --deltas-from; republished
 * releases with the same payload count once, so a republish never pushes a
 * version out) the delta is made if it does not exist yet; from any older
 * payload it is offered when it already exists in the repository (made for
 * an earlier release with the same new payload, e.g. before a republish).
 * A delta is kept only when it is clearly smaller than the full object (at
 * most 80 %): otherwise the device is better off with the object, which
 * needs no reference in memory. Any thread.
 */
static eq_err make_deltas(struct eqg_pub *c, struct eqg_prep *p, struct eq_error *err)
{
	if (c->o->deltas_from == 0)
		return EQ_OK;
	const char *name = p->in.name, *to_sha = p->pub.payload_sha256;
	struct eqg_delta_list *dl = &p->dl;
	/* Older payloads, newest first (each once, by the newest release
	 * that had it); the walk ends after this many, so long histories cost
	 * no more. */
	const struct eqg_hist_pkg *hp = eqg_history_find(&c->hist, name);
	size_t distinct = 0;
	for (size_t k = 0; hp && k < hp->n && dl->n < EQ_MANIFEST_MAX_DELTAS && distinct < DELTA_LOOKBACK; k++) {
		const struct eqg_hist_payload *old = &hp->v[k];
		if (!strcmp(old->payload_sha256, to_sha))
			continue;
		bool make = distinct++ < c->o->deltas_from;
		struct eq_manifest_delta d = {0};
		snprintf(d.from, sizeof(d.from), "%s", old->payload_sha256);
		EQ_AUTOFREE char *rel = NULL, *dest = NULL;
		eq_err lr;
		if ((lr = eq_layout_delta(NULL, old->payload_sha256, to_sha, &rel, err)) ||
		    (lr = eq_layout_delta(c->o->repo, old->payload_sha256, to_sha, &dest, err)))
			return lr;
		snprintf(d.path, sizeof(d.path), "%s", rel);
		uint8_t sha[EQ_SHA256_LEN];
		uint64_t size;
		struct stat dst;
		bool exists = stat(dest, &dst) == 0;
		if (!exists && !make)
			continue;
		/* The reference, checked against its name and its payload hash:
		 * to make the delta, or to check the one found. */
		EQ_AUTOFREE char *ref = NULL;
		struct eq_error e;
		eq_err r = object_to_payload(c, old->object_sha256, old->payload_sha256, old->payload_size, &ref, &e);
		if (r == EQ_ERR_NOTFOUND) {
			/* An old object pruned from the repository: no delta from it
			 * can be made, nor one found checked. */
			continue;
		}
		if (r == EQ_ERR_VERIFY) {
			eq_log(EQ_LOG_WARNING, "package '%s': no delta from payload %s: %s, continuing", name,
			       old->payload_sha256, eq_error_msg(&e));
			continue;
		}
		if (r) {
			*err = e;
			return eq_error_prefix(err, r, "delta for '%s'", name);
		}
		if (exists) {
			/* Signed only if it really turns the reference into this
			 * payload: a file planted here would send devices junk. */
			r = check_delta(dest, ref, to_sha, sha, &size, &e);
			if (!r) {
				(void)unlink(ref);
				eq_hex_encode(sha, EQ_SHA256_LEN, d.sha256);
				d.size = size;
				dl->v[dl->n++] = d;
				continue;
			}
			if (r == EQ_ERR_NOMEM) {
				(void)unlink(ref);
				*err = e;
				return r;
			}
			eq_log(EQ_LOG_WARNING, "package '%s': '%s' is not a delta from payload %s to %s (%s): %s", name,
			       dest, old->payload_sha256, to_sha, eq_error_msg(&e),
			       make ? "made again" : "not offered, continuing");
			if (!make) {
				(void)unlink(ref);
				continue;
			}
		}
		r = p->stored_payload ? EQ_OK : ensure_payload(c, p, err);
		if (r) {
			(void)unlink(ref);
			return r;
		}
		const char *to_path = p->stored_payload ? p->stored_payload : p->payload;
		int out = -1;
		EQ_AUTOFREE char *tmp = NULL;
		r = eqg_pub_tmp_file(c, "delta", &out, &tmp, err);
		if (r) {
			(void)unlink(ref);
			return r;
		}
		struct eq_delta_params dp;
		eq_delta_params_default(&dp);
		dp.level = c->o->level;
		/* A large package's filter trials use the cores the other
		 * packages of its batch leave idle (memory: docs/internals/delta.md). */
		dp.threads = c->jobs < EQ_DELTA_MAX_THREADS ? (unsigned)c->jobs : EQ_DELTA_MAX_THREADS;
		struct hash_sink hs = {.fd = out};
		eq_sha256_init(&hs.sha);
		r = eq_delta_create(ref, to_path, &dp, hash_sink_write, &hs, &size, err);
		eq_sha256_final(&hs.sha, sha);
		(void)unlink(ref);
		if (close(out) != 0 && !r)
			r = eq_error_errno(err, EQ_ERR_IO, "cannot write '%s'", tmp);
		if (r)
			return eq_error_prefix(err, r, "delta for '%s'", name);
		if (hs.n * 10 > p->pub.object_size * 8) {
			(void)unlink(tmp);
			continue;
		}
		eq_hex_encode(sha, EQ_SHA256_LEN, d.sha256);
		d.size = hs.n;
		r = install_file(tmp, dest, sha, err);
		if (r)
			return r;
		p->st.deltas_written++;
		p->st.bytes_written += hs.n;
		dl->v[dl->n++] = d;
	}
	return EQ_OK;
}

/* Phase "decide" (in order): what the store says of the unihash. */
eq_err eqg_pub_decide(struct eqg_pub *c, struct eqg_prep *p, const char *unihash, struct eq_error *err)
{
	const char *name = p->in.name;
	snprintf(p->pub.payload_sha256, sizeof(p->pub.payload_sha256), "%s", p->outhash);
	p->pub.payload_size = p->in.payload_size;
	struct eq_store_published known;
	bool same_package = false;
	eq_err r = eq_equiv_get_published(c->equiv, EQ_PAYLOAD_METHOD, unihash, name, &known, &same_package, err);
	p->state = EQ_PUB_REUSED;
	if (r == EQ_ERR_NOTFOUND) {
		p->new_object = p->write_object = true;
		p->state = EQ_PUB_NEW;
		return EQ_OK;
	}
	if (r)
		return r;
	if (strcmp(known.payload_sha256, p->outhash)) {
		/* Another package's bytes must never go out under this name:
		 * that happens when two packages were given one taskhash. */
		if (!same_package)
			return eq_error_set(
				err, EQ_ERR_STATE,
				"package '%s' (taskhash %s) has unihash %s, which was published with the "
				"payload of another package: two packages were given one taskhash. Give every "
				"package its own taskhash (for Yocto: hash the recipe's unihash with the package "
				"name, docs/yocto.md)",
				name, p->taskhash, unihash);
		/* Same inputs, other bytes: keep serving what devices may already
		 * run, as BitBake reuses the sstate object of a unihash. */
		p->state = EQ_PUB_NOT_REPRODUCIBLE;
		p->pub = known;
		return EQ_OK;
	}
	p->pub = known;
	EQ_AUTOFREE char *obj = NULL;
	eq_err lr = eq_layout_object(c->o->repo, known.object_sha256, &obj, err);
	if (lr)
		return lr;
	if (!file_has_size(obj, known.object_size)) {
		/* Known to the store but not in this repository: write it here. */
		p->write_object = true;
		p->state = EQ_PUB_NEW;
	}
	return EQ_OK;
}

/* Phase "work" (any thread): objects and deltas. */
void eqg_pub_work(struct eqg_pub *c, struct eqg_prep *p)
{
	struct eq_error *err = &p->err;
	eq_err r = EQ_OK;
	if (p->state == EQ_PUB_NOT_REPRODUCIBLE) {
		r = object_to_payload(c, p->pub.object_sha256, p->pub.payload_sha256, p->pub.payload_size,
				      &p->stored_payload, err);
		if (r) {
			p->r = eq_error_prefix(
				err, r, "package '%s' is not reproducible and the object published for its unihash",
				p->in.name);
			return;
		}
		/* What devices get is the stored payload: it passes the rules
		 * too, or nothing is published (it may predate them). */
		r = eqg_pub_scan_payload(p->stored_payload, &p->stored_special, err);
		if (!r)
			r = eqg_path_recs_read(p->stored_payload, &p->stored_recs, err);
		if (r) {
			p->r = eq_error_prefix(err, r, "the payload published earlier for package '%s'", p->in.name);
			return;
		}
	} else {
		/* An object found in objects/ is signed only once its bytes are
		 * checked against its name; one that fails is made again. */
		struct eq_error e;
		eq_err cr = p->write_object ? EQ_OK : check_object(c, p->pub.object_sha256, &e);
		if (cr == EQ_ERR_NOMEM) {
			p->r = eq_error_set(err, cr, "%s", eq_error_msg(&e));
			return;
		}
		if (cr) {
			eq_log(EQ_LOG_WARNING, "package '%s': %s: made again", p->in.name, eq_error_msg(&e));
			p->write_object = true;
		}
		if (p->write_object && !(r = ensure_payload(c, p, err)))
			r = write_object(c, p->payload, &p->pub, &p->st, err);
	}
	if (!r)
		r = make_deltas(c, p, err);
	p->r = r;
}

/* Phase "enter" (in order): the store, the path table, the manifest. */
eq_err eqg_pub_enter(struct eqg_pub *c, struct eqg_prep *p, const char *unihash, struct eq_publish_pkg *out,
		     struct eq_error *err)
{
	const char *name = p->in.name;
	eq_err r;
	if (p->state == EQ_PUB_NOT_REPRODUCIBLE) {
		if ((r = eqg_pub_apply_policy(c, &p->stored_special, p->file, err)))
			return eq_error_prefix(err, r, "the payload published earlier for package '%s'", name);
		c->rep.not_reproducible++;
	}
	if (p->new_object) {
		struct eq_store_published winner;
		bool inserted;
		r = eq_equiv_set_published(c->equiv, EQ_PAYLOAD_METHOD, unihash, name, &p->pub, &winner, &inserted,
					   err);
		if (r)
			return r;
		if (!inserted && strcmp(winner.payload_sha256, p->pub.payload_sha256))
			return eq_error_set(
				err, EQ_ERR_STATE,
				"unihash of '%s' was published with other bytes by a concurrent run; publish again",
				name);
	}
	c->rep.objects_written += p->st.objects_written;
	c->rep.deltas_written += p->st.deltas_written;
	c->rep.bytes_written += p->st.bytes_written;
	out->state = p->state;
	struct eqg_path_recs *recs = p->stored_recs ? p->stored_recs : p->in.recs;
	/* In package order: the first package named for an entry is the same
	 * whatever the threads did. */
	if (c->img && p->file && (r = eqg_image_attribute_recs(c->img, name, recs, err)))
		return r;
	if (!p->file && (r = eqg_path_table_mark_component(c->paths, name, err)))
		return r;
	r = eqg_path_table_add_recs(c->paths, name, p->file, recs, err);
	if (r)
		return r;
	struct eq_manifest_package mp = {
		.name = name,
		.version = p->in.version,
		.arch = p->in.arch,
		.payload = {.size = p->pub.payload_size},
		.object = {.size = p->pub.object_size},
		.deltas = p->dl.v,
		.n_deltas = p->dl.n,
	};
	snprintf(mp.taskhash, sizeof(mp.taskhash), "%s", p->taskhash);
	snprintf(mp.unihash, sizeof(mp.unihash), "%s", unihash);
	snprintf(mp.payload.sha256, sizeof(mp.payload.sha256), "%s", p->pub.payload_sha256);
	snprintf(mp.object.sha256, sizeof(mp.object.sha256), "%s", p->pub.object_sha256);
	EQ_AUTOFREE char *orel = NULL;
	if ((r = eq_layout_object(NULL, p->pub.object_sha256, &orel, err)))
		return r;
	snprintf(mp.object.path, sizeof(mp.object.path), "%s", orel);
	r = eq_manifest_add_package(c->m, &mp, err);
	if (r)
		return r;
	out->equivalent = strcmp(unihash, p->taskhash) != 0;
	c->rep.equivalent += out->equivalent;
	out->name = eq_strdup(name);
	out->version = eq_strdup(p->in.version);
	if (!out->name || !out->version)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	return EQ_OK;
}

/* Phase "name" (in order): the owner rules' record, the policy, the
 * taskhash; a new input goes to the cache. */
static eq_err name_one(struct eqg_pub *c, struct eqg_prep *p, struct eq_error *err)
{
	const char *name = p->in.name;
	if (c->img && p->file && eq_image_is_component_name(name))
		return eq_error_set(err, EQ_ERR_INVAL,
				    "package '%s': the name is reserved for image components (%s, %s, %s*)", name,
				    EQ_IMAGE_SKELETON, EQ_IMAGE_TOP, EQ_IMAGE_PREFIX);
	eq_err r = eqg_path_table_note_removed(c->paths, name, &p->in.removed, err);
	if (!r)
		r = eqg_pub_apply_policy(c, &p->in.special, p->file, err);
	if (r)
		return r;
	eq_hex_encode(p->in.payload_sha256, EQ_SHA256_LEN, p->outhash);
	const char *t = c->index ? eq_build_index_lookup(c->index, name) : NULL;
	if (t) {
		snprintf(p->taskhash, sizeof(p->taskhash), "%s", t);
		r = eq_path_table_taskhash(c->paths, name, p->taskhash, err);
	} else {
		/* Packages from outside the build (a vendor's .deb, a prebuilt
		 * firmware tarball) are normal in a release: their content decides. */
		struct eq_pkg_info info = {.name = p->in.name, .version = p->in.version, .arch = p->in.arch};
		eq_pkg_default_taskhash(&info, p->in.payload_sha256, p->taskhash);
		r = c->index ? note_unindexed(c, name, err) : EQ_OK;
	}
	if (!r && p->cache_put && (r = eqg_input_cache_put(c->cache, p->key, &p->in, err)))
		eq_error_prefix(err, r, "cannot record it");
	return r;
}

/* One parallel phase: @fn on each prep of a batch that has not failed. */
struct phase {
	struct eqg_pub *c;
	struct eqg_prep *p;
	void (*fn)(struct eqg_pub *c, struct eqg_prep *p);
};

static void phase_one(void *ctx, size_t i)
{
	struct phase *ph = ctx;
	if (!ph->p[i].r)
		ph->fn(ph->c, &ph->p[i]);
}

void eqg_pub_run_parallel(struct eqg_pub *c, struct eqg_prep *p, size_t n,
			  void (*fn)(struct eqg_pub *, struct eqg_prep *))
{
	struct phase ph = {c, p, fn};
	eq_parallel(n, c->jobs, phase_one, &ph);
}

/* Publishes files [first, first + n) of the run through the phases of
 * struct eqg_prep; an error names the file it is about. */
static eq_err publish_batch(struct eqg_pub *c, size_t first, size_t n, struct eq_progress *pr, double t0,
			    struct eq_error *err)
{
	struct eqg_prep p[PUBLISH_BATCH];
	struct eq_equiv_item items[PUBLISH_BATCH] = {0};
	memset(p, 0, sizeof(p));
	size_t failed = SIZE_MAX;
	eq_err r = EQ_OK;
	for (size_t i = 0; i < n && !r; i++) {
		p[i].file = c->files[first + i];
		eq_error_clear(&p[i].err);
		if (!c->cache)
			continue;
		bool stable;
		if ((r = eqg_input_cache_key(c->cache, p[i].file, c->cache_context, p[i].key, &stable, err))) {
			failed = first + i;
			break;
		}
		if ((r = eqg_input_cache_get(c->cache, p[i].key, &p[i].in, &p[i].cached, err))) {
			failed = first + i;
			break;
		}
		p[i].cache_put = !p[i].cached && stable;
		c->rep.cached += p[i].cached;
	}
	if (!r)
		eqg_pub_run_parallel(c, p, n, read_one);
	bool in_txn = false;
	if (!r && c->cache && (r = eqg_input_cache_begin(c->cache, err)) == EQ_OK)
		in_txn = true;
	for (size_t i = 0; i < n && !r; i++) {
		failed = first + i;
		if ((r = p[i].r)) {
			*err = p[i].err;
			break;
		}
		if ((r = name_one(c, &p[i], err)))
			break;
		items[i] = (struct eq_equiv_item){
			.taskhash = p[i].taskhash, .outhash = p[i].outhash, .pn = p[i].in.name, .pv = p[i].in.version};
	}
	if (in_txn) {
		eq_err cr = eqg_input_cache_commit(c->cache, r ? NULL : err);
		if (!r && cr) {
			r = cr;
			failed = SIZE_MAX;
		}
	}
	if (!r) {
		r = eq_equiv_report_many(c->equiv, EQ_PAYLOAD_METHOD, items, n, err);
		failed = SIZE_MAX; /* the message names the store or server */
	}
	for (size_t i = 0; i < n && !r; i++) {
		failed = first + i;
		r = eqg_pub_decide(c, &p[i], items[i].unihash, err);
	}
	if (!r)
		eqg_pub_run_parallel(c, p, n, eqg_pub_work);
	for (size_t i = 0; i < n && !r; i++) {
		failed = first + i;
		struct stat st;
		const char *base = strrchr(p[i].file, '/');
		pr->item = base ? base + 1 : p[i].file;
		if (stat(p[i].file, &st) == 0)
			pr->bytes_done += (uint64_t)st.st_size;
		if ((r = p[i].r)) {
			*err = p[i].err;
			break;
		}
		r = eqg_pub_enter(c, &p[i], items[i].unihash, &c->rep.pkgs[first + i], err);
		c->rep.n_packages = first + i + 1;
		if (r)
			break;
		pr->items_done = first + i + 1;
		pr->elapsed_s = eq_now_s() - t0;
		if (c->o->progress)
			c->o->progress(pr, c->o->progress_ctx);
	}
	if (r && failed != SIZE_MAX)
		eq_error_prefix(err, r, "%s", c->files[failed]);
	for (size_t i = 0; i < n; i++)
		eqg_prep_done(&p[i]);
	return r;
}

/* Lines of eq_path_table_check(): every shared path, before the error. */
static void path_note(void *ctx, bool error, const char *msg)
{
	(void)ctx;
	eq_log(error ? EQ_LOG_ERR : EQ_LOG_WARNING, "%s", msg);
}

/* @file of release @number's folder, or of the channel's with @number 0. */
static eq_err folder_file(const struct eq_publish_opts *o, uint64_t number, enum eq_layout_file file, char **ret,
			  struct eq_error *err)
{
	return number ? eq_layout_release(o->repo, o->board, o->channel, number, file, ret, err)
		      : eq_layout_channel(o->repo, o->board, o->channel, file, ret, err);
}

static eq_err write_manifest(struct eqg_pub *c, struct eq_error *err)
{
	const struct eq_publish_opts *o = c->o;
	uint8_t *json = NULL, *sig = NULL;
	size_t json_len = 0, sig_len = 0;
	struct eq_manifest_key *keys[EQ_MANIFEST_MAX_SIGNATURES] = {0};
	eq_err r = EQ_OK;
	if (o->n_keys == 0 || o->n_keys > EQ_MANIFEST_MAX_SIGNATURES)
		return eq_error_set(err, EQ_ERR_INVAL, "between 1 and %u signing keys are needed",
				    EQ_MANIFEST_MAX_SIGNATURES);
	for (size_t i = 0; i < o->n_keys && !r; i++)
		r = eq_manifest_key_load(o->key_paths[i], &keys[i], err);
	if (!r)
		r = eq_manifest_to_json(c->m, &json, &json_len, err);
	/* A repository with a root: devices accept only a manifest signed by
	 * its release role, so nothing else is published. The check is the
	 * signing's own (eq_manifest_sign_for()). */
	struct eq_root *root = NULL;
	if (!r) {
		r = eq_gen_root_newest(o->repo, o->trusted_root, &root, err);
		if (r == EQ_ERR_NOTFOUND)
			r = EQ_OK;
	}
	const struct eq_manifest_key *const *kv = (const struct eq_manifest_key *const *)keys;
	if (!r && !root)
		r = eq_manifest_sign(json, json_len, kv, o->n_keys, &sig, &sig_len, err);
	if (!r && root) {
		const struct eq_manifest_trust *role = eq_root_role(root, EQ_ROLE_RELEASE);
		struct eq_root_info info;
		eq_root_get_info(root, &info);
		if (!(r = eq_manifest_sign_for(json, json_len, kv, o->n_keys, role, &sig, &sig_len, err)) &&
		    (r = eq_manifest_verify(json, json_len, sig, sig_len, role, err)))
			eq_error_prefix(err, r,
					"the keys given (--key) do not meet the release role of root version %" PRIu64
					"; the release is not published",
					info.version);
	}
	/* What the timestamp step may take as checked (eq_timestamp_opts). */
	if (!r) {
		eq_sha256(json, json_len, c->rep.manifest_sha256);
		c->rep.root = root;
		root = NULL;
	}
	eq_root_free(root);
	EQ_AUTOFREE char *rdir = NULL;
	if (!r)
		r = eq_layout_release(o->repo, o->board, o->channel, c->rep.number, EQ_LAYOUT_DIR, &rdir, err);
	if (!r)
		r = eq_mkdir_p(rdir, 0755, err);
	/* The release folder first, then the current pointer; the signature is
	 * written before the manifest so a reader that sees the new manifest
	 * finds its signature (a CDN may still serve a mixed pair briefly: the
	 * device then refuses and retries). */
	for (int i = 0; i < 2 && !r; i++) {
		uint64_t number = i == 0 ? c->rep.number : 0;
		EQ_AUTOFREE char *mp = NULL, *sp = NULL;
		if ((r = folder_file(o, number, EQ_LAYOUT_MANIFEST, &mp, err)) ||
		    (r = folder_file(o, number, EQ_LAYOUT_MANIFEST_SIG, &sp, err)))
			break;
		r = eq_file_replace_atomic(sp, sig, sig_len, 0644, err);
		if (!r)
			r = eq_file_replace_atomic(mp, json, json_len, 0644, err);
		/* The channel's: what devices fetch before the full manifest. */
		if (!r && i == 1)
			r = eqg_manifest_companions(o->repo, o->board, o->channel, &c->hist, c->rep.number, json,
						    json_len, err);
		/* Last, the pointer legacy-mode devices poll: whoever sees the new
		 * hash finds the manifest, its delta and compressed form in place. */
		if (!r && i == 1) {
			uint8_t h[EQ_SHA256_LEN];
			char line[EQ_SHA256_HEX_LEN + 2];
			EQ_AUTOFREE char *pp = NULL;
			eq_sha256(json, json_len, h);
			eq_hex_encode(h, sizeof(h), line);
			line[EQ_SHA256_HEX_LEN] = '\n';
			line[EQ_SHA256_HEX_LEN + 1] = '\0';
			if (!(r = folder_file(o, 0, EQ_LAYOUT_MANIFEST_SHA256, &pp, err)))
				r = eq_file_replace_atomic(pp, line, EQ_SHA256_HEX_LEN + 1, 0644, err);
		}
	}
	for (size_t i = 0; i < o->n_keys; i++)
		eq_manifest_key_free(keys[i]);
	eq_free(json);
	eq_free(sig);
	return r;
}

/* What publish and promote both need: the folders, the lock, a private
 * temporary folder, the target channel's history (the new name must be
 * new there), an empty manifest, the thread count. */
static eq_err prepare_common(struct eqg_pub *c, struct eq_error *err)
{
	const struct eq_publish_opts *o = c->o;
	eq_err r;
	/* One publisher per repository at a time; the store is shared safely
	 * by itself, the release numbering is not. The lock also checks that
	 * no link leads out of the repository, so it comes before any folder
	 * is made in it. */
	if ((r = eq_mkdir_p(o->repo, 0755, err)) || (r = eqg_lock_repo(o->repo, &c->lock_fd, err)))
		return r;
	const char *sub[] = {EQ_LAYOUT_OBJECTS_DIR, EQ_LAYOUT_DELTAS_DIR};
	for (size_t i = 0; i < 2; i++) {
		EQ_AUTOFREE char *p = eq_asprintf("%s/%s", o->repo, sub[i]);
		if (!p)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		if ((r = eq_mkdir_p(p, 0755, err)))
			return r;
	}
	EQ_AUTOFREE char *bdir = NULL;
	if ((r = eq_layout_channel(o->repo, o->board, o->channel, EQ_LAYOUT_DIR, &bdir, err)) ||
	    (r = eq_mkdir_p(bdir, 0755, err)))
		return r;
	c->tmpdir = eq_asprintf("%s/.tmp-XXXXXX", o->repo);
	if (!c->tmpdir)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (!mkdtemp(c->tmpdir)) {
		r = eq_error_errno(err, EQ_ERR_IO, "cannot create '%s'", c->tmpdir);
		eq_free(c->tmpdir);
		c->tmpdir = NULL;
		return r;
	}
	if ((r = eqg_history_open(o->repo, o->board, o->channel, &c->hist, err)))
		return r;
	for (size_t i = 0; i < c->hist.n_releases; i++)
		if (!strcmp(c->hist.names[i], o->release))
			return eq_error_set(err, EQ_ERR_STATE,
					    "release '%s' is already published for %s/%s as number %" PRIu64,
					    o->release, o->board, o->channel, c->hist.numbers[i]);
	if ((r = eq_manifest_new(&c->m, err)))
		return r;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	c->jobs = o->jobs ? o->jobs : cpus > 0 ? (size_t)cpus : 1;
	if (c->jobs > EQ_PUBLISH_MAX_JOBS)
		c->jobs = EQ_PUBLISH_MAX_JOBS;
	return EQ_OK;
}

static eq_err prepare(struct eqg_pub *c, struct eq_error *err)
{
	const struct eq_publish_opts *o = c->o;
	eq_err r = prepare_common(c, err);
	if (r)
		return r;
	if (o->build_index && (r = eq_build_index_load(o->build_index, &c->index, err)))
		return r;
	if ((r = eq_path_table_new(o->path_owners, o->n_path_owners, o->path_owners_file, &c->paths, err)))
		return r;
	struct eq_equiv_opts eo = {.store_path = o->store_path, .hashserv = o->hashserv, .repo = o->repo};
	if ((r = eq_equiv_open(&eo, &c->equiv, err)))
		return r;
	if ((r = eq_gen_list_packages(o->packages_dir, &c->files, &c->n_files, err)))
		return r;
	if (o->image && ((r = eq_image_load(o->image, NULL, &c->img, err)) ||
			 (r = eq_image_check_devices(c->img, o->image_devices, err))))
		return o->image && c->img ? eq_error_prefix(err, r, "image '%s'", o->image) : r;
	if (c->n_files == 0)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "no packages (.deb .ipk .rpm .tar.*) in '%s'",
				    o->packages_dir);
	bool use_cache = !o->no_cache;
#ifdef EQ_TEST_HOOKS
	/* Test hook: what was read without the rules must not be remembered. */
	use_cache = use_cache && !secure_getenv("EQ_TEST_PUBLISH_UNCHECKED");
#endif
	if (use_cache) {
		EQ_AUTOFREE char *def = NULL;
		if (!o->cache_path && (r = eqg_input_cache_default_path(&def, err)))
			return r;
		if ((r = eqg_input_cache_open(o->cache_path ? o->cache_path : def, &c->cache, err)))
			return r;
		/* The owner rules change payloads: other rules, other entries. */
		eqg_path_table_rules_sha(c->paths, c->cache_context);
	}
	return EQ_OK;
}

/* The new release's number (after the channel's last) and header. */
static eq_err set_header(struct eqg_pub *c, struct eq_error *err)
{
	const struct eq_publish_opts *o = c->o;
	c->rep.number = c->hist.n_releases ? c->hist.numbers[c->hist.n_releases - 1] + 1 : 1;
	time_t now = time(NULL);
	struct eq_manifest_header h = {
		.board = o->board,
		.channel = o->channel,
		.release = o->release,
		.number = c->rep.number,
		.issued = (int64_t)now,
		.expires = (int64_t)now + (int64_t)(o->expires_days ? o->expires_days : 30) * 86400,
	};
	return eq_manifest_set_header(c->m, &h, err);
}

/* The signed manifest and its companions, then the channel's summary. */
static eq_err finish(struct eqg_pub *c, struct eq_error *err)
{
	const struct eq_publish_opts *o = c->o;
	eq_err r = write_manifest(c, err);
	/* The summary the next publish reads instead of every manifest. */
	if (!r && ((r = eqg_history_add(&c->hist, c->rep.number, o->release, c->m, err)) ||
		   (r = eqg_history_write(&c->hist, o->repo, o->board, o->channel, c->rep.manifest_sha256, err))))
		eq_error_prefix(err, r,
				"release %" PRIu64 " is published, but the summary of the channel's releases is not "
				"(the next publish reads every release instead)",
				c->rep.number);
	return r;
}

/* The end of a publish or promote started at @t0: the report to *@ret on
 * success, everything released; returns @r. */
static eq_err hand_over(struct eqg_pub *c, eq_err r, double t0, struct eq_publish_report *ret)
{
	c->rep.seconds = eq_now_s() - t0;
	if (r)
		eq_publish_report_done(&c->rep);
	else
		*ret = c->rep;
	ctx_done(c);
	return r;
}

eq_err eq_gen_publish(const struct eq_publish_opts *o, struct eq_publish_report *ret, struct eq_error *err)
{
	struct eqg_pub c = {.o = o, .lock_fd = -1};
	eq_buf_init(&c.unindexed, 4096);
	double t0 = eq_now_s();
	eq_err r = prepare(&c, err);
	if (r)
		goto out;
	if ((r = set_header(&c, err)))
		goto out;
	c.rep.pkgs = eq_calloc(c.n_files, sizeof(*c.rep.pkgs));
	if (!c.rep.pkgs) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto out;
	}
	struct eq_progress pr = {.what = "publish", .items_total = c.n_files};
	for (size_t i = 0; i < c.n_files && !r; i += PUBLISH_BATCH) {
		size_t n = c.n_files - i < PUBLISH_BATCH ? c.n_files - i : PUBLISH_BATCH;
		r = publish_batch(&c, i, n, &pr, t0, err);
	}
	if (r)
		goto out;
	if (c.rep.default_taskhashes)
		eq_log(EQ_LOG_WARNING,
		       "build index '%s' lists no taskhash for %zu of %zu packages (%.*s%s): they get "
		       "default taskhashes from their content",
		       o->build_index, c.rep.default_taskhashes, c.n_files, (int)c.unindexed.len,
		       (const char *)c.unindexed.data, c.unindexed_more ? ", ..." : "");
	if (c.img && (r = eqg_pub_image(&c, err)))
		goto out;
	bool check_paths = true;
#ifdef EQ_TEST_HOOKS
	/* Test hook: a hostile release (two packages, one path) for the device's tests. */
	check_paths = !secure_getenv("EQ_TEST_PUBLISH_UNCHECKED");
#endif
	if (check_paths && (r = eq_path_table_check(c.paths, path_note, NULL, err)))
		goto out;
	r = finish(&c, err);
out:
	return hand_over(&c, r, t0, ret);
}

/* ---- promote ---------------------------------------------------------- */

/* Phase "work" of a promotion: deltas only, the objects are there. */
static void promote_one(struct eqg_pub *c, struct eqg_prep *p)
{
	/* The object is signed anew: it must be the one its name says. */
	p->r = check_object(c, p->pub.object_sha256, &p->err);
	if (p->r)
		p->r = eq_error_prefix(&p->err, p->r, "package '%s' is not promoted", p->in.name);
	else
		p->r = make_deltas(c, p, &p->err);
}

/*
 * The trust a promotion checks its source against: the newest root's
 * release role, or without a root the public halves (NAME.pub beside each
 * NAME.key) of the keys that sign the promoted release. *ret_root is the
 * root when there is one (the caller frees it), *ret_trust otherwise.
 */
static eq_err source_trust(const struct eq_promote_opts *o, struct eq_root **ret_root,
			   struct eq_manifest_trust **ret_trust, struct eq_error *err)
{
	eq_err r = eq_gen_root_newest(o->repo, o->trusted_root, ret_root, err);
	if (r != EQ_ERR_NOTFOUND)
		return r;
	char *pubs[EQ_MANIFEST_MAX_SIGNATURES] = {NULL};
	size_t n = 0;
	r = EQ_OK;
	for (size_t i = 0; i < o->n_keys && i < EQ_MANIFEST_MAX_SIGNATURES; i++, n++) {
		size_t len = strlen(o->key_paths[i]);
		bool dot_key = len > 4 && !strcmp(o->key_paths[i] + len - 4, ".key");
		pubs[i] = eq_asprintf("%.*s.pub", (int)(dot_key ? len - 4 : len), o->key_paths[i]);
		if (!pubs[i]) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
	}
	if (!r && (r = eq_manifest_trust_from_pubkeys((const char *const *)pubs, n, 1, ret_trust, err)))
		eq_error_prefix(err, r,
				"no root in the repository, so the source release is checked against the public "
				"keys beside the signing keys");
	for (size_t i = 0; i < EQ_MANIFEST_MAX_SIGNATURES; i++)
		eq_free(pubs[i]);
	return r;
}

/*
 * Whether one of the keys that sign the promotion (@o->key_paths) has a
 * valid signature on the source bytes: the release role may list other
 * keys (a CI key, a colleague's), and a promotion re-signs only what this
 * signer published. @role is the trust the source was verified against.
 */
static eq_err signed_by_own_key(const struct eq_promote_opts *o, const struct eq_manifest_trust *role, const uint8_t *d,
				size_t dl, const uint8_t *s, size_t sl, struct eq_error *err)
{
	char ids[EQ_MANIFEST_MAX_SIGNATURES][EQ_MANIFEST_KEYID_LEN + 1];
	size_t n = 0;
	eq_err r = EQ_OK;
	for (; n < o->n_keys && n < EQ_MANIFEST_MAX_SIGNATURES; n++) {
		struct eq_manifest_key *k = NULL;
		if ((r = eq_manifest_key_load(o->key_paths[n], &k, err)))
			return r;
		snprintf(ids[n], sizeof(ids[n]), "%s", eq_manifest_key_id(k));
		eq_manifest_key_free(k);
	}
	/* The role narrowed to the signer's own keys, any one of them enough. */
	struct eq_manifest_trust *own = NULL;
	if ((r = eq_manifest_trust_copy(role, NULL, 1, &own, NULL, err)))
		return r;
	for (size_t i = eq_manifest_trust_key_count(role); !r && i-- > 0;) {
		const char *id = eq_manifest_trust_keyid(role, i);
		bool mine = false;
		for (size_t k = 0; k < n && !mine; k++)
			mine = !strcmp(ids[k], id);
		struct eq_manifest_trust *next = NULL;
		if (mine)
			continue;
		if ((r = eq_manifest_trust_copy(own, id, 1, &next, NULL, err)) == EQ_ERR_STATE)
			r = eq_error_set(
				err, EQ_ERR_VERIFY,
				"none of the keys given (--key) is in the release role the source is checked against");
		eq_manifest_trust_free(own);
		own = next;
	}
	if (!r && (r = eq_manifest_verify(d, dl, s, sl, own, err)))
		eq_error_prefix(err, r,
				"not signed by the key given (--key %s): promote re-signs only a release its "
				"signer published",
				o->key_paths[0]);
	eq_manifest_trust_free(own);
	return r;
}

/*
 * The release to promote, checked as the devices of its channel check it
 * (signatures, board, channel, number; not its expiry: an old testing
 * release may be promoted), so that nothing its channel's devices would
 * refuse gets signed anew; and signed by the promoting key itself.
 */
static eq_err load_source(const struct eq_promote_opts *o, struct eq_manifest **ret, struct eq_error *err)
{
	struct eqg_history h;
	eq_err r = eqg_history_open(o->repo, o->board, o->from_channel, &h, err);
	if (r)
		return r;
	uint64_t number = 0;
	for (size_t i = 0; i < h.n_releases; i++) {
		enum eq_release_match m = eq_manifest_release_match(h.names[i], h.numbers[i], o->release);
		if (m == EQ_RELEASE_BY_NAME || (m == EQ_RELEASE_BY_NUMBER && !number))
			number = h.numbers[i];
		if (m == EQ_RELEASE_BY_NAME)
			break;
	}
	eqg_history_done(&h);
	if (!number)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "no release '%s' in %s/%s", o->release, o->board,
				    o->from_channel);
	EQ_AUTOFREE char *path = NULL;
	if ((r = eq_layout_release(o->repo, o->board, o->from_channel, number, EQ_LAYOUT_MANIFEST, &path, err)))
		return r;
	struct eq_root *root = NULL;
	struct eq_manifest_trust *trust = NULL;
	if ((r = source_trust(o, &root, &trust, err)))
		return r;
	const struct eq_manifest_trust *role = root ? eq_root_role(root, EQ_ROLE_RELEASE) : trust;
	struct eq_manifest_policy pol = {.board = o->board, .channel = o->from_channel, .number = number};
	uint8_t *d = NULL, *s = NULL;
	size_t dl = 0, sl = 0;
	/* One read: the bytes checked twice are the bytes promoted. */
	r = eq_signed_file_read(path, EQ_MANIFEST_MAX_BYTES, &d, &dl, &s, &sl, err);
	struct eq_manifest *m = NULL;
	if (!r && ((r = eq_manifest_load_verified(d, dl, s, sl, role, &pol, &m, err)) ||
		   (r = signed_by_own_key(o, role, d, dl, s, sl, err))))
		eq_error_prefix(err, r, "%s", path);
	if (r) {
		eq_manifest_free(m);
		eq_error_prefix(err, r, "release '%s' of %s/%s is not promoted", o->release, o->board, o->from_channel);
	} else {
		*ret = m;
	}
	eq_free(d);
	eq_free(s);
	eq_root_free(root);
	eq_manifest_trust_free(trust);
	return r;
}

/* Fills @p with package @mp of the source release; its object must be in
 * the repository. */
static eq_err promote_prep(struct eqg_pub *c, const struct eq_manifest_package *mp, struct eqg_prep *p,
			   struct eq_error *err)
{
	p->in.name = eq_strdup(mp->name);
	p->in.version = eq_strdup(mp->version);
	p->in.arch = eq_strdup(mp->arch);
	if (!p->in.name || !p->in.version || !p->in.arch)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	snprintf(p->taskhash, sizeof(p->taskhash), "%s", mp->taskhash);
	snprintf(p->pub.payload_sha256, sizeof(p->pub.payload_sha256), "%s", mp->payload.sha256);
	snprintf(p->pub.object_sha256, sizeof(p->pub.object_sha256), "%s", mp->object.sha256);
	p->pub.payload_size = mp->payload.size;
	p->pub.object_size = mp->object.size;
	p->state = EQ_PUB_REUSED;
	EQ_AUTOFREE char *obj = eq_asprintf("%s/%s", c->o->repo, mp->object.path);
	if (!obj)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (!file_has_size(obj, mp->object.size))
		return eq_error_set(err, EQ_ERR_NOTFOUND, "package '%s': %s is missing or not %" PRIu64 " bytes",
				    mp->name, obj, mp->object.size);
	return EQ_OK;
}

/* Enters a promoted package: the source's entry with the target
 * channel's deltas. */
static eq_err promote_enter(struct eqg_pub *c, const struct eq_manifest_package *src, struct eqg_prep *p,
			    struct eq_publish_pkg *out, struct eq_error *err)
{
	struct eq_manifest_package mp = *src;
	mp.deltas = p->dl.v;
	mp.n_deltas = p->dl.n;
	eq_err r = eq_manifest_add_package(c->m, &mp, err);
	if (r)
		return r;
	c->rep.deltas_written += p->st.deltas_written;
	c->rep.bytes_written += p->st.bytes_written;
	out->state = EQ_PUB_REUSED;
	out->equivalent = strcmp(src->unihash, src->taskhash) != 0;
	c->rep.equivalent += out->equivalent;
	out->name = eq_strdup(src->name);
	out->version = eq_strdup(src->version);
	return out->name && out->version ? EQ_OK : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
}

/* Packages [first, first + k) of @src: checked, their deltas made on the
 * threads, entered in order; the first failure in package order is the one
 * reported. The caller clears @batch. */
static eq_err promote_batch(struct eqg_pub *c, const struct eq_manifest *src, size_t first, size_t k,
			    struct eqg_prep *batch, struct eq_error *err)
{
	eq_err r;
	for (size_t i = 0; i < k; i++)
		if ((r = promote_prep(c, eq_manifest_package_at(src, first + i), &batch[i], err)))
			return r;
	eqg_pub_run_parallel(c, batch, k, promote_one);
	for (size_t i = 0; i < k; i++) {
		if (batch[i].r) {
			*err = batch[i].err;
			return batch[i].r;
		}
		if ((r = promote_enter(c, eq_manifest_package_at(src, first + i), &batch[i], &c->rep.pkgs[first + i],
				       err)))
			return r;
	}
	return EQ_OK;
}

eq_err eq_gen_promote(const struct eq_promote_opts *po, struct eq_publish_report *ret, struct eq_error *err)
{
	if (!po->repo || !po->board || !po->from_channel || !po->to_channel || !po->release)
		return eq_error_set(err, EQ_ERR_INVAL,
				    "promote: repo, board, both channels and the release are needed");
	if (!strcmp(po->from_channel, po->to_channel))
		return eq_error_set(err, EQ_ERR_INVAL,
				    "promote: '%s' is both the source and the target channel (to publish a release "
				    "again on its channel, use publish)",
				    po->from_channel);
	double t0 = eq_now_s();
	struct eq_manifest *src = NULL;
	eq_err r = load_source(po, &src, err);
	if (r)
		return r;
	struct eq_manifest_header sh;
	if ((r = eq_manifest_get_header(src, &sh, err))) {
		eq_manifest_free(src);
		return r;
	}
	struct eq_publish_opts o = {.repo = po->repo,
				    .board = po->board,
				    .channel = po->to_channel,
				    .release = sh.release,
				    .key_paths = po->key_paths,
				    .n_keys = po->n_keys,
				    .deltas_from = po->deltas_from,
				    .expires_days = po->expires_days,
				    .level = po->level,
				    .jobs = po->jobs,
				    .trusted_root = po->trusted_root};
	struct eqg_pub c = {.o = &o, .lock_fd = -1};
	eq_buf_init(&c.unindexed, 16);
	size_t n = eq_manifest_package_count(src);
	struct eqg_prep *batch = eq_calloc(PUBLISH_BATCH, sizeof(*batch));
	if (!batch) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((r = prepare_common(&c, err)) || (r = set_header(&c, err)))
		goto out;
	c.rep.n_packages = n;
	c.rep.pkgs = eq_calloc(n ? n : 1, sizeof(*c.rep.pkgs));
	if (!c.rep.pkgs) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t first = 0; first < n; first += PUBLISH_BATCH) {
		size_t k = n - first < PUBLISH_BATCH ? n - first : PUBLISH_BATCH;
		r = promote_batch(&c, src, first, k, batch, err);
		for (size_t i = 0; i < PUBLISH_BATCH; i++)
			eqg_prep_done(&batch[i]);
		if (r)
			break;
	}
	if (!r)
		r = finish(&c, err);
out:
	eq_free(batch);
	eq_manifest_free(src);
	return hand_over(&c, r, t0, ret);
}
