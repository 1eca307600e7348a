/*
 * Decision fuzzer of the device's trust store: the input plants files in
 * <data>/trust (raw bytes, or genuine, forged and stale documents of the
 * pool below, each with one byte flipped or not), then the store is
 * opened, maybe refreshed against a hostile repository, and refreshed
 * against the genuine one. Root version 1 (root R1, release K1, timestamp
 * T1) is installed; the genuine repository has root version 2, which
 * rotates the timestamp role to T2 after T1 leaked, and a timestamp by T2.
 *
 * Invariants (abort on a wrong decision):
 *   - the store opens whatever the folder holds;
 *   - a refresh never accepts a manifest but the genuine one (signed by
 *     the release key K1), whatever the hostile repository serves;
 *   - the refresh against the genuine repository always succeeds, lands
 *     on root version 2 and its timestamp, whatever was planted (a
 *     timestamp of version 2^53 or issued in 9999 by the leaked T1
 *     included), and again after a reopen (a reboot).
 *
 * Input: byte 0 picks the clock and the hostile repository; then records
 * of [slot][kind] followed by, for kind < 0x80, [offset hi][offset lo]
 * [xor] (a pool document, one byte flipped when xor is not 0), else
 * [length][bytes] (raw). Slots: see SLOTS.
 */
#define FT_NAME "fuzz_trust_store"
#include "fuzz_trust_repo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const SLOTS[] = {"root/2.root.json",     "root/2.root.json.sig", "root/3.root.json",
				    "root/3.root.json.sig", "timestamp.json",       "timestamp.json.sig",
				    "root/1.root.json",     "root/1.root.json.sig"};
#define N_SLOTS (sizeof(SLOTS) / sizeof(SLOTS[0]))

enum {
	D_ROOT1,
	D_ROOT2,         /* genuine: timestamp role T2 */
	D_ROOT2_EVIL,    /* signed by R2 only: not by root 1's root role */
	D_MANIFEST,      /* genuine, K1 */
	D_MANIFEST_EVIL, /* the attacker's, K2 */
	D_TS,            /* the repository's: T2, version 10 */
	D_TS_OLD_T2,     /* an older genuine one: T2, version 3 */
	D_TS_OLD_T1,     /* from before the leak: T1, version 1 */
	D_TS_MAX_T1,     /* forged: T1, version 2^53 */
	D_TS_FUTURE_T1,  /* forged: T1, issued in 9999 */
	D_TS_EVIL_T1,    /* forged: T1, version 2^53, names the attacker's manifest */
	D_TS_WRONG_ROLE, /* signed by the release key */
	D_COUNT
};
static struct ft_doc docs[D_COUNT];
static struct ft_repo genuine, hostile[3];

static void init(void)
{
	ft_init();
	unsigned r1 = FT_BIT(FT_R1), k1 = FT_BIT(FT_K1), t1 = FT_BIT(FT_T1), t2 = FT_BIT(FT_T2);
	docs[D_ROOT1] = ft_root(1, FT_T0, r1, k1, t1, r1);
	docs[D_ROOT2] = ft_root(2, FT_T0 + FT_DAY, r1, k1, t2, r1);
	docs[D_ROOT2_EVIL] = ft_root(2, FT_T0 + FT_DAY, FT_BIT(FT_R2), FT_BIT(FT_K2), t1, FT_BIT(FT_R2));
	docs[D_MANIFEST] = ft_manifest(1, k1);
	docs[D_MANIFEST_EVIL] = ft_manifest(2, FT_BIT(FT_K2));
	const struct ft_doc *m = &docs[D_MANIFEST];
	docs[D_TS] = ft_timestamp(10, FT_T0 + FT_DAY, FT_T0 + FT_YEARS, m, 1, t2);
	docs[D_TS_OLD_T2] = ft_timestamp(3, FT_T0 + FT_DAY, FT_T0 + FT_YEARS, m, 1, t2);
	docs[D_TS_OLD_T1] = ft_timestamp(1, FT_T0, FT_T0 + FT_YEARS, m, 1, t1);
	docs[D_TS_MAX_T1] = ft_timestamp(EQ_MANIFEST_NUMBER_MAX, FT_T0, FT_T0 + FT_YEARS, m, 1, t1);
	docs[D_TS_FUTURE_T1] = ft_timestamp(5, FT_9999, FT_9999 + FT_DAY, m, 1, t1);
	docs[D_TS_EVIL_T1] =
		ft_timestamp(EQ_MANIFEST_NUMBER_MAX, FT_T0, FT_T0 + FT_YEARS, &docs[D_MANIFEST_EVIL], 2, t1);
	docs[D_TS_WRONG_ROLE] = ft_timestamp(EQ_MANIFEST_NUMBER_MAX, FT_T0, FT_T0 + FT_YEARS, m, 1, k1);
	ft_install(&docs[D_ROOT1]);

	ft_repo_set(&genuine, "root/1.root.json", &docs[D_ROOT1]);
	ft_repo_set(&genuine, "root/2.root.json", &docs[D_ROOT2]);
	ft_repo_set(&genuine, FT_MANIFEST_PATH, &docs[D_MANIFEST]);
	ft_repo_set(&genuine, FT_TS_PATH, &docs[D_TS]);
	/* the attacker hides root 2 and serves its own manifest, the genuine
	 * one with a forged timestamp, or a root 2 of its own */
	const int hts[3] = {D_TS_EVIL_T1, D_TS_MAX_T1, D_TS_FUTURE_T1};
	for (int i = 0; i < 3; i++) {
		ft_repo_set(&hostile[i], "root/1.root.json", &docs[D_ROOT1]);
		ft_repo_set(&hostile[i], FT_MANIFEST_PATH, &docs[i == 0 ? D_MANIFEST_EVIL : D_MANIFEST]);
		ft_repo_set(&hostile[i], FT_TS_PATH, &docs[hts[i]]);
	}
	ft_repo_set(&hostile[2], "root/2.root.json", &docs[D_ROOT2_EVIL]);
}

