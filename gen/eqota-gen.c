/* eqota-gen: the host-side command line. Parses arguments and calls eq_gen. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <eq/gen.h>
#include <eq/repo_layout.h>


#define EXIT_USAGE 2
#define EXIT_FINDINGS 3
/* Schema names and versions of the --json documents (docs/json-output.md);
 * `show --json` prints the manifest, whose version is its "format". */
#define EQ_JSON_DIFF_SCHEMA "eqota-gen-diff/1"
#define EQ_JSON_IMPORT_SCHEMA "eqota-gen-equiv-import/1"
#define EQ_JSON_IMAGE_CHECK_SCHEMA "eqota-gen-image-check/1"

struct command;
static void print_usage(FILE *f, const struct command *only);

static int usage_error(const char *fmt, const char *arg);
static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "eqota-gen: ");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	fprintf(stderr, fmt, arg);
#pragma GCC diagnostic pop
	fputc('\n', stderr);
	print_usage(stderr, NULL);
	return EXIT_USAGE;
}

static int fail(const struct eq_error *e)
{
	eq_log(EQ_LOG_ERR, "%s", eq_error_msg(e));
	return EXIT_FAILURE;
}

/* Options shared by the subcommands; each uses the ones it documents. */
struct opts {
	const char *repo, *board, *channel, *release, *packages, *out, *build_index, *store, *trust, *from, *to;
	const char *build_dir, *method, *taskhash, *outhash, *unihash, *at, *root, *revoke, *hashserv;
	const char *trusted_root; /* --trusted-root: the pin of every signing command */
	const char *image;        /* --image: a root filesystem, folder or tar */
	const char *keys[EQ_MANIFEST_MAX_SIGNATURES];
	size_t n_keys;
	const char *role_pubs[EQ_ROLE_COUNT][EQ_MANIFEST_TRUST_MAX_KEYS];
	size_t n_role_pubs[EQ_ROLE_COUNT];
	unsigned role_threshold[EQ_ROLE_COUNT];
	const char *ts_keys[EQ_MANIFEST_MAX_SIGNATURES];
	size_t n_ts_keys;
	unsigned deltas_from, expires, threshold, expires_hours;
	bool expires_given;
	int level;
	enum eq_publish_policy policy;
	bool json, deep, unverified;
	const char *path_owners[EQ_PATH_OWNER_ARGS_MAX];
	size_t n_path_owners;
	const char *path_owners_file;
	unsigned jobs;
	const char *cache;
	bool no_cache;
	bool image_devices; /* --image-devices */
	const char *from_channel, *to_channel;
	unsigned keep, grace_hours;
	bool grace_given, dry_run;
	unsigned percent; /* --percent, --rollout-percent */
	bool percent_given, halt, resume;
	const char *reports[64];
	size_t n_reports;
	struct eq_fleet_opts fleet;
	bool html;
	double auto_halt;
	bool auto_halt_given;
};

enum {
	O_REPO = 256,
	O_BOARD,
	O_CHANNEL,
	O_RELEASE,
	O_PACKAGES,
	O_KEY,
	O_OUT,
	O_INDEX,
	O_DELTAS_FROM,
	O_STORE,
	O_EXPIRES,
	O_TRUST,
	O_FROM,
	O_TO,
	O_JSON,
	O_BUILD_DIR,
	O_METHOD,
	O_TASKHASH,
	O_OUTHASH,
	O_UNIHASH,
	O_LEVEL,
	O_DEEP,
	O_AT,
	O_THRESHOLD,
	O_POLICY,
	O_ROOT,
	O_REVOKE,
	O_TS_KEY,
	O_HOURS,
	O_HASHSERV,
	O_UNVERIFIED,
	O_PATH_OWNER,
	O_PATH_OWNERS,
	O_CACHE,
	O_NO_CACHE,
	O_FROM_CHANNEL,
	O_TO_CHANNEL,
	O_KEEP,
	O_GRACE,
	O_DRY_RUN,
	O_PERCENT,
	O_HALT,
	O_RESUME,
	O_REPORTS,
	O_INVENTORY,
	O_UNAUTHENTICATED,
	O_HTML,
	O_AUTO_HALT,
	O_TRUSTED_ROOT,
	O_IMAGE,
	O_IMAGE_DEVICES,
	O_ROLE_PUB, /* + role */
	O_ROLE_TH = O_ROLE_PUB + EQ_ROLE_COUNT
};

static const struct option long_opts[] = {
	{"repo", required_argument, NULL, O_REPO},
	{"board", required_argument, NULL, O_BOARD},
	{"channel", required_argument, NULL, O_CHANNEL},
	{"release", required_argument, NULL, O_RELEASE},
	{"packages", required_argument, NULL, O_PACKAGES},
	{"image", required_argument, NULL, O_IMAGE},
	{"image-devices", no_argument, NULL, O_IMAGE_DEVICES},
	{"key", required_argument, NULL, O_KEY},
	{"out", required_argument, NULL, O_OUT},
	{"build-index", required_argument, NULL, O_INDEX},
	{"deltas-from", required_argument, NULL, O_DELTAS_FROM},
	{"store", required_argument, NULL, O_STORE},
	{"expires", required_argument, NULL, O_EXPIRES},
	{"trust", required_argument, NULL, O_TRUST},
	{"from", required_argument, NULL, O_FROM},
	{"from-channel", required_argument, NULL, O_FROM_CHANNEL},
	{"keep", required_argument, NULL, O_KEEP},
	{"grace-hours", required_argument, NULL, O_GRACE},
	{"dry-run", no_argument, NULL, O_DRY_RUN},
	{"percent", required_argument, NULL, O_PERCENT},
	{"rollout-percent", required_argument, NULL, O_PERCENT},
	{"halt", no_argument, NULL, O_HALT},
	{"resume", no_argument, NULL, O_RESUME},
	{"reports", required_argument, NULL, O_REPORTS},
	{"inventory", required_argument, NULL, O_INVENTORY},
	{"unauthenticated", no_argument, NULL, O_UNAUTHENTICATED},
	{"html", no_argument, NULL, O_HTML},
	{"auto-halt", required_argument, NULL, O_AUTO_HALT},
	{"to-channel", required_argument, NULL, O_TO_CHANNEL},
	{"to", required_argument, NULL, O_TO},
	{"json", no_argument, NULL, O_JSON},
	{"deep", no_argument, NULL, O_DEEP},
	{"build-dir", required_argument, NULL, O_BUILD_DIR},
	{"method", required_argument, NULL, O_METHOD},
	{"taskhash", required_argument, NULL, O_TASKHASH},
	{"outhash", required_argument, NULL, O_OUTHASH},
	{"unihash", required_argument, NULL, O_UNIHASH},
	{"level", required_argument, NULL, O_LEVEL},
	{"at", required_argument, NULL, O_AT},
	{"threshold", required_argument, NULL, O_THRESHOLD},
	{"policy", required_argument, NULL, O_POLICY},
	{"root", required_argument, NULL, O_ROOT},
	{"trusted-root", required_argument, NULL, O_TRUSTED_ROOT},
	{"revoke", required_argument, NULL, O_REVOKE},
	{"timestamp-key", required_argument, NULL, O_TS_KEY},
	{"expires-hours", required_argument, NULL, O_HOURS},
	{"hashserv", required_argument, NULL, O_HASHSERV},
	{"root-pub", required_argument, NULL, O_ROLE_PUB + EQ_ROLE_ROOT},
	{"release-pub", required_argument, NULL, O_ROLE_PUB + EQ_ROLE_RELEASE},
	{"timestamp-pub", required_argument, NULL, O_ROLE_PUB + EQ_ROLE_TIMESTAMP},
	{"root-threshold", required_argument, NULL, O_ROLE_TH + EQ_ROLE_ROOT},
	{"release-threshold", required_argument, NULL, O_ROLE_TH + EQ_ROLE_RELEASE},
	{"timestamp-threshold", required_argument, NULL, O_ROLE_TH + EQ_ROLE_TIMESTAMP},
	{"unverified", no_argument, NULL, O_UNVERIFIED},
	{"path-owner", required_argument, NULL, O_PATH_OWNER},
	{"path-owners", required_argument, NULL, O_PATH_OWNERS},
	{"jobs", required_argument, NULL, 'j'},
	{"cache", required_argument, NULL, O_CACHE},
	{"no-cache", no_argument, NULL, O_NO_CACHE},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static bool parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
	char *end;
	if (!*s || *s == '-')
		return false;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || v > max)
		return false;
	*ret = v;
	return true;
}

static int refuse(const struct command *cmd, const char *option);
static bool takes(const struct command *cmd, const char *option);

/* Fills @o from argv[1..]; any option @cmd does not take is refused here,
 * before the command does any work. Returns -1 after --help. */
