#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <eq/gen.h>

#include "gen_priv.h"


/* Everything one publish run holds open; released by ctx_done(). */
struct pub_ctx {
	const struct eq_publish_opts *o;
	char *tmpdir;
	int lock_fd;
	struct eq_repo_history hist;
	struct eq_equiv *equiv;
	struct eq_build_index *index;
	struct eq_path_table *paths; /* who ships which path (gen_conflict.c) */
	struct eq_buf unindexed;     /* names the build index does not list */
	bool unindexed_more;         /* ... and more than fit */
	struct eq_manifest *m;
	struct eq_publish_report rep;
	char **files;
	size_t n_files;
};

static void ctx_done(struct pub_ctx *c)
{
	if (c->tmpdir) {
		/* Best effort: a left-over .tmp-* folder is harmless and named. */
		if (eq_rm_rf(c->tmpdir, NULL) != EQ_OK)
			eq_log(EQ_LOG_DEBUG, "cannot remove '%s'", c->tmpdir);
		eq_free(c->tmpdir);
	}
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	eq_repo_history_done(&c->hist);
	eq_equiv_close(c->equiv);
	eq_build_index_free(c->index);
	eq_path_table_free(c->paths);
	eq_buf_done(&c->unindexed);
	eq_manifest_free(c->m);
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
	memset(r, 0, sizeof(*r));
}

/* A temporary file in the run's private folder; *ret_path is malloc'ed. */
static eq_err tmp_file(struct pub_ctx *c, const char *what, int *ret_fd, char **ret_path, struct eq_error *err)
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

/* Moves @tmp to @dest unless @dest already holds the same content-addressed
 * file (another publisher got there first: same name, same bytes). */
static eq_err install_file(const char *tmp, const char *dest, struct eq_error *err)
{
	if (link(tmp, dest) != 0 && errno != EEXIST)
		return eq_error_errno(err, EQ_ERR_IO, "cannot create '%s'", dest);
	(void)unlink(tmp);
	return EQ_OK;
}

