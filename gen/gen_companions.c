/*
 * The files beside a channel's manifest.json that save devices most of its
 * download: manifest.json.zst and the manifest deltas
 * (docs/manifest-format.md, docs/internals/manifest.md).
 */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include <eq/repo_layout.h>

#include "gen_priv.h"

/* Earlier manifests a device may hold, which get a manifest delta. */
#define MANIFEST_DELTAS 4u

/* manifest.json.zst is fetched only by devices without a usable delta, so
 * its frames stay at the strongest non-ultra level: they are made once and
 * then copied by every republish that leaves their packages alone. */
#define ZST_LEVEL 19

/*
 * The level of the manifest deltas, which nearly every device fetches, so
 * their size counts before the publisher's time. Measured on bench/scale.sh
 * releases of 5,000 packages (manifest 3.2 MB), eq_delta_create() on one
 * core (above level 9 it includes its filter trial at level 9):
 *
 *   level   republish (header only)   2 % of packages changed
 *     3        543 B   0.02 s           24,589 B   0.02 s
 *     9        459 B   0.04 s           22,417 B   0.04 s
 *    12        458 B   0.09 s           22,133 B   0.10 s
 *    15        458 B   0.48 s           21,936 B   0.48 s
 *    16        411 B   0.41 s           18,490 B   0.50 s
 *    17        408 B   0.73 s           18,513 B   0.91 s
 *    19        408 B   0.80 s           18,239 B   0.99 s
 *
 * One package changed (of 5,000): 1,994 B at level 9, 1,605 B at 16, 1,544 B
 * at 19; ten (0.2 %): 3,140, 2,479 and 2,438 B.
 *
 * Level 16 is the first with zstd's optimal parser (btopt): within 1.4 to 4 %
 * of level 19 at half its time or less; below it deltas grow by a fifth or
 * more. A delta is first made at DELTA_FAST_LEVEL and kept when under
 * DELTA_SMALL bytes: then only the header changed (one changed package
 * already gives 2 KB), level 16 would save some 50 bytes, fewer than the
 * headers of the request, and a republish's four deltas cost 0.16 s
 * instead of 2 s of CPU.
 */
#define DELTA_LEVEL 16
#define DELTA_FAST_LEVEL 9
#define DELTA_SMALL 1024u

/*
 * manifest.json.zst is a run of zstd frames, one per chunk of packages, so
 * that a republish copies the frames of chunks whose bytes did not change.
 * A chunk ends before a package whose name hashes to CHUNK_CUT_MASK bits of
 * zero once it holds CHUNK_MIN bytes, so inserting, removing or changing a
 * package moves no cut but its neighbours'; at CHUNK_MAX a cut is forced.
 * At about 640 bytes a package, chunks average some 210 KB: 5,000 packages
 * (3.2 MB) give 16 frames, 1 % over one frame at level 19 (581,916 against
 * 575,946 bytes), and a republish reuses 15 of them.
 */
#define CHUNK_MIN ((size_t)128 * 1024)
#define CHUNK_MAX ((size_t)512 * 1024)
#define CHUNK_CUT_MASK 0x7fu
/* Far more frames than a file of ours holds (EQ_MANIFEST_MAX_BYTES /
 * CHUNK_MIN + 2): a previous file with more is not ours to reuse. */
#define OLD_FRAMES_MAX 1024u
/* Most threads the companions are made on. */
#define THREADS_MAX 16u

/* The manifest delta from the older manifest @oldp into file @out. */
struct mdelta {
	char *oldp, *out;
	eq_err r;
	struct eq_error err;
};

/* A chunk of the manifest and its frame: copied from the previous file
 * (@z points into it) or compressed into @made. */
struct chunk {
	size_t off, len;
	const uint8_t *z;
	size_t z_len;
	uint8_t *made;
	eq_err r;
	struct eq_error err;
};

/* The jobs of one run of the pool: the first @n_d_run deltas, then the
 * chunks listed in @todo. */
struct companions {
	const uint8_t *json;
	const char *newp; /* the same bytes in the release folder, for deltas */
	struct mdelta *d;
	size_t n_d, n_d_run;
	struct chunk *c;
	size_t n_c;
	size_t *todo;
	size_t n_todo;
};

/* A frame of the previous manifest.json.zst and the hash of its content. */
struct old_frame {
	size_t off, z_len, len;
	uint8_t sha[EQ_SHA256_LEN];
};

struct old_zst {
	uint8_t *data;
	struct old_frame *f;
	size_t n;
};

