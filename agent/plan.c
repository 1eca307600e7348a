/*
 * The install plan: what to do per package, decided from the two signed
 * manifests alone, so `eqota check` can report the download before anything
 * is fetched.
 */
#include <string.h>

#include <eq/agent.h>

#include "plan.h"

const char *eq_plan_action_name(enum eq_plan_action a)
{
	switch (a) {
	case EQ_PLAN_KEEP: return "keep";
	case EQ_PLAN_DELTA: return "delta";
	case EQ_PLAN_FULL: return "full";
	case EQ_PLAN_REMOVE: return "remove";
	}
	return "?";
}

/* Sizes are capped at 2^53 each but up to 100,000 of them are summed. */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void eq_plan_done(struct eq_plan *p)
{
	if (!p)
		return;
	eq_free(p->items);
	memset(p, 0, sizeof(*p));
}

static const struct eq_manifest_delta *find_delta(const struct eq_manifest_package *pkg,
						  const struct eq_manifest_package *old)
{
	for (size_t i = 0; i < pkg->n_deltas; i++)
		if (!strcmp(pkg->deltas[i].from, old->payload.sha256))
			return &pkg->deltas[i];
	return NULL;
}

eq_err eq_plan_make(const struct eq_manifest *running, const struct eq_manifest *next, struct eq_plan *ret,
		    struct eq_error *err)
{
	if (!next || !ret)
		return eq_error_set(err, EQ_ERR_INVAL, "plan: no manifest");
	size_t n_next = eq_manifest_package_count(next);
	size_t n_run = running ? eq_manifest_package_count(running) : 0;
	/* Both counts are capped by the manifest parser (100,000), so the sum
	 * cannot overflow. */
	struct eq_plan p = {0};
	p.items = eq_calloc((n_next + n_run) ? n_next + n_run : 1, sizeof(*p.items));
	if (!p.items)
		return eq_error_set(err, EQ_ERR_NOMEM, "plan: out of memory for %zu items", n_next + n_run);
	for (size_t i = 0; i < n_next; i++) {
		const struct eq_manifest_package *pkg = eq_manifest_package_at(next, i);
		const struct eq_manifest_package *old = running ? eq_manifest_find_package(running, pkg->name) : NULL;
		struct eq_plan_item *it = &p.items[p.n++];
		it->pkg = pkg;
		it->old = old;
		const struct eq_manifest_delta *d = old ? find_delta(pkg, old) : NULL;
		if (old && (!strcmp(old->unihash, pkg->unihash) || !strcmp(old->payload.sha256, pkg->payload.sha256))) {
			it->action = EQ_PLAN_KEEP;
		} else if (d && d->size < pkg->object.size) {
			it->action = EQ_PLAN_DELTA;
			it->delta = d;
			it->download = d->size;
		} else {
			it->action = EQ_PLAN_FULL;
			it->download = pkg->object.size;
		}
		p.count[it->action]++;
		p.download_bytes = add_sat(p.download_bytes, it->download);
		p.full_bytes = add_sat(p.full_bytes, pkg->object.size);
		p.install_bytes = add_sat(p.install_bytes, pkg->payload.size);
	}
	/* Removed packages go last so the installer walks the new release in
	 * manifest order without skipping. */
	for (size_t i = 0; i < n_run; i++) {
		const struct eq_manifest_package *old = eq_manifest_package_at(running, i);
		if (eq_manifest_find_package(next, old->name))
			continue;
		struct eq_plan_item *it = &p.items[p.n++];
		it->action = EQ_PLAN_REMOVE;
		it->old = old;
		p.count[EQ_PLAN_REMOVE]++;
	}
	*ret = p;
	return EQ_OK;
}