/* Compresses payload file @payload into objects/; fills object sha/size. */
static eq_err write_object(struct pub_ctx *c, const char *payload, struct eq_store_published *pub, struct eq_error *err)
{
	int in = open(payload, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", payload);
	int out;
	EQ_AUTOFREE char *tmp = NULL;
	eq_err r = tmp_file(c, "object", &out, &tmp, err);
	if (r) {
		close(in);
		return r;
	}
	struct hash_sink hs = {.fd = out};
	eq_sha256_init(&hs.sha);
	r = eq_object_compress(eq_fd_read, &in, hash_sink_write, &hs, c->o->level, err);
	uint8_t sha[EQ_SHA256_LEN];
	eq_sha256_final(&hs.sha, sha);
	close(in);
	if (close(out) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot write '%s'", tmp);
	if (r)
		return r;
	eq_hex_encode(sha, EQ_SHA256_LEN, pub->object_sha256);
	pub->object_size = hs.n;
	EQ_AUTOFREE char *dest = eq_asprintf("%s/objects/%s", c->o->repo, pub->object_sha256);
	if (!dest)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	r = install_file(tmp, dest, err);
	if (!r) {
		c->rep.objects_written++;
		c->rep.bytes_written += hs.n;
	}
	return r;
}

/* Decompresses objects/<sha> into a new temporary payload file. */
static eq_err object_to_payload(struct pub_ctx *c, const char *object_sha, uint64_t payload_size, char **ret_path,
				struct eq_error *err)
{
	EQ_AUTOFREE char *src = eq_asprintf("%s/objects/%s", c->o->repo, object_sha);
	if (!src)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot open object '%s'",
				      src);
	int out;
	char *tmp = NULL;
	eq_err r = tmp_file(c, "ref", &out, &tmp, err);
	if (r) {
		close(in);
		return r;
	}
	r = eq_object_decompress(eq_fd_read, &in, eq_fd_write, &out, payload_size, 0, err);
	close(in);
	if (close(out) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot write '%s'", tmp);
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
#define DELTA_LOOKBACK 32u

struct delta_list {
	struct eq_manifest_delta v[EQ_MANIFEST_MAX_DELTAS];
	size_t n;
};

/*
 * Offers deltas to @to_path from the package's older payloads, newest
 * first: for the last N distinct ones (N = --deltas-from; republished
 * releases with the same payload count once, so a republish never pushes a
 * version out) the delta is made if it does not exist yet; from any older
 * payload it is offered when it already exists in the repository (made for
 * an earlier release with the same new payload, e.g. before a republish).
 * A delta is kept only when it is clearly smaller than the full object (at
 * most 80 %): otherwise the device is better off with the object, which
 * needs no reference in memory.
 */
static eq_err make_deltas(struct pub_ctx *c, const char *name, const char *to_sha, const char *to_path,
			  uint64_t object_size, struct delta_list *dl, struct eq_error *err)
{
	if (c->o->deltas_from == 0)
		return EQ_OK;
	/* Older payloads looked at, newest first; the walk ends after this
	 * many, so long histories cost no more. */
	const char *seen_v[DELTA_LOOKBACK];
	size_t distinct = 0;
	for (size_t k = c->hist.n; k-- > 0 && dl->n < EQ_MANIFEST_MAX_DELTAS && distinct < DELTA_LOOKBACK;) {
		const struct eq_manifest_package *old = eq_manifest_find_package(c->hist.v[k].m, name);
		if (!old || !strcmp(old->payload.sha256, to_sha))
			continue;
		bool seen = false;
		for (size_t i = 0; i < distinct && !seen; i++)
			seen = !strcmp(seen_v[i], old->payload.sha256);
		if (seen)
			continue;
		seen_v[distinct] = old->payload.sha256;
		bool make = distinct++ < c->o->deltas_from;
		struct eq_manifest_delta d = {0};
		snprintf(d.from, sizeof(d.from), "%s", old->payload.sha256);
		snprintf(d.path, sizeof(d.path), "deltas/%s-%s", old->payload.sha256, to_sha);
		EQ_AUTOFREE char *dest = eq_asprintf("%s/%s", c->o->repo, d.path);
		if (!dest)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		uint8_t sha[EQ_SHA256_LEN];
		uint64_t size;
		if (eq_sha256_file(dest, sha, &size, NULL) == EQ_OK) {
			eq_hex_encode(sha, EQ_SHA256_LEN, d.sha256);
			d.size = size;
			dl->v[dl->n++] = d;
			continue;
		}
		if (!make)
			continue;
		EQ_AUTOFREE char *ref = NULL;
		eq_err r = object_to_payload(c, old->object.sha256, old->payload.size, &ref, err);
		if (r == EQ_ERR_NOTFOUND) {
			/* An old object pruned from the repository: no delta from it. */
			continue;
		}
		if (r)
			return eq_error_prefix(err, r, "delta for '%s'", name);
		int out;
		EQ_AUTOFREE char *tmp = NULL;
		r = tmp_file(c, "delta", &out, &tmp, err);
		if (r) {
			(void)unlink(ref);
			return r;
		}
		struct eq_delta_params p;
		eq_delta_params_default(&p);
		p.level = c->o->level;
		struct hash_sink hs = {.fd = out};
		eq_sha256_init(&hs.sha);
		r = eq_delta_create(ref, to_path, &p, hash_sink_write, &hs, &size, err);
		eq_sha256_final(&hs.sha, sha);
		(void)unlink(ref);
		if (close(out) != 0 && !r)
			r = eq_error_errno(err, EQ_ERR_IO, "cannot write '%s'", tmp);
		if (r)
			return eq_error_prefix(err, r, "delta for '%s'", name);
		if (hs.n * 10 > object_size * 8) {
			(void)unlink(tmp);
			continue;
		}
		eq_hex_encode(sha, EQ_SHA256_LEN, d.sha256);
		d.size = hs.n;
		r = install_file(tmp, dest, err);
		if (r)
			return r;
		c->rep.deltas_written++;
		c->rep.bytes_written += hs.n;
		dl->v[dl->n++] = d;
	}
	return EQ_OK;
}

/* Special files listed in a warning or an error, at most this many. */
#define SPECIAL_LIST_MAX 8

/*
 * Runs the device's path rules over the payload in file @path (what devices
 * will extract), so a package every device would refuse is refused here,
 * naming the entry; then applies the policy to setuid/setgid files and
 * device nodes. @what names the package in messages.
 */
static eq_err check_payload(struct pub_ctx *c, const char *path, const char *what, struct eq_error *err)
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
	if (f.n_special) {
		char list[1024] = "";
		size_t len = 0;
		for (size_t i = 0; i < f.n_special && i < SPECIAL_LIST_MAX && len < sizeof(list); i++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s'%s'", i ? ", " : "", f.special[i]);
		const char *more = f.n_special > SPECIAL_LIST_MAX ? ", ..." : "";
		if (c->o->policy == EQ_POLICY_STRICT)
			r = eq_error_set(err, EQ_ERR_UNSAFE,
					 "refused by --policy strict: %zu setuid/setgid files or device nodes: %s%s",
					 f.n_special, list, more);
		else
			eq_log(EQ_LOG_WARNING, "%s: %zu setuid/setgid files or device nodes: %s%s, continuing", what,
			       f.n_special, list, more);
	}
	eq_payload_findings_done(&f);
	return r;
}

/* One package between reading and its unihash: the report of a whole batch
 * is one round of messages to a hashserv instead of one per package. */
struct prep {
	const char *file; /* borrowed from pub_ctx.files */
	struct eq_pkg *pkg;
	char *payload; /* temporary payload file */
	uint64_t psize;
	char outhash[EQ_SHA256_HEX_LEN + 1];
	char taskhash[EQ_SHA256_HEX_LEN + 1];
};

/* Packages read ahead before their unihashes are asked for. The payloads
 * of a batch wait on disk, so this also bounds the temporary space. */
#define PUBLISH_BATCH 64

static void prep_done(struct prep *p)
{
	if (p->payload) {
		(void)unlink(p->payload);
		eq_free(p->payload);
	}
	eq_pkg_free(p->pkg);
	memset(p, 0, sizeof(*p));
}

/* Names of packages the build index does not list, for one warning. */
static eq_err note_unindexed(struct pub_ctx *c, const char *name, struct eq_error *err)
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

/* Reads the package, writes and checks its payload, finds its taskhash. */
static eq_err prepare_one(struct pub_ctx *c, const char *file, struct prep *p, struct eq_error *err)
{
	p->file = file;
	eq_err r = eq_pkg_read(file, NULL, &p->pkg, err);
	if (r)
		return r;
	const struct eq_pkg_info *info = eq_pkg_get_info(p->pkg);
	if ((r = eq_path_table_apply(c->paths, info->name, eq_pkg_get_builder(p->pkg), NULL, err)))
		return r;
	int pfd = -1;
	r = tmp_file(c, "payload", &pfd, &p->payload, err);
	if (r)
		return r;
	uint8_t psha[EQ_SHA256_LEN];
	r = eq_pkg_write_payload(p->pkg, eq_fd_write, &pfd, psha, &p->psize, err);
	close(pfd);
	if (!r)
		r = check_payload(c, p->payload, file, err);
	if (r)
		return r;
	eq_hex_encode(psha, EQ_SHA256_LEN, p->outhash);
	const char *t = c->index ? eq_build_index_lookup(c->index, info->name) : NULL;
	if (t) {
		snprintf(p->taskhash, sizeof(p->taskhash), "%s", t);
		return eq_path_table_taskhash(c->paths, info->name, p->taskhash, err);
	}
	/* Packages from outside the build (a vendor's .deb, a prebuilt
	 * firmware tarball) are normal in a release: their content decides. */
	eq_pkg_default_taskhash(info, psha, p->taskhash);
	return c->index ? note_unindexed(c, info->name, err) : EQ_OK;
}

/* Publishes a prepared package whose unihash is known. */
static eq_err finish_one(struct pub_ctx *c, struct prep *p, const char *unihash, struct eq_publish_pkg *out,
			 struct eq_error *err)
{
	const struct eq_pkg_info *info = eq_pkg_get_info(p->pkg);
	EQ_AUTOFREE char *stored_payload = NULL;
	struct eq_store_published pub = {0};
	snprintf(pub.payload_sha256, sizeof(pub.payload_sha256), "%s", p->outhash);
	pub.payload_size = p->psize;
	struct eq_store_published known;
	bool same_package = false;
	eq_err r = eq_equiv_get_published(c->equiv, EQ_PAYLOAD_METHOD, unihash, info->name, &known, &same_package, err);
	const char *target = p->payload;
	out->state = EQ_PUB_REUSED;
	if (r == EQ_OK && strcmp(known.payload_sha256, p->outhash)) {
		/* Another package's bytes must never go out under this name:
		 * that happens when two packages were given one taskhash. */
		if (!same_package) {
			r = eq_error_set(
				err, EQ_ERR_STATE,
				"package '%s' (taskhash %s) has unihash %s, which was published with the "
				"payload of another package: two packages were given one taskhash. Give every "
				"package its own taskhash (for Yocto: hash the recipe's unihash with the package "
				"name, docs/yocto.md)",
				info->name, p->taskhash, unihash);
			goto out;
		}
		/* Same inputs, other bytes: keep serving what devices may already
		 * run, as BitBake reuses the sstate object of a unihash. */
		out->state = EQ_PUB_NOT_REPRODUCIBLE;
		c->rep.not_reproducible++;
		pub = known;
		r = object_to_payload(c, known.object_sha256, known.payload_size, &stored_payload, err);
		if (r) {
			eq_error_prefix(err, r,
					"package '%s' is not reproducible and the object published for its unihash",
					info->name);
			goto out;
		}
		/* What devices get is the stored payload: it passes the rules
		 * too, or nothing is published (it may predate them). */
		r = check_payload(c, stored_payload, p->file, err);
		if (r) {
			eq_error_prefix(err, r, "the payload published earlier for package '%s'", info->name);
			goto out;
		}
		target = stored_payload;
	} else if (r == EQ_OK) {
		pub = known;
		EQ_AUTOFREE char *obj = eq_asprintf("%s/objects/%s", c->o->repo, known.object_sha256);
		if (!obj) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			goto out;
		}
		if (!file_has_size(obj, known.object_size)) {
			/* Known to the store but not in this repository: write it here. */
			r = write_object(c, p->payload, &pub, err);
			if (r)
				goto out;
			out->state = EQ_PUB_NEW;
		}
	} else if (r == EQ_ERR_NOTFOUND) {
		r = write_object(c, p->payload, &pub, err);
		if (r)
			goto out;
		struct eq_store_published winner;
		bool inserted;
		r = eq_equiv_set_published(c->equiv, EQ_PAYLOAD_METHOD, unihash, info->name, &pub, &winner, &inserted,
					   err);
		if (r)
			goto out;
		out->state = EQ_PUB_NEW;
		if (!inserted && strcmp(winner.payload_sha256, pub.payload_sha256)) {
			r = eq_error_set(
				err, EQ_ERR_STATE,
				"unihash of '%s' was published with other bytes by a concurrent run; publish again",
				info->name);
			goto out;
		}
	} else {
		goto out;
	}

	r = eq_path_table_add(c->paths, info->name, p->file, target, err);
	if (r)
		goto out;
	struct delta_list dl = {.n = 0};
	r = make_deltas(c, info->name, pub.payload_sha256, target, pub.object_size, &dl, err);
	if (r)
		goto out;

	struct eq_manifest_package mp = {
		.name = info->name,
		.version = info->version,
		.arch = info->arch,
		.payload = {.size = pub.payload_size},
		.object = {.size = pub.object_size},
		.deltas = dl.v,
		.n_deltas = dl.n,
	};
	snprintf(mp.taskhash, sizeof(mp.taskhash), "%s", p->taskhash);
	snprintf(mp.unihash, sizeof(mp.unihash), "%s", unihash);
	snprintf(mp.payload.sha256, sizeof(mp.payload.sha256), "%s", pub.payload_sha256);
	snprintf(mp.object.sha256, sizeof(mp.object.sha256), "%s", pub.object_sha256);
	snprintf(mp.object.path, sizeof(mp.object.path), "objects/%s", pub.object_sha256);
	r = eq_manifest_add_package(c->m, &mp, err);
	if (r)
		goto out;
	out->equivalent = strcmp(unihash, p->taskhash) != 0;
	c->rep.equivalent += out->equivalent;
	out->name = eq_strdup(info->name);
	out->version = eq_strdup(info->version);
	if (!out->name || !out->version)
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
out:
	if (stored_payload)
		(void)unlink(stored_payload);
	return r;
}

/* Publishes files [first, first + n) of the run: read them all, report
 * them in one call, then write objects, deltas and manifest entries. */
static eq_err publish_batch(struct pub_ctx *c, size_t first, size_t n, struct eq_progress *pr, double t0,
			    struct eq_error *err)
{
	struct prep p[PUBLISH_BATCH] = {0};
	struct eq_equiv_item items[PUBLISH_BATCH] = {0};
	size_t failed = first;
	eq_err r = EQ_OK;
	for (size_t i = 0; i < n && !r; i++) {
		failed = first + i;
		r = prepare_one(c, c->files[first + i], &p[i], err);
		if (r)
			break;
		const struct eq_pkg_info *info = eq_pkg_get_info(p[i].pkg);
		items[i] = (struct eq_equiv_item){
			.taskhash = p[i].taskhash, .outhash = p[i].outhash, .pn = info->name, .pv = info->version};
	}
	if (!r) {
		r = eq_equiv_report_many(c->equiv, EQ_PAYLOAD_METHOD, items, n, err);
		if (r) /* the message names the store or server */
			failed = SIZE_MAX;
	}
	for (size_t i = 0; i < n && !r; i++) {
		failed = first + i;
		struct stat st;
		const char *base = strrchr(p[i].file, '/');
		pr->item = base ? base + 1 : p[i].file;
		if (stat(p[i].file, &st) == 0)
			pr->bytes_done += (uint64_t)st.st_size;
		r = finish_one(c, &p[i], items[i].unihash, &c->rep.pkgs[first + i], err);
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
		prep_done(&p[i]);
	return r;
}

/* Lines of eq_path_table_check(): every shared path, before the error. */
static void path_note(void *ctx, bool error, const char *msg)
{
	(void)ctx;
	eq_log(error ? EQ_LOG_ERR : EQ_LOG_WARNING, "%s", msg);
}

static eq_err write_manifest(struct pub_ctx *c, struct eq_error *err)
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
	if (!r)
		r = eq_manifest_sign(json, json_len, (const struct eq_manifest_key *const *)keys, o->n_keys, &sig,
				     &sig_len, err);
	/* A repository with a root: devices accept only a manifest signed by
	 * its release role, so nothing else is published. */
	if (!r) {
		struct eq_root *root = NULL;
		r = eq_gen_root_newest(o->repo, &root, err);
		if (r == EQ_ERR_NOTFOUND) {
			r = EQ_OK;
		} else if (!r) {
			struct eq_root_info info;
			eq_root_get_info(root, &info);
			if ((r = eq_manifest_verify(json, json_len, sig, sig_len, eq_root_role(root, EQ_ROLE_RELEASE),
						    err)))
				eq_error_prefix(
					err, r,
					"the keys given (--key) do not meet the release role of root version %" PRIu64
					"; the release is not published",
					info.version);
			eq_root_free(root);
		}
	}
	EQ_AUTOFREE char *rdir =
		eq_asprintf("%s/boards/%s/%s/releases/%" PRIu64, o->repo, o->board, o->channel, c->rep.number);
	if (!r && !rdir)
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (!r)
		r = eq_mkdir_p(rdir, 0755, err);
	/* The release folder first, then the current pointer; the signature is
	 * written before the manifest so a reader that sees the new manifest
	 * finds its signature (a CDN may still serve a mixed pair briefly: the
	 * device then refuses and retries). */
	const char *dirs[2] = {rdir, NULL};
	EQ_AUTOFREE char *cur = eq_asprintf("%s/boards/%s/%s", o->repo, o->board, o->channel);
	dirs[1] = cur;
	for (int i = 0; i < 2 && !r; i++) {
		EQ_AUTOFREE char *mp = eq_asprintf("%s/manifest.json", dirs[i]);
		EQ_AUTOFREE char *sp = eq_asprintf("%s/manifest.json.sig", dirs[i]);
		if (!mp || !sp) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
		r = eq_file_replace_atomic(sp, sig, sig_len, 0644, err);
		if (!r)
			r = eq_file_replace_atomic(mp, json, json_len, 0644, err);
		/* The channel's: what devices fetch before the full manifest. */
		if (!r && i == 1)
			r = eqg_manifest_companions(o->repo, o->board, o->channel, &c->hist, dirs[i], rdir, json,
						    json_len, err);
		/* Last, the pointer legacy-mode devices poll: whoever sees the new
		 * hash finds the manifest, its delta and compressed form in place. */
		if (!r && i == 1) {
			uint8_t h[EQ_SHA256_LEN];
			char line[EQ_SHA256_HEX_LEN + 2];
			EQ_AUTOFREE char *pp = eq_asprintf("%s/manifest.json.sha256", dirs[i]);
			eq_sha256(json, json_len, h);
			eq_hex_encode(h, sizeof(h), line);
			line[EQ_SHA256_HEX_LEN] = '\n';
			line[EQ_SHA256_HEX_LEN + 1] = '\0';
			r = pp ? eq_file_replace_atomic(pp, line, EQ_SHA256_HEX_LEN + 1, 0644, err)
			       : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		}
	}
	for (size_t i = 0; i < o->n_keys; i++)
		eq_manifest_key_free(keys[i]);
	eq_free(json);
	eq_free(sig);
	return r;
}

static eq_err prepare(struct pub_ctx *c, struct eq_error *err)
{
	const struct eq_publish_opts *o = c->o;
	eq_err r;
	const char *sub[] = {"objects", "deltas"};
	for (size_t i = 0; i < 2; i++) {
		EQ_AUTOFREE char *p = eq_asprintf("%s/%s", o->repo, sub[i]);
		if (!p)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		if ((r = eq_mkdir_p(p, 0755, err)))
			return r;
	}
	EQ_AUTOFREE char *bdir = eq_asprintf("%s/boards/%s/%s", o->repo, o->board, o->channel);
	EQ_AUTOFREE char *lock = eq_asprintf("%s/.publish.lock", o->repo);
	if (!bdir || !lock)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if ((r = eq_mkdir_p(bdir, 0755, err)))
		return r;
	/* One publisher per repository at a time; the store is shared safely
	 * by itself, the release numbering is not. */
	c->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (c->lock_fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", lock);
	if (flock(c->lock_fd, LOCK_EX) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot lock '%s'", lock);
	c->tmpdir = eq_asprintf("%s/.tmp-XXXXXX", o->repo);
	if (!c->tmpdir)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (!mkdtemp(c->tmpdir)) {
		r = eq_error_errno(err, EQ_ERR_IO, "cannot create '%s'", c->tmpdir);
		eq_free(c->tmpdir);
		c->tmpdir = NULL;
		return r;
	}
	if ((r = eq_repo_history_load(o->repo, o->board, o->channel, &c->hist, err)))
		return r;
	for (size_t i = 0; i < c->hist.n; i++)
		if (!strcmp(c->hist.v[i].release, o->release))
			return eq_error_set(err, EQ_ERR_STATE,
					    "release '%s' is already published for %s/%s as number %" PRIu64,
					    o->release, o->board, o->channel, c->hist.v[i].number);
	if (o->build_index && (r = eq_build_index_load(o->build_index, &c->index, err)))
		return r;
	if ((r = eq_path_table_new(o->path_owners, o->n_path_owners, o->path_owners_file, &c->paths, err)))
		return r;
	struct eq_equiv_opts eo = {.store_path = o->store_path, .hashserv = o->hashserv, .repo = o->repo};
	if ((r = eq_equiv_open(&eo, &c->equiv, err)))
		return r;
	if ((r = eq_gen_list_packages(o->packages_dir, &c->files, &c->n_files, err)))
		return r;
	if (c->n_files == 0)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "no packages (.deb .ipk .rpm .tar.*) in '%s'",
				    o->packages_dir);
	if ((r = eq_manifest_new(&c->m, err)))
		return r;
	return EQ_OK;
}

eq_err eq_gen_publish(const struct eq_publish_opts *o, struct eq_publish_report *ret, struct eq_error *err)
{
	struct pub_ctx c = {.o = o, .lock_fd = -1};
	eq_buf_init(&c.unindexed, 4096);
	double t0 = eq_now_s();
	eq_err r = prepare(&c, err);
	if (r)
		goto out;
	c.rep.number = c.hist.n ? c.hist.v[c.hist.n - 1].number + 1 : 1;
	time_t now = time(NULL);
	struct eq_manifest_header h = {
		.board = o->board,
		.channel = o->channel,
		.release = o->release,
		.number = c.rep.number,
		.issued = (int64_t)now,
		.expires = (int64_t)now + (int64_t)(o->expires_days ? o->expires_days : 30) * 86400,
	};
	if ((r = eq_manifest_set_header(c.m, &h, err)))
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
	bool check_paths = true;
#ifdef EQ_TEST_HOOKS
	/* Test hook: a hostile release (two packages, one path) for the device's tests. */
	check_paths = !secure_getenv("EQ_TEST_PUBLISH_UNCHECKED");
#endif
	if (check_paths && (r = eq_path_table_check(c.paths, path_note, NULL, err)))
		goto out;
	r = write_manifest(&c, err);
out:
	c.rep.seconds = eq_now_s() - t0;
	if (r)
		eq_publish_report_done(&c.rep);
	else
		*ret = c.rep;
	ctx_done(&c);
	return r;
}