static void delta_make(const struct companions *w, struct mdelta *j)
{
	struct eq_buf z;
	struct eq_delta_params p;
	eq_buf_init(&z, EQ_MANIFEST_MAX_BYTES);
	eq_error_clear(&j->err);
	eq_delta_params_default(&p);
	p.level = DELTA_FAST_LEVEL;
	p.methods = 1u << EQ_DELTA_METHOD_ZSTD;
	p.exec_filter = false;
	p.deflate = false;
	p.max_window_log = 0;
	j->r = eq_delta_create(j->oldp, w->newp, &p, eq_buf_write, &z, NULL, &j->err);
	if (!j->r && z.len >= DELTA_SMALL) {
		eq_buf_reset(&z);
		p.level = DELTA_LEVEL;
		j->r = eq_delta_create(j->oldp, w->newp, &p, eq_buf_write, &z, NULL, &j->err);
	}
	if (!j->r)
		j->r = eq_file_replace_atomic(j->out, z.data, z.len, 0644, &j->err);
	eq_buf_done(&z);
}

/* One frame with the content size and checksum, whose window stays within
 * what a device allocates for an object. */
static void chunk_compress(const uint8_t *json, struct chunk *c)
{
	size_t cap = ZSTD_compressBound(c->len);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	eq_error_clear(&c->err);
	eq_free(c->made);
	c->made = eq_malloc(cap);
	c->z = NULL;
	c->r = EQ_OK;
	if (!cc || !c->made) {
		c->r = eq_error_set(&c->err, EQ_ERR_NOMEM, "out of memory for the compressor");
		goto out;
	}
	size_t zr = ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, ZST_LEVEL);
	if (!ZSTD_isError(zr))
		zr = ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	if (!ZSTD_isError(zr))
		zr = ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, EQ_OBJECT_WINDOW_LOG);
	if (!ZSTD_isError(zr))
		zr = ZSTD_compress2(cc, c->made, cap, json + c->off, c->len);
	if (ZSTD_isError(zr)) {
		eq_err code = ZSTD_getErrorCode(zr) == ZSTD_error_memory_allocation ? EQ_ERR_NOMEM : EQ_ERR_STATE;
		c->r = eq_error_set(&c->err, code, "bytes %zu..%zu: zstd: %s", c->off, c->off + c->len,
				    ZSTD_getErrorName(zr));
		goto out;
	}
	c->z = c->made;
	c->z_len = zr;
out:
	ZSTD_freeCCtx(cc);
}

static void companion_job(void *ctx, size_t i)
{
	struct companions *w = ctx;
	if (i < w->n_d_run)
		delta_make(w, &w->d[i]);
	else
		chunk_compress(w->json, &w->c[w->todo[i - w->n_d_run]]);
}

/* Runs the jobs on up to one thread per core (at most THREADS_MAX). */
static void run_pool(struct companions *w)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nt = cpus > 1 ? (size_t)cpus : 1;
	eq_parallel(w->n_d_run + w->n_todo, nt < THREADS_MAX ? nt : THREADS_MAX, companion_job, w);
}

/* ---- cutting the manifest into chunks ------------------------------------ */

/* eq_manifest_to_json()'s layout: the array opens on a line of its own and
 * each package starts with the line "    {" and then its name. Nothing else
 * in the document is indented so (a delta is at 8 spaces, no string holds
 * a newline). */
static const char PKGS_OPEN[] = "\n  \"packages\": [\n";
static const char PKG_START[] = "\n    {\n      \"name\": \"";

static bool cut_before(const uint8_t *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ name[i]) * 0x100000001b3u;
	/* FNV's low bits follow the last byte closely (pkg00001, pkg00002):
	 * mix before taking bits. */
	h ^= h >> 32;
	h *= 0x9e3779b97f4a7c15u;
	return ((h >> 57) & CHUNK_CUT_MASK) == 0;
}

/*
 * Cuts @json into the header (up to the first package), chunks of packages
 * and the closing bytes with the last chunk; bytes that do not look like
 * eq_manifest_to_json()'s give one chunk, which is still correct. The cuts
 * only decide what can be reused, never the bytes a device gets.
 */
