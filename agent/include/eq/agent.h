/*
 * eq_agent: the device side of eqota, as the program `eqota` (agent/main.c,
 * agent/daemon.c) uses it: the configuration, the eq_agent_* calls and the
 * structs they fill. Fetch, plan, install, slot, state, policy, report and
 * health internals have private headers beside their .c files (fetch.h,
 * plan.h, install.h, slot.h, state.h, policy.h, report.h, health.h).
 *
 * Uses eq_manifest, eq_delta, eq_bootloader and eq_base.
 */
#ifndef EQ_AGENT_H
#define EQ_AGENT_H

#include <eq/bootloader.h>
#include <eq/common.h>
#include <eq/delta.h>
#include <eq/manifest.h>
#include <signal.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================== */
/* ==== config (agent/config.c) ========================================== */

#define EQ_CONFIG_DEFAULT_PATH "/etc/eqota/eqota.conf"
#define EQ_CONFIG_MAX_BYTES (256u * 1024u)
#define EQ_CONFIG_MAX_CHECKS 16u
/* Defaults of data_dir and mkfs, written once: the config fills them in,
 * and the slot code falls back to them for a config built by hand. */
#define EQ_CONFIG_DEFAULT_DATA_DIR "/var/lib/eqota"
#define EQ_CONFIG_DEFAULT_MKFS "mkfs.ext4 -q -F"
/* [persist]: at most this many paths; max-bytes default and ceiling. */
#define EQ_CONFIG_MAX_PERSIST 64u
#define EQ_CONFIG_DEFAULT_PERSIST_BYTES (1024u * 1024u)
#define EQ_CONFIG_MAX_PERSIST_BYTES (1024u * 1024u * 1024u)
/* The [persist] paths when the key is absent (docs/configuration.md). */
#define EQ_CONFIG_DEFAULT_PERSIST "/etc/machine-id /etc/ssh/ssh_host_*_key /etc/ssh/ssh_host_*_key.pub /etc/hostname"

enum eq_slot_type { EQ_SLOT_DIR, EQ_SLOT_BLOCK };

/*
 * The parsed configuration: one plain struct, every string owned by it and
 * freed by eq_config_done(). Defaults are documented in docs/configuration.md
 * and applied by eq_config_load() for keys that are absent.
 */
struct eq_config {
	/* [repository] */
	char *url; /* base URL of the repository (http, https, file) */
	char *board;
	char *channel;
	char *root;                 /* installed root document (root mode), or NULL */
	char *key;                  /* a PEM public key (legacy mode), or NULL */
	char *trust;                /* root-of-trust file (legacy mode), or NULL; one of the three is set */
	char *ca_file;              /* CA bundle for https, NULL: system default */
	unsigned connect_timeout_s; /* default 15 */
	unsigned low_speed_time_s;  /* abort below min_rate for this long, default 60 */
	unsigned min_rate;          /* bytes/s, default 1024; also sets each request's deadline */
	unsigned retries;           /* per request, default 5 */
	unsigned retry_delay_ms;    /* first backoff, doubled each retry, default 1000 */
	/* [slots] */
	enum eq_slot_type slot_type;
	char *slot_a; /* directory (dir) or block device (block) */
	char *slot_b;
	char *mkfs; /* block slots: mkfs command, default "mkfs.ext4 -q -F" */
	/* [bootloader] */
	char *bl_backend;          /* "file", "uboot", "grub" */
	char *bl_path;             /* env file (file), first grubenv copy (grub), fw_env.config (uboot);
			     * NULL: the backend's default (not for file) */
	unsigned bl_good_attempts; /* 1..9, 0: the default 3 */
	unsigned bl_try_attempts;  /* 1..9, 0: the default 2 */
	char *bl_var_order;        /* variable names, NULL: RAUC's BOOT_ORDER ... */
	char *bl_var_a_left;
	char *bl_var_b_left;
	char *bl_var_trial;
	char *cmdline; /* where the booted slot is read, default /proc/cmdline */
	/* [paths] */
	char *data_dir; /* default /var/lib/eqota */
	/* [health] */
	char *checks[EQ_CONFIG_MAX_CHECKS]; /* command lines, split at spaces */
	size_t n_checks;
	unsigned health_timeout_s; /* default 60 */
	/* [daemon] */
	unsigned poll_interval_s; /* default 3600 */
	unsigned poll_jitter_s;   /* default 600 */
	unsigned cycle_timeout_s; /* a poll is stopped after this long, default 10800 */
	/* [update] (docs/fleet.md) */
	unsigned pin;         /* install no release numbered above it; 0: none */
	int64_t hold_until;   /* install nothing before this time; 0: none */
	char *device_id_file; /* the id staged rollouts hash, default /etc/machine-id */
	/* [report] (docs/fleet.md): all optional */
	char *report_url;          /* http(s) URL the agent POSTs its reports to; NULL: none */
	char *report_ca_file;      /* CA bundle for an https report_url */
	char *report_cert;         /* client certificate (PEM), or NULL */
	char *report_key;          /* its private key (PEM), or NULL */
	unsigned report_queue;     /* reports kept while they cannot be sent, default 100 */
	unsigned report_timeout_s; /* per POST, default 10 */
	/* [persist] (docs/agent.md): files copied from the running slot into
	 * the new one; absolute, globs in the last component only */
	char *persist_paths[EQ_CONFIG_MAX_PERSIST];
	size_t n_persist;           /* 0: nothing persists ("paths =") */
	unsigned persist_max_bytes; /* default EQ_CONFIG_DEFAULT_PERSIST_BYTES */
};

