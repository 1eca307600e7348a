#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <eq/agent.h>

#include "agent_priv.h"
#include "fetch.h"
#include "health.h"
#include "install.h"
#include "manifest_client.h"
#include "persist.h"
#include "plan.h"
#include "policy.h"
#include "report.h"
#include "slot.h"
#include "state.h"

#define CMDLINE_MAX 65536

void eq_agent_free(struct eq_agent *a)
{
	if (!a)
		return;
	eq_manifest_trust_free(a->trust);
	eq_trust_free(a->tstore);
	eq_bl_close(a->bl);
	eq_fetcher_free(a->fetcher);
	eq_free(a->state_path);
	eq_free(a->downloads);
	eq_free(a->work);
	eq_free(a->cache_manifest);
	eq_free(a->cache_sig);
	eq_free(a->ts_validators);
	eq_free(a->ts_pending);
	eq_free(a->ptr_validators);
	eq_free(a->ptr_pending);
	eq_free(a->hold_path);
	eq_free(a->reports_dir);
	if (a->lock_fd >= 0)
		close(a->lock_fd);
	eq_free(a);
}

eq_err eq_agent_new(const struct eq_config *cfg, struct eq_agent **ret, struct eq_error *err)
{
	struct eq_agent *a = eq_calloc(1, sizeof(*a));
	if (!a)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	a->cfg = cfg;
	a->lock_fd = -1;
	eq_err r = EQ_OK;
	a->state_path = eq_asprintf("%s/state", cfg->data_dir);
	a->downloads = eq_asprintf("%s/downloads", cfg->data_dir);
	a->work = eq_asprintf("%s/work", cfg->data_dir);
	a->cache_manifest = eq_asprintf("%s/manifest.json", cfg->data_dir);
	a->cache_sig = eq_asprintf("%s/manifest.json.sig", cfg->data_dir);
	a->ts_validators = eq_asprintf("%s/timestamp.validators", cfg->data_dir);
	a->ptr_validators = eq_asprintf("%s/pointer.validators", cfg->data_dir);
	a->hold_path = eq_asprintf("%s/hold", cfg->data_dir);
	a->reports_dir = eq_asprintf("%s/reports", cfg->data_dir);
	if (!a->state_path || !a->downloads || !a->work || !a->cache_manifest || !a->cache_sig || !a->ts_validators ||
	    !a->ptr_validators || !a->hold_path || !a->reports_dir) {
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if ((r = eq_mkdir_p(cfg->data_dir, 0755, err)))
		goto fail;
	if (cfg->root) {
		EQ_AUTOFREE char *tdir = eq_asprintf("%s/trust", cfg->data_dir);
		r = tdir ? eq_trust_open(tdir, cfg->root, &a->tstore, err)
			 : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		if (!r && eq_trust_warning(a->tstore)[0])
			eq_log(EQ_LOG_WARNING, "trust store %s: %s", tdir, eq_trust_warning(a->tstore));
	} else if (cfg->trust) {
		r = eq_manifest_trust_load(cfg->trust, &a->trust, err);
	} else {
		const char *keys[1] = {cfg->key};
		r = eq_manifest_trust_from_pubkeys(keys, 1, 1, &a->trust, err);
	}
	if (r)
		goto fail;
	struct eq_bl_config bc = {
		.backend = cfg->bl_backend,
		.path = cfg->bl_path,
		.good_attempts = cfg->bl_good_attempts,
		.try_attempts = cfg->bl_try_attempts,
		.var_order = cfg->bl_var_order,
		.var_a_left = cfg->bl_var_a_left,
		.var_b_left = cfg->bl_var_b_left,
		.var_trial = cfg->bl_var_trial,
	};
	if ((r = eq_bl_open(&bc, &a->bl, err)))
		goto fail;
	if ((r = eq_fetcher_new(cfg, a->downloads, &a->fetcher, err)))
		goto fail;
	*ret = a;
	return EQ_OK;
fail:
	eq_agent_free(a);
	return r;
}

void eq_agent_set_progress(struct eq_agent *a, eq_progress_fn fn, void *ctx)
{
	a->progress = fn;
	a->progress_ctx = ctx;
	eq_fetcher_set_progress(a->fetcher, fn, ctx);
}

void eq_agent_set_stop(struct eq_agent *a, const volatile sig_atomic_t *flag)
{
	a->stop = flag;
	eq_fetcher_set_stop(a->fetcher, flag);
}

static bool stopping(const struct eq_agent *a)
{
	return a->stop && *a->stop;
}

/* The keys a slot's own manifest is checked with: the agent wrote it there
 * after verifying it, so in root mode any release key of the accepted root
 * chain (a revoked key stops new installs, not the boot of a slot). */
static const struct eq_manifest_trust *local_keys(const struct eq_agent *a)
{
	return a->tstore ? eq_trust_installed_keys(a->tstore) : a->trust;
}

/* The keys a manifest from the repository must be signed by. */
static const struct eq_manifest_trust *release_keys(const struct eq_agent *a)
{
	return a->tstore ? eq_trust_release_keys(a->tstore) : a->trust;
}

/* The slot the kernel was told to boot ("eqota.slot=A" on its command line). */
static eq_err booted_slot(const struct eq_agent *a, int *ret, struct eq_error *err)
{
	uint8_t *data;
	size_t len;
	eq_err r = eq_file_read_all(a->cfg->cmdline, CMDLINE_MAX, &data, &len, err);
	if (r)
		return eq_error_prefix(err, r, "cannot tell the running slot");
	int slot = -1;
	/* The last eqota.slot= wins, as the kernel's own parameters do. */
	char *p = (char *)data;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			*p++ = '\0';
		char *tok = p;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n')
			p++;
		char saved = *p;
		*p = '\0';
		if (!strncmp(tok, "eqota.slot=", 11))
			slot = eq_bl_slot_index(tok + 11);
		*p = saved;
	}
	eq_free(data);
	if (slot < 0)
		return eq_error_set(err, EQ_ERR_STATE, "%s names no slot (expected eqota.slot=A or eqota.slot=B)",
				    a->cfg->cmdline);
	*ret = slot;
	return EQ_OK;
}

/* Wall-clock time for expiry checks. Builds with test hooks only
 * (EQ_TEST_HOOKS): tests move it with EQ_TEST_NOW (seconds since the epoch)
 * to exercise expiry without waiting; a release build has no such bypass.
 * EQ_TEST_NOW_FILE names a file read at every use, so that a test can jump
 * the clock of a running daemon: seconds since the epoch, or "+N"/"-N"
 * seconds added to the real clock, which keeps ticking. */
static int64_t now_s(void)
{
#ifdef EQ_TEST_HOOKS
	const char *t = secure_getenv("EQ_TEST_NOW");
	if (t && *t) {
		char *end;
		long long v = strtoll(t, &end, 10);
		if (!*end && v > 0)
			return (int64_t)v;
	}
	const char *f = secure_getenv("EQ_TEST_NOW_FILE");
	uint8_t *data;
	size_t len;
	if (f && *f && eq_file_read_all(f, 64, &data, &len, NULL) == EQ_OK) {
		char *end;
		long long v = strtoll((char *)data, &end, 10);
		bool shift = data[0] == '+' || data[0] == '-', ok = end != (char *)data && (!*end || *end == '\n');
		eq_free(data);
		if (ok && shift)
			return (int64_t)time(NULL) + (int64_t)v;
		if (ok && v > 0)
			return (int64_t)v;
	}
#endif
	return (int64_t)time(NULL);
}

static const char *slot_path(const struct eq_config *cfg, int slot)
{
	return slot == 0 ? cfg->slot_a : cfg->slot_b;
}

/* Root directory of the running slot: the slot's folder for dir slots, "/"
 * for a block slot (it is mounted as the root file system). */
static const char *running_root(const struct eq_config *cfg, int slot)
{
	return cfg->slot_type == EQ_SLOT_DIR ? slot_path(cfg, slot) : "/";
}

/*
 * The kernel's id of this boot: a trial armed in this boot has not been
 * booted yet, whatever the bootloader says. "" when unknown (no /proc).
 * Builds with test hooks read EQ_TEST_BOOT_ID_FILE instead, so simulated
 * devices (eq-simboot) can "reboot" without a kernel.
 */
