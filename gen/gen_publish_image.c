/*
 * eqota-gen publish --image (docs/eqota-gen.md, "Image mode"): the image's
 * components go through the phases a package goes through (gen_publish.c,
 * struct eqg_prep) and the manifest gets its image (format 2).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <eq/gen_image.h>
#include <eq/gen_publish.h>

#include "gen_priv.h"

/* Component @ic's payload written to a temporary file and @p filled as the
 * read phase fills a package's (its taskhash is its payload's hash). */
static eq_err component_prep(struct eqg_pub *c, struct eq_image_component *ic, struct eqg_prep *p, struct eq_error *err)
{
	int fd = -1;
	eq_err r = eqg_pub_tmp_file(c, "payload", &fd, &p->payload, err);
	if (r)
		return r;
	r = eq_payload_builder_write(ic->b, eq_fd_write, &fd, p->in.payload_sha256, &p->in.payload_size, err);
	if (close(fd) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot write '%s'", p->payload);
	if (r)
		return r;
	eq_hex_encode(p->in.payload_sha256, EQ_SHA256_LEN, p->outhash);
	snprintf(p->taskhash, sizeof(p->taskhash), "%s", p->outhash);
	p->in.name = eq_strdup(ic->name);
	p->in.version = eq_asprintf("h%.12s", p->outhash);
	p->in.arch = eq_strdup("all");
	if (!p->in.name || !p->in.version || !p->in.arch)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if ((r = eqg_pub_scan_payload(p->payload, &p->in.special, err)) ||
	    (r = eqg_path_recs_read(p->payload, &p->in.recs, err)) ||
	    (r = eqg_pub_apply_policy(c, &p->in.special, ic->name, err)))
		return r;
	return eqg_pub_decide(c, p, p->outhash, err);
}

/* What a device one release behind fetches for component @p: nothing when
 * the previous release had this payload, else the delta from it, else the
 * object. */
static uint64_t update_bytes(struct eqg_pub *c, const struct eqg_prep *p, bool *ret_delta)
{
	*ret_delta = false;
	const struct eqg_hist_pkg *hp = eqg_history_find(&c->hist, p->in.name);
	if (!hp || !hp->n)
		return p->pub.object_size;
	if (!strcmp(hp->v[0].payload_sha256, p->pub.payload_sha256))
		return 0;
	for (size_t i = 0; i < p->dl.n; i++)
		if (!strcmp(p->dl.v[i].from, hp->v[0].payload_sha256)) {
			*ret_delta = true;
			return p->dl.v[i].size;
		}
	return p->pub.object_size;
}

/* The components as packages of the release, through the phases a package
 * goes through (object, deltas from the previous release's component of
 * the same name, store), and the manifest's image. */
static eq_err publish_components(struct eqg_pub *c, struct eq_image_components *ic, struct eq_error *err)
{
	size_t base = c->rep.n_packages, n = ic->n;
	struct eq_publish_pkg *pk = eq_realloc(c->rep.pkgs, (base + n + 1) * sizeof(*pk));
	struct eqg_prep *p = eq_calloc(n ? n : 1, sizeof(*p));
	if (pk) {
		c->rep.pkgs = pk;
		memset(pk + base, 0, (n + 1) * sizeof(*pk));
	}
	if (!pk || !p) {
		eq_free(p);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	eq_err r = EQ_OK;
	for (size_t i = 0; i < n && !r; i++) {
		eq_error_clear(&p[i].err);
		if ((r = component_prep(c, &ic->v[i], &p[i], err)))
			eq_error_prefix(err, r, "image component '%s'", ic->v[i].name);
	}
	if (!r)
		eqg_pub_run_parallel(c, p, n, eqg_pub_work);
	for (size_t i = 0; i < n && !r; i++) {
		if ((r = p[i].r)) {
			*err = p[i].err;
			eq_error_prefix(err, r, "image component '%s'", ic->v[i].name);
			break;
		}
		if ((r = eqg_pub_enter(c, &p[i], p[i].outhash, &c->rep.pkgs[base + i], err)))
			break;
		c->rep.n_packages = base + i + 1;
		bool delta;
		c->rep.component_payload_bytes += p[i].pub.payload_size;
		c->rep.component_object_bytes += p[i].pub.object_size;
		c->rep.component_update_bytes += update_bytes(c, &p[i], &delta);
		c->rep.component_deltas += delta;
	}
	c->rep.n_components = n;
	for (size_t i = 0; i < n; i++)
		eqg_prep_done(&p[i]);
	eq_free(p);
	if (r)
		return r;
	const char **names = eq_calloc(n ? n : 1, sizeof(*names));
	if (!names)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		names[i] = ic->v[i].name;
	struct eq_manifest_image mi = {
		.before = names,
		.n_before = ic->n_before,
		.after = names + ic->n_before,
		.n_after = n - ic->n_before,
		.replace = (const char *const *)ic->replace,
		.n_replace = ic->n_replace,
		.remove = (const char *const *)ic->remove,
		.n_remove = ic->n_remove,
	};
	r = eq_manifest_set_image(c->m, &mi, err);
	eq_free(names);
	return r;
}

/* Image mode, once every package is in: the components computed and
 * published, the manifest made format 2. */
eq_err eqg_pub_image(struct eqg_pub *c, struct eq_error *err)
{
	struct eq_image_summary sum;
	eq_image_classify(c->img, &sum);
	struct eq_image_compose_opts co = {.rootfs = c->o->image, .tmpdir = c->tmpdir, .devices = c->o->image_devices};
	struct eq_image_components *ic = NULL;
	eq_err r = eq_image_compose(c->img, &co, &ic, err);
	if (r)
		return r;
	c->rep.image = true;
	c->rep.image_entries = sum.entries;
	c->rep.image_from_packages = ic->from_packages;
	c->rep.image_from_image = ic->from_image;
	r = publish_components(c, ic, err);
	eq_image_components_free(ic);
	return r;
}