/*
 * Loads and checks the INI file at @path: "[section]" lines, "key = value"
 * lines, '#' and ';' comments. Unknown sections and keys, repeated keys
 * (except health "check"), missing required keys and out-of-range values are
 * EQ_ERR_PARSE / EQ_ERR_INVAL naming "FILE:LINE: key". On success *ret is
 * filled (free with eq_config_done()).
 */
EQ_API eq_err eq_config_load(const char *path, struct eq_config *ret, struct eq_error *err) EQ_MUST_CHECK;
/* Parses config text already in memory; @name is used in messages. */
EQ_API eq_err eq_config_parse(const char *name, const char *text, size_t len, struct eq_config *ret,
			      struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_config_done(struct eq_config *c);

/* ====================================================================== */
/* ==== what the fetches of this process cost (agent/fetch.c) ============== */

/* Counters of what went over the network (for reports and tests). */
struct eq_fetch_stats {
	uint64_t requests;
	uint64_t bytes;        /* body bytes received */
	uint64_t resumed;      /* downloads continued with a Range request */
	uint64_t not_modified; /* 304 answers */
};

/* ====================================================================== */
/* ==== the plan and what an install and a verify did ====================== */

enum eq_plan_action {
	EQ_PLAN_KEEP,   /* same unihash (or payload): copy from the running slot */
	EQ_PLAN_DELTA,  /* apply a delta to the payload rebuilt from the running slot */
	EQ_PLAN_FULL,   /* download the full object */
	EQ_PLAN_REMOVE, /* in the running release only */
};
EQ_API const char *eq_plan_action_name(enum eq_plan_action a);

struct eq_plan_item {
	enum eq_plan_action action;
	const struct eq_manifest_package *pkg; /* in the new manifest (NULL for REMOVE) */
	const struct eq_manifest_package *old; /* in the running manifest, or NULL */
	const struct eq_manifest_delta *delta; /* for DELTA */
	uint64_t download;                     /* bytes this item fetches */
};

struct eq_plan {
	struct eq_plan_item *items; /* owned; pointers into the two manifests */
	size_t n;
	size_t count[4];
	uint64_t download_bytes; /* sum of items' download */
	uint64_t full_bytes;     /* every object of the new release */
	uint64_t install_bytes;  /* sum of payload sizes of the new release */
};

/* What the installer did, per action, after fallbacks. */
struct eq_install_report {
	size_t kept, delta, full, fallback; /* fallback: kept/delta that had to download the object */
	uint64_t bytes_written;             /* payload bytes installed */
	/* Added (image releases): image components installed (counted in the
	 * actions above too) and their payload bytes; package entries set
	 * aside in the new slot (docs/internals/install.md). */
	size_t components;
	uint64_t component_bytes;
	size_t aside;
};

/* What eq_agent_verify() found. */
struct eq_verify_report {
	size_t packages, entries; /* checked */
	size_t persistent;        /* added: entries at [persist] paths, checked in the release's version set aside */
	size_t damaged;           /* packages with at least one problem */
	size_t problems;          /* in all */
	uint64_t bytes;           /* file data read */
	/* Added (image releases): entries of packages checked in the aside
	 * folder (the image replaced or removed them in the slot), and the
	 * packages that are image components. */
	size_t aside;
	size_t components;
};
/* Receives each problem: @path "" for the package's record itself. */
typedef void (*eq_verify_fn)(void *ctx, const char *package, const char *path, const char *problem);
/* Problems passed to the callback per package; the rest are counted. */
#define EQ_VERIFY_MAX_LISTED 20u

/* ====================================================================== */
/* ==== state (agent/state.c) ============================================= */

/*
 * The agent's one state file, "<data_dir>/state", written atomically
 * (eq_file_replace_atomic). Lines "key=value"; documented in
 * docs/internals/state-machine.md.
 */
enum eq_phase {
	EQ_PHASE_IDLE,       /* nothing in progress */
	EQ_PHASE_INSTALLING, /* the target slot is being built: not bootable */
	EQ_PHASE_INSTALLED,  /* the target slot is complete and verified */
	EQ_PHASE_TRYING,     /* handed to the bootloader to try once */
};
EQ_API const char *eq_phase_name(enum eq_phase p);

#define EQ_STATE_REASON_MAX 256
#define EQ_STATE_BOOT_ID_MAX 64
struct eq_state {
	enum eq_phase phase;
	int target_slot;        /* 0/1, -1 when idle */
	int from_slot;          /* slot that was running when the update began */
	uint64_t target_number; /* release number being installed or tried */
	char target_release[65];
	uint64_t failed_number; /* last release that failed its trial, 0 for none */
	char failed_reason[EQ_STATE_REASON_MAX];
	int64_t changed_at; /* seconds since the epoch of the last change */
	/* Added. Kernel boot id (/proc/sys/kernel/random/boot_id) when the
	 * trial was armed: the same id at confirm means "not rebooted yet".
	 * "" when unknown. */
	char boot_id[EQ_STATE_BOOT_ID_MAX + 1];
	/* Added. The last transient install error: never marks the release
	 * failed, only delays its next attempt (EQ_RETRY_*). 0/"" for none. */
	uint64_t error_number; /* release the error was for */
	char error[EQ_STATE_REASON_MAX];
	int64_t error_at;     /* when it happened */
	uint64_t attempts;    /* failed attempts in a row for error_number */
	int64_t next_attempt; /* the daemon tries again from this time on */
};

/* ====================================================================== */
/* ==== `eqota hold` (agent/policy.c) ===================================== */

/* A hold is at most this long: a device forgotten on hold would miss
 * security fixes for good. */
#define EQ_HOLD_MAX_S (366 * 86400)

/* ====================================================================== */
/* ==== for the program: its signal handler and systemd =================== */

/* agent/health.c. Kills the process group of the health check running now, if any. Safe
 * in a signal handler: a cycle of the daemon stopped by SIGTERM must not
 * leave a health check behind. */
EQ_API void eq_health_kill_running(void);

/* ---- agent/sdnotify.c: the service manager's readiness protocol -------- */

/*
 * Sends @state ("READY=1", "STATUS=...", "STOPPING=1": newline-separated
 * assignments as sd_notify(3) defines them) to the datagram socket named by
 * $NOTIFY_SOCKET, which systemd sets for a Type=notify service. The
 * protocol is one datagram, so eqota speaks it without libsystemd. EQ_OK
 * without doing anything when $NOTIFY_SOCKET is unset; EQ_ERR_INVAL for a
 * name that is not an absolute path or an abstract name ('@'), or too long;
 * EQ_ERR_IO when the datagram cannot be sent.
 */
EQ_API eq_err eq_sd_notify(const char *state, struct eq_error *err) EQ_MUST_CHECK;

/* ====================================================================== */
/* ==== the agent (agent/agent.c): check, update, confirm, rollback ======== */

/* Exit codes of `eqota` (docs/agent.md). */
enum eq_exit {
	EQ_EXIT_OK = 0,         /* success; for check/update: up to date */
	EQ_EXIT_FAILED = 1,     /* failed; the running slot is untouched */
	EQ_EXIT_USAGE = 2,      /* bad command line or configuration */
	EQ_EXIT_UPDATED = 3,    /* a new slot is installed and will be tried at the next boot */
	EQ_EXIT_ROLLED_BACK = 4 /* the new slot failed its checks; the previous slot is back */
};

struct eq_agent;

/* Creates the agent for @cfg (which must outlive it): trust, bootloader,
 * fetcher, data directory. Free with eq_agent_free(). */
EQ_API eq_err eq_agent_new(const struct eq_config *cfg, struct eq_agent **ret, struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_agent_free(struct eq_agent *a);
EQ_API void eq_agent_set_progress(struct eq_agent *a, eq_progress_fn fn, void *ctx);
/* @flag (may be NULL; must outlive @a) is set from a signal handler when
 * the work should stop: downloads, the install and the health check stop
 * at their next safe point and the call fails with EQ_ERR_STOPPED, saying
 * where. The slot being built stays out of the boot order, a slot on trial
 * stays on trial, and the next update or confirm takes over from there
 * (docs/agent.md, "Stopping"). */
EQ_API void eq_agent_set_stop(struct eq_agent *a, const volatile sig_atomic_t *flag);

/* A slot as the agent sees it. */
struct eq_slot_info {
	bool has_release;
	char release[65];
	uint64_t number;
	size_t packages;
};

/* Why a newer release is not installed now (docs/fleet.md). */
enum eq_defer {
	EQ_DEFER_NONE,
	EQ_DEFER_PINNED,  /* the running release is at [update] pin or above */
	EQ_DEFER_HELD,    /* a hold ([update] hold-until or `eqota hold`) lasts */
	EQ_DEFER_ROLLOUT, /* the staged rollout does not include this device yet */
	EQ_DEFER_HALTED,  /* the release's rollout is halted */
};
/* "pinned", "held", "rollout", "halted"; NULL for EQ_DEFER_NONE. */
EQ_API const char *eq_defer_name(enum eq_defer d);

/* What the staged rollout of one release means for this device. */
struct eq_rollout_view {
	bool staged;      /* the timestamp carries a rollout (else: every device) */
	unsigned percent; /* 0..100 */
	bool halted;
	bool selected;     /* this device is in the percentage */
	bool no_device_id; /* the id could not be read: never selected (see detail) */
	char detail[EQ_STATE_REASON_MAX];
};

/* The local policy in force: pin and hold. */
struct eq_policy_view {
	uint64_t pin;         /* [update] pin, 0: none */
	int64_t held_until;   /* the later of config and `eqota hold` if in the future, else 0 */
	bool hold_by_command; /* that time comes from `eqota hold` */
};

struct eq_status {
	int booted; /* slot named on the kernel command line, -1 if none */
	struct eq_bl_state bl;
	bool bl_garbled;
	struct eq_slot_info slot[EQ_BL_SLOTS];
	struct eq_state state;
	struct eq_fetch_stats fetched; /* of this process */
	/* Root mode only (root_mode false otherwise): what the trust store
	 * accepted. ts_version 0: no timestamp yet. */
	struct {
		bool root_mode;
		uint64_t root_version;
		int64_t root_expires;
		uint64_t ts_version;
		int64_t ts_expires;
	} trust;
	struct eq_policy_view policy;
	/* Root mode, once a timestamp was accepted: the release it names and
	 * its rollout for this device (from the trust store, no network). */
	uint64_t offered_number; /* 0: not known */
	struct eq_rollout_view rollout;
	/* The id this device's reports carry (a hash of [update]
	 * device-id-file, never the id itself); "" when the file cannot be
	 * read. Support matches a device to its reports with it. */
	char report_id[33];
};
EQ_API eq_err eq_agent_status(struct eq_agent *a, struct eq_status *ret, struct eq_error *err) EQ_MUST_CHECK;

/* The result of a check: the verified new manifest and the plan. */
struct eq_check {
	bool up_to_date;
	bool skipped_failed; /* newer release that failed before (see --retry) */
	/* Added: the offered release failed to install (a transient error)
	 * and its next attempt is not due yet (see --retry). */
	bool waiting;
	int64_t next_attempt;
	uint64_t attempts;
	char error[EQ_STATE_REASON_MAX];
	struct eq_manifest *running; /* owned */
	struct eq_manifest *next;    /* owned: the release to install (the pinned one under a pin) */
	struct eq_plan plan;
	uint8_t *manifest_bytes, *sig_bytes;
	size_t manifest_len, sig_len;
	/* Added (docs/fleet.md). deferred: why next is not installed now,
	 * though newer and not failed. */
	enum eq_defer deferred;
	uint64_t channel_number; /* the channel's current release; next's unless pinned below it */
	struct eq_policy_view policy;
	struct eq_rollout_view rollout; /* of next; staged false in legacy mode */
};
EQ_API void eq_check_done(struct eq_check *c);

/* Fetches and verifies the manifest and plans; changes nothing. */
EQ_API eq_err eq_agent_check(struct eq_agent *a, bool retry, struct eq_check *ret, struct eq_error *err) EQ_MUST_CHECK;

struct eq_update_result {
	enum eq_exit exit;
	struct eq_install_report install;
	uint64_t number;
	char release[65];
	double seconds;
	/* Added: exit EQ_EXIT_OK with deferred set: a newer release waits (why
	 * in the policy and rollout of the check). */
	enum eq_defer deferred;
	struct eq_policy_view policy;
	struct eq_rollout_view rollout;
	/* Exit EQ_EXIT_OK with this set: release @number failed its trial on
	 * this device before and is not installed again without @retry. */
	bool skipped_failed;
};
/* check + install into the inactive slot + "try once" in the bootloader. */
EQ_API eq_err eq_agent_update(struct eq_agent *a, bool retry, struct eq_update_result *ret,
			      struct eq_error *err) EQ_MUST_CHECK;

/* After a boot: finish an interrupted install, or confirm a slot on trial
 * (health checks -> mark good, or mark bad and fall back). *ret_exit is
 * EQ_EXIT_OK (nothing to do or committed) or EQ_EXIT_ROLLED_BACK. */
EQ_API eq_err eq_agent_confirm(struct eq_agent *a, enum eq_exit *ret_exit, struct eq_error *err) EQ_MUST_CHECK;
/* Marks the booted slot bad and makes the other (committed) slot primary. */
EQ_API eq_err eq_agent_rollback(struct eq_agent *a, const char *reason, struct eq_error *err) EQ_MUST_CHECK;
/* `eqota verify`: eq_slot_verify() of the booted slot against its records
 * and its recorded release (*ret_slot, *ret_booted). */
EQ_API eq_err eq_agent_verify(struct eq_agent *a, eq_verify_fn fn, void *ctx, struct eq_verify_report *ret,
			      struct eq_slot_info *ret_slot, int *ret_booted, struct eq_error *err) EQ_MUST_CHECK;
/*
 * Takes "<data_dir>/agent.lock" (flock) for the work @what ("update",
 * "daemon"): one eqota at a time changes the slots, the bootloader, the
 * state and the caches, so an operator's `eqota update` and the daemon's
 * poll never interleave. The file is created 0600 so that no other user
 * can open it, hence none can hold it; EQ_ERR_UNSAFE when it is a symlink,
 * not a plain file, or another user's (planted: the message says to remove
 * it), and one of ours that others may open is made 0600. Waits up to
 * @wait_ms for a holder (0: not at all) unless eq_agent_set_stop()'s flag
 * is raised, then EQ_ERR_STATE naming the holder ("eqota update, PID
 * 1234"). Removes the world-readable "<data_dir>/lock" of earlier versions.
 * Held until eq_agent_free().
 */
EQ_API eq_err eq_agent_lock(struct eq_agent *a, const char *what, unsigned wait_ms, struct eq_error *err) EQ_MUST_CHECK;
/* Holds updates back until @until (seconds since 1970; 0 lifts the hold):
 * `eqota hold`. EQ_ERR_INVAL for a past time or one more than
 * EQ_HOLD_MAX_S ahead. A slot already installed or on trial is not held. */
EQ_API eq_err eq_agent_hold(struct eq_agent *a, int64_t until, struct eq_error *err) EQ_MUST_CHECK;

/* Installs release @release into slot @slot and marks it good: the factory
 * path, with the same installer as updates. @release NULL is the current
 * release; else it is a release name or number with eqota-gen's rule
 * (eq_manifest_release_match()): a name match wins, then decimal digits are
 * a number. Earlier releases come from the repository's releases/<number>/
 * copies; finding one by name (or making sure no release is named like a
 * number) reads up to 256 earlier signed manifests, newest first.
 * EQ_ERR_NOTFOUND "no release 'X' (by name or number) in board B, channel
 * C; releases, newest first: 'r2' (2), 'r1' (1)" when none matches. */
EQ_API eq_err eq_agent_provision(struct eq_agent *a, unsigned slot, const char *release, struct eq_update_result *ret,
				 struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