static void read_boot_id(char out[EQ_STATE_BOOT_ID_MAX + 1])
{
	const char *path = "/proc/sys/kernel/random/boot_id";
#ifdef EQ_TEST_HOOKS
	const char *t = secure_getenv("EQ_TEST_BOOT_ID_FILE");
	if (t && *t)
		path = t;
#endif
	out[0] = '\0';
	uint8_t *data;
	size_t len;
	if (eq_file_read_all(path, 256, &data, &len, NULL) != EQ_OK)
		return;
	while (len && (data[len - 1] == '\n' || data[len - 1] == ' '))
		len--;
	if (len && len <= EQ_STATE_BOOT_ID_MAX && strspn((char *)data, "0123456789abcdef-") >= len) {
		memcpy(out, data, len);
		out[len] = '\0';
	}
	eq_free(data);
}

/* The release recorded in slot @s, or NOTFOUND. Any channel: see
 * slot_release_number's callers. */
static eq_err slot_number(struct eq_agent *a, int s, int booted, uint64_t *ret, struct eq_error *err)
{
	char *root = NULL;
	eq_err r;
	if (a->cfg->slot_type == EQ_SLOT_BLOCK && s == booted)
		root = eq_strdup("/");
	else if ((r = eq_slot_open(a->cfg, eq_bl_slot_name((unsigned)s), &root, err)))
		return r;
	struct eq_manifest *m = NULL;
	r = root ? eq_slot_read_release(root, local_keys(a), a->cfg->board, &m, err)
		 : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (!r) {
		struct eq_manifest_header h;
		if (!(r = eq_manifest_get_header(m, &h, err)))
			*ret = h.number;
	}
	eq_manifest_free(m);
	if (a->cfg->slot_type == EQ_SLOT_BLOCK && s != booted)
		(void)!eq_slot_release(a->cfg, eq_bl_slot_name((unsigned)s), NULL);
	eq_free(root);
	return r;
}

/*
 * The state to act on. A state file that cannot be read (power cut, bad
 * flash, a hand edit) must never lock the device out of status, update,
 * confirm and rollback: the state is rebuilt from what the bootloader and
 * the slots say, the file is rewritten and the agent carries on.
 *   - a slot on trial in the bootloader: "trying" that slot, from the
 *     other, with the number its record holds. Running the trial slot, it
 *     came up and confirm runs the health checks. Running the other slot,
 *     this may be the boot that armed the trial (not rebooted yet) or a
 *     fallback: this boot's id is taken, so confirm leaves the trial alone
 *     now and the next boot decides (the committed slot stays the
 *     fallback throughout);
 *   - else idle. A release that had failed may be tried once more: a failed
 *     health check rolls it back again, which is safe.
 */
static eq_err load_state(struct eq_agent *a, struct eq_state *ret, struct eq_error *err)
{
	struct eq_error e;
	eq_err r = eq_state_load(a->state_path, ret, &e);
	if (!r || r == EQ_ERR_NOMEM) {
		if (r && err)
			*err = e;
		return r;
	}
	struct eq_state s;
	eq_state_init(&s);
	struct eq_bl_state bs;
	int booted = -1;
	if (booted_slot(a, &booted, NULL) != EQ_OK)
		booted = -1;
	if (eq_bl_get_state(a->bl, &bs, NULL) == EQ_OK && bs.trial >= 0) {
		uint64_t n = 0;
		if (slot_number(a, bs.trial, booted, &n, NULL) == EQ_OK && n > 0) {
			s.phase = EQ_PHASE_TRYING;
			s.target_slot = bs.trial;
			s.from_slot = 1 - bs.trial;
			s.target_number = n;
			/* Booted into the trial slot: it came up, confirm decides.
			 * Else this may be the boot that armed it: wait. */
			if (booted != bs.trial)
				read_boot_id(s.boot_id);
		}
	}
	eq_log(EQ_LOG_WARNING, "%s; rebuilt from the bootloader and the slots' records: %s%s%s", eq_error_msg(&e),
	       eq_phase_name(s.phase), s.phase == EQ_PHASE_TRYING ? " slot " : "",
	       s.phase == EQ_PHASE_TRYING ? eq_bl_slot_name((unsigned)s.target_slot) : "");
	struct eq_error we;
	if (eq_state_save(a->state_path, &s, &we))
		eq_log(EQ_LOG_WARNING, "cannot rewrite the state file: %s", eq_error_msg(&we));
	*ret = s;
	return EQ_OK;
}

/* Is @name a download of the fetcher: "<sha256>" or "<sha256>.part"? */
static bool is_download(const char *name, char sha[65])
{
	size_t n = strspn(name, "0123456789abcdef");
	if (n != 64 || (name[64] && strcmp(name + 64, ".part")))
		return false;
	memcpy(sha, name, 64);
	sha[64] = '\0';
	return true;
}

static bool wanted_by(const struct eq_manifest *m, const char *sha)
{
	for (size_t i = 0; m && i < eq_manifest_package_count(m); i++) {
		const struct eq_manifest_package *p = eq_manifest_package_at(m, i);
		if (!strcmp(p->object.sha256, sha))
			return true;
		for (size_t d = 0; d < p->n_deltas; d++)
			if (!strcmp(p->deltas[d].sha256, sha))
				return true;
	}
	return false;
}

/* Wall and CPU time of building a slot, for its log line: on a slow
 * device (or an emulated one) the split between user and system time says
 * whether hashing and decompression or the file system's work is the cost. */
struct cpu_mark {
	double wall;
	struct rusage ru;
};

static void cpu_mark(struct cpu_mark *m)
{
	m->wall = eq_now_s();
	if (getrusage(RUSAGE_SELF, &m->ru) != 0)
		memset(&m->ru, 0, sizeof(m->ru));
}

static double tv_s(const struct timeval *t)
{
	return (double)t->tv_sec + (double)t->tv_usec / 1e6;
}

static void cpu_since(const struct cpu_mark *m, char *out, size_t len)
{
	struct rusage ru;
	double wall = eq_now_s() - m->wall;
	if (getrusage(RUSAGE_SELF, &ru) != 0) {
		snprintf(out, len, "built in %.1f s", wall);
		return;
	}
	snprintf(out, len, "built in %.1f s, CPU %.1f s user and %.1f s system", wall,
		 tv_s(&ru.ru_utime) - tv_s(&m->ru.ru_utime), tv_s(&ru.ru_stime) - tv_s(&m->ru.ru_stime));
}

/*
 * Removes the fetcher's object and delta files (finished and .part) that
 * @keep does not use; @keep NULL removes them all. Before an install this
 * drops what another release left while keeping this release's partial
 * downloads for resume; after a slot is complete and verified nothing is
 * needed any more. Other files (the manifest validators) stay. Best effort:
 * a file that cannot be removed is logged and left.
 */
static void prune_downloads(struct eq_agent *a, const struct eq_manifest *keep)
{
	DIR *d = opendir(a->downloads);
	if (!d)
		return;
	struct dirent *de;
	size_t removed = 0;
	while ((de = readdir(d))) {
		char sha[65];
		if (!is_download(de->d_name, sha) || (keep && wanted_by(keep, sha)))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			removed++;
		else if (errno != ENOENT)
			eq_log(EQ_LOG_WARNING, "cannot remove %s/%s: %s", a->downloads, de->d_name, strerror(errno));
	}
	closedir(d);
	if (removed)
		eq_log(EQ_LOG_INFO, "removed %zu download%s no longer needed from %s", removed, removed == 1 ? "" : "s",
		       a->downloads);
}

/* The verified release recorded in slot @s (has_release false when none);
 * @booted is the running slot, read in place when it is a block slot. */
static void slot_info(struct eq_agent *a, int s, int booted, struct eq_slot_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	char *root = NULL;
	if (a->cfg->slot_type == EQ_SLOT_BLOCK && s == booted)
		root = eq_strdup("/");
	else if (eq_slot_open(a->cfg, eq_bl_slot_name((unsigned)s), &root, NULL) != EQ_OK)
		return;
	struct eq_manifest *m = NULL;
	if (root && eq_slot_read_release(root, local_keys(a), a->cfg->board, &m, NULL) == EQ_OK) {
		struct eq_manifest_header h;
		if (eq_manifest_get_header(m, &h, NULL) == EQ_OK) {
			ret->has_release = true;
			snprintf(ret->release, sizeof(ret->release), "%s", h.release);
			ret->number = h.number;
			ret->packages = eq_manifest_package_count(m);
		}
		eq_manifest_free(m);
	}
	if (a->cfg->slot_type == EQ_SLOT_BLOCK && s != booted)
		(void)!eq_slot_release(a->cfg, eq_bl_slot_name((unsigned)s), NULL);
	eq_free(root);
}

