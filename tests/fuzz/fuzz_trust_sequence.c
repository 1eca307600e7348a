/*
 * Decision fuzzer of the timestamp and root acceptance rules: the input is
 * a sequence of steps (serve one of a pool of timestamps and refresh,
 * publish the next root, move the clock, reboot) played against one
 * device. Every document is signed once at start-up: the pool holds
 * timestamps of chosen versions, issue and expiry times by the leaked key
 * T1 and by its successor T2; the root chain is 1 (timestamp role T1),
 * then either 2a (T2) or 2b (only the release role changes) and 3b (T2).
 *
 * Invariants (abort on a wrong decision):
 *   - the stored timestamp is the one it was, or the one just served,
 *     and then signed by the timestamp role of the device's root;
 *   - versions never go down while the timestamp role stays the same;
 *   - a timestamp issued more than EQ_TIMESTAMP_MAX_AHEAD after a set
 *     clock is never taken;
 *   - a root that changes the timestamp role leaves no timestamp of the
 *     old role behind, and then (the recovery, at the end of every input)
 *     a genuine timestamp of the new role is accepted, whatever the
 *     sequence made the device accept before; a reboot keeps it.
 */
#define FT_NAME "fuzz_trust_sequence"
#include "fuzz_trust_repo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct entry {
	struct ft_doc doc;
	uint64_t version;
	int64_t issued, expires;
	int signer; /* FT_T1 or FT_T2 */
};

static const uint64_t VERSIONS[] = {1, 2, 5, 9, EQ_MANIFEST_NUMBER_MAX - 1, EQ_MANIFEST_NUMBER_MAX};
static const int64_t ISSUED[] = {FT_T0, FT_T0 + 12 * FT_HOUR, FT_T0 + FT_DAY + FT_HOUR, FT_T0 + 3 * FT_DAY, FT_9999};
#define N_V (sizeof(VERSIONS) / sizeof(VERSIONS[0]))
#define N_I (sizeof(ISSUED) / sizeof(ISSUED[0]))
#define N_POOL (N_V * N_I * 2 * 2)
static struct entry pool[N_POOL];
static size_t n_pool;
static const int64_t CLOCKS[] = {0,
				 FT_T0 + FT_HOUR,
				 FT_T0 + FT_DAY + 2 * FT_HOUR,
				 FT_T0 + 3 * FT_DAY,
				 FT_T0 + 5 * FT_DAY,
				 FT_T0 - FT_DAY,
				 FT_9999 + FT_HOUR,
				 FT_T0 + 2 * FT_DAY};
#define N_CLOCKS (sizeof(CLOCKS) / sizeof(CLOCKS[0]))

enum { ROOT1, ROOT2A, ROOT2B, ROOT3B, N_ROOTS };
static struct ft_doc roots[N_ROOTS], manifest;
static const uint64_t ROOT_VERSION[N_ROOTS] = {1, 2, 2, 3};
static const int ROOT_TS_ROLE[N_ROOTS] = {FT_T1, FT_T2, FT_T1, FT_T2};
static const int64_t ROOT_ISSUED[N_ROOTS] = {FT_T0, FT_T0 + FT_DAY, FT_T0 + FT_DAY, FT_T0 + 2 * FT_DAY};
static struct entry recovery;
#define RECOVERY_AT (FT_T0 + 4 * FT_DAY)

static void init(void)
{
	ft_init();
	unsigned r1 = FT_BIT(FT_R1), k1 = FT_BIT(FT_K1), k12 = k1 | FT_BIT(FT_K2);
	for (int i = 0; i < N_ROOTS; i++)
		roots[i] = ft_root(ROOT_VERSION[i], ROOT_ISSUED[i], r1, i >= ROOT2B ? k12 : k1, FT_BIT(ROOT_TS_ROLE[i]),
				   r1);
	manifest = ft_manifest(1, k1);
	ft_install(&roots[ROOT1]);
	/* The successor key T2 is the operator's: its timestamps keep to small
	 * versions and issue times before the recovery's. */
	for (size_t v = 0; v < N_V; v++)
		for (size_t i = 0; i < N_I; i++)
			for (int life = 0; life < 2; life++)
				for (int s = 0; s < 2; s++) {
					int signer = s ? FT_T2 : FT_T1;
					if (signer == FT_T2 && (VERSIONS[v] > 9 || ISSUED[i] > FT_T0 + 3 * FT_DAY))
						continue;
					struct entry *en = &pool[n_pool++];
					en->version = VERSIONS[v];
					en->issued = ISSUED[i];
					en->expires = en->issued + (life ? 30 * FT_DAY : FT_HOUR);
					if (en->expires > FT_9999 + 2 * FT_DAY)
						en->expires = FT_9999 + 2 * FT_DAY;
					en->signer = signer;
					en->doc = ft_timestamp(en->version, en->issued, en->expires, &manifest, 1,
							       FT_BIT(signer));
				}
	recovery.version = 1000;
	recovery.issued = RECOVERY_AT - FT_HOUR;
	recovery.expires = RECOVERY_AT + FT_DAY;
	recovery.signer = FT_T2;
	recovery.doc = ft_timestamp(recovery.version, recovery.issued, recovery.expires, &manifest, 1, FT_BIT(FT_T2));
}

