#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <eq/gen.h>

#include "gen_priv.h"

/* Earlier manifests a device may hold, which get a manifest delta. */
#define MANIFEST_DELTAS 4u

/* One file beside the channel's manifest: its compressed form (@oldp NULL)
 * or its delta from the older manifest @oldp. */
struct companion {
	char *oldp, *out;
	eq_err r;
	struct eq_error err;
};

struct companions {
	const uint8_t *json;
	size_t json_len;
	const char *newp; /* the same bytes in the release folder, for deltas */
	struct companion *v;
	size_t n, next;
	pthread_mutex_t mu;
};

static void companion_make(struct companions *w, struct companion *j)
{
	struct eq_buf z;
	eq_buf_init(&z, EQ_MANIFEST_MAX_BYTES);
	eq_error_clear(&j->err);
	if (!j->oldp) {
		struct eq_mem_src in = {w->json, w->json_len, 0};
		j->r = eq_object_compress(eq_mem_read, &in, eq_buf_write, &z, 19, &j->err);
	} else {
		struct eq_delta_params p;
		eq_delta_params_default(&p);
		p.methods = 1u << EQ_DELTA_METHOD_ZSTD;
		p.exec_filter = false;
		p.deflate = false;
		p.max_window_log = 0;
		j->r = eq_delta_create(j->oldp, w->newp, &p, eq_buf_write, &z, NULL, &j->err);
	}
	if (!j->r)
		j->r = eq_file_replace_atomic(j->out, z.data, z.len, 0644, &j->err);
	eq_buf_done(&z);
}

static void *companion_worker(void *arg)
{
	struct companions *w = arg;
	for (;;) {
		pthread_mutex_lock(&w->mu);
		size_t i = w->next++;
		pthread_mutex_unlock(&w->mu);
		if (i >= w->n)
			return NULL;
		companion_make(w, &w->v[i]);
	}
}

/*
 * What saves devices most of the manifest download, beside the manifest in
 * @dir: manifest.json.zst, and manifest-deltas/<old sha256>-<new sha256>
 * .delta from each of the last MANIFEST_DELTAS earlier releases' manifests
 * (method 0 deltas: zstd with the old manifest as prefix). Devices check
 * what they rebuild against the timestamp's hash (docs/manifest-format.md).
 * Level 19 on a 5,000-package manifest takes about a second per file, the
 * bulk of a republish; every byte saved is fetched by the whole fleet, so
 * the files are made at once on the host's cores rather than at a lower
 * level.
 */
eq_err eqg_manifest_companions(const char *repo, const char *board, const char *channel,
			       const struct eq_repo_history *hist, const char *dir, const char *rdir,
			       const uint8_t *json, size_t json_len, struct eq_error *err)
{
	struct companion v[1 + MANIFEST_DELTAS];
	struct companions w = {.json = json, .json_len = json_len, .v = v};
	memset(v, 0, sizeof(v));
	EQ_AUTOFREE char *ddir = eq_asprintf("%s/manifest-deltas", dir);
	EQ_AUTOFREE char *newp = eq_asprintf("%s/manifest.json", rdir);
	eq_err r = !ddir || !newp ? eq_error_set(err, EQ_ERR_NOMEM, "out of memory") : EQ_OK;
	w.newp = newp;
	if (!r && !(v[w.n++].out = eq_asprintf("%s/manifest.json.zst", dir)))
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (!r)
		r = eq_mkdir_p(ddir, 0755, err);
	uint8_t h[EQ_SHA256_LEN];
	char to[EQ_SHA256_HEX_LEN + 1];
	eq_sha256(json, json_len, h);
	eq_hex_encode(h, sizeof(h), to);
	for (size_t k = hist->n; !r && k-- > 0 && w.n < 1 + MANIFEST_DELTAS;) {
		char *oldp = eq_asprintf("%s/boards/%s/%s/releases/%" PRIu64 "/manifest.json", repo, board, channel, hist->v[k].number);
		char from[EQ_SHA256_HEX_LEN + 1];
		if (!oldp) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			break;
		}
		if (eq_sha256_file(oldp, h, NULL, NULL) != EQ_OK) {
			eq_free(oldp); /* an old release's folder pruned: no delta from it */
			continue;
		}
		eq_hex_encode(h, sizeof(h), from);
		v[w.n].oldp = oldp;
		if (!(v[w.n++].out = eq_asprintf("%s/%s-%s.delta", ddir, from, to)))
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	if (!r) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		size_t nt = cpus > 1 ? (size_t)cpus - 1 : 0;
		pthread_t th[MANIFEST_DELTAS];
		size_t started = 0;
		if (nt > w.n - 1)
			nt = w.n - 1;
		pthread_mutex_init(&w.mu, NULL);
		/* A thread that cannot start leaves its share to this one. */
		while (started < nt && pthread_create(&th[started], NULL, companion_worker, &w) == 0)
			started++;
		companion_worker(&w);
		for (size_t i = 0; i < started; i++)
			pthread_join(th[i], NULL);
		pthread_mutex_destroy(&w.mu);
		for (size_t i = 0; !r && i < w.n; i++)
			if ((r = v[i].r) && err)
				*err = v[i].err;
	}
	for (size_t i = 0; i < w.n; i++) {
		eq_free(v[i].oldp);
		eq_free(v[i].out);
	}
	if (r)
		eq_error_prefix(err, r, "compressed manifest and manifest deltas in '%s'", dir);
	return r;
}