/* Queues a report of an outcome when [report] url is set. Best effort: an
 * update never fails for its report. @component_bytes: the image
 * components' part of @bytes, NULL for a release of packages alone. */
static void report(struct eq_agent *a, enum eq_report_kind kind, uint64_t from, const char *from_name, uint64_t to,
		   const char *to_name, const char *reason, uint64_t bytes, const uint64_t *component_bytes,
		   double seconds)
{
	if (!a->cfg->report_url)
		return;
	char id[EQ_DEVICE_ID_MAX + 1], rid[EQ_REPORT_ID_LEN + 1];
	struct eq_error e;
	bool have_id = eq_device_id_read(a->cfg->device_id_file, id, &e) == EQ_OK;
	if (have_id)
		eq_report_device_id(id, rid);
	else
		eq_log(EQ_LOG_WARNING, "%s: the report names no device", eq_error_msg(&e));
	struct eq_report_event ev = {.time = now_s(),
				     .device = have_id ? rid : NULL,
				     .board = a->cfg->board,
				     .channel = a->cfg->channel,
				     .kind = kind,
				     .from_number = from,
				     .from_release = from_name,
				     .to_number = to,
				     .to_release = to_name,
				     .reason = reason,
				     .bytes = bytes,
				     .component_bytes = component_bytes ? *component_bytes : 0,
				     .has_component_bytes = component_bytes != NULL,
				     .seconds = seconds,
				     .agent = EQ_VERSION};
	char line[EQ_REPORT_MAX_BYTES];
	size_t len;
	if (eq_report_format(&ev, line, &len, &e) ||
	    eq_report_queue(a->reports_dir, a->cfg->report_queue, line, len, &e))
		eq_log(EQ_LOG_WARNING, "report not queued: %s", eq_error_msg(&e));
}

/* Sends what is queued, unless eqota is being stopped. */
static void report_flush(struct eq_agent *a)
{
	size_t sent = 0;
	struct eq_error e;
	if (!a->cfg->report_url || stopping(a))
		return;
	if (eq_report_flush(a->cfg, a->reports_dir, &sent, &e))
		eq_log(EQ_LOG_INFO, "reports: %s", eq_error_msg(&e));
	else if (sent)
		eq_log(EQ_LOG_INFO, "reports: sent %zu", sent);
}

const char *eq_defer_name(enum eq_defer d)
{
	switch (d) {
	case EQ_DEFER_NONE: return NULL;
	case EQ_DEFER_PINNED: return "pinned";
	case EQ_DEFER_HELD: return "held";
	case EQ_DEFER_ROLLOUT: return "rollout";
	case EQ_DEFER_HALTED: return "halted";
	}
	return NULL;
}

/* The pin and the hold in force now. */
static eq_err policy_now(struct eq_agent *a, struct eq_policy_view *ret, struct eq_error *err)
{
	memset(ret, 0, sizeof(*ret));
	ret->pin = a->cfg->pin;
	int64_t by_cmd = 0;
	eq_err r = eq_hold_load(a->hold_path, &by_cmd, err);
	if (r)
		return r;
	int64_t until = a->cfg->hold_until > by_cmd ? a->cfg->hold_until : by_cmd;
	if (until > now_s()) {
		ret->held_until = until;
		ret->hold_by_command = until == by_cmd;
	}
	return EQ_OK;
}

/* The staged rollout of release @number for this device, from the newest
 * accepted timestamp (root mode; a rollout exists only there). */
static void rollout_for(const struct eq_agent *a, uint64_t number, struct eq_rollout_view *v)
{
	memset(v, 0, sizeof(*v));
	const struct eq_timestamp *ts = a->tstore ? eq_trust_timestamp(a->tstore) : NULL;
	if (!ts || !ts->version || ts->number != number || !ts->rollout.present)
		return;
	v->staged = true;
	v->percent = ts->rollout.percent;
	v->halted = ts->rollout.halted;
	char id[EQ_DEVICE_ID_MAX + 1];
	struct eq_error e;
	if (eq_device_id_read(a->cfg->device_id_file, id, &e)) {
		/* Without an id the device cannot know its place: it waits for
		 * 100 %, as the device least likely to be chosen would. */
		v->no_device_id = true;
		snprintf(v->detail, sizeof(v->detail), "%s", eq_error_msg(&e));
		return;
	}
	v->selected = eq_rollout_selected(eq_rollout_bucket(id, a->cfg->board, a->cfg->channel, number), v->percent);
}

eq_err eq_agent_status(struct eq_agent *a, struct eq_status *ret, struct eq_error *err)
{
	struct eq_status st;
	memset(&st, 0, sizeof(st));
	if (booted_slot(a, &st.booted, NULL) != EQ_OK)
		st.booted = -1;
	struct eq_error e;
	eq_err r = eq_bl_get_state(a->bl, &st.bl, &e);
	if (r == EQ_ERR_PARSE)
		st.bl_garbled = true;
	else if (r) {
		if (err)
			*err = e;
		return eq_error_prefix(err, r, "bootloader");
	}
	if ((r = load_state(a, &st.state, err)))
		return r;
	for (int s = 0; s < EQ_BL_SLOTS; s++)
		slot_info(a, s, st.booted, &st.slot[s]);
	eq_fetcher_stats(a->fetcher, &st.fetched);
	if (a->tstore) {
		struct eq_root_info info;
		eq_root_get_info(eq_trust_root(a->tstore), &info);
		st.trust.root_mode = true;
		st.trust.root_version = info.version;
		st.trust.root_expires = info.expires;
		st.trust.ts_version = eq_trust_timestamp(a->tstore)->version;
		st.trust.ts_expires = eq_trust_timestamp(a->tstore)->expires;
		if (st.trust.ts_version) {
			st.offered_number = eq_trust_timestamp(a->tstore)->number;
			rollout_for(a, st.offered_number, &st.rollout);
		}
	}
	_Static_assert(sizeof(st.report_id) == EQ_REPORT_ID_LEN + 1, "eq_status.report_id holds a report id");
	char id[EQ_DEVICE_ID_MAX + 1];
	if (eq_device_id_read(a->cfg->device_id_file, id, &e) == EQ_OK)
		eq_report_device_id(id, st.report_id);
	/* Status works on a damaged hold file too; update refuses it. */
	if (policy_now(a, &st.policy, &e) != EQ_OK) {
		eq_log(EQ_LOG_WARNING, "%s", eq_error_msg(&e));
		st.policy.pin = a->cfg->pin;
	}
	*ret = st;
	return EQ_OK;
}

eq_err eq_agent_hold(struct eq_agent *a, int64_t until, struct eq_error *err)
{
	if (until && until <= now_s())
		return eq_error_set(err, EQ_ERR_INVAL, "hold until %" PRId64 ": that time has passed", until);
	if (until > now_s() + EQ_HOLD_MAX_S)
		return eq_error_set(err, EQ_ERR_INVAL,
				    "a hold lasts at most 366 days: a device forgotten on hold would miss security "
				    "fixes");
	return eq_hold_save(a->hold_path, until, err);
}

/* The lock is a file only eqota's user can open: flock needs no more than
 * a read-only descriptor, so a lock any user can read is a lock any user
 * can hold, and holding it blocks every update and every confirmation.
 * It is created 0600, never with more, under a name of its own: the
 * world-readable "lock" earlier versions made may be held open by another
 * user already, and fchmod() does not take a descriptor back. */
#define LOCK_NAME "agent.lock"
#define LOCK_LEGACY "lock"

/* Opens <data>/agent.lock, refusing one that is not a plain file of ours
 * with no access for others: a symlink, a file planted by another user
 * (only possible while the data folder was writable to them), a hard link. */