static eq_err cut_chunks(const uint8_t *json, size_t len, struct chunk **ret, size_t *ret_n, struct eq_error *err)
{
	/* Every chunk but the header and the last holds CHUNK_MIN bytes. */
	size_t cap = len / CHUNK_MIN + 3, n = 0;
	struct chunk *c = eq_calloc(cap, sizeof(*c));
	if (!c)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	const size_t ps_len = sizeof(PKG_START) - 1;
	const uint8_t *open = memmem(json, len, PKGS_OPEN, sizeof(PKGS_OPEN) - 1);
	size_t start = open ? (size_t)(open - json) + sizeof(PKGS_OPEN) - 1 : 0;
	/* The first package right after the array's opening line. */
	if (!open || len - start < ps_len || memcmp(json + start - 1, PKG_START, ps_len) != 0) {
		eq_log(EQ_LOG_DEBUG, "manifest: no package array where eq_manifest_to_json() puts it, one frame");
		c[0] = (struct chunk){.off = 0, .len = len};
		*ret = c;
		*ret_n = 1;
		return EQ_OK;
	}
	c[n++] = (struct chunk){.off = 0, .len = start};
	size_t from = start + 1; /* where to look for the next package's start */
	for (;;) {
		const uint8_t *m = from < len ? memmem(json + from, len - from, PKG_START, ps_len) : NULL;
		if (!m)
			break;
		size_t s = (size_t)(m - json) + 1, size = s - start;
		const uint8_t *name = m + ps_len;
		const uint8_t *q = memchr(name, '"', len - (size_t)(name - json));
		from = s + 1;
		if (size < CHUNK_MIN || !q)
			continue;
		if (size >= CHUNK_MAX || cut_before(name, (size_t)(q - name))) {
			assert(n + 1 < cap);
			c[n++] = (struct chunk){.off = start, .len = size};
			start = s;
		}
	}
	c[n++] = (struct chunk){.off = start, .len = len - start};
	*ret = c;
	*ret_n = n;
	return EQ_OK;
}

/* ---- the previous manifest.json.zst ---------------------------------------- */

static void old_zst_done(struct old_zst *o)
{
	eq_free(o->data);
	eq_free(o->f);
	*o = (struct old_zst){0};
}

/*
 * Reads the frames of the previous @path and hashes their content. The file
 * is only a cache of work done: anything odd in it (not zstd, truncated, a
 * frame without content size, more than a manifest's bytes) leaves @o empty
 * and costs a full compression, never an error.
 */
static void old_zst_load(const char *path, struct old_zst *o)
{
	const char *why = NULL;
	struct eq_error e;
	size_t len = 0, total = 0, pos = 0;
	uint8_t *buf = NULL;
	ZSTD_DCtx *dc = NULL;
	eq_err r = eq_file_read_all(path, ZSTD_compressBound(EQ_MANIFEST_MAX_BYTES), &o->data, &len, &e);
	if (r == EQ_ERR_NOTFOUND) {
		eq_log(EQ_LOG_DEBUG, "'%s': none yet, nothing to reuse", path);
		return;
	}
	if (r) {
		eq_log(EQ_LOG_DEBUG, "'%s': %s, nothing reused", path, eq_error_msg(&e));
		return;
	}
	o->f = eq_calloc(OLD_FRAMES_MAX, sizeof(*o->f));
	dc = ZSTD_createDCtx();
	if (!o->f || !dc) {
		why = "out of memory";
		goto out;
	}
	if (len == 0)
		why = "an empty file";
	while (!why && pos < len) {
		const uint8_t *p = o->data + pos;
		size_t fz = ZSTD_findFrameCompressedSize(p, len - pos);
		if (ZSTD_isError(fz)) {
			why = ZSTD_getErrorName(fz);
			goto out;
		}
		unsigned long long cs = ZSTD_getFrameContentSize(p, fz);
		if (o->n == OLD_FRAMES_MAX) {
			why = "too many frames";
		} else if (cs == ZSTD_CONTENTSIZE_UNKNOWN || cs == ZSTD_CONTENTSIZE_ERROR || cs == 0) {
			why = "a frame without content size (made by an older eqota-gen?)";
		} else if (cs > EQ_MANIFEST_MAX_BYTES - total) {
			why = "more content than a manifest may hold";
		} else if (fz > ZSTD_compressBound((size_t)cs)) {
			/* Padding a frame (empty blocks) would grow the file we
			 * assemble beyond any bound. */
			why = "a frame larger than its content needs";
		}
		if (why)
			goto out;
		eq_free(buf);
		if (!(buf = eq_malloc((size_t)cs))) {
			why = "out of memory";
			goto out;
		}
		/* One-shot into a buffer of the declared size: no window is
		 * allocated, and the checksum is verified. */
		size_t dz = ZSTD_decompressDCtx(dc, buf, (size_t)cs, p, fz);
		if (ZSTD_isError(dz) || dz != cs) {
			why = ZSTD_isError(dz) ? ZSTD_getErrorName(dz) : "content shorter than declared";
			goto out;
		}
		struct old_frame *f = &o->f[o->n++];
		f->off = pos;
		f->z_len = fz;
		f->len = (size_t)cs;
		eq_sha256(buf, f->len, f->sha);
		total += f->len;
		pos += fz;
	}
out:
	if (why) {
		eq_log(EQ_LOG_DEBUG, "'%s': frame %zu at byte %zu: %s, nothing reused", path, o->n, pos, why);
		old_zst_done(o);
	}
	eq_free(buf);
	ZSTD_freeDCtx(dc);
}