static int parse_opts(const struct command *cmd, int argc, char **argv, struct opts *o)
{
	int c, li = -1;
	unsigned long v;
	o->deltas_from = 3;
	o->expires = 30;
	o->level = 19;
	optind = 1;
	while ((c = getopt_long(argc, argv, "hj:", long_opts, &li)) != -1) {
		if (c == '?') /* getopt said why */
			return EXIT_USAGE;
		const char *name = li >= 0 ? long_opts[li].name : c == 'j' ? "jobs" : NULL;
		li = -1;
		if (c != 'h' && name && !takes(cmd, name))
			return refuse(cmd, name);
		switch (c) {
		case O_REPO: o->repo = optarg; break;
		case O_BOARD: o->board = optarg; break;
		case O_CHANNEL: o->channel = optarg; break;
		case O_RELEASE: o->release = optarg; break;
		case O_PACKAGES: o->packages = optarg; break;
		case O_IMAGE: o->image = optarg; break;
		case O_IMAGE_DEVICES: o->image_devices = true; break;
		case O_OUT: o->out = optarg; break;
		case O_INDEX: o->build_index = optarg; break;
		case O_STORE: o->store = optarg; break;
		case O_TRUST: o->trust = optarg; break;
		case O_FROM: o->from = optarg; break;
		case O_TO: o->to = optarg; break;
		case O_JSON: o->json = true; break;
		case O_DEEP: o->deep = true; break;
		case O_UNVERIFIED: o->unverified = true; break;
		case O_BUILD_DIR: o->build_dir = optarg; break;
		case O_METHOD: o->method = optarg; break;
		case O_TASKHASH: o->taskhash = optarg; break;
		case O_OUTHASH: o->outhash = optarg; break;
		case O_UNIHASH: o->unihash = optarg; break;
		case O_AT: o->at = optarg; break;
		case O_ROOT: o->root = optarg; break;
		case O_TRUSTED_ROOT:
			if (!*optarg)
				return usage_error("--trusted-root '%s': expected a root file or its SHA-256", optarg);
			o->trusted_root = optarg;
			break;
		case O_REVOKE: o->revoke = optarg; break;
		case O_HASHSERV: o->hashserv = optarg; break;
		case O_TS_KEY:
			if (o->n_ts_keys == EQ_MANIFEST_MAX_SIGNATURES)
				return usage_error("too many --timestamp-key options (at most 16)%s", "");
			o->ts_keys[o->n_ts_keys++] = optarg;
			break;
		case O_HOURS:
			if (!parse_uint(optarg, 24 * 366, &v) || v == 0)
				return usage_error("--expires-hours '%s': expected 1..8784", optarg);
			o->expires_hours = (unsigned)v;
			break;
		case O_ROLE_PUB + EQ_ROLE_ROOT:
		case O_ROLE_PUB + EQ_ROLE_RELEASE:
		case O_ROLE_PUB + EQ_ROLE_TIMESTAMP: {
			int ro = c - O_ROLE_PUB;
			if (o->n_role_pubs[ro] == EQ_MANIFEST_TRUST_MAX_KEYS)
				return usage_error("too many --%s-pub options (at most 16)",
						   eq_role_name((enum eq_role)ro));
			o->role_pubs[ro][o->n_role_pubs[ro]++] = optarg;
			break;
		}
		case O_ROLE_TH + EQ_ROLE_ROOT:
		case O_ROLE_TH + EQ_ROLE_RELEASE:
		case O_ROLE_TH + EQ_ROLE_TIMESTAMP:
			if (!parse_uint(optarg, EQ_MANIFEST_TRUST_MAX_KEYS, &v) || v == 0)
				return usage_error("threshold '%s': expected 1..16", optarg);
			o->role_threshold[c - O_ROLE_TH] = (unsigned)v;
			break;
		case O_THRESHOLD:
			if (!parse_uint(optarg, EQ_MANIFEST_TRUST_MAX_KEYS, &v) || v == 0)
				return usage_error("--threshold '%s': expected 1..16", optarg);
			o->threshold = (unsigned)v;
			break;
		case O_KEY:
			if (o->n_keys == EQ_MANIFEST_MAX_SIGNATURES)
				return usage_error("too many --key options (at most 16)%s", "");
			o->keys[o->n_keys++] = optarg;
			break;
		case O_DELTAS_FROM:
			if (!parse_uint(optarg, EQ_MANIFEST_MAX_DELTAS, &v))
				return usage_error("--deltas-from '%s': expected 0..16", optarg);
			o->deltas_from = (unsigned)v;
			break;
		case O_EXPIRES:
			if (!parse_uint(optarg, 3650, &v) || v == 0)
				return usage_error("--expires '%s': expected 1..3650 days", optarg);
			o->expires = (unsigned)v;
			o->expires_given = true;
			break;
		case 'j':
			if (!parse_uint(optarg, EQ_PUBLISH_MAX_JOBS, &v) || v == 0)
				return usage_error("--jobs '%s': expected 1..64", optarg);
			o->jobs = (unsigned)v;
			break;
		case O_CACHE: o->cache = optarg; break;
		case O_NO_CACHE: o->no_cache = true; break;
		case O_FROM_CHANNEL: o->from_channel = optarg; break;
		case O_TO_CHANNEL: o->to_channel = optarg; break;
		case O_DRY_RUN: o->dry_run = true; break;
		case O_HALT: o->halt = true; break;
		case O_RESUME: o->resume = true; break;
		case O_HTML: o->html = true; break;
		case O_REPORTS:
			if (o->n_reports == sizeof(o->reports) / sizeof(o->reports[0]))
				return usage_error("too many --reports options (at most 64)%s", "");
			o->reports[o->n_reports++] = optarg;
			break;
		case O_INVENTORY: o->fleet.inventory = optarg; break;
		case O_UNAUTHENTICATED: o->fleet.unauthenticated = true; break;
		case O_AUTO_HALT: {
			char *end;
			double d = strtod(optarg, &end);
			if (end == optarg || *end || !(d >= 0 && d < 1))
				return usage_error("--auto-halt '%s': expected a share from 0 to below 1, such as 0.05",
						   optarg);
			o->auto_halt = d;
			o->auto_halt_given = true;
			break;
		}
		case O_PERCENT:
			if (!parse_uint(optarg, 100, &v))
				return usage_error("--percent '%s': expected 0..100", optarg);
			o->percent = (unsigned)v;
			o->percent_given = true;
			break;
		case O_KEEP:
			if (!parse_uint(optarg, 1000000, &v) || v == 0)
				return usage_error("--keep '%s': expected 1 or more", optarg);
			o->keep = v;
			break;
		case O_GRACE:
			if (!parse_uint(optarg, 24 * 3650, &v))
				return usage_error("--grace-hours '%s': expected 0..87600", optarg);
			o->grace_hours = v;
			o->grace_given = true;
			break;
		case O_LEVEL:
			if (!parse_uint(optarg, 22, &v) || v == 0)
				return usage_error("--level '%s': expected 1..22", optarg);
			o->level = (int)v;
			break;
		case O_POLICY:
			/* strict: refuse setuid/setgid files and device nodes. */
			if (strcmp(optarg, "default") && strcmp(optarg, "strict"))
				return usage_error("--policy '%s': expected default or strict", optarg);
			o->policy = strcmp(optarg, "strict") ? EQ_POLICY_DEFAULT : EQ_POLICY_STRICT;
			break;
		case O_PATH_OWNER:
			if (o->n_path_owners == EQ_PATH_OWNER_ARGS_MAX)
				return usage_error(
					"too many --path-owner options (at most 256; use --path-owners FILE)%s", "");
			o->path_owners[o->n_path_owners++] = optarg;
			break;
		case O_PATH_OWNERS: o->path_owners_file = optarg; break;
		case 'h': print_usage(stdout, cmd); return -1;
		default: return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return 0;
}

#define NEED(field, name)                                                                                              \
	do {                                                                                                           \
		if (!o->field)                                                                                         \
			return usage_error("missing %s", name);                                                        \
	} while (0)

static int cmd_keygen(const struct opts *o)
{
	NEED(out, "--out NAME");
	struct eq_error e;
	char keyid[EQ_MANIFEST_KEYID_LEN + 1];
	if (eq_manifest_key_generate(o->out, keyid, &e))
		return fail(&e);
	printf("wrote %s.key (private, mode 0600) and %s.pub\nkeyid %s\n", o->out, o->out, keyid);
	return 0;
}

/* After a publish or promote to @channel: a timestamp for the new
 * manifest when timestamp keys were given, else a warning in root mode. */
static eq_err refresh_timestamp(const struct opts *o, const char *channel, const struct eq_publish_report *rep,
				struct eq_error *e)
{

	if (o->n_ts_keys) {
		struct eq_timestamp_opts to = {.repo = o->repo,
					       .board = o->board,
					       .channel = channel,
					       .keys = o->ts_keys,
					       .n_keys = o->n_ts_keys,
					       .expires_hours = o->expires_hours,
					       .trusted_root = o->trusted_root,
					       .root = rep->root,
					       .verified_sha256 = rep->root ? rep->manifest_sha256 : NULL,
					       .set_percent = o->percent_given,
					       .percent = o->percent};
		struct eq_timestamp ts;
		eq_err r = eq_gen_timestamp(&to, &ts, e);
		if (r)
			eq_error_prefix(e, r,
					"published, but the timestamp was not refreshed (devices with a root see "
					"the release once 'eqota-gen timestamp' succeeds)");
		return r;
	}
	struct eq_root *root = NULL;
	if (eq_gen_root_newest(o->repo, o->trusted_root, &root, NULL) == EQ_OK)
		eq_log(EQ_LOG_WARNING,
		       "this repository has a root: devices see the new release once 'eqota-gen timestamp' (or "
		       "publish --timestamp-key) signs a timestamp for it");
	eq_root_free(root);
	return EQ_OK;
}

static void prune_list(void *ctx, const char *path, uint64_t size)
{
	const bool *dry_run = ctx;
	if (*dry_run)
		printf("would remove %s (%" PRIu64 " bytes)\n", path, size);
	else
		eq_log(EQ_LOG_INFO, "removed %s (%" PRIu64 " bytes)", path, size);
}

static int cmd_prune(const struct opts *o)
{
	NEED(repo, "--repo DIR");
	if (!o->keep)
		return usage_error("missing %s", "--keep N");
	bool dry_run = o->dry_run;
	struct eq_prune_opts po = {.repo = o->repo,
				   .keep = o->keep,
				   .grace_hours = o->grace_given ? o->grace_hours : 72,
				   .dry_run = o->dry_run,
				   .list = prune_list,
				   .list_ctx = &dry_run};
	struct eq_prune_report rep;
	struct eq_error e;
	if (eq_gen_prune(&po, &rep, &e) != EQ_OK)
		return fail(&e);
	char bytes[32];
	eq_format_size(rep.bytes, EQ_SIZE_NEAREST, bytes);
	printf("%s %zu releases, %zu objects, %zu deltas, %zu manifest deltas (%s); kept %zu releases\n",
	       o->dry_run ? "would remove" : "removed", rep.releases, rep.objects, rep.deltas, rep.manifest_deltas,
	       bytes, rep.kept_releases);
	return 0;
}

static int cmd_promote(const struct opts *o)
{
	NEED(repo, "--repo DIR");
	NEED(board, "--board B");
	NEED(from_channel, "--from-channel C1");
	NEED(release, "--release R");
	NEED(to_channel, "--to-channel C2");
	if (!o->n_keys)
		return usage_error("missing %s", "--key NAME.key");
	if (o->percent_given && !o->n_ts_keys)
		return usage_error("--rollout-percent needs %s: the rollout is part of the signed timestamp",
				   "--timestamp-key T.key");
	struct eq_promote_opts po = {
		.repo = o->repo,
		.board = o->board,
		.from_channel = o->from_channel,
		.release = o->release,
		.to_channel = o->to_channel,
		.key_paths = o->keys,
		.n_keys = o->n_keys,
		.deltas_from = o->deltas_from,
		.expires_days = o->expires,
		.level = o->level,
		.jobs = o->jobs,
		.trusted_root = o->trusted_root,
	};
	struct eq_publish_report rep;
	struct eq_error e;
	eq_err r = eq_gen_promote(&po, &rep, &e);
	if (r)
		return fail(&e);
	if (refresh_timestamp(o, o->to_channel, &rep, &e) != EQ_OK) {
		eq_publish_report_done(&rep);
		return fail(&e);
	}
	char bytes[32];
	eq_format_size(rep.bytes_written, EQ_SIZE_NEAREST, bytes);
	printf("promoted %s/%s release '%s' to %s as number %" PRIu64 ": %zu packages, %zu new deltas, %s written "
	       "in %.1f s\n",
	       o->board, o->from_channel, o->release, o->to_channel, rep.number, rep.n_packages, rep.deltas_written,
	       bytes, rep.seconds);
	eq_publish_report_done(&rep);
	return 0;
}

static int cmd_publish(const struct opts *o)
{
	NEED(repo, "--repo DIR");
	NEED(board, "--board B");
	NEED(channel, "--channel C");
	NEED(release, "--release R");
	NEED(packages, "--packages DIR");
	if (!o->n_keys)
		return usage_error("missing %s", "--key NAME.key");
	if (o->hashserv && o->store)
		return usage_error("--store and --hashserv exclude each other%s", "");
	if (o->percent_given && !o->n_ts_keys)
		return usage_error("--rollout-percent needs %s: the rollout is part of the signed timestamp",
				   "--timestamp-key T.key");
	if (o->image_devices && !o->image)
		return usage_error("--image-devices needs %s", "--image ROOTFS");
	struct eq_progress_printer pp;
	eq_progress_printer_init(&pp, STDERR_FILENO);
	struct eq_publish_opts po = {
		.repo = o->repo,
		.board = o->board,
		.channel = o->channel,
		.release = o->release,
		.packages_dir = o->packages,
		.key_paths = o->keys,
		.n_keys = o->n_keys,
		.build_index = o->build_index,
		.store_path = o->store,
		.hashserv = o->hashserv,
		.deltas_from = o->deltas_from,
		.expires_days = o->expires,
		.level = o->level,
		.policy = o->policy,
		.path_owners = o->path_owners,
		.n_path_owners = o->n_path_owners,
		.path_owners_file = o->path_owners_file,
		.jobs = o->jobs,
		.cache_path = o->cache,
		.no_cache = o->no_cache,
		.trusted_root = o->trusted_root,
		.image = o->image,
		.image_devices = o->image_devices,
		.progress = eq_log_get_level() >= EQ_LOG_NOTICE ? eq_progress_print : NULL,
		.progress_ctx = &pp,
	};
	struct eq_publish_report rep;
	struct eq_error e;
	eq_err r = eq_gen_publish(&po, &rep, &e);
	if (po.progress)
		eq_progress_printer_done(&pp);
	if (r)
		return fail(&e);
	for (size_t i = 0; i < rep.n_packages; i++) {
		if (rep.pkgs[i].state == EQ_PUB_NOT_REPRODUCIBLE)
			eq_log(EQ_LOG_WARNING,
			       "package '%s' %s is not reproducible: its unihash was published with other bytes, "
			       "serving the stored object, continuing",
			       rep.pkgs[i].name, rep.pkgs[i].version);
	}
	if (refresh_timestamp(o, o->channel, &rep, &e) != EQ_OK) {
		eq_publish_report_done(&rep);
		return fail(&e);
	}
	char bytes[32];
	eq_format_size(rep.bytes_written, EQ_SIZE_NEAREST, bytes);
	printf("published %s/%s release '%s' as number %" PRIu64
	       ": %zu packages (%zu equivalent to earlier builds, %zu "
	       "not reproducible, %zu unchanged files not read again), %zu new objects, %zu new deltas, %s written "
	       "in %.1f s\n",
	       o->board, o->channel, o->release, rep.number, rep.n_packages, rep.equivalent, rep.not_reproducible,
	       rep.cached, rep.objects_written, rep.deltas_written, bytes, rep.seconds);
	if (rep.image) {
		char pb[32], ob[32], ub[32];
		eq_format_size(rep.component_payload_bytes, EQ_SIZE_NEAREST, pb);
		eq_format_size(rep.component_object_bytes, EQ_SIZE_NEAREST, ob);
		eq_format_size(rep.component_update_bytes, EQ_SIZE_NEAREST, ub);
		printf("image: %" PRIu64 " entries, %" PRIu64 " from packages, %" PRIu64
		       " from the image in %zu components (payload %s, objects %s; a device on the previous release "
		       "fetches %s for them, %zu by delta)\n",
		       rep.image_entries, rep.image_from_packages, rep.image_from_image, rep.n_components, pb, ob, ub,
		       rep.component_deltas);
	}
	eq_publish_report_done(&rep);
	return 0;
}

static int load_history(const struct opts *o, struct eq_repo_history *h)
{
	struct eq_error e;
	if (eq_repo_history_load(o->repo, o->board, o->channel, h, &e))
		return fail(&e);
	if (h->n == 0) {
		eq_log(EQ_LOG_ERR, "%s: nothing published for %s/%s", o->repo, o->board, o->channel);
		return EXIT_FAILURE;
	}
	return 0;
}

static const struct eq_repo_release *find_release(const struct eq_repo_history *h, const char *name)
{
	const struct eq_repo_release *rel = eq_repo_history_find(h, name);
	if (!rel)
		eq_log(EQ_LOG_ERR, "no release '%s' (by name or number) is published", name);
	return rel;
}

static int cmd_diff(const struct opts *o)
{
	NEED(repo, "--repo DIR");
	NEED(board, "--board B");
	NEED(channel, "--channel C");
	NEED(from, "--from R1");
	NEED(to, "--to R2");
	struct eq_repo_history h;
	int rc = load_history(o, &h);
	if (rc)
		return rc;
	const struct eq_repo_release *a = find_release(&h, o->from), *b = find_release(&h, o->to);
	struct eq_diff d;
	struct eq_error e;
	if (!a || !b) {
		eq_repo_history_done(&h);
		return EXIT_FAILURE;
	}
	if (eq_gen_diff(a->m, b->m, &d, &e)) {
		eq_repo_history_done(&h);
		return fail(&e);
	}
	const size_t *comp = d.component_count;
	size_t comp_changed = comp[EQ_DIFF_CHANGED] + comp[EQ_DIFF_ADDED];
	if (o->json) {
		/* Names and versions come from packages: escaped like any string. */
		printf("{\"schema\":\"" EQ_JSON_DIFF_SCHEMA "\",\"from\":{\"release\":");
		eq_json_put_str(stdout, a->release);
		printf(",\"number\":%" PRIu64 "},\"to\":{\"release\":", a->number);
		eq_json_put_str(stdout, b->release);
		printf(",\"number\":%" PRIu64 "},\"packages\":[", b->number);
		for (size_t i = 0; i < d.n; i++) {
			const struct eq_diff_entry *x = &d.v[i];
			printf("%s{\"state\":\"%s\",\"name\":", i ? "," : "", eq_diff_state_name(x->state));
			eq_json_put_str(stdout, x->name);
			if (x->old_version) {
				printf(",\"old_version\":");
				eq_json_put_str(stdout, x->old_version);
			}
			if (x->new_version) {
				printf(",\"new_version\":");
				eq_json_put_str(stdout, x->new_version);
			}
			printf(",\"bytes\":%" PRIu64 ",\"delta\":%s,\"component\":%s}", x->bytes,
			       x->via_delta ? "true" : "false", x->component ? "true" : "false");
		}
		printf("],\"totals\":{\"kept\":%zu,\"equivalent\":%zu,\"changed\":%zu,\"added\":%zu,\"removed\":%zu,"
		       "\"download_bytes\":%" PRIu64 ",\"full_bytes\":%" PRIu64 ",\"package_bytes\":%" PRIu64
		       ",\"component_bytes\":%" PRIu64 ",\"components_changed\":%zu,"
		       "\"components\":{\"kept\":%zu,\"changed\":%zu,\"added\":%zu,\"removed\":%zu}}}\n",
		       d.count[EQ_DIFF_KEPT], d.count[EQ_DIFF_EQUIVALENT], d.count[EQ_DIFF_CHANGED],
		       d.count[EQ_DIFF_ADDED], d.count[EQ_DIFF_REMOVED], d.download_bytes, d.full_bytes,
		       d.package_bytes, d.component_bytes, comp_changed, comp[EQ_DIFF_KEPT], comp[EQ_DIFF_CHANGED],
		       comp[EQ_DIFF_ADDED], comp[EQ_DIFF_REMOVED]);
	} else {
		for (size_t i = 0; i < d.n; i++) {
			const struct eq_diff_entry *x = &d.v[i];
			printf("%-10s %s %s -> %s %" PRIu64 "%s\n", eq_diff_state_name(x->state), x->name,
			       x->old_version ? x->old_version : "-", x->new_version ? x->new_version : "-", x->bytes,
			       x->via_delta ? " (delta)" : "");
		}
		char dl[32], full[32];
		eq_format_size(d.download_bytes, EQ_SIZE_NEAREST, dl);
		eq_format_size(d.full_bytes, EQ_SIZE_NEAREST, full);
		printf("total: %zu kept, %zu equivalent, %zu changed, %zu added, %zu removed; download %" PRIu64
		       " bytes (%s) of %" PRIu64 " bytes (%s) for the full release, %.2f %%\n",
		       d.count[EQ_DIFF_KEPT], d.count[EQ_DIFF_EQUIVALENT], d.count[EQ_DIFF_CHANGED],
		       d.count[EQ_DIFF_ADDED], d.count[EQ_DIFF_REMOVED], d.download_bytes, dl, d.full_bytes, full,
		       d.full_bytes ? 100.0 * (double)d.download_bytes / (double)d.full_bytes : 0.0);
		if (comp[EQ_DIFF_KEPT] + comp_changed + comp[EQ_DIFF_REMOVED]) {
			char cb[32];
			eq_format_size(d.component_bytes, EQ_SIZE_NEAREST, cb);
			printf("image components: %zu changed or added, %" PRIu64
			       " bytes (%s), %.2f %% of the download\n",
			       comp_changed, d.component_bytes, cb,
			       d.download_bytes ? 100.0 * (double)d.component_bytes / (double)d.download_bytes : 0.0);
		}
	}
	eq_diff_done(&d);
	eq_repo_history_done(&h);
	return 0;
}

static int cmd_show(const struct opts *o)
{
	NEED(repo, "--repo DIR");
	NEED(board, "--board B");
	NEED(channel, "--channel C");
	struct eq_repo_history h;
	int rc = load_history(o, &h);
	if (rc)
		return rc;
	const struct eq_repo_release *rel = o->release ? find_release(&h, o->release) : &h.v[h.n - 1];
	if (!rel) {
		eq_repo_history_done(&h);
		return EXIT_FAILURE;
	}
	struct eq_error e;
	if (o->json) {
		uint8_t *json;
		size_t len;
		if (eq_manifest_to_json(rel->m, &json, &len, &e)) {
			eq_repo_history_done(&h);
			return fail(&e);
		}
		fwrite(json, 1, len, stdout);
		eq_free(json);
	} else {
		struct eq_manifest_header hd;
		if (eq_manifest_get_header(rel->m, &hd, &e)) {
			eq_repo_history_done(&h);
			return fail(&e);
		}
		char issued[EQ_MANIFEST_TIME_LEN + 1], expires[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(hd.issued, issued);
		eq_manifest_format_time(hd.expires, expires);
		size_t n = eq_manifest_package_count(rel->m);
		uint64_t total = 0;
		printf("board %s, channel %s, release '%s' (number %" PRIu64 "), issued %s, expires %s, %zu packages\n",
		       hd.board, hd.channel, hd.release, hd.number, issued, expires, n);
		for (size_t i = 0; i < n; i++) {
			const struct eq_manifest_package *p = eq_manifest_package_at(rel->m, i);
			total += p->object.size;
			printf("  %-32s %-28s unihash %.16s  object %10" PRIu64 "  deltas %zu\n", p->name, p->version,
			       p->unihash, p->object.size, p->n_deltas);
		}
		char t[32];
		eq_format_size(total, EQ_SIZE_NEAREST, t);
		printf("objects of this release: %" PRIu64 " bytes (%s)\n", total, t);
	}
	eq_repo_history_done(&h);
	return 0;
}

/* verify --root: as a device with that installed root checks, from the
 * root chain through the timestamp to the manifest and its files. */
static int verify_root(const struct opts *o)
{
	struct eq_error e;
	int64_t clock = (int64_t)time(NULL);
	if (o->at && !eq_manifest_parse_time(o->at, &clock))
		return usage_error("--at '%s': expected YYYY-MM-DDTHH:MM:SSZ", o->at);
	struct eq_manifest *m = NULL;
	uint64_t root_version = 0;
	eq_err r;
	if (o->release) {
		/* An earlier release: no timestamp names it. */
		if ((r = eq_gen_verify_release(o->repo, o->root, o->board, o->channel, o->release, clock, &m,
					       &root_version, &e)))
			return fail(&e);
	} else {
		struct eq_trust_result res;
		if ((r = eq_gen_verify_trusted(o->repo, o->root, o->board, o->channel, clock, &res, &root_version, &e)))
			return fail(&e);
		m = res.m;
		res.m = NULL;
		eq_trust_result_done(&res);
	}
	struct eq_manifest_header hd;
	r = eq_manifest_get_header(m, &hd, &e);
	if (!r)
		r = eq_gen_check_files(o->repo, m, o->deep, &e);
	if (!r)
		printf("%s/boards/%s/%s: root chain to version %" PRIu64 ", %ssignature, board, channel and expiry OK; "
		       "release '%s' (number %" PRIu64 "), %zu packages, every %s present\n",
		       o->repo, o->board, o->channel, root_version, o->release ? "" : "timestamp, ", hd.release,
		       hd.number, eq_manifest_package_count(m),
		       o->deep ? "object and delta hash-checked and" : "object and delta");
	eq_manifest_free(m);
	return r ? fail(&e) : 0;
}

static int cmd_verify(const struct opts *o)
{
	NEED(repo, "--repo DIR");
	NEED(board, "--board B");
	NEED(channel, "--channel C");
	if ((o->n_keys > 0) + !!o->trust + !!o->root != 1)
		return usage_error("give one of --root FILE, --key NAME.pub (repeatable) or --trust FILE%s", "");
	if (o->root)
		return verify_root(o);
	struct eq_error e;
	struct eq_manifest_trust *trust = NULL;
	eq_err r = o->trust ? eq_manifest_trust_load(o->trust, &trust, &e)
			    : eq_manifest_trust_from_pubkeys(o->keys, o->n_keys, 1, &trust, &e);
	if (r)
		return fail(&e);
	EQ_AUTOFREE char *mpath = NULL;
	uint64_t want_number = 0;
	if (o->release) {
		struct eq_repo_history h;
		int rc = load_history(o, &h);
		if (rc) {
			eq_manifest_trust_free(trust);
			return rc;
		}
		const struct eq_repo_release *rel = find_release(&h, o->release);
		if (rel) {
			want_number = rel->number;
			r = eq_layout_release(o->repo, o->board, o->channel, rel->number, EQ_LAYOUT_MANIFEST, &mpath,
					      &e);
		}
		eq_repo_history_done(&h);
		if (!rel) {
			eq_manifest_trust_free(trust);
			return EXIT_FAILURE;
		}
	} else {
		r = eq_layout_channel(o->repo, o->board, o->channel, EQ_LAYOUT_MANIFEST, &mpath, &e);
	}
	if (r) {
		eq_manifest_trust_free(trust);
		return fail(&e);
	}
	/* An older release is expected to be past its expiry; the current one
	 * must not be. */
	struct eq_manifest_policy pol = {.board = o->board,
					 .channel = o->channel,
					 .number = want_number,
					 .now = (int64_t)time(NULL),
					 .check_expiry = !o->release};
	if (o->at) {
		/* "Will devices still accept this next week?" */
		if (!eq_manifest_parse_time(o->at, &pol.now)) {
			eq_manifest_trust_free(trust);
			return usage_error("--at '%s': expected YYYY-MM-DDTHH:MM:SSZ", o->at);
		}
		pol.check_expiry = true;
	}
	struct eq_manifest *m = NULL;
	r = eq_manifest_load_verified_file(mpath, NULL, trust, &pol, &m, &e);
	eq_manifest_trust_free(trust);
	if (r)
		return fail(&e);
	struct eq_manifest_header hd;
	r = eq_manifest_get_header(m, &hd, &e);
	if (!r)
		r = eq_gen_check_files(o->repo, m, o->deep, &e);
	if (r) {
		eq_manifest_free(m);
		return fail(&e);
	}
	printf("%s: signature, board, channel and expiry OK; release '%s' (number %" PRIu64
	       "), %zu packages, every %s present\n",
	       mpath, hd.release, hd.number, eq_manifest_package_count(m),
	       o->deep ? "object and delta hash-checked and" : "object and delta");
	eq_manifest_free(m);
	return 0;
}

static int cmd_trust(const struct opts *o)
{
	NEED(out, "--out FILE");
	if (!o->n_keys)
		return usage_error("missing %s", "--key NAME.pub");
	struct eq_error e;
	struct eq_manifest_trust *t = NULL;
	uint8_t *json = NULL;
	size_t len;
	eq_err r = eq_manifest_trust_from_pubkeys(o->keys, o->n_keys, o->threshold ? o->threshold : 1, &t, &e);
	if (!r)
		r = eq_manifest_trust_to_json(t, &json, &len, &e);
	if (!r)
		r = eq_file_replace_atomic(o->out, json, len, 0644, &e);
	if (!r)
		printf("wrote %s: %zu keys, threshold %u\n", o->out, o->n_keys, eq_manifest_trust_threshold(t));
	eq_free(json);
	eq_manifest_trust_free(t);
	return r ? fail(&e) : 0;
}

/* --revoke takes a key id or the .pub file of the key. */
static int revoke_id(const char *arg, char out[EQ_MANIFEST_KEYID_LEN + 1])
{
	if (eq_is_sha256_hex(arg)) {
		snprintf(out, EQ_MANIFEST_KEYID_LEN + 1, "%s", arg);
		return 0;
	}
	struct eq_manifest_trust *t = NULL;
	struct eq_error e;
	const char *paths[1] = {arg};
	if (eq_manifest_trust_from_pubkeys(paths, 1, 1, &t, &e))
		return fail(&e);
	snprintf(out, EQ_MANIFEST_KEYID_LEN + 1, "%s", eq_manifest_trust_keyid(t, 0));
	eq_manifest_trust_free(t);
	return 0;
}

static int cmd_root(const char *sub, const struct opts *o)
{
	NEED(repo, "--repo DIR");
	if (!o->n_keys)
		return usage_error("missing %s", "--key R.key (the root role's private keys that sign)");
	bool init = !strcmp(sub, "init"), revoke = !strcmp(sub, "revoke");
	if (revoke && !o->revoke)
		return usage_error("root revoke: missing --revoke KEYID|NAME.pub%s", "");
	char keyid[EQ_MANIFEST_KEYID_LEN + 1] = "";
	if (revoke) {
		int rc = revoke_id(o->revoke, keyid);
		if (rc)
			return rc;
	}
	struct eq_root_opts ro = {.repo = o->repo,
				  .sign_keys = o->keys,
				  .n_sign = o->n_keys,
				  .revoke_keyid = revoke ? keyid : NULL,
				  .expires_days = o->expires_given ? o->expires : 0,
				  .trusted_root = o->trusted_root};
	for (int i = 0; i < EQ_ROLE_COUNT; i++) {
		ro.roles[i].pubs = o->role_pubs[i];
		ro.roles[i].n_pubs = o->n_role_pubs[i];
		ro.roles[i].threshold = o->role_threshold[i];
	}
	struct eq_error e;
	uint64_t v = 0;
	if (eq_gen_root_write(&ro, init, &v, &e))
		return fail(&e);
	/* What was just written and checked, from the pin (init: root 1 itself). */
	EQ_AUTOFREE char *first = NULL;
	eq_err fr = eq_layout_root(o->repo, 1, &first, &e);
	uint8_t *d = NULL;
	size_t dl = 0;
	char hex[EQ_SHA256_HEX_LEN + 1] = "";
	if (init && first && !eq_file_read_all(first, EQ_ROOT_MAX_BYTES, &d, &dl, &e)) {
		uint8_t dg[EQ_SHA256_LEN];
		eq_sha256(d, dl, dg);
		eq_hex_encode(dg, sizeof(dg), hex);
		eq_free(d);
	}
	struct eq_root *root = NULL;
	if (init && fr)
		return fail(&e);
	if (init && !*hex)
		return fail(&e);
	if (eq_gen_root_newest(o->repo, init ? hex : o->trusted_root, &root, &e))
		return fail(&e);
	printf("wrote %s/root/%" PRIu64 ".root.json (+ .sig)\n", o->repo, v);
	for (int i = 0; i < EQ_ROLE_COUNT; i++) {
		const struct eq_manifest_trust *t = eq_root_role(root, (enum eq_role)i);
		printf("  %-9s threshold %u of %zu:", eq_role_name((enum eq_role)i), eq_manifest_trust_threshold(t),
		       eq_manifest_trust_key_count(t));
		for (size_t k = 0; k < eq_manifest_trust_key_count(t); k++)
			printf(" %.16s", eq_manifest_trust_keyid(t, k));
		printf("\n");
	}
	struct eq_root_info info;
	eq_root_get_info(root, &info);
	char exp[EQ_MANIFEST_TIME_LEN + 1];
	eq_manifest_format_time(info.expires, exp);
	printf("  expires %s\n", exp);
	if (init)
		printf("install it on devices as the file [repository] root names, with its .sig beside it\n"
		       "pin it: keep a copy of %s outside the repository (or its SHA-256 %s) and pass it as\n"
		       "--trusted-root to every signing command\n",
		       first, hex);
	eq_root_free(root);
	return 0;
}

/* The timestamp step of `timestamp` and `rollout`: --key signs it. */
static struct eq_timestamp_opts timestamp_opts(const struct opts *o)
{
	struct eq_timestamp_opts to = {.repo = o->repo,
				       .board = o->board,
				       .channel = o->channel,
				       .keys = o->keys,
				       .n_keys = o->n_keys,
				       .expires_hours = o->expires_hours,
				       .trusted_root = o->trusted_root};
	return to;
}

static void print_rollout(const struct eq_timestamp *ts, const char *release)
{
	printf("release '%s' (number %" PRIu64 "): ", release, ts->number);
	if (!ts->rollout.present)
		printf("out to every device\n");
	else
		printf("rollout %u %%%s\n", ts->rollout.percent,
		       ts->rollout.halted ? ", halted: devices that have not installed it do not" : "");
}

/* The channel's current release: its number, and its name for messages
 * and to match --release. */
struct current {
	uint64_t number;
	char release[EQ_MANIFEST_NAME_MAX + 1];
};

static eq_err current_release(const struct opts *o, struct current *ret, struct eq_error *e)
{
	return eq_repo_current(o->repo, o->board, o->channel, &ret->number, ret->release, e);
}

/* Reports read but not counted: say so, so a forged flood is seen. */
static void print_uncounted(const struct eq_fleet *f)
{
	if (f->unauthenticated)
		printf("not counted: %zu reports without an authenticated device identity (anyone who reaches the "
		       "collector can write those; --unauthenticated counts them)\n",
		       f->unauthenticated);
	if (f->uninventoried)
		printf("not counted: %zu reports of identities not in the inventory\n", f->uninventoried);
}

static int cmd_rollout(const struct opts *o)
{
	NEED(repo, "--repo DIR");
	NEED(board, "--board B");
	NEED(channel, "--channel C");
	if (o->halt && o->resume)
		return usage_error("--halt and --resume exclude each other%s", "");
	struct eq_error e;
	struct current h;
	if (current_release(o, &h, &e))
		return fail(&e);
	if (o->release) {
		if (eq_manifest_release_match(h.release, h.number, o->release) == EQ_RELEASE_NO_MATCH) {
			eq_log(EQ_LOG_ERR,
			       "boards/%s/%s: the current release is '%s' (number %" PRIu64
			       "), not '%s': a rollout applies to the current release only",
			       o->board, o->channel, h.release, h.number, o->release);
			return EXIT_FAILURE;
		}
	}
	if (o->auto_halt_given && !o->n_reports)
		return usage_error("--auto-halt needs %s", "--reports FILE");
	bool halt = o->halt;
	if (o->auto_halt_given) {
		struct eq_fleet *f = NULL;
		/* Only this release's reports: a device that invents thousands
		 * of boards, channels or releases fills no cap this reads. */
		struct eq_fleet_opts fo = o->fleet;
		fo.board = o->board;
		fo.channel = o->channel;
		fo.number = h.number;
		if (eq_fleet_read(o->reports, o->n_reports, &fo, &f, &e))
			return fail(&e);
		const struct eq_fleet_release *fr = eq_fleet_find(f, o->board, o->channel, h.number);
		double share = fr ? eq_fleet_rollback_share(fr) : 0.0;
		printf("release '%s' (number %" PRIu64 "): %zu of %zu devices that reported it rolled back (%.1f %%), "
		       "the limit is %.1f %%\n",
		       h.release, h.number, fr ? fr->rolled_back : 0, fr ? fr->devices : 0, 100.0 * share,
		       100.0 * o->auto_halt);
		print_uncounted(f);
		eq_fleet_free(f);
		if (share <= o->auto_halt && !o->percent_given && !o->halt && !o->resume)
			return 0;
		if (share > o->auto_halt)
			halt = true;
	}
	bool change = o->percent_given || halt || o->resume;
	if (!change) {
		EQ_AUTOFREE char *tpath = NULL;
		uint8_t *d = NULL;
		size_t dl = 0;
		struct eq_timestamp ts;
		if (eq_layout_channel(o->repo, o->board, o->channel, EQ_LAYOUT_TIMESTAMP, &tpath, &e))
			return fail(&e);
		eq_err r = eq_file_read_all(tpath, EQ_TIMESTAMP_MAX_BYTES, &d, &dl, &e);
		if (!r && (r = eq_timestamp_parse_unverified(d, dl, &ts, &e)))
			eq_error_prefix(&e, r, "%s", tpath);
		eq_free(d);
		if (r)
			return fail(&e);
		if (ts.number != h.number)
			printf("the timestamp names release number %" PRIu64 ", the channel's manifest %" PRIu64
			       ": devices see the new release once 'eqota-gen timestamp' signs it\n",
			       ts.number, h.number);
		print_rollout(&ts, ts.number == h.number ? h.release : "?");
		return 0;
	}
	if (!o->n_keys)
		return usage_error("missing %s", "--key T.key (the timestamp role's private key)");
	struct eq_timestamp_opts to = timestamp_opts(o);
	to.set_percent = o->percent_given;
	to.percent = o->percent;
	to.set_halt = halt || o->resume;
	to.halt = halt;
	/* The release this command read: one published meanwhile is not
	 * changed by mistake. */
	to.expect_number = h.number;
	struct eq_timestamp ts;
	if (eq_gen_timestamp(&to, &ts, &e))
		return fail(&e);
	printf("wrote %s/boards/%s/%s/timestamp.json version %" PRIu64 "\n", o->repo, o->board, o->channel, ts.version);
	print_rollout(&ts, h.release);
	return 0;
}

static int cmd_fleet(const struct opts *o)
{
	if (!o->n_reports)
		return usage_error("missing %s", "--reports FILE");
	if (o->json && o->html)
		return usage_error("--json and --html exclude each other%s", "");
	struct eq_error e;
	struct eq_fleet *f = NULL;
	if (eq_fleet_read(o->reports, o->n_reports, &o->fleet, &f, &e))
		return fail(&e);
	FILE *out = stdout;
	EQ_AUTOFREE char *tmp = o->out ? eq_asprintf("%s.tmp", o->out) : NULL;
	if (o->out && (!tmp || !(out = fopen(tmp, "w")))) {
		eq_error_errno(&e, EQ_ERR_IO, "cannot write '%s'", tmp ? tmp : o->out);
		eq_fleet_free(f);
		return fail(&e);
	}
	enum eq_fleet_format fmt = o->json ? EQ_FLEET_JSON : o->html ? EQ_FLEET_HTML : EQ_FLEET_TEXT;
	eq_err r = eq_fleet_write(f, fmt, (int64_t)time(NULL), out, &e);
	if (out != stdout && fclose(out) != 0 && !r)
		r = eq_error_errno(&e, EQ_ERR_IO, "cannot write '%s'", tmp);
	if (!r && o->out && rename(tmp, o->out) != 0)
		r = eq_error_errno(&e, EQ_ERR_IO, "cannot rename '%s' to '%s'", tmp, o->out);
	if (r && tmp)
		(void)unlink(tmp);
	if (!r && f->bad)
		eq_log(EQ_LOG_WARNING, "%zu of %zu lines were not reports (first: %s)", f->bad, f->lines, f->errors[0]);
	eq_fleet_free(f);
	return r ? fail(&e) : 0;
}

static int cmd_timestamp(const struct opts *o)
{
	NEED(repo, "--repo DIR");
	NEED(board, "--board B");
	NEED(channel, "--channel C");
	if (!o->n_keys)
		return usage_error("missing %s", "--key T.key (the timestamp role's private key)");
	struct eq_timestamp_opts to = timestamp_opts(o);
	struct eq_timestamp ts;
	struct eq_error e;
	if (eq_gen_timestamp(&to, &ts, &e))
		return fail(&e);
	char exp[EQ_MANIFEST_TIME_LEN + 1];
	eq_manifest_format_time(ts.expires, exp);
	printf("wrote %s/boards/%s/%s/timestamp.json version %" PRIu64 ": release number %" PRIu64 ", expires %s\n",
	       o->repo, o->board, o->channel, ts.version, ts.number, exp);
	return 0;
}

static void qa_print(void *ctx, const char *file, const char *path, uint64_t count)
{
	const struct opts *o = ctx;
	const char *dir = o->build_dir;
	printf("%s: %s embeds the build directory '%s' (%" PRIu64 " times)\n", file, path, dir, count);
}

static int cmd_qa(const struct opts *o)
{
	NEED(packages, "--packages DIR");
	NEED(build_dir, "--build-dir PATH");
	struct eq_error e;
	size_t found = 0;
	struct opts qa_ctx = *o;
	if (eq_gen_qa(o->packages, o->build_dir, qa_print, &qa_ctx, &found, &e))
		return fail(&e);
	if (found) {
		printf("qa: %zu file(s) embed the build directory; such packages are rebuilt differently in every build "
		       "folder and are never equivalent (use -ffile-prefix-map / -fdebug-prefix-map)\n",
		       found);
		return EXIT_FINDINGS;
	}
	printf("qa: no file embeds '%s'\n", o->build_dir);
	return 0;
}

/* Overrides and missing entries listed in the text output; --json lists all. */
#define IMAGE_CHECK_LISTED 20u

/* image-check: what of a built root filesystem its packages ship, and what
 * only the image has (the future image components). */
static int cmd_image_check(const struct opts *o)
{
	NEED(image, "--image ROOTFS");
	NEED(packages, "--packages DIR");
	struct eq_error e;
	struct eq_image *img = NULL;
	struct eq_image_summary s;
	if (eq_image_check(o->image, o->packages, NULL, &img, &s, &e))
		return fail(&e);
	uint64_t from_image = s.entries - s.by_class[EQ_IMAGE_PACKAGE];
	size_t n = eq_image_count(img);
	if (o->json) {
		printf("{\"schema\":\"" EQ_JSON_IMAGE_CHECK_SCHEMA "\",\"image\":");
		eq_json_put_str(stdout, o->image);
		printf(",\"packages\":%" PRIu64 ",\"package_entries\":%" PRIu64 ",\"entries\":%" PRIu64
		       ",\"from_packages\":%" PRIu64 ",\"from_image\":%" PRIu64 ",\"classes\":{",
		       s.packages, s.package_entries, s.entries, s.by_class[EQ_IMAGE_PACKAGE], from_image);
		for (int c = 0; c < EQ_IMAGE_CLASSES; c++)
			printf("%s\"%s\":%" PRIu64, c ? "," : "", eq_image_class_name((enum eq_image_class)c),
			       s.by_class[c]);
		printf("},\"overrides\":[");
		bool first = true;
		for (size_t i = 0; i < n; i++) {
			const struct eq_image_entry *x = eq_image_get(img, i);
			if (x->cls != EQ_IMAGE_OVERRIDE)
				continue;
			printf("%s{\"path\":", first ? "" : ",");
			eq_json_put_str(stdout, x->path);
			printf(",\"package\":");
			eq_json_put_str(stdout, eq_image_pkg_name(img, x->pkg));
			printf("}");
			first = false;
		}
		printf("],\"missing\":[");
		for (uint64_t i = 0; i < s.missing; i++) {
			const char *path;
			uint32_t pkg;
			eq_image_missing_get(img, (size_t)i, &path, &pkg);
			printf("%s{\"path\":", i ? "," : "");
			eq_json_put_str(stdout, path);
			printf(",\"package\":");
			eq_json_put_str(stdout, eq_image_pkg_name(img, pkg));
			printf("}");
		}
		printf("],\"image_bytes\":%" PRIu64 ",\"package_bytes\":%" PRIu64 "}\n", s.image_bytes,
		       s.package_bytes);
		eq_image_free(img);
		return 0;
	}
	static const char *const label[EQ_IMAGE_CLASSES] = {
		[EQ_IMAGE_OVERRIDE] = "overrides (package files the image changed)",
		[EQ_IMAGE_FILE] = "files no package ships",
		[EQ_IMAGE_EMPTY] = "empty files",
		[EQ_IMAGE_SYMLINK] = "symlinks",
		[EQ_IMAGE_DEVICE] = "device nodes",
		[EQ_IMAGE_FIFO] = "fifos",
		[EQ_IMAGE_DIR] = "folders only the image has",
	};
	printf("image: %s\n", o->image);
	printf("packages: %" PRIu64 " (%" PRIu64 " entries)\n", s.packages, s.package_entries);
	printf("entries in the image: %" PRIu64 "\n", s.entries);
	printf("from packages: %" PRIu64 "\n", s.by_class[EQ_IMAGE_PACKAGE]);
	printf("from the image: %" PRIu64 "\n", from_image);
	for (int c = EQ_IMAGE_OVERRIDE; c < EQ_IMAGE_CLASSES; c++)
		printf("  %s: %" PRIu64 "\n", label[c], s.by_class[c]);
	size_t listed = 0;
	for (size_t i = 0; i < n && listed < IMAGE_CHECK_LISTED; i++) {
		const struct eq_image_entry *x = eq_image_get(img, i);
		if (x->cls == EQ_IMAGE_OVERRIDE) {
			printf("  override: %s (%s)\n", x->path, eq_image_pkg_name(img, x->pkg));
			listed++;
		}
	}
	if (s.by_class[EQ_IMAGE_OVERRIDE] > listed)
		printf("  ... and %" PRIu64 " more overrides (--json lists all)\n",
		       s.by_class[EQ_IMAGE_OVERRIDE] - listed);
	printf("package entries missing from the image: %" PRIu64 "\n", s.missing);
	for (uint64_t i = 0; i < s.missing && i < IMAGE_CHECK_LISTED; i++) {
		const char *path;
		uint32_t pkg;
		eq_image_missing_get(img, (size_t)i, &path, &pkg);
		printf("  missing: %s (%s)\n", path, eq_image_pkg_name(img, pkg));
	}
	if (s.missing > IMAGE_CHECK_LISTED)
		printf("  ... and %" PRIu64 " more (--json lists all)\n", s.missing - IMAGE_CHECK_LISTED);
	char ib[EQ_SIZE_STR_MAX], pb[EQ_SIZE_STR_MAX];
	printf("image bytes: %" PRIu64 " (%s, files and overrides: image components)\n", s.image_bytes,
	       eq_format_size(s.image_bytes, EQ_SIZE_NEAREST, ib));
	printf("package bytes: %" PRIu64 " (%s, files the packages ship)\n", s.package_bytes,
	       eq_format_size(s.package_bytes, EQ_SIZE_NEAREST, pb));
	eq_image_free(img);
	return 0;
}

static eq_err list_print(void *ctx, const struct eq_store_entry *x, struct eq_error *err)
{
	(void)ctx;
	(void)err;
	printf("%s %s %s %s %s %s %s\n", x->method, x->taskhash, x->unihash, x->outhash ? x->outhash : "-",
	       x->pn ? x->pn : "-", x->pv ? x->pv : "-", x->created ? x->created : "-");
	return EQ_OK;
}

static void import_conflict(void *ctx, const struct eq_repo_pkg_ref *ref, const char *what)
{
	(void)ctx;
	eq_log(EQ_LOG_WARNING, "%s: package '%s' of release '%s' (%s/%s number %" PRIu64 "): %s; the store's is kept",
	       ref->path, ref->pkg->name, ref->release, ref->board, ref->channel, ref->number, what);
}

/* equiv import: rebuild a store from what a repository's manifests say. */
static int equiv_import(const struct opts *o)
{
	NEED(repo, "--repo DIR");
	if ((o->n_keys > 0) + !!o->trust + !!o->root + o->unverified != 1)
		return usage_error("equiv import: give one of --root FILE, --key NAME.pub (repeatable), --trust FILE "
				   "or --unverified%s",
				   "");
	struct eq_error e;
	struct eq_manifest_trust *trust = NULL;
	if (o->trust || o->n_keys) {
		eq_err r = o->trust ? eq_manifest_trust_load(o->trust, &trust, &e)
				    : eq_manifest_trust_from_pubkeys(o->keys, o->n_keys, 1, &trust, &e);
		if (r)
			return fail(&e);
	}
	if (o->unverified)
		eq_log(EQ_LOG_WARNING,
		       "importing from '%s' without checking signatures: whoever could write it "
		       "chooses which packages devices skip",
		       o->repo);
	struct eq_repo_walk_opts wo = {.trust = trust, .root_path = o->root, .unverified = o->unverified};
	struct eq_store *s = NULL;
	struct eq_import_report rep = {0};
	eq_err r = eq_store_open(o->store, &s, &e);
	if (!r)
		r = eq_gen_equiv_import(s, o->method, o->repo, &wo, import_conflict, NULL, &rep, &e);
	eq_store_close(s);
	eq_manifest_trust_free(trust);
	if (r)
		return fail(&e);
	if (o->json)
		printf("{\"schema\":\"" EQ_JSON_IMPORT_SCHEMA
		       "\",\"manifests\":%zu,\"packages\":%zu,\"added\":%zu,\"present\":%zu,\"conflicts\":%zu,"
		       "\"outhashes_added\":%zu,\"published_added\":%zu}\n",
		       rep.manifests, rep.packages, rep.added, rep.present, rep.conflicts, rep.outhashes_added,
		       rep.published_added);
	else
		printf("imported %zu packages from %zu manifests of %s: %zu mappings added, %zu already present, "
		       "%zu conflicts; %zu outhashes and %zu published payloads recorded\n",
		       rep.packages, rep.manifests, o->repo, rep.added, rep.present, rep.conflicts, rep.outhashes_added,
		       rep.published_added);
	return 0;
}

/* The local store an equiv command uses: --store, else the default one. */
static int equiv_store(const struct opts *o, const char **path, char **def)
{
	struct eq_error e;
	*path = o->store;
	if (!o->store) {
		if (eq_store_default_path(def, &e))
			return fail(&e);
		*path = *def;
	}
	return 0;
}

static int equiv_open(const struct opts *o, struct eq_equiv **q)
{
	if (o->hashserv && o->store)
		return usage_error("--store and --hashserv exclude each other%s", "");
	/* Without either, eq_equiv_open() takes the default store. */
	struct eq_equiv_opts qo = {.store_path = o->store, .hashserv = o->hashserv};
	struct eq_error e;
	return eq_equiv_open(&qo, q, &e) ? fail(&e) : 0;
}

static int cmd_equiv_report(const struct opts *o)
{
	if (!o->method || !o->taskhash || !o->outhash)
		return usage_error("equiv report needs --method, --taskhash and --outhash%s", "");
	struct eq_equiv *q = NULL;
	struct eq_equiv_item it = {.taskhash = o->taskhash, .outhash = o->outhash, .proposed = o->unihash};
	struct eq_error e;
	int rc = equiv_open(o, &q);
	if (!rc && eq_equiv_report_many(q, o->method, &it, 1, &e))
		rc = fail(&e);
	else if (!rc)
		printf("%s%s\n", it.unihash,
		       it.flags & EQ_STORE_INHERITED ? " (equivalent to an earlier taskhash)" : "");
	eq_equiv_close(q);
	return rc;
}

static int cmd_equiv_get(const struct opts *o)
{
	if (!o->method || !o->taskhash)
		return usage_error("equiv get needs --method and --taskhash%s", "");
	struct eq_equiv *q = NULL;
	struct eq_error e;
	int rc = equiv_open(o, &q);
	if (!rc) {
		char uni[EQ_SHA256_HEX_LEN + 1];
		eq_err r = eq_equiv_get(q, o->method, o->taskhash, uni, &e);
		if (r == EQ_ERR_NOTFOUND) {
			printf("unknown\n");
			rc = EXIT_FAILURE;
		} else if (r) {
			rc = fail(&e);
		} else {
			printf("%s\n", uni);
		}
	}
	eq_equiv_close(q);
	return rc;
}

static int cmd_equiv_list(const struct opts *o)
{
	EQ_AUTOFREE char *def = NULL;
	const char *path;
	int rc = equiv_store(o, &path, &def);
	struct eq_store *s = NULL;
	struct eq_error e;
	if (!rc && (eq_store_open(path, &s, &e) || eq_store_list(s, o->method, list_print, NULL, &e)))
		rc = fail(&e);
	eq_store_close(s);
	return rc;
}

static int cmd_equiv_import(const struct opts *o)
{
	EQ_AUTOFREE char *def = NULL;
	struct opts io = *o;
	int rc = equiv_store(o, &io.store, &def);
	return rc ? rc : equiv_import(&io);
}

static int cmd_root_init(const struct opts *o)
{
	return cmd_root("init", o);
}

static int cmd_root_rotate(const struct opts *o)
{
	return cmd_root("rotate", o);
}

static int cmd_root_revoke(const struct opts *o)
{
	return cmd_root("revoke", o);
}

/*
 * The commands: the words that name one, its function, the options it
 * takes (long names; --help is every command's) and its lines of the usage
 * text. Every option is known to getopt (long_opts), but one the command
 * does not take is refused before the command runs: an operator who adds
 * --dry-run to a command that writes must not have it ignored.
 * `eqota-gen --list-commands` prints this table for the tests and the
 * completion.
 */
struct command {
	const char *name;
	int (*run)(const struct opts *o);
	const char *options;
	const char *usage;
};

static const struct command commands[] = {
	{"keygen", cmd_keygen, "out",
	 "  keygen  --out NAME                       write NAME.key (0600) and NAME.pub\n"},
	{"publish", cmd_publish,
	 "repo board channel release packages key trusted-root build-index deltas-from store hashserv expires level "
	 "policy timestamp-key expires-hours path-owner path-owners jobs cache no-cache rollout-percent image "
	 "image-devices",
	 "  publish --repo DIR --board B --channel C --release R --packages DIR --key NAME.key\n"
	 "          [--trusted-root FILE|SHA256]   (required once the repository has a root)\n"
	 "          [--key K2.key ...] [--build-index FILE] [--deltas-from N] [--store DB]\n"
	 "          [--hashserv ADDR] [--expires DAYS] [--level 1..22] [--policy default|strict]\n"
	 "          [--timestamp-key T.key ...] [--expires-hours H]\n"
	 "          [--path-owner PATH=PACKAGE ...] [--path-owners FILE]\n"
	 "          [-j|--jobs N] [--cache FILE | --no-cache] [--rollout-percent N]\n"
	 "          [--image ROOTFS [--image-devices]]   (the release is this root filesystem)\n"},
	{"promote", cmd_promote,
	 "repo board from-channel release to-channel key trusted-root deltas-from expires level timestamp-key "
	 "expires-hours jobs rollout-percent",
	 "  promote --repo DIR --board B --from-channel C1 --release R --to-channel C2 --key NAME.key\n"
	 "          [--trusted-root FILE|SHA256]   (required once the repository has a root)\n"
	 "          [--key K2.key ...] [--deltas-from N] [--expires DAYS] [--level 1..22]\n"
	 "          [--timestamp-key T.key ...] [--expires-hours H] [-j|--jobs N] [--rollout-percent N]\n"},
	{"prune", cmd_prune, "repo keep grace-hours dry-run",
	 "  prune   --repo DIR --keep N [--grace-hours H] [--dry-run]\n"},
	{"rollout", cmd_rollout,
	 "repo board channel trusted-root release percent halt resume key expires-hours auto-halt reports inventory "
	 "unauthenticated",
	 "  rollout --repo DIR --board B --channel C --trusted-root FILE|SHA256 [--release R]\n"
	 "          [--percent N] [--halt | --resume] --key T.key ... [--expires-hours H]\n"
	 "          [--auto-halt RATIO --reports FILE ... [--inventory FILE] [--unauthenticated]]\n"
	 "          (no change given: print the rollout)\n"},
	{"fleet", cmd_fleet, "reports inventory unauthenticated json html out",
	 "  fleet   --reports FILE ... [--inventory FILE] [--unauthenticated] [--json | --html] [--out FILE]\n"
	 "          where the fleet stands\n"},
	{"verify", cmd_verify, "repo board channel root key trust release deep at",
	 "  verify  --repo DIR --board B --channel C (--root FILE | --key NAME.pub ... | --trust FILE)\n"
	 "          [--release R] [--deep] [--at YYYY-MM-DDTHH:MM:SSZ]\n"},
	{"root init", cmd_root_init,
	 "repo key root-pub release-pub timestamp-pub root-threshold release-threshold timestamp-threshold expires",
	 "  root    init   --repo DIR --key R.key ... --root-pub R.pub ... --release-pub K.pub ...\n"
	 "                 --timestamp-pub T.pub ... [--root-threshold N] [--release-threshold N]\n"
	 "                 [--timestamp-threshold N] [--expires DAYS]\n"},
	{"root rotate", cmd_root_rotate,
	 "repo trusted-root key root-pub release-pub timestamp-pub root-threshold release-threshold "
	 "timestamp-threshold expires",
	 "  root    rotate --repo DIR --trusted-root FILE|SHA256 --key R.key ... [--root-pub ...]\n"
	 "                 [--release-pub ...] [--timestamp-pub ...] [--root-threshold N]\n"
	 "                 [--release-threshold N] [--timestamp-threshold N] [--expires DAYS]\n"},
	{"root revoke", cmd_root_revoke, "repo trusted-root key revoke expires",
	 "  root    revoke --repo DIR --trusted-root FILE|SHA256 --key R.key ... --revoke KEYID|NAME.pub\n"
	 "                 [--expires DAYS]\n"},
	{"timestamp", cmd_timestamp, "repo board channel trusted-root key expires-hours",
	 "  timestamp --repo DIR --board B --channel C --trusted-root FILE|SHA256 --key T.key ...\n"
	 "          [--expires-hours H]\n"},
	{"trust", cmd_trust, "key threshold out",
	 "  trust   --key NAME.pub [--key ...] [--threshold N] --out FILE   write a root-of-trust file\n"},
	{"diff", cmd_diff, "repo board channel from to json",
	 "  diff    --repo DIR --board B --channel C --from R1 --to R2 [--json]\n"},
	{"show", cmd_show, "repo board channel release json",
	 "  show    --repo DIR --board B --channel C [--release R] [--json]\n"},
	{"qa", cmd_qa, "packages build-dir", "  qa      --packages DIR|FILE --build-dir PATH\n"},
	{"image-check", cmd_image_check, "image packages json",
	 "  image-check --image ROOTFS --packages DIR [--json]\n"
	 "          which entries of a built root filesystem its packages ship\n"},
	{"equiv report", cmd_equiv_report, "method taskhash outhash unihash store hashserv",
	 "  equiv   report --method M --taskhash T --outhash O [--unihash U] [--store DB | --hashserv ADDR]\n"},
	{"equiv get", cmd_equiv_get, "method taskhash store hashserv",
	 "  equiv   get    --method M --taskhash T [--store DB | --hashserv ADDR]\n"},
	{"equiv list", cmd_equiv_list, "method store", "  equiv   list   [--method M] [--store DB]\n"},
	{"equiv import", cmd_equiv_import, "repo root key trust unverified store method json",
	 "  equiv   import --repo DIR (--root FILE | --key NAME.pub ... | --trust FILE | --unverified)\n"
	 "                 [--store DB] [--method M] [--json]   rebuild a store from the manifests\n"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/* Why an option some command does not take belongs elsewhere, where the
 * bare refusal would leave the operator guessing. */
static const struct {
	const char *command, *option, *why;
} refusal_hints[] = {
	{"root init", "trusted-root",
	 "root init writes the root to pin: --trusted-root belongs to the commands after it"},
	{"root init", "revoke", "--revoke belongs to 'root revoke'"},
	{"root rotate", "revoke", "--revoke belongs to 'root revoke'"},
	{"equiv list", "hashserv",
	 "equiv list reads a local store: the hashserv protocol has no listing (use bitbake-hashclient there)"},
	{"equiv import", "hashserv", "equiv import fills a local store (--store DB)"},
};

static bool takes(const struct command *cmd, const char *option)
{
	size_t n = strlen(option);
	for (const char *p = cmd->options; (p = strstr(p, option)); p += n)
		if ((p == cmd->options || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

static int refuse(const struct command *cmd, const char *option)
{
	fprintf(stderr, "eqota-gen %s: option --%s is not taken by this command", cmd->name, option);
	for (size_t i = 0; i < sizeof(refusal_hints) / sizeof(refusal_hints[0]); i++)
		if (!strcmp(refusal_hints[i].command, cmd->name) && !strcmp(refusal_hints[i].option, option))
			fprintf(stderr, " (%s)", refusal_hints[i].why);
	fputs("\nusage:\n", stderr);
	print_usage(stderr, cmd);
	return EXIT_USAGE;
}

/* The whole usage text, or one command's lines of it. */
static void print_usage(FILE *f, const struct command *only)
{
	if (only) {
		fputs(only->usage, f);
		return;
	}
	fputs("usage: eqota-gen [-v|-q] COMMAND [OPTIONS]\n\n", f);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fputs(commands[i].usage, f);
	fputs("\n"
	      "--trusted-root: the repository's root as pinned outside it (a copy of root/1.root.json, or the\n"
	      "SHA-256 'root init' prints); a signing command refuses a repository whose root is not that one.\n"
	      "\n"
	      "Exit status: 0 success, 1 failure, 2 usage error, 3 qa findings.\n",
	      f);
}

/* --list-commands: one line per command, its words then the options it
 * takes, "=" after one that takes an argument. --list-options: every option
 * the same way. Hidden: for the tests and the bash completion. */
static void list_option(const char *name)
{
	for (size_t i = 0; long_opts[i].name; i++)
		if (!strcmp(long_opts[i].name, name))
			printf(" --%s%s", name, long_opts[i].has_arg ? "=" : "");
}

static void list_commands(void)
{
	for (size_t i = 0; i < N_COMMANDS; i++) {
		fputs(commands[i].name, stdout);
		for (const char *p = commands[i].options; *p;) {
			size_t n = strcspn(p, " ");
			char name[32];
			snprintf(name, sizeof(name), "%.*s", (int)n, p);
			list_option(name);
			p += n + (p[n] == ' ');
		}
		putchar('\n');
	}
}

static void list_options(void)
{
	for (size_t i = 0; long_opts[i].name; i++)
		if (strcmp(long_opts[i].name, "help"))
			printf("--%s%s\n", long_opts[i].name, long_opts[i].has_arg ? "=" : "");
}

/* The command argv[0] (with argv[1], for a two-word one) names; NULL after
 * the usage error. *words: how many words it took. */
static const struct command *find_command(int argc, char **argv, int *words)
{
	const char *group = NULL;
	size_t glen = 0;
	for (size_t i = 0; i < N_COMMANDS; i++) {
		const char *name = commands[i].name, *sp = strchr(name, ' ');
		if (!sp) {
			if (!strcmp(name, argv[0])) {
				*words = 1;
				return &commands[i];
			}
			continue;
		}
		if (strlen(argv[0]) != (size_t)(sp - name) || strncmp(name, argv[0], (size_t)(sp - name)))
			continue;
		group = argv[0];
		glen = (size_t)(sp - name);
		if (argc >= 2 && !strcmp(sp + 1, argv[1])) {
			*words = 2;
			return &commands[i];
		}
	}
	if (!group) {
		usage_error("unknown command '%s'", argv[0]);
		return NULL;
	}
	/* The subcommands of @group, for the message. */
	char subs[128] = "";
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strncmp(commands[i].name, group, glen) && commands[i].name[glen] == ' ')
			snprintf(subs + strlen(subs), sizeof(subs) - strlen(subs), "%s%s", *subs ? ", " : "",
				 commands[i].name + glen + 1);
	fprintf(stderr, "eqota-gen %s: ", group);
	if (argc < 2 || argv[1][0] == '-')
		fprintf(stderr, "missing subcommand (%s)\n", subs);
	else
		fprintf(stderr, "unknown subcommand '%s' (%s)\n", argv[1], subs);
	print_usage(stderr, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v"))
			eq_log_set_level(eq_log_get_level() == EQ_LOG_INFO ? EQ_LOG_DEBUG : EQ_LOG_INFO);
		else if (!strcmp(argv[i], "-q"))
			eq_log_set_level(EQ_LOG_WARNING);
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			print_usage(stdout, NULL);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("eqota-gen %s\n", EQ_VERSION);
			return 0;
		} else if (!strcmp(argv[i], "--list-commands")) {
			list_commands();
			return 0;
		} else if (!strcmp(argv[i], "--list-options")) {
			list_options();
			return 0;
		} else {
			return usage_error("unknown option '%s'", argv[i]);
		}
	}
	if (i >= argc)
		return usage_error("missing command%s", "");
	argc -= i;
	argv += i;
	int words = 0;
	const struct command *cmd = find_command(argc, argv, &words);
	if (!cmd)
		return EXIT_USAGE;
	/* getopt starts after argv[0]: the command's last word. */
	argc -= words - 1;
	argv += words - 1;
	struct opts o = {0};
	int rc = parse_opts(cmd, argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	return cmd->run(&o);
}