static eq_err lock_open(const struct eq_agent *a, const char *path, int *ret_fd, struct eq_error *err)
{
	/* The folder is made 0755, but one made by hand may be open to
	 * others, who can then plant the state, the caches or the lock. */
	struct stat dst;
	if (stat(a->cfg->data_dir, &dst) == 0 && (dst.st_mode & 022) && !(dst.st_mode & S_ISVTX))
		eq_log(EQ_LOG_WARNING,
		       "the data folder %s is writable by other users (mode %03o): they can plant the state, the "
		       "caches and the lock; make it writable by eqota's user alone (chmod go-w), continuing",
		       a->cfg->data_dir, (unsigned)(dst.st_mode & 0777));
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0 && errno == ELOOP)
		return eq_error_set(err, EQ_ERR_UNSAFE,
				    "the lock '%s' is a symbolic link, which eqota never makes: someone "
				    "planted it; remove it (rm '%s') and check who can write to %s",
				    path, path, a->cfg->data_dir);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot open the lock '%s'", path);
	struct stat st;
	eq_err r = EQ_OK;
	if (fstat(fd, &st) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot stat the lock '%s'", path);
	else if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
		r = eq_error_set(err, EQ_ERR_UNSAFE,
				 "the lock '%s' is not a plain file with one name (mode %o, %ju links), which eqota "
				 "never makes: remove it (rm '%s') and check who can write to %s",
				 path, (unsigned)st.st_mode, (uintmax_t)st.st_nlink, path, a->cfg->data_dir);
	else if (st.st_uid != geteuid())
		r = eq_error_set(err, EQ_ERR_UNSAFE,
				 "the lock '%s' belongs to user %ju, not to eqota's user %ju: whoever made it can "
				 "hold it and block every update; remove it (rm '%s') and check who can write to %s",
				 path, (uintmax_t)st.st_uid, (uintmax_t)geteuid(), path, a->cfg->data_dir);
	else if ((st.st_mode & 077) && fchmod(fd, 0600) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "lock '%s': cannot take its access from other users", path);
	else if (st.st_mode & 077)
		/* Ours, so only root or eqota's user widened it; nobody else
		 * opens it from now on. */
		eq_log(EQ_LOG_WARNING, "the lock '%s' was open to other users (mode %03o): now 0600, continuing", path,
		       (unsigned)(st.st_mode & 0777));
	if (r) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return EQ_OK;
}

/* Who holds the lock, as it wrote itself in: one line, cleaned for the
 * message. A holder still writing it leaves it short. */
static void lock_holder(int fd, char who[128])
{
	ssize_t n = pread(fd, who, 127, 0);
	who[n > 0 ? n : 0] = '\0';
	for (char *c = who; *c; c++)
		if (*c == '\n' || (unsigned char)*c < 0x20 || *c == 0x7f)
			*c = *c == '\n' ? '\0' : '?';
}

eq_err eq_agent_lock(struct eq_agent *a, const char *what, unsigned wait_ms, struct eq_error *err)
{
	if (a->lock_fd >= 0)
		return EQ_OK;
	EQ_AUTOFREE char *path = eq_asprintf("%s/" LOCK_NAME, a->cfg->data_dir);
	EQ_AUTOFREE char *legacy = eq_asprintf("%s/" LOCK_LEGACY, a->cfg->data_dir);
	if (!path || !legacy)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	int fd = -1;
	eq_err r = lock_open(a, path, &fd, err);
	if (r)
		return r;
	double until = eq_now_s() + wait_ms / 1000.0;
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK && eq_now_s() < until && !stopping(a)) {
			struct timespec ts = {0, 50 * 1000 * 1000};
			nanosleep(&ts, NULL);
			continue;
		}
		if (errno == EWOULDBLOCK) {
			char who[128];
			lock_holder(fd, who);
			r = eq_error_set(
				err, EQ_ERR_STATE,
				"another eqota is working on this device (%s): one at a time changes the slots, "
				"the bootloader and the state; try again when it is done",
				who[0] ? who : "holder unknown");
		} else {
			r = eq_error_errno(err, EQ_ERR_IO, "cannot lock %s", path);
		}
		close(fd);
		return r;
	}
	char line[128];
	int n = snprintf(line, sizeof(line), "eqota %s, PID %ld\n", what, (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)n, 0) != n)
		eq_log(EQ_LOG_DEBUG, "lock %s: cannot note the holder: %s", path, strerror(errno));
	/* Nothing uses the old lock any more; whoever holds it open holds
	 * nothing. */
	if (unlink(legacy) == 0)
		eq_log(EQ_LOG_INFO, "removed %s, the lock of earlier versions (now %s)", legacy, path);
	a->lock_fd = fd;
	return EQ_OK;
}

void eq_check_done(struct eq_check *c)
{
	if (!c)
		return;
	eq_plan_done(&c->plan);
	eq_manifest_free(c->running);
	eq_manifest_free(c->next);
	eq_free(c->manifest_bytes);
	eq_free(c->sig_bytes);
	memset(c, 0, sizeof(*c));
}

static eq_err get_number(const struct eq_manifest *m, uint64_t *ret, char release[65], struct eq_error *err)
{
	struct eq_manifest_header h;
	*ret = 0; /* gcc -O2 cannot see that eq_error_prefix() returns r != 0 */
	eq_err r = eq_manifest_get_header(m, &h, err);
	if (r)
		return eq_error_prefix(err, r, "manifest: release number and name");
	*ret = h.number;
	if (release)
		snprintf(release, 65, "%s", h.release);
	return EQ_OK;
}

static eq_err read_running(struct eq_agent *a, int booted, struct eq_manifest **ret, struct eq_error *err)
{
	eq_err r = eq_slot_read_release(running_root(a->cfg, booted), local_keys(a), a->cfg->board, ret, err);
	if (r == EQ_ERR_NOTFOUND)
		return eq_error_set(err, EQ_ERR_STATE, "the running slot %s has no release record: provision it first",
				    eq_bl_slot_name((unsigned)booted));
	if (r)
		return eq_error_prefix(err, r, "running slot %s", eq_bl_slot_name((unsigned)booted));
	return EQ_OK;
}

/* An earlier release's signed manifest, verified. */
struct rel_copy {
	uint8_t *mb, *sb;
	size_t ml, sl;
	struct eq_manifest *m;
	uint64_t number;
	char name[65];
};

static void rel_copy_done(struct rel_copy *x)
{
	eq_manifest_free(x->m);
	eq_free(x->mb);
	eq_free(x->sb);
	memset(x, 0, sizeof(*x));
}

static eq_err fetch_release(struct eq_agent *a, uint64_t number, struct rel_copy *ret, struct eq_error *err)
{
	struct rel_copy x;
	memset(&x, 0, sizeof(x));
	/* Expiry is not checked: factories install what was tested, however
	 * old its manifest is. */
	struct eq_manifest_policy pol = {.board = a->cfg->board,
					 .channel = a->cfg->channel,
					 .number = number,
					 .now = now_s(),
					 .check_expiry = false};
	eq_err r = eq_fetch_release_manifest(a->fetcher, number, &x.mb, &x.ml, &x.sb, &x.sl, err);
	if (!r && (r = eq_manifest_load_verified(x.mb, x.ml, x.sb, x.sl, release_keys(a), &pol, &x.m, err)))
		(void)eq_error_prefix(err, r, "releases/%" PRIu64 "/manifest.json", number);
	if (!r)
		r = get_number(x.m, &x.number, x.name, err);
	if (r) {
		rel_copy_done(&x);
		return r;
	}
	*ret = x;
	return EQ_OK;
}

/* Makes @x the release to install; @x is emptied. */
static void take_release(struct eq_check *c, struct rel_copy *x)
{
	eq_manifest_free(c->next);
	eq_free(c->manifest_bytes);
	eq_free(c->sig_bytes);
	c->next = x->m;
	c->manifest_bytes = x->mb;
	c->manifest_len = x->ml;
	c->sig_bytes = x->sb;
	c->sig_len = x->sl;
	memset(x, 0, sizeof(*x));
}

static void use_release(struct eq_check *c, struct eq_update_result *res, struct rel_copy *x)
{
	res->number = x->number;
	snprintf(res->release, sizeof(res->release), "%s", x->name);
	take_release(c, x);
}

