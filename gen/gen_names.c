/*
 * A set of byte strings numbered in the order added (gen_priv.h): the fleet
 * summary's board/channel pairs, releases, reasons and device identities,
 * all chosen by whoever wrote the report file. A linear search per line
 * made 40,000 distinct channels take seconds and a million take hours
 * (issue 29, finding 6); this keeps each lookup O(1) on average.
 *
 * The hash is seeded per set from the clock and the set's address: not a
 * keyed PRF like SipHash, but the names are capped (@max), so even a
 * file built to collide costs at most max^2/2 comparisons, not hours.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen_priv.h"

static uint64_t hash(uint64_t seed, const unsigned char *p, size_t len)
{
	uint64_t h = seed ^ (len * UINT64_C(0x9e3779b97f4a7c15));
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= UINT64_C(0x100000001b3);
		h ^= h >> 29;
	}
	h ^= h >> 32;
	h *= UINT64_C(0xd6e8feb86659fd93);
	return h ^ (h >> 32);
}

void eqg_names_init(struct eqg_names *t, size_t max)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
	struct timespec ts;
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	t->seed = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)t;
}

void eqg_names_done(struct eqg_names *t)
{
	for (size_t i = 0; i < t->n; i++)
		eq_free(t->keys[i]);
	eq_free(t->keys);
	eq_free(t->lens);
	eq_free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* The slot of @key: where it is, or the empty one where it would go. */
static size_t slot_of(const struct eqg_names *t, const void *key, size_t len)
{
	size_t mask = t->n_slots - 1;
	for (size_t s = (size_t)hash(t->seed, key, len) & mask;; s = (s + 1) & mask) {
		uint32_t v = t->slots[s];
		if (!v || (t->lens[v - 1] == len && !memcmp(t->keys[v - 1], key, len)))
			return s;
	}
}

bool eqg_names_find(const struct eqg_names *t, const void *key, size_t len, uint32_t *ret)
{
	if (!t->n_slots)
		return false;
	uint32_t v = t->slots[slot_of(t, key, len)];
	if (!v)
		return false;
	*ret = v - 1;
	return true;
}

/* Doubles the slots (kept at most half full) and places every key again. */
static eq_err grow(struct eqg_names *t, struct eq_error *err)
{
	size_t ns = t->n_slots ? t->n_slots * 2 : 64;
	uint32_t *nv = eq_calloc(ns, sizeof(*nv));
	if (!nv)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	eq_free(t->slots);
	t->slots = nv;
	t->n_slots = ns;
	for (size_t i = 0; i < t->n; i++)
		t->slots[slot_of(t, t->keys[i], t->lens[i])] = (uint32_t)i + 1;
	return EQ_OK;
}

eq_err eqg_names_add(struct eqg_names *t, const void *key, size_t len, uint32_t *ret, struct eq_error *err)
{
	if (eqg_names_find(t, key, len, ret))
		return EQ_OK;
	if (t->n >= t->max)
		return eq_error_set(err, EQ_ERR_LIMIT, "more than %zu", t->max);
	if ((t->n + 1) * 2 > t->n_slots && grow(t, err))
		return EQ_ERR_NOMEM;
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 16;
		char **nk = eq_realloc(t->keys, nc * sizeof(*nk));
		if (nk)
			t->keys = nk;
		size_t *nl = nk ? eq_realloc(t->lens, nc * sizeof(*nl)) : NULL;
		if (!nl)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		t->lens = nl;
		t->cap = nc;
	}
	char *k = eq_malloc(len + 1);
	if (!k)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	memcpy(k, key, len);
	k[len] = '\0';
	t->keys[t->n] = k;
	t->lens[t->n] = len;
	t->slots[slot_of(t, key, len)] = (uint32_t)t->n + 1;
	*ret = (uint32_t)t->n++;
	return EQ_OK;
}