/* The previous frame holding exactly @len bytes of hash @sha, or NULL. */
static const struct old_frame *old_find(const struct old_zst *o, const uint8_t *data, size_t len)
{
	uint8_t sha[EQ_SHA256_LEN];
	if (o->n == 0)
		return NULL;
	eq_sha256(data, len, sha);
	for (size_t i = 0; i < o->n; i++)
		if (o->f[i].len == len && memcmp(o->f[i].sha, sha, sizeof(sha)) == 0)
			return &o->f[i];
	return NULL;
}

/* ---- assembling and checking ------------------------------------------------ */

/* A sink that accepts only the bytes of the manifest, in order. */
struct cmp_sink {
	const uint8_t *want;
	size_t len, pos;
};

static eq_err cmp_write(void *ctx, const void *data, size_t n, struct eq_error *err)
{
	struct cmp_sink *c = ctx;
	if (n > c->len - c->pos || memcmp(c->want + c->pos, data, n) != 0)
		return eq_error_set(err, EQ_ERR_VERIFY, "decompresses to other bytes than the manifest from byte %zu",
				    c->pos);
	c->pos += n;
	return EQ_OK;
}

/*
 * Joins the chunks' frames into a new buffer (caller frees) and decodes it
 * as a device does (eq_object_decompress()): EQ_ERR_VERIFY unless that
 * gives exactly @json.
 */
static eq_err assemble(const struct chunk *c, size_t n, const uint8_t *json, size_t json_len, uint8_t **ret,
		       size_t *ret_len, struct eq_error *err)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += c[i].z_len;
	uint8_t *z = eq_malloc(total ? total : 1);
	if (!z)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	for (size_t i = 0, at = 0; i < n; at += c[i].z_len, i++)
		memcpy(z + at, c[i].z, c[i].z_len);
	struct eq_mem_src in = {z, total, 0};
	struct cmp_sink cmp = {json, json_len, 0};
	eq_err r = eq_object_decompress(eq_mem_read, &in, cmp_write, &cmp, json_len, 0, err);
	if (!r && cmp.pos != json_len)
		r = eq_error_set(err, EQ_ERR_VERIFY, "decompresses to %zu bytes, the manifest has %zu", cmp.pos,
				 json_len);
	if (r) {
		eq_free(z);
		return r;
	}
	*ret = z;
	*ret_len = total;
	return EQ_OK;
}

/* First failure of the jobs of the last run, into @err. */
static eq_err jobs_result(const struct companions *w, struct eq_error *err)
{
	for (size_t i = 0; i < w->n_d_run; i++)
		if (w->d[i].r) {
			if (err)
				*err = w->d[i].err;
			return w->d[i].r;
		}
	for (size_t i = 0; i < w->n_todo; i++) {
		const struct chunk *c = &w->c[w->todo[i]];
		if (c->r) {
			if (err)
				*err = c->err;
			return c->r;
		}
	}
	return EQ_OK;
}

/*
 * What saves devices most of the manifest download, beside the channel's
 * manifest: manifest.json.zst, and manifest-deltas/<old sha256>-<new sha256>
 * .delta from each of the last MANIFEST_DELTAS earlier releases' manifests
 * (method 0 deltas: zstd with the old manifest as prefix). Devices check
 * what they rebuild against the timestamp's hash (docs/manifest-format.md).
 * Only the chunks of manifest.json.zst that changed since the file still in
 * the channel's folder are compressed; they and the deltas are made at once on the host's
 * cores.
 */