struct run {
	struct ft_repo repo;
	int chain[3]; /* the roots published, by version */
	size_t n_chain;
	const struct entry *served;
	int64_t clock;
	struct eq_trust *t;
};

static int device_root(const struct run *run)
{
	uint64_t v = ft_root_version(run->t);
	ft_check(v >= 1 && v <= run->n_chain, "the device's root is one of the chain");
	return run->chain[v - 1];
}

static bool same_ts(const struct eq_timestamp *a, const struct eq_timestamp *b)
{
	return a->version == b->version && a->issued == b->issued && a->expires == b->expires;
}

static bool is_entry(const struct eq_timestamp *ts, const struct entry *en)
{
	return en && ts->version == en->version && ts->issued == en->issued && ts->expires == en->expires;
}

static eq_err refresh(struct run *run)
{
	struct eq_timestamp before = *eq_trust_timestamp(run->t);
	int role_before = ROOT_TS_ROLE[device_root(run)];
	struct eq_trust_result res;
	struct eq_error e;
	eq_err r = eq_trust_refresh(run->t, ft_fetch, &run->repo, "b1", "stable", run->clock, &res, &e);
	if (r == EQ_OK) {
		ft_check(res.manifest_len == manifest.dl && memcmp(res.manifest, manifest.d, manifest.dl) == 0,
			 "the genuine manifest");
		eq_trust_result_done(&res);
	}
	int root = device_root(run);
	int role = ROOT_TS_ROLE[root];
	const struct eq_timestamp *now = eq_trust_timestamp(run->t);
	if (r == EQ_OK)
		ft_check(now->version != 0, "a refresh that succeeds holds a timestamp");
	if (now->version == 0)
		return r;
	bool kept = same_ts(now, &before) && role == role_before;
	bool taken = is_entry(now, run->served) && run->served->signer == role;
	ft_check(kept || taken,
		 "the stored timestamp is the one it was, or the one served, signed by the current role");
	if (role == role_before && before.version)
		ft_check(now->version >= before.version, "timestamp versions never go down within one timestamp role");
	if (taken && !kept && run->clock >= ROOT_ISSUED[root])
		ft_check(now->issued <= run->clock + EQ_TIMESTAMP_MAX_AHEAD,
			 "no timestamp issued far after a set clock is taken");
	return r;
}

static void publish_root(struct run *run, int which)
{
	if (run->n_chain == 3 || (run->n_chain == 2 && run->chain[1] != ROOT2B))
		return;
	int next = run->n_chain == 2 ? ROOT3B : which ? ROOT2B : ROOT2A;
	static const char *const paths[] = {"root/1.root.json", "root/2.root.json", "root/3.root.json"};
	ft_repo_set(&run->repo, paths[run->n_chain], &roots[next]);
	run->chain[run->n_chain++] = next;
}

static void reboot(struct run *run)
{
	struct eq_timestamp before = *eq_trust_timestamp(run->t);
	uint64_t v = ft_root_version(run->t);
	eq_trust_free(run->t);
	run->t = ft_open();
	ft_check(ft_root_version(run->t) == v, "a reboot keeps the root");
	ft_check(same_ts(eq_trust_timestamp(run->t), &before), "a reboot keeps the timestamp");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		init();
		ready = true;
	}
	ft_wipe();
	struct run run;
	memset(&run, 0, sizeof(run));
	run.chain[run.n_chain++] = ROOT1;
	ft_repo_set(&run.repo, "root/1.root.json", &roots[ROOT1]);
	ft_repo_set(&run.repo, FT_MANIFEST_PATH, &manifest);
	run.clock = FT_T0 + FT_HOUR;
	run.t = ft_open();
	for (size_t i = 0, steps = 0; i < size && steps < 16; i++, steps++) {
		uint8_t b = data[i];
		switch (b & 7) {
		case 0:
		case 1:
		case 2:
		case 3:
			if (++i >= size)
				break;
			run.served = &pool[data[i] % n_pool];
			ft_repo_set(&run.repo, FT_TS_PATH, &run.served->doc);
			(void)refresh(&run);
			break;
		case 4: publish_root(&run, (b >> 3) & 1); break;
		case 5: run.clock = CLOCKS[(b >> 3) % N_CLOCKS]; break;
		case 6: reboot(&run); break;
		default:
			if (run.served)
				(void)refresh(&run);
			break;
		}
	}
	/* The recovery: the operator rotates the timestamp role (if the chain
	 * has not yet) and signs a timestamp with the new key. */
	if (ROOT_TS_ROLE[run.chain[run.n_chain - 1]] != FT_T2)
		publish_root(&run, 0);
	ft_check(ROOT_TS_ROLE[run.chain[run.n_chain - 1]] == FT_T2, "the chain ends in a rotation");
	run.served = &recovery;
	ft_repo_set(&run.repo, FT_TS_PATH, &recovery.doc);
	run.clock = RECOVERY_AT;
	eq_err r = refresh(&run);
	ft_check(r == EQ_OK, "after a rotation of the timestamp role, its genuine timestamp is accepted");
	ft_check(eq_trust_timestamp(run.t)->version == recovery.version, "the recovery's timestamp is stored");
	reboot(&run);
	eq_trust_free(run.t);
	return 0;
}