eq_err eq_agent_verify(struct eq_agent *a, eq_verify_fn fn, void *ctx, struct eq_verify_report *ret,
		       struct eq_slot_info *ret_slot, int *ret_booted, struct eq_error *err)
{
	int booted;
	eq_err r = booted_slot(a, &booted, err);
	if (r)
		return r;
	struct eq_manifest *m = NULL;
	if ((r = read_running(a, booted, &m, err)))
		return r;
	/* Read as an update reads it: through eq_slot_open(), so that file
	 * systems mounted on a block slot's folders are not what is checked. */
	const char *name = eq_bl_slot_name((unsigned)booted);
	EQ_AUTOFREE char *root = NULL;
	if (!(r = eq_slot_open(a->cfg, name, &root, err))) {
		r = eq_slot_verify(root, m, a->cfg->persist_paths, a->cfg->n_persist, fn, ctx, ret, err);
		struct eq_error re;
		if (eq_slot_release(a->cfg, name, &re))
			eq_log(EQ_LOG_WARNING, "%s", eq_error_msg(&re));
	}
	if (!r) {
		struct eq_manifest_header h;
		memset(ret_slot, 0, sizeof(*ret_slot));
		if (eq_manifest_get_header(m, &h, NULL) == EQ_OK) {
			ret_slot->has_release = true;
			snprintf(ret_slot->release, sizeof(ret_slot->release), "%s", h.release);
			ret_slot->number = h.number;
			ret_slot->packages = eq_manifest_package_count(m);
		}
		*ret_booted = booted;
	}
	eq_manifest_free(m);
	return r;
}