eq_err eqg_manifest_companions(const char *repo, const char *board, const char *channel, const struct eqg_history *hist,
			       uint64_t number, const uint8_t *json, size_t json_len, struct eq_error *err)
{
	double t0 = eq_now_s();
	struct mdelta d[MANIFEST_DELTAS];
	struct companions w = {.json = json, .d = d};
	struct old_zst old = {0};
	uint8_t *z = NULL;
	size_t z_len = 0, reused = 0;
	memset(d, 0, sizeof(d));
	EQ_AUTOFREE char *dir = NULL, *ddir = NULL, *newp = NULL, *zp = NULL;
	eq_err r;
	if (!(r = eq_layout_channel(repo, board, channel, EQ_LAYOUT_DIR, &dir, err)) &&
	    !(r = eq_layout_channel(repo, board, channel, EQ_LAYOUT_MANIFEST_DELTAS, &ddir, err)) &&
	    !(r = eq_layout_release(repo, board, channel, number, EQ_LAYOUT_MANIFEST, &newp, err)))
		r = eq_layout_channel(repo, board, channel, EQ_LAYOUT_MANIFEST_ZST, &zp, err);
	w.newp = newp;
	if (!r)
		r = eq_mkdir_p(ddir, 0755, err);
	uint8_t h[EQ_SHA256_LEN];
	char to[EQ_SHA256_HEX_LEN + 1];
	eq_sha256(json, json_len, h);
	eq_hex_encode(h, sizeof(h), to);
	for (size_t k = hist->n_releases; !r && k-- > 0 && w.n_d < MANIFEST_DELTAS;) {
		char *oldp = NULL;
		char from[EQ_SHA256_HEX_LEN + 1];
		if ((r = eq_layout_release(repo, board, channel, hist->numbers[k], EQ_LAYOUT_MANIFEST, &oldp, err)))
			break;
		if (eq_sha256_file(oldp, h, NULL, NULL) != EQ_OK) {
			eq_free(oldp); /* an old release's folder pruned: no delta from it */
			continue;
		}
		eq_hex_encode(h, sizeof(h), from);
		d[w.n_d].oldp = oldp;
		r = eq_layout_manifest_delta(repo, board, channel, from, to, &d[w.n_d++].out, err);
	}
	if (!r)
		r = cut_chunks(json, json_len, &w.c, &w.n_c, err);
	if (!r && !(w.todo = eq_calloc(w.n_c, sizeof(*w.todo))))
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (!r) {
		/* Still the previous release's: write_manifest() replaces it
		 * after this returns. */
		old_zst_load(zp, &old);
		for (size_t i = 0; i < w.n_c; i++) {
			const struct old_frame *f = old_find(&old, json + w.c[i].off, w.c[i].len);
#ifdef EQ_TEST_HOOKS
			/* A frame that passed every check but holds other bytes,
			 * for the test of the check below. */
			if (!f && old.n && secure_getenv("EQ_TEST_COMPANIONS_BAD_REUSE"))
				f = &old.f[0];
#endif
			if (f) {
				w.c[i].z = old.data + f->off;
				w.c[i].z_len = f->z_len;
				reused++;
			} else {
				w.todo[w.n_todo++] = i;
			}
		}
		w.n_d_run = w.n_d;
		run_pool(&w);
		r = jobs_result(&w, err);
	}
	if (!r) {
		struct eq_error e;
		/* A reused frame must never reach a device with other bytes than
		 * the manifest's: start over from the manifest alone. */
		if (reused && assemble(w.c, w.n_c, json, json_len, &z, &z_len, &e) != EQ_OK) {
			eq_log(EQ_LOG_DEBUG,
			       "'%s': the frames reused from the previous file: %s, compressing all afresh", zp,
			       eq_error_msg(&e));
			for (size_t i = 0; i < w.n_c; i++)
				w.todo[i] = i;
			w.n_todo = w.n_c;
			w.n_d_run = 0;
			reused = 0;
			run_pool(&w);
			r = jobs_result(&w, err);
		}
		if (!r && !reused)
			r = assemble(w.c, w.n_c, json, json_len, &z, &z_len, err);
	}
	if (!r)
		r = eq_file_replace_atomic(zp, z, z_len, 0644, err);
	if (!r)
		eq_log(EQ_LOG_DEBUG,
		       "'%s': %zu of %zu frames reused, %zu compressed, %zu bytes; %zu manifest deltas; %.2f s", zp,
		       reused, w.n_c, w.n_c - reused, z_len, w.n_d, eq_now_s() - t0);
	for (size_t i = 0; i < w.n_c; i++)
		eq_free(w.c[i].made);
	eq_free(w.c);
	eq_free(w.todo);
	eq_free(z);
	old_zst_done(&old);
	for (size_t i = 0; i < w.n_d; i++) {
		eq_free(d[i].oldp);
		eq_free(d[i].out);
	}
	if (r)
		eq_error_prefix(err, r, "compressed manifest and manifest deltas in '%s'", dir ? dir : repo);
	return r;
}