static void plant(const char *rel, const uint8_t *d, size_t len)
{
	char *p = eq_asprintf("%s/%s", ft_trust_dir, rel);
	struct eq_error e;
	/* a file the store cannot take is simply not planted */
	if (eq_file_replace_atomic(p, d, len, 0644, &e) != EQ_OK)
		fprintf(stderr, "%s: %s\n", FT_NAME, e.msg);
	eq_free(p);
}

/* One refresh; when it succeeds, the manifest must be the genuine one. */
static eq_err refresh(struct eq_trust *t, struct ft_repo *repo, int64_t clock)
{
	struct eq_trust_result res;
	struct eq_error e;
	eq_err r = eq_trust_refresh(t, ft_fetch, repo, "b1", "stable", clock, &res, &e);
	if (r == EQ_OK) {
		const struct ft_doc *m = &docs[D_MANIFEST];
		ft_check(res.manifest_len == m->dl && memcmp(res.manifest, m->d, m->dl) == 0,
			 "only the manifest signed by the genuine release key is accepted");
		eq_trust_result_done(&res);
	}
	return r;
}

static void genuine_refresh(struct eq_trust *t, int64_t clock)
{
	struct eq_error e;
	struct eq_trust_result res;
	eq_err r = eq_trust_refresh(t, ft_fetch, &genuine, "b1", "stable", clock, &res, &e);
	if (r != EQ_OK)
		fprintf(stderr, "%s: refresh: %s\n", FT_NAME, e.msg);
	ft_check(r == EQ_OK, "the genuine repository is always accepted");
	ft_check(res.manifest_len == docs[D_MANIFEST].dl &&
			 memcmp(res.manifest, docs[D_MANIFEST].d, res.manifest_len) == 0,
		 "the genuine manifest");
	eq_trust_result_done(&res);
	ft_check(ft_root_version(t) == 2, "root version 2 after the genuine refresh");
	ft_check(eq_trust_timestamp(t)->version == 10, "the genuine timestamp after the genuine refresh");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		init();
		ready = true;
	}
	if (size < 1)
		return 0;
	static const int64_t clocks[4] = {0, FT_T0 + FT_DAY + FT_HOUR, FT_T0 + 30 * FT_DAY, FT_T0 - FT_DAY};
	int64_t clock = clocks[data[0] & 3];
	unsigned hostile_pick = (data[0] >> 2) & 3; /* 3: none */
	ft_wipe();
	struct eq_error e;
	char *rd = eq_asprintf("%s/root", ft_trust_dir);
	ft_ok(eq_mkdir_p(rd, 0755, &e), &e, "mkdir");
	eq_free(rd);
	size_t i = 1;
	for (unsigned n = 0; n < 16 && i + 2 <= size; n++) {
		const char *slot = SLOTS[data[i] % N_SLOTS];
		bool sig = (data[i] % N_SLOTS) & 1;
		uint8_t kind = data[i + 1];
		i += 2;
		if (kind & 0x80) {
			if (i >= size)
				break;
			size_t len = data[i++];
			if (len > size - i)
				len = size - i;
			plant(slot, data + i, len);
			i += len;
			continue;
		}
		if (i + 3 > size)
			break;
		const struct ft_doc *doc = &docs[kind % D_COUNT];
		size_t off = ((size_t)data[i] << 8) | data[i + 1];
		uint8_t x = data[i + 2];
		i += 3;
		const uint8_t *src = sig ? doc->s : doc->d;
		size_t len = sig ? doc->sl : doc->dl;
		uint8_t *copy = eq_malloc(len);
		if (!copy)
			abort();
		memcpy(copy, src, len);
		if (x && len)
			copy[off % len] ^= x;
		plant(slot, copy, len);
		eq_free(copy);
	}

	struct eq_trust *t = ft_open();
	if (hostile_pick < 3)
		(void)refresh(t, &hostile[hostile_pick], clock);
	genuine_refresh(t, clock);
	eq_trust_free(t);
	/* a reboot: the store holds what it accepted */
	t = ft_open();
	ft_check(ft_root_version(t) == 2 && eq_trust_timestamp(t)->version == 10, "a reopened store keeps root 2 and "
										  "the timestamp");
	genuine_refresh(t, clock);
	eq_trust_free(t);
	return 0;
}
