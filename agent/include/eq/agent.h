/*
 * eq_agent: the device side of eqota. Config, fetch (libcurl), plan,
 * slot building (install, provision), state, health checks. The program
 * `eqota` (agent/main.c) only parses arguments and calls these.
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
	unsigned bl_try_attempts;  /* 1..9, 0: the default 1 */
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
/* ==== fetch (agent/fetch.c, libcurl) ==================================== */

struct eq_fetcher;

/* Counters of what went over the network (for reports and tests). */
struct eq_fetch_stats {
	uint64_t requests;
	uint64_t bytes;        /* body bytes received */
	uint64_t resumed;      /* downloads continued with a Range request */
	uint64_t not_modified; /* 304 answers */
};

/*
 * Creates a fetcher for the repository of @cfg. Partial and finished
 * downloads live in @download_dir (created if missing). Free with
 * eq_fetcher_free().
 */
EQ_API eq_err eq_fetcher_new(const struct eq_config *cfg, const char *download_dir, struct eq_fetcher **ret,
			     struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_fetcher_free(struct eq_fetcher *f);
EQ_API void eq_fetcher_set_progress(struct eq_fetcher *f, eq_progress_fn fn, void *ctx);
/* Added. @flag (set from a signal handler, may be NULL) stops a transfer or
 * a retry wait within about a second: the call fails with EQ_ERR_STOPPED
 * and an object's .part stays, to be resumed. @flag must outlive @f. */
EQ_API void eq_fetcher_set_stop(struct eq_fetcher *f, const volatile sig_atomic_t *flag);
EQ_API void eq_fetcher_stats(const struct eq_fetcher *f, struct eq_fetch_stats *ret);

/*
 * Fetches boards/<board>/<channel>/manifest.json and its .sig. Conditional
 * GET: the validators (ETag, Last-Modified) of the last successful fetch are
 * kept in the download dir; when the server answers 304, *ret_not_modified
 * is true and nothing else is returned. Otherwise the exact bytes of both
 * files (each capped at its EQ_MANIFEST_*_MAX_BYTES) are returned; the caller
 * frees them with eq_free() and must verify before parsing. The validators
 * are remembered only once eq_fetch_manifest_commit() is called (after the
 * caller verified the bytes), so a rejected manifest is fetched again.
 */
EQ_API eq_err eq_fetch_manifest(struct eq_fetcher *f, bool *ret_not_modified, uint8_t **ret_manifest,
				size_t *ret_manifest_len, uint8_t **ret_sig, size_t *ret_sig_len,
				struct eq_error *err) EQ_MUST_CHECK;
EQ_API eq_err eq_fetch_manifest_commit(struct eq_fetcher *f, struct eq_error *err) EQ_MUST_CHECK;
/*
 * Fetches release @number's manifest and .sig from
 * boards/<board>/<channel>/releases/<number>/ (unconditionally; the caller
 * frees both with eq_free() and verifies before parsing). EQ_ERR_NOTFOUND
 * when the repository no longer keeps that release.
 */
EQ_API eq_err eq_fetch_release_manifest(struct eq_fetcher *f, uint64_t number, uint8_t **ret_manifest,
					size_t *ret_manifest_len, uint8_t **ret_sig, size_t *ret_sig_len,
					struct eq_error *err) EQ_MUST_CHECK;
/*
 * GETs the file @rel of the repository (a root, a timestamp, a manifest of
 * root mode) into memory, at most @max bytes (EQ_ERR_LIMIT past them,
 * without reading on), with the fetcher's retries and deadlines.
 * EQ_ERR_NOTFOUND for HTTP 404/410 or a missing file: URL. The caller
 * frees *ret with eq_free() and verifies before parsing.
 */
EQ_API eq_err eq_fetch_file(struct eq_fetcher *f, const char *rel, size_t max, uint8_t **ret, size_t *ret_len,
			    struct eq_error *err) EQ_MUST_CHECK;
/*
 * eq_fetch_file() made conditional: a non-empty @etag goes out as
 * If-None-Match, and a 304 answer sets *ret_not_modified with nothing in
 * *ret (NULL, length 0). Otherwise *ret_etag (when not NULL) receives the
 * answer's ETag, or NULL when it had none; the caller frees it with
 * eq_free(), and should keep it only once it has verified the bytes.
 */
/*
 * Whether the file @rel is in the repository, by a HEAD request: EQ_OK
 * when it is (and would fit @max, if the server says its length),
 * EQ_ERR_NOTFOUND for 404/410, other codes as eq_fetch_file(). For probes
 * that usually find nothing (the next root version): a 404 to a GET
 * carries the server's error page, which a HEAD does not.
 */
EQ_API eq_err eq_fetch_exists(struct eq_fetcher *f, const char *rel, size_t max, struct eq_error *err) EQ_MUST_CHECK;
EQ_API eq_err eq_fetch_file_cond(struct eq_fetcher *f, const char *rel, size_t max, const char *etag,
				 bool *ret_not_modified, uint8_t **ret, size_t *ret_len, char **ret_etag,
				 struct eq_error *err) EQ_MUST_CHECK;
/* Forgets the validators so that the next eq_fetch_manifest() is a full GET. */
EQ_API void eq_fetch_manifest_forget(struct eq_fetcher *f);

/*
 * Downloads repository file @rel_path (e.g. "objects/<sha>") which must have
 * exactly @size bytes with SHA-256 @sha256_hex. Data goes to
 * "<download_dir>/<sha256_hex>.part"; an existing .part is continued with an
 * HTTP Range request. A server sending more than @size bytes is cut off and
 * the download rejected (EQ_ERR_LIMIT); a hash mismatch removes the file
 * (EQ_ERR_VERIFY). On success the file is renamed to
 * "<download_dir>/<sha256_hex>" and *ret_path (malloc'ed, caller frees) names
 * it; an already complete and verified file is returned without a request.
 */
EQ_API eq_err eq_fetch_object(struct eq_fetcher *f, const char *rel_path, const char *sha256_hex, uint64_t size,
			      char **ret_path, struct eq_error *err) EQ_MUST_CHECK;

/* ====================================================================== */
/* ==== slot records, plan and install (agent/slot*.c, agent/install.c) ==== */

/*
 * Where a slot describes itself, relative to its root:
 *   usr/lib/eqota/slot/manifest.json, manifest.json.sig   the release
 *   usr/lib/eqota/slot/packages/<name>.files              each package's files
 * A .files line: "TYPE MODE UID GID SIZE SHA256 PATH" (TYPE f d l h c b p;
 * SHA256 "-" for non-files; PATH percent-encoded for bytes <= 0x20, '%' and
 * >= 0x7f), in payload order; documented in docs/internals/slot-records.md.
 * Added: a first line "eqota-files 1", and an 8th field EXTRA for types l
 * (symlink target, percent-encoded), h (the path it links to) and c/b
 * ("MAJOR:MINOR"), so a kept package can be checked and copied from its
 * record alone.
 */
/* "usr/lib/eqota/slot": the folder payloads may not touch (<eq/delta.h>). */
#define EQ_SLOT_RECORD_DIR EQ_PAYLOAD_RESERVED_DIR

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

/*
 * Decides per package from the signed manifests alone (O(packages)): keep
 * when the unihash (or the payload hash) is unchanged, delta when the new
 * package offers one from the running payload, full otherwise, remove for
 * packages that are gone. @running may be NULL (provisioning: all full).
 * Free with eq_plan_done(); the plan points into both manifests.
 */
EQ_API eq_err eq_plan_make(const struct eq_manifest *running, const struct eq_manifest *next, struct eq_plan *ret,
			   struct eq_error *err) EQ_MUST_CHECK;
EQ_API void eq_plan_done(struct eq_plan *p);

/* Fetches an object or delta for the installer; returns a local file path
 * (malloc'ed, caller frees) holding exactly the verified bytes. */
typedef eq_err (*eq_object_fn)(void *ctx, const char *rel_path, const char *sha256_hex, uint64_t size, char **ret_path,
			       struct eq_error *err);

struct eq_install {
	const char *running_root; /* root of the running slot, NULL when provisioning */
	const struct eq_manifest *running;
	const char *target_root; /* empty directory that becomes the new slot's root */
	const struct eq_manifest *next;
	const uint8_t *manifest_bytes; /* the signed bytes of @next and its .sig, recorded in the slot */
	size_t manifest_len;
	const uint8_t *sig_bytes;
	size_t sig_len;
	const char *work_dir; /* for temporary payloads */
	eq_object_fn fetch;
	void *fetch_ctx;
	bool owners; /* apply owners and xattrs (running as root) */
	eq_progress_fn progress;
	void *progress_ctx;
	const char *target_name;           /* added: slot name for messages ("B"); NULL: target_root */
	const volatile sig_atomic_t *stop; /* added: when set, stop before the next package (EQ_ERR_STOPPED) */
};

/* What the installer did, per action, after fallbacks. */
struct eq_install_report {
	size_t kept, delta, full, fallback; /* fallback: kept/delta that had to download the object */
	uint64_t bytes_written;             /* payload bytes installed */
};

/*
 * Builds the new slot in @in->target_root from scratch so that it holds
 * exactly @in->next: kept packages copied from the running slot with every
 * file checked against its recorded hash (a mismatch turns the package into
 * a download), changed packages from a delta against the payload rebuilt
 * from the running slot (checked against the running manifest's payload
 * hash; on mismatch the full object) or from the full object. Every payload
 * is checked against the manifest before it is extracted. Finally the
 * manifest, its signature and every package's file list are written under
 * EQ_SLOT_RECORD_DIR and everything is synced. The plan @plan must come from
 * eq_plan_make(in->running, in->next).
 */
EQ_API eq_err eq_install_slot(const struct eq_install *in, const struct eq_plan *plan, struct eq_install_report *ret,
			      struct eq_error *err) EQ_MUST_CHECK;

/*
 * Added. The early space check eq_install_slot() runs before it fetches
 * anything (callers may run it alone, e.g. for `eqota check`), from the
 * sizes the manifest declares:
 *   - the work_dir filesystem must hold every download of the plan (the
 *     fetched files stay for resume until the caller removes them) plus the
 *     largest temporary payload set: one payload for a full object, the
 *     rebuilt old payload and the new one for a delta;
 *   - the target_root filesystem must hold the sum of the new payload sizes.
 * When both are on one filesystem the two needs are added. statvfs free
 * space as seen by an unprivileged user (f_bavail). EQ_ERR_LIMIT
 * "slot B has 120 MiB free, release needs 170 MiB", EQ_ERR_IO (statvfs).
 */
/* What eq_slot_verify() found. */
struct eq_verify_report {
	size_t packages, entries; /* checked */
	size_t damaged;           /* packages with at least one problem */
	size_t problems;          /* in all */
	uint64_t bytes;           /* file data read */
};
/* Receives each problem: @path "" for the package's record itself. */
typedef void (*eq_verify_fn)(void *ctx, const char *package, const char *path, const char *problem);
/* Problems passed to the callback per package; the rest are counted. */
#define EQ_VERIFY_MAX_LISTED 20u

/*
 * Checks the slot at @root against its records for every package of @m,
 * with the checks an update makes before it copies a kept package: each
 * entry present with its type, mode, owner (when running as root; for
 * directories too), size, SHA-256 of its data, symlink target, hard link
 * and device number; then, for a package without such a problem, that the
 * payload rebuilt from the files its record lists hashes to the payload
 * SHA-256 @m signs (a record that lists files the package does not ship is
 * a problem too). A missing or damaged record is a problem of its package.
 * Reads only (package files twice).
 * EQ_OK whatever it found (see *ret); an error only when it cannot look.
 */
EQ_API eq_err eq_slot_verify(const char *root, const struct eq_manifest *m, eq_verify_fn fn, void *ctx,
			     struct eq_verify_report *ret, struct eq_error *err) EQ_MUST_CHECK;

EQ_API eq_err eq_install_check_space(const struct eq_install *in, const struct eq_plan *plan,
				     struct eq_error *err) EQ_MUST_CHECK;

/*
 * Reads the release recorded in the slot at @root (manifest bytes, its .sig)
 * and verifies it against @trust (expiry not checked: a slot's own record is
 * never refused for its age). *ret_m is freed with eq_manifest_free();
 * EQ_ERR_NOTFOUND when the slot has no record.
 */
EQ_API eq_err eq_slot_read_release(const char *root, const struct eq_manifest_trust *trust, const char *board,
				   struct eq_manifest **ret_m, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Prepares slot @name ("A"/"B") of @cfg for writing: a dir slot is emptied;
 * a block slot is formatted (cfg->mkfs) and mounted under
 * <data_dir>/mnt/<name>. *ret_root (malloc'ed) is the root to fill.
 * eq_slot_release() unmounts a block slot after syncing.
 */
EQ_API eq_err eq_slot_prepare(const struct eq_config *cfg, const char *name, char **ret_root,
			      struct eq_error *err) EQ_MUST_CHECK;
/* Root of slot @name for reading (mounting a block slot read-only if needed). */
EQ_API eq_err eq_slot_open(const struct eq_config *cfg, const char *name, char **ret_root,
			   struct eq_error *err) EQ_MUST_CHECK;
EQ_API eq_err eq_slot_release(const struct eq_config *cfg, const char *name, struct eq_error *err) EQ_MUST_CHECK;


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
/* The state file's size cap: a longer file is damaged, not read. */
#define EQ_STATE_MAX_BYTES 8192u

/* Backoff of a release whose install failed for a transient reason
 * (download, 404, hash, size, space, delta): 1 minute after the first
 * failure, doubling per failure, at most 6 hours. */
#define EQ_RETRY_FIRST_S 60
#define EQ_RETRY_MAX_S (6 * 3600)

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

EQ_API void eq_state_init(struct eq_state *s);
/*
 * Loads @path strictly: every line "key=value" with a known key, at most
 * once, a valid value; the original keys all present (the added ones are
 * optional, so a file of an older agent still reads); the last line ends in
 * a newline; at most EQ_STATE_MAX_BYTES; the phase consistent with the
 * slots. A missing file is an idle state. Anything else is EQ_ERR_PARSE (or
 * EQ_ERR_LIMIT, EQ_ERR_IO) naming the file and the line. *ret is written
 * only on success. The agent recovers from such errors (docs/agent.md).
 */
EQ_API eq_err eq_state_load(const char *path, struct eq_state *ret, struct eq_error *err) EQ_MUST_CHECK;
/* Writes @s atomically, stamping changed_at with the current time;
 * control characters in the texts become spaces. */
EQ_API eq_err eq_state_save(const char *path, const struct eq_state *s, struct eq_error *err) EQ_MUST_CHECK;
/* The delay before attempt @attempts + 1 after @attempts failures in a row. */
EQ_API int64_t eq_state_backoff_s(uint64_t attempts);

/* ====================================================================== */
/* ==== update policy (agent/policy.c): hold and staged rollout ============ */

/* A hold is at most this long: a device forgotten on hold would miss
 * security fixes for good. */
#define EQ_HOLD_MAX_S (366 * 86400)

/*
 * The hold `eqota hold` sets, "<data_dir>/hold": one line
 * "until=<seconds since 1970>". A missing file is no hold (*ret_until 0);
 * anything else than what eq_hold_save() writes is EQ_ERR_PARSE naming the
 * file. eq_hold_save() with @until 0 removes the file.
 */
EQ_API eq_err eq_hold_load(const char *path, int64_t *ret_until, struct eq_error *err) EQ_MUST_CHECK;
EQ_API eq_err eq_hold_save(const char *path, int64_t until, struct eq_error *err) EQ_MUST_CHECK;

#define EQ_DEVICE_ID_MAX 128u
/* Reads the stable device id from @path (/etc/machine-id by default):
 * surrounding white space dropped, 1..EQ_DEVICE_ID_MAX printable ASCII
 * characters without spaces; else EQ_ERR_PARSE naming the file. */
EQ_API eq_err eq_device_id_read(const char *path, char out[EQ_DEVICE_ID_MAX + 1], struct eq_error *err) EQ_MUST_CHECK;

/*
 * The device's place in the staged rollout of release @number of @board
 * and @channel: 0..EQ_ROLLOUT_BUCKETS-1, from SHA-256 over the device id
 * and the release, so the same for every poll, independent between
 * releases. eq_rollout_selected() says whether a rollout of @percent
 * includes it; a device in at p % stays in at any higher percentage.
 */
#define EQ_ROLLOUT_BUCKETS 10000u
EQ_API unsigned eq_rollout_bucket(const char *device_id, const char *board, const char *channel, uint64_t number);
EQ_API bool eq_rollout_selected(unsigned bucket, unsigned percent);

/* ====================================================================== */
/* ==== reports (agent/report.c) ========================================== */

#define EQ_REPORT_SCHEMA "eqota-report/1"
#define EQ_REPORT_MAX_BYTES 4096u
#define EQ_REPORT_ID_LEN 32u

enum eq_report_kind {
	EQ_REPORT_INSTALLED,   /* a release was installed and is tried at the next boot */
	EQ_REPORT_COMMITTED,   /* it passed its health checks */
	EQ_REPORT_ROLLED_BACK, /* it failed them or never came up */
	EQ_REPORT_FAILED,      /* its install failed (download, space, hash: retried) */
};
/* "installed", "committed", "rolled_back", "failed". */
EQ_API const char *eq_report_kind_name(enum eq_report_kind k);

/* One outcome, as docs/fleet.md ("Reports") shows it. */
struct eq_report_event {
	int64_t time;
	const char *device; /* eq_report_device_id(), NULL when the device has none */
	const char *board, *channel;
	enum eq_report_kind kind;
	uint64_t from_number; /* 0: none */
	const char *from_release;
	uint64_t to_number;
	const char *to_release;
	const char *reason; /* rolled back or failed: why; NULL otherwise */
	uint64_t bytes;     /* downloaded for it by this run */
	double seconds;     /* taken by this run */
	const char *agent;  /* the agent's version */
};

/* The id reports carry: 32 hex digits of SHA-256 over the device id, so
 * that /etc/machine-id itself never leaves the device (machine-id(5)). */
EQ_API void eq_report_device_id(const char *id, char out[EQ_REPORT_ID_LEN + 1]);
/* One JSON line (ending in a newline, NUL-terminated) into @out; EQ_ERR_LIMIT
 * when it would not fit. */
EQ_API eq_err eq_report_format(const struct eq_report_event *ev, char out[EQ_REPORT_MAX_BYTES], size_t *ret_len,
			       struct eq_error *err) EQ_MUST_CHECK;
/* Adds @line to the queue folder @dir (created 0700), dropping the oldest
 * reports beyond @max. */
EQ_API eq_err eq_report_queue(const char *dir, unsigned max, const char *line, size_t len,
			      struct eq_error *err) EQ_MUST_CHECK;
/* POSTs the queued reports oldest first to cfg->report_url, removing each
 * one a 2xx answered, and dropping (with a warning) one the server refuses
 * for what it is (400, 413, 415, 422); stops at any other failure
 * (EQ_ERR_NETWORK naming the URL and how many were sent), leaving the rest
 * queued. A no-op without a report_url. */
EQ_API eq_err eq_report_flush(const struct eq_config *cfg, const char *dir, size_t *ret_sent,
			      struct eq_error *err) EQ_MUST_CHECK;

/* ====================================================================== */
/* ==== health checks (agent/health.c) ==================================== */

/*
 * Runs each command (split at spaces, no shell) one after the other, in its
 * own process group, all within @timeout_s seconds in total. EQ_OK when every
 * command exits 0; EQ_ERR_VERIFY naming the failing command and its status,
 * or EQ_ERR_LIMIT when the time ran out (the process group is killed).
 */
EQ_API eq_err eq_health_run(const char *const *checks, size_t n_checks, unsigned timeout_s,
			    struct eq_error *err) EQ_MUST_CHECK;
/* Kills the process group of the health check running now, if any. Safe
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