eq_err eq_agent_check(struct eq_agent *a, bool retry, struct eq_check *ret, struct eq_error *err)
{
	struct eq_check c;
	memset(&c, 0, sizeof(c));
	int booted;
	eq_err r = booted_slot(a, &booted, err);
	if (r)
		return r;
	struct eq_state st;
	if ((r = load_state(a, &st, err)))
		return r;
	if ((r = read_running(a, booted, &c.running, err)))
		goto fail;
	bool fresh;
	if ((r = eq_mclient_fetch_current(a, now_s(), &c, &fresh, err)))
		goto fail;
	uint64_t have, offered;
	if ((r = get_number(c.running, &have, NULL, err)) || (r = get_number(c.next, &offered, NULL, err)))
		goto fail;
	if (offered < have) {
		/* A replayed old manifest must never downgrade a device. */
		r = eq_error_set(err, EQ_ERR_STATE,
				 "the repository offers release number %" PRIu64 ", older than the running %" PRIu64
				 "; refusing to downgrade",
				 offered, have);
		goto fail;
	}
	if (fresh) {
		/* Cache only what verified, then let the next check be conditional. */
		if ((r = eq_file_replace_atomic(a->cache_sig, c.sig_bytes, c.sig_len, 0644, err)) ||
		    (r = eq_file_replace_atomic(a->cache_manifest, c.manifest_bytes, c.manifest_len, 0644, err)) ||
		    (r = eq_fetch_manifest_commit(a->fetcher, err)))
			goto fail;
	}
	/* The pointer's ETag, once what it named verified and is cached. */
	struct eq_error pe;
	if (a->ptr_pending &&
	    eq_file_replace_atomic(a->ptr_validators, a->ptr_pending, strlen(a->ptr_pending), 0600, &pe) != EQ_OK)
		eq_log(EQ_LOG_DEBUG, "%s", pe.msg);
	c.channel_number = offered;
	if ((r = policy_now(a, &c.policy, err)))
		goto fail;
	uint64_t target = offered;
	if (offered > have && c.policy.pin && offered > c.policy.pin) {
		if (have >= c.policy.pin) {
			c.deferred = EQ_DEFER_PINNED;
		} else {
			/* Up to the pin: that release's own manifest, by the rule
			 * provision uses (signed by the release role, not
			 * refused for its age: the pin chose it). */
			struct rel_copy x;
			if ((r = fetch_release(a, c.policy.pin, &x, err))) {
				eq_error_prefix(err, r, "[update] pin = %" PRIu64, c.policy.pin);
				goto fail;
			}
			take_release(&c, &x);
			target = c.policy.pin;
		}
	}
	rollout_for(a, target, &c.rollout);
	const int64_t now = now_s();
	if (offered == have) {
		c.up_to_date = true;
	} else if (c.deferred) {
		/* pinned: nothing newer than the running release may come */
	} else if (c.policy.held_until) {
		c.deferred = EQ_DEFER_HELD;
	} else if (c.rollout.staged && c.rollout.halted) {
		c.deferred = EQ_DEFER_HALTED;
	} else if (c.rollout.staged && !c.rollout.selected) {
		c.deferred = EQ_DEFER_ROLLOUT;
	} else if (target == st.failed_number && !retry) {
		c.skipped_failed = true;
	} else if (target == st.error_number && !retry && now < st.next_attempt && now >= st.error_at) {
		/* Waiting for the backoff. A clock now before the error itself
		 * was set back after it (by a year, say): the wait it would
		 * stretch by as much is over, and the attempt is due now. */
		c.waiting = true;
		c.next_attempt = st.next_attempt;
		c.attempts = st.attempts;
		snprintf(c.error, sizeof(c.error), "%s", st.error);
		char when[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(c.next_attempt, when);
		eq_log(EQ_LOG_NOTICE,
		       "release %" PRIu64 " failed to install %" PRIu64
		       " time%s (last: %s); the next attempt is due at %s",
		       target, c.attempts, c.attempts == 1 ? "" : "s", c.error, when);
	}
	if ((r = eq_plan_make(c.running, c.next, &c.plan, err)))
		goto fail;
	*ret = c;
	return EQ_OK;
fail:
	eq_check_done(&c);
	return r;
}

/* Whether @rel_path is the object or a delta of one of @m's image
 * components. Objects are named by their hash: one a package shares is
 * fetched once, and counted here. */
static bool is_component_file(const struct eq_manifest *m, const char *rel_path)
{
	const struct eq_manifest_image *img = eq_manifest_get_image(m);
	for (int l = 0; img && l < 2; l++) {
		const char *const *v = l ? img->after : img->before;
		size_t n = l ? img->n_after : img->n_before;
		for (size_t i = 0; i < n; i++) {
			const struct eq_manifest_package *p = eq_manifest_find_package(m, v[i]);
			if (!p)
				continue;
			if (!strcmp(p->object.path, rel_path))
				return true;
			for (size_t k = 0; k < p->n_deltas; k++)
				if (!strcmp(p->deltas[k].path, rel_path))
					return true;
		}
	}
	return false;
}

static eq_err fetch_cb(void *ctx, const char *rel_path, const char *sha256_hex, uint64_t size, char **ret_path,
		       struct eq_error *err)
{
	struct eq_agent *a = ctx;
	struct eq_fetch_stats s0, s1;
	eq_fetcher_stats(a->fetcher, &s0);
	eq_err r = eq_fetch_object(a->fetcher, rel_path, sha256_hex, size, ret_path, err);
	if (a->installing && is_component_file(a->installing, rel_path)) {
		eq_fetcher_stats(a->fetcher, &s1);
		a->component_fetched += s1.bytes - s0.bytes;
	}
	return r;
}

static eq_err save_state(struct eq_agent *a, struct eq_state *st, struct eq_error *err)
{
	return eq_state_save(a->state_path, st, err);
}

/* Builds @target from @next. The target slot leaves the boot order first:
 * a power cut while it is half written must never boot it. */
static eq_err build_slot(struct eq_agent *a, int target, const struct eq_manifest *running, const char *run_root,
			 const struct eq_check *c, const struct eq_plan *plan, struct eq_install_report *rep,
			 struct eq_error *err)
{
	const char *name = eq_bl_slot_name((unsigned)target);
	eq_err r = eq_bl_mark_bad(a->bl, (unsigned)target, err);
	/* A factory device has no environment until its first slot is good. */
	if (r == EQ_ERR_NOTFOUND && !running)
		r = EQ_OK;
	if (r)
		return eq_error_prefix(err, r, "bootloader");
	char *root = NULL;
	if ((r = eq_slot_prepare(a->cfg, name, &root, err)))
		return r;
	if ((r = eq_rm_rf(a->work, err)) || (r = eq_mkdir_p(a->work, 0700, err))) {
		eq_free(root);
		return r;
	}
	struct eq_persist persist = {
		.paths = a->cfg->persist_paths, .n_paths = a->cfg->n_persist, .max_bytes = a->cfg->persist_max_bytes};
	struct eq_install in = {
		.running_root = run_root,
		.running = running,
		.target_root = root,
		.next = c->next,
		.manifest_bytes = c->manifest_bytes,
		.manifest_len = c->manifest_len,
		.sig_bytes = c->sig_bytes,
		.sig_len = c->sig_len,
		.work_dir = a->work,
		.fetch = fetch_cb,
		.fetch_ctx = a,
		.owners = geteuid() == 0,
		.progress = a->progress,
		.progress_ctx = a->progress_ctx,
		.stop = a->stop,
		.persist = &persist,
	};
	r = eq_install_check_space(&in, plan, err);
	if (!r)
		r = eq_install_slot(&in, plan, rep, err);
	eq_err r2 = eq_slot_release(a->cfg, name, r ? NULL : err);
	if (!r)
		r = r2;
	/* Verify what the next boot will read, through the same path. */
	if (!r) {
		char *check_root = NULL;
		struct eq_manifest *m = NULL;
		r = eq_slot_open(a->cfg, name, &check_root, err);
		if (!r)
			r = eq_slot_read_release(check_root, local_keys(a), a->cfg->board, &m, err);
		eq_manifest_free(m);
		eq_free(check_root);
		eq_err r3 = eq_slot_release(a->cfg, name, r ? NULL : err);
		if (!r)
			r = r3;
	}
	(void)!eq_rm_rf(a->work, NULL);
	eq_free(root);
	if (r)
		eq_error_prefix(err, r, "slot %s", name);
	return r;
}

/* Back to idle after a failed install of release @number; failed_number
 * is kept, the error counted and the next attempt delayed. */
static void record_install_error(struct eq_agent *a, const struct eq_state *st, uint64_t number, const char *msg)
{
	struct eq_state idle;
	eq_state_init(&idle);
	idle.failed_number = st->failed_number;
	snprintf(idle.failed_reason, sizeof(idle.failed_reason), "%s", st->failed_reason);
	idle.error_number = number;
	idle.attempts = (st->error_number == number ? st->attempts : 0) + 1;
	idle.error_at = now_s();
	idle.next_attempt = idle.error_at + eq_state_backoff_s(idle.attempts);
	snprintf(idle.error, sizeof(idle.error), "%s", msg);
	char when[EQ_MANIFEST_TIME_LEN + 1];
	eq_manifest_format_time(idle.next_attempt, when);
	eq_log(EQ_LOG_WARNING, "release %" PRIu64 ": install attempt %" PRIu64 " failed; the next is due at %s", number,
	       idle.attempts, when);
	struct eq_error e;
	if (save_state(a, &idle, &e))
		eq_log(EQ_LOG_WARNING, "%s", eq_error_msg(&e));
}

/* What the reports of an install say of its image components' bytes:
 * nothing for a release of packages alone. */
static const uint64_t *component_bytes(const struct eq_agent *a, const struct eq_check *c)
{
	return eq_manifest_get_image(c->next) ? &a->component_fetched : NULL;
}

static eq_err update_run(struct eq_agent *a, bool retry, struct eq_update_result *ret, struct eq_error *err)
{
	struct eq_update_result res;
	memset(&res, 0, sizeof(res));
	double t0 = eq_now_s();
	struct eq_fetch_stats f0, f1;
	eq_fetcher_stats(a->fetcher, &f0);
	struct eq_state st;
	eq_err r = load_state(a, &st, err);
	if (r)
		return r;
	if (st.phase == EQ_PHASE_TRYING)
		return eq_error_set(err, EQ_ERR_STATE,
				    "slot %s holds release %" PRIu64 " on trial: reboot into it (or run 'eqota "
				    "rollback') before updating again",
				    eq_bl_slot_name((unsigned)st.target_slot), st.target_number);
	int booted;
	if ((r = booted_slot(a, &booted, err)))
		return r;
	struct eq_check c;
	if ((r = eq_agent_check(a, retry, &c, err)))
		return r;
	if (c.waiting) {
		/* An error, not "up to date": the daemon logs it as a failed
		 * poll, and a person sees why nothing happened. */
		char when[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(c.next_attempt, when);
		r = get_number(c.next, &res.number, res.release, err);
		if (!r)
			r = eq_error_set(err, EQ_ERR_STATE,
					 "release %" PRIu64 " failed to install %" PRIu64
					 " time%s (last: %s); waiting until %s "
					 "before the next attempt ('eqota update --retry' tries now)",
					 res.number, c.attempts, c.attempts == 1 ? "" : "s", c.error, when);
		eq_check_done(&c);
		return r;
	}
	if (c.up_to_date || c.skipped_failed || c.deferred) {
		res.exit = EQ_EXIT_OK;
		res.deferred = c.deferred;
		res.skipped_failed = c.skipped_failed;
		res.policy = c.policy;
		res.rollout = c.rollout;
		r = get_number(c.next, &res.number, res.release, err);
		eq_check_done(&c);
		if (r)
			return r;
		res.seconds = eq_now_s() - t0;
		*ret = res;
		return EQ_OK;
	}
	int target = 1 - booted;
	r = get_number(c.next, &res.number, res.release, err);
	uint64_t run_number = 0;
	char run_release[65] = "";
	if (!r && (r = get_number(c.running, &run_number, run_release, err)))
		eq_error_prefix(err, r, "running slot %s", eq_bl_slot_name((unsigned)booted));
	if (r) {
		eq_check_done(&c);
		return r;
	}
	/* The running slot is read through eq_slot_open(), not at "/": other
	 * file systems are mounted on a block slot's directories while it
	 * runs, and kept packages and rebuilt payloads must come from the
	 * slot's own tree. */
	const char *run_name = eq_bl_slot_name((unsigned)booted);
	EQ_AUTOFREE char *run_root = NULL;
	if ((r = eq_slot_open(a->cfg, run_name, &run_root, err)))
		goto out;
	st.phase = EQ_PHASE_INSTALLING;
	st.target_slot = target;
	st.from_slot = booted;
	st.target_number = res.number;
	snprintf(st.target_release, sizeof(st.target_release), "%s", res.release);
	st.boot_id[0] = '\0';
	if ((r = save_state(a, &st, err)))
		goto out;
	/* What an older release left in the downloads goes; a partial download
	 * of this release stays, to be resumed. */
	prune_downloads(a, c.next);
	a->installing = eq_manifest_get_image(c.next) ? c.next : NULL;
	a->component_fetched = 0;
	struct cpu_mark cm;
	cpu_mark(&cm);
	r = build_slot(a, target, c.running, run_root, &c, &c.plan, &res.install, err);
	a->installing = NULL;
	struct eq_error re;
	if (eq_slot_release(a->cfg, run_name, &re))
		eq_log(EQ_LOG_WARNING, "%s", eq_error_msg(&re));
	/* Any error while a stop is pending (a mke2fs killed with us by the
	 * init system, say) is the stop's doing, not the release's. */
	if (r == EQ_ERR_STOPPED || (r && stopping(a))) {
		/* Not a failure of the release: the state stays "installing" with
		 * the slot out of the boot order, and the next start abandons the
		 * half-built slot and installs again, resuming the downloads. */
		char where[sizeof(err->msg)];
		snprintf(where, sizeof(where), "%s", eq_error_msg(err));
		eq_error_set(err, EQ_ERR_STOPPED,
			     "%s; slot %s stays out of the boot order, and the next start installs release %" PRIu64
			     " again, resuming the downloads",
			     where, eq_bl_slot_name((unsigned)target), res.number);
		goto out;
	}
	if (r) {
		/* Only a trial decides that a release is bad (a failed health
		 * check, a slot that never came up). An install error (network,
		 * 404 from a CDN still propagating, hash or size mismatch, full
		 * disk, a delta that does not apply) says nothing certain about
		 * the release: it is retried with backoff, and status shows it. */
		record_install_error(a, &st, res.number, eq_error_msg(err));
		eq_fetcher_stats(a->fetcher, &f1);
		report(a, EQ_REPORT_FAILED, run_number, run_release, res.number, res.release, eq_error_msg(err),
		       f1.bytes - f0.bytes, component_bytes(a, &c), eq_now_s() - t0);
		goto out;
	}
	/* The slot is complete and verified: its downloads are not needed. */
	prune_downloads(a, NULL);
	st.error_number = 0;
	st.error[0] = '\0';
	st.error_at = st.next_attempt = 0;
	st.attempts = 0;
	st.phase = EQ_PHASE_INSTALLED;
	/* The boot that hands the slot over, already here: a kill between the
	 * bootloader's write and the "trying" state leaves "installed" with the
	 * trial armed, and a restart in this boot must wait for the reboot, not
	 * take the trial for a slot that never came up. */
	read_boot_id(st.boot_id);
	if ((r = save_state(a, &st, err)))
		goto out;
	/* The bootloader first, then the state: a power cut between the two
	 * leaves "installed" plus a trial in the bootloader, which
	 * eq_agent_confirm() reads as "trying". */
	char took[96];
	cpu_since(&cm, took, sizeof(took));
	eq_log(EQ_LOG_NOTICE,
	       "slot %s holds release %" PRIu64 ", complete and verified (%s): telling the bootloader to try it once",
	       eq_bl_slot_name((unsigned)target), res.number, took);
	if ((r = eq_bl_try_once(a->bl, (unsigned)target, err))) {
		eq_error_prefix(err, r, "bootloader");
		goto out;
	}
	st.phase = EQ_PHASE_TRYING;
	read_boot_id(st.boot_id);
	if ((r = save_state(a, &st, err)))
		goto out;
	res.exit = EQ_EXIT_UPDATED;
	eq_fetcher_stats(a->fetcher, &f1);
	report(a, EQ_REPORT_INSTALLED, run_number, run_release, res.number, res.release, NULL, f1.bytes - f0.bytes,
	       component_bytes(a, &c), eq_now_s() - t0);
out:
	eq_check_done(&c);
	res.seconds = eq_now_s() - t0;
	if (!r)
		*ret = res;
	return r;
}

eq_err eq_agent_update(struct eq_agent *a, bool retry, struct eq_update_result *ret, struct eq_error *err)
{
	eq_err r = update_run(a, retry, ret, err);
	report_flush(a);
	return r;
}

/* The release slot @s held before the update, for a report. Only when one
 * is sent: on block slots this mounts the other slot. */
static void from_release(struct eq_agent *a, int s, int booted, struct eq_slot_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (s >= 0 && a->cfg->report_url)
		slot_info(a, s, booted, ret);
}

static eq_err fail_trial(struct eq_agent *a, struct eq_state *st, int booted, const char *reason, struct eq_error *err)
{
	/* The previous slot first: between the two writes the device must
	 * still have a bootable slot at the front of the order. */
	eq_err r = EQ_OK;
	if (st->from_slot >= 0 && (r = eq_bl_mark_good(a->bl, (unsigned)st->from_slot, err)))
		return eq_error_prefix(err, r, "bootloader");
	if ((r = eq_bl_mark_bad(a->bl, (unsigned)st->target_slot, err)))
		return eq_error_prefix(err, r, "bootloader");
	struct eq_state idle;
	eq_state_init(&idle);
	idle.failed_number = st->target_number;
	snprintf(idle.failed_reason, sizeof(idle.failed_reason), "%s", reason);
	r = save_state(a, &idle, err);
	if (!r) {
		struct eq_slot_info from;
		from_release(a, st->from_slot, booted, &from);
		report(a, EQ_REPORT_ROLLED_BACK, from.number, from.release, st->target_number, st->target_release,
		       reason, 0, NULL, 0);
	}
	return r;
}

static eq_err confirm_run(struct eq_agent *a, enum eq_exit *ret_exit, struct eq_error *err)
{
	struct eq_state st;
	eq_err r = load_state(a, &st, err);
	if (r)
		return r;
	int booted;
	if ((r = booted_slot(a, &booted, err)))
		return r;
	struct eq_bl_state bs;
	struct eq_error be;
	eq_err br = eq_bl_get_state(a->bl, &bs, &be);
	if (br && br != EQ_ERR_PARSE) {
		if (err)
			*err = be;
		return eq_error_prefix(err, br, "bootloader");
	}
	*ret_exit = EQ_EXIT_OK;
	if (st.phase == EQ_PHASE_INSTALLED && !br && bs.trial == st.target_slot) {
		/* Written down, so that an update in the same boot waits for the
		 * reboot instead of building the slot again. */
		st.phase = EQ_PHASE_TRYING;
		if ((r = save_state(a, &st, err)))
			return r;
	}
	if (st.phase == EQ_PHASE_INSTALLING || st.phase == EQ_PHASE_INSTALLED) {
		/* Cut off before the switch: the half-built slot stays out of the
		 * boot order and the next update starts it again (downloads resume). */
		eq_log(EQ_LOG_NOTICE, "an interrupted install of release %" PRIu64 " into slot %s is abandoned",
		       st.target_number, eq_bl_slot_name((unsigned)st.target_slot));
		struct eq_state idle = st;
		idle.phase = EQ_PHASE_IDLE;
		idle.target_slot = idle.from_slot = -1;
		idle.target_number = 0;
		idle.target_release[0] = idle.boot_id[0] = '\0';
		return save_state(a, &idle, err);
	}
	if (st.phase == EQ_PHASE_TRYING) {
		/* A daemon restart or a mark-good between `update` and the reboot
		 * runs in the boot that armed the trial: the trial slot has not
		 * had its chance yet, so this is not a fallback. */
		char boot_id[EQ_STATE_BOOT_ID_MAX + 1];
		read_boot_id(boot_id);
		if (st.boot_id[0] && !strcmp(boot_id, st.boot_id)) {
			eq_log(EQ_LOG_NOTICE,
			       "slot %s holds release %" PRIu64
			       " on trial, to be tried at the next boot; not rebooted yet, "
			       "nothing to confirm",
			       eq_bl_slot_name((unsigned)st.target_slot), st.target_number);
			return EQ_OK;
		}
		if (booted != st.target_slot) {
			char reason[EQ_STATE_REASON_MAX];
			snprintf(reason, sizeof(reason), "slot %s did not come up; the bootloader fell back to %s",
				 eq_bl_slot_name((unsigned)st.target_slot), eq_bl_slot_name((unsigned)booted));
			eq_log(EQ_LOG_ERR, "release %" PRIu64 ": %s", st.target_number, reason);
			*ret_exit = EQ_EXIT_ROLLED_BACK;
			return fail_trial(a, &st, booted, reason, err);
		}
		/* A check killed because eqota is being stopped says nothing
		 * about the release: the slot stays on trial and the next start
		 * in this boot runs the checks (again). */
		bool before = stopping(a);
		struct eq_error he;
		eq_err hr = before ? EQ_ERR_STOPPED
				   : eq_health_run((const char *const *)a->cfg->checks, a->cfg->n_checks,
						   a->cfg->health_timeout_s, &he);
		if (hr && stopping(a))
			return eq_error_set(err, EQ_ERR_STOPPED,
					    "stopped on request %s the health check of release %" PRIu64
					    " in slot %s; it stays on trial and is checked %sat the next start",
					    before ? "before" : "during", st.target_number,
					    eq_bl_slot_name((unsigned)booted), before ? "" : "again ");
		if (hr) {
			char reason[EQ_STATE_REASON_MAX];
			snprintf(reason, sizeof(reason), "health check failed: %s", eq_error_msg(&he));
			eq_log(EQ_LOG_ERR, "release %" PRIu64 " in slot %s: %s; rolling back to slot %s",
			       st.target_number, eq_bl_slot_name((unsigned)booted), reason,
			       eq_bl_slot_name((unsigned)st.from_slot));
			*ret_exit = EQ_EXIT_ROLLED_BACK;
			return fail_trial(a, &st, booted, reason, err);
		}
		if ((r = eq_bl_mark_good(a->bl, (unsigned)booted, err)))
			return eq_error_prefix(err, r, "bootloader");
		eq_log(EQ_LOG_NOTICE, "release %" PRIu64 " ('%s') in slot %s passed its health checks and is committed",
		       st.target_number, st.target_release, eq_bl_slot_name((unsigned)booted));
		struct eq_state idle;
		eq_state_init(&idle);
		if ((r = save_state(a, &idle, err)))
			return r;
		struct eq_slot_info from;
		from_release(a, st.from_slot, booted, &from);
		report(a, EQ_REPORT_COMMITTED, from.number, from.release, st.target_number, st.target_release, NULL, 0,
		       NULL, 0);
		return EQ_OK;
	}
	/* Idle on a committed slot: boot scripts that decrement at every boot
	 * (RAUC style) would use up its attempts; give them back. */
	if (!br && bs.n_order > 0 && (int)bs.order[0] == booted && bs.trial < 0 && bs.left[booted] > 0)
		return eq_bl_rearm(a->bl, (unsigned)booted, err);
	return EQ_OK;
}

eq_err eq_agent_confirm(struct eq_agent *a, enum eq_exit *ret_exit, struct eq_error *err)
{
	eq_err r = confirm_run(a, ret_exit, err);
	report_flush(a);
	return r;
}

eq_err eq_agent_rollback(struct eq_agent *a, const char *reason, struct eq_error *err)
{
	int booted;
	eq_err r = booted_slot(a, &booted, err);
	if (r)
		return r;
	int other = 1 - booted;
	char *root = NULL;
	struct eq_manifest *m = NULL;
	r = eq_slot_open(a->cfg, eq_bl_slot_name((unsigned)other), &root, err);
	if (!r)
		r = eq_slot_read_release(root, local_keys(a), a->cfg->board, &m, err);
	(void)!eq_slot_release(a->cfg, eq_bl_slot_name((unsigned)other), NULL);
	eq_free(root);
	if (r)
		return eq_error_prefix(err, r, "cannot roll back: slot %s holds no verified release",
				       eq_bl_slot_name((unsigned)other));
	uint64_t number = 0;
	r = get_number(m, &number, NULL, err);
	eq_manifest_free(m);
	if (r)
		return eq_error_prefix(err, r, "cannot roll back: slot %s", eq_bl_slot_name((unsigned)other));
	struct eq_state st;
	if ((r = load_state(a, &st, err)))
		return r;
	/* Other slot first, so a power cut between the writes still boots. */
	if ((r = eq_bl_mark_good(a->bl, (unsigned)other, err)) || (r = eq_bl_mark_bad(a->bl, (unsigned)booted, err)))
		return eq_error_prefix(err, r, "bootloader");
	struct eq_state idle;
	eq_state_init(&idle);
	if (st.phase == EQ_PHASE_TRYING && st.target_slot == booted) {
		idle.failed_number = st.target_number;
	} else {
		/* Optional: a running slot whose release cannot be read marks
		 * no release as failed (failed_number stays 0, "none"). */
		struct eq_manifest *cur = NULL;
		if (read_running(a, booted, &cur, NULL) || get_number(cur, &idle.failed_number, NULL, NULL))
			idle.failed_number = 0;
		eq_manifest_free(cur);
	}
	snprintf(idle.failed_reason, sizeof(idle.failed_reason), "%s", reason);
	eq_log(EQ_LOG_NOTICE, "slot %s marked bad; the next boot starts slot %s (release %" PRIu64 ")",
	       eq_bl_slot_name((unsigned)booted), eq_bl_slot_name((unsigned)other), number);
	return save_state(a, &idle, err);
}

/* How many earlier releases provision reads when looking for one by name:
 * each is a signed manifest download, and the current release number that
 * starts the search comes from the server. */
#define PROVISION_MAX_SEARCH 256

/* The releases seen, for the error that says what the channel has; capped
 * like the message it goes into. */
struct rel_list {
	char text[320];
	bool full;
};

static void list_release(struct rel_list *l, const char *name, uint64_t number)
{
	size_t len = strlen(l->text);
	char item[96];
	int n = snprintf(item, sizeof(item), "%s'%s' (%" PRIu64 ")", len ? ", " : "", name, number);
	if (l->full || n < 0)
		return;
	if (len + (size_t)n + sizeof(", ...") > sizeof(l->text)) {
		l->full = true;
		snprintf(l->text + len, sizeof(l->text) - len, ", ...");
		return;
	}
	memcpy(l->text + len, item, (size_t)n + 1);
}

/*
 * Makes c->next the release @arg names, by the rule eqota-gen uses
 * (eq_manifest_release_match(): a name match wins, then digits are a
 * number). The repository has no index of names, so finding a name, or
 * making sure no release is named like a number, reads the earlier signed
 * manifests newest first. Ones that are missing or do not verify are passed
 * over: they could not be installed anyway. A network failure stops the
 * search, so it is never reported as "no such release".
 */
static eq_err pick_release(struct eq_agent *a, const char *arg, struct eq_check *c, struct eq_update_result *res,
			   struct eq_error *err)
{
	if (eq_manifest_release_match(res->release, res->number, arg) == EQ_RELEASE_BY_NAME)
		return EQ_OK;
	uint64_t want = 0;
	bool numeric = eq_manifest_release_number_arg(arg, &want);
	struct rel_copy by_number;
	memset(&by_number, 0, sizeof(by_number));
	struct eq_error num_err;
	eq_err num_r = EQ_OK;
	struct rel_list seen;
	memset(&seen, 0, sizeof(seen));
	list_release(&seen, res->release, res->number);
	size_t unreadable = 0;
	uint64_t lowest = res->number > PROVISION_MAX_SEARCH ? res->number - PROVISION_MAX_SEARCH : 1;
	eq_err r = EQ_OK;
	for (uint64_t k = res->number - 1; k >= lowest && k > 0; k--) {
		struct rel_copy x;
		struct eq_error e;
		eq_err fr = fetch_release(a, k, &x, &e);
		if (fr == EQ_ERR_NETWORK || fr == EQ_ERR_NOMEM || fr == EQ_ERR_IO) {
			if (err)
				*err = e;
			r = eq_error_prefix(err, fr, "looking for release '%s'", arg);
			goto out;
		}
		if (fr) {
			eq_log(EQ_LOG_DEBUG, "release %" PRIu64 ": %s, passing over", k, eq_error_msg(&e));
			if (numeric && k == want) {
				num_r = fr;
				num_err = e;
			}
			unreadable++;
			continue;
		}
		list_release(&seen, x.name, x.number);
		enum eq_release_match m = eq_manifest_release_match(x.name, x.number, arg);
		if (m == EQ_RELEASE_BY_NAME) {
			use_release(c, res, &x);
			goto out;
		}
		if (m == EQ_RELEASE_BY_NUMBER)
			by_number = x;
		else
			rel_copy_done(&x);
	}
	if (numeric && want == res->number)
		goto out;
	if (by_number.m) {
		use_release(c, res, &by_number);
		goto out;
	}
	if (num_r) {
		if (err)
			*err = num_err;
		r = num_r;
		goto out;
	}
	if (numeric && want > 0 && want < lowest) {
		/* Older than the search reached: as a number it needs no search. */
		struct rel_copy x;
		if (!(r = fetch_release(a, want, &x, err)))
			use_release(c, res, &x);
		goto out;
	}
	char more[96] = "";
	if (lowest > 1)
		snprintf(more, sizeof(more), "; only the %d newest were searched", PROVISION_MAX_SEARCH + 1);
	if (unreadable)
		snprintf(more + strlen(more), sizeof(more) - strlen(more), "; %zu could not be read or verified",
			 unreadable);
	r = eq_error_set(err, EQ_ERR_NOTFOUND,
			 "no release '%s' (by name or number) in board %s, channel %s; releases, newest first: %s%s",
			 arg, a->cfg->board, a->cfg->channel, seen.text, more);
out:
	rel_copy_done(&by_number);
	return r;
}

eq_err eq_agent_provision(struct eq_agent *a, unsigned slot, const char *release, struct eq_update_result *ret,
			  struct eq_error *err)
{
	struct eq_update_result res;
	memset(&res, 0, sizeof(res));
	double t0 = eq_now_s();
	struct eq_check c;
	memset(&c, 0, sizeof(c));
	bool fresh;
	eq_err r = eq_mclient_fetch_current(a, now_s(), &c, &fresh, err);
	if (r)
		goto out;
	(void)!get_number(c.next, &res.number, res.release, NULL);
	if (release && (r = pick_release(a, release, &c, &res, err)))
		goto out;
	if ((r = eq_plan_make(NULL, c.next, &c.plan, err)))
		goto out;
	if ((r = build_slot(a, (int)slot, NULL, NULL, &c, &c.plan, &res.install, err)))
		goto out;
	if ((r = eq_bl_mark_good(a->bl, slot, err))) {
		eq_error_prefix(err, r, "bootloader");
		goto out;
	}
	struct eq_state idle;
	eq_state_init(&idle);
	r = save_state(a, &idle, err);
	res.exit = EQ_EXIT_OK;
out:
	eq_check_done(&c);
	res.seconds = eq_now_s() - t0;
	if (!r)
		*ret = res;
	return r;
}
