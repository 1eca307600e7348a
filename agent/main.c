/* eqota: the device command line. Parses arguments and calls eq_agent. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <eq/agent.h>

#include "eqota.h"

static const char usage_text[] =
	"usage: eqota [--config FILE] [-v|-q] COMMAND [OPTIONS]\n"
	"A command takes only the options shown beside it.\n"
	"\n"
	"  status [--json]             slots, releases, bootloader and update state\n"
	"  check [--json] [--retry]    fetch and verify the manifest, print the plan; change nothing\n"
	"  update [--retry] [--reboot] install the new release into the inactive slot and try it once\n"
	"  mark-good [--reboot]        run the health checks on the slot on trial and commit it, or roll back\n"
	"                              (and reboot into the previous slot with --reboot)\n"
	"  mark-bad                    mark the running slot bad and fall back to the other slot\n"
	"  rollback                    the same, for operators\n"
	"  daemon                      confirm after boot, then poll for updates\n"
	"  provision --slot A|B [--release R]   fill an empty slot from the repository and mark it good\n"
	"  verify [--json]             check every file of the running slot against its records\n"
	"  hold --until YYYY-MM-DDTHH:MM:SSZ | --for N(m|h|d) | --off\n"
	"                              install no new release until then (a maintenance window)\n"
	"\n"
	"Exit status: 0 success or up to date, 1 failed, 2 usage or configuration error,\n"
	"3 updated (the new slot is tried at the next boot), 4 rolled back.\n";

/* main's parsed options: one of the two allowed globals (STYLE 20). */
static struct {
	const char *config;
	bool json, retry, reboot;
	const char *slot, *release;
	const char *until, *hold_for;
	bool off;
} opt = {.config = EQ_CONFIG_DEFAULT_PATH};

/* See eqota.h: the other allowed global (STYLE 20). */
volatile sig_atomic_t eqota_stop_requested;

void eqota_on_term(int sig)
{
	eqota_stop_requested = sig;
}

/* SIGTERM or SIGINT while the agent works (a daemon step, a one-shot
 * command such as `update` or `mark-good` under `timeout`, a Ctrl-C): the
 * agent stops at its next safe point; a health check running now is
 * killed, since it has a process group of its own and would outlive us. A
 * second signal is not caught (SA_RESETHAND) and ends the process at once. */
void eqota_on_work_term(int sig)
{
	eqota_stop_requested = sig;
	eq_health_kill_running();
}

void eqota_catch_stop(void (*handler)(int), bool once)
{
	struct sigaction sa = {.sa_handler = handler, .sa_flags = once ? SA_RESETHAND : 0};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "eqota: %s%s%s%s\n%s", what, arg ? " '" : "", arg ? arg : "", arg ? "'" : "", usage_text);
	return EQ_EXIT_USAGE;
}

static int fail(const struct eq_error *e)
{
	eq_log(e->code == EQ_ERR_STOPPED ? EQ_LOG_NOTICE : EQ_LOG_ERR, "%s", eq_error_msg(e));
	return EQ_EXIT_FAILED;
}

/* Every string in the JSON documents: release names and error texts may
 * quote what a server sent. */
static void json_str(const char *s)
{
	eq_json_put_str(stdout, s);
}

/* The schema names and versions of the documents (docs/json-output.md):
 * a version changes only when a field is removed or changes its meaning. */
#define EQ_JSON_STATUS_SCHEMA "eqota-status/1"
#define EQ_JSON_CHECK_SCHEMA "eqota-check/1"
#define EQ_JSON_VERIFY_SCHEMA "eqota-verify/1"

/* Why release @number waits, for a person (docs/fleet.md). */
void eqota_defer_text(enum eq_defer d, const struct eq_policy_view *p, const struct eq_rollout_view *ro,
		      uint64_t number, char *out, size_t cap)
{
	char when[EQ_MANIFEST_TIME_LEN + 1];
	switch (d) {
	case EQ_DEFER_NONE: snprintf(out, cap, "nothing holds it back"); break;
	case EQ_DEFER_PINNED:
		snprintf(out, cap,
			 "[update] pin = %" PRIu64 ": the running release is that one or newer, so release %" PRIu64
			 " is not installed",
			 p->pin, number);
		break;
	case EQ_DEFER_HELD:
		eq_manifest_format_time(p->held_until, when);
		snprintf(out, cap, "updates are held until %s (%s): release %" PRIu64 " waits", when,
			 p->hold_by_command ? "by 'eqota hold'; 'eqota hold --off' lifts it" : "by [update] hold-until",
			 number);
		break;
	case EQ_DEFER_ROLLOUT:
		if (ro->no_device_id)
			snprintf(out, cap,
				 "release %" PRIu64 " is rolled out to %u %% of devices, and this device cannot tell "
				 "whether it is one of them (%s): it waits for 100 %%",
				 number, ro->percent, ro->detail);
		else
			snprintf(out, cap,
				 "release %" PRIu64 " is rolled out to %u %% of devices, not yet to this one: it polls "
				 "on",
				 number, ro->percent);
		break;
	case EQ_DEFER_HALTED:
		snprintf(out, cap, "the rollout of release %" PRIu64 " is halted: it is not installed here", number);
		break;
	}
}

static void json_rollout(const struct eq_rollout_view *ro)
{
	if (!ro->staged) {
		printf("null");
		return;
	}
	printf("{\"percent\":%u,\"halted\":%s,\"selected\":%s}", ro->percent, ro->halted ? "true" : "false",
	       ro->selected ? "true" : "false");
}

static void json_policy(const struct eq_policy_view *p)
{
	printf("\"pin\":");
	if (p->pin)
		printf("%" PRIu64, p->pin);
	else
		printf("null");
	printf(",\"hold\":");
	if (p->held_until)
		printf("{\"until\":%lld,\"by\":\"%s\"}", (long long)p->held_until,
		       p->hold_by_command ? "command" : "config");
	else
		printf("null");
}

static int cmd_status(struct eq_agent *a)
{
	struct eq_status st;
	struct eq_error e;
	if (eq_agent_status(a, &st, &e))
		return fail(&e);
	if (opt.json) {
		printf("{\"schema\":\"" EQ_JSON_STATUS_SCHEMA "\",\"booted\":");
		if (st.booted >= 0)
			json_str(eq_bl_slot_name((unsigned)st.booted));
		else
			printf("null");
		printf(",\"bootloader\":{\"order\":[");
		for (size_t i = 0; i < st.bl.n_order; i++)
			printf("%s\"%s\"", i ? "," : "", eq_bl_slot_name(st.bl.order[i]));
		printf("],\"left\":{\"A\":%u,\"B\":%u},\"trial\":", st.bl.left[0], st.bl.left[1]);
		if (st.bl.trial >= 0)
			json_str(eq_bl_slot_name((unsigned)st.bl.trial));
		else
			printf("null");
		printf(",\"garbled\":%s},\"slots\":{", st.bl_garbled ? "true" : "false");
		for (int s = 0; s < EQ_BL_SLOTS; s++) {
			printf("%s\"%s\":", s ? "," : "", eq_bl_slot_name((unsigned)s));
			if (!st.slot[s].has_release) {
				printf("null");
				continue;
			}
			printf("{\"release\":");
			json_str(st.slot[s].release);
			printf(",\"number\":%" PRIu64 ",\"packages\":%zu}", st.slot[s].number, st.slot[s].packages);
		}
		printf("},\"state\":{\"phase\":\"%s\"", eq_phase_name(st.state.phase));
		if (st.state.target_slot >= 0)
			printf(",\"target_slot\":\"%s\",\"target_number\":%" PRIu64,
			       eq_bl_slot_name((unsigned)st.state.target_slot), st.state.target_number);
		printf("},\"failed\":");
		if (st.state.failed_number) {
			printf("{\"number\":%" PRIu64 ",\"reason\":", st.state.failed_number);
			json_str(st.state.failed_reason);
			printf("}");
		} else {
			printf("null");
		}
		printf(",\"install_error\":");
		if (st.state.error_number) {
			printf("{\"number\":%" PRIu64 ",\"error\":", st.state.error_number);
			json_str(st.state.error);
			printf(",\"at\":%lld,\"attempts\":%" PRIu64 ",\"next_attempt\":%lld}",
			       (long long)st.state.error_at, st.state.attempts, (long long)st.state.next_attempt);
		} else {
			printf("null");
		}
		printf(",\"trust\":");
		if (st.trust.root_mode)
			printf("{\"root_version\":%" PRIu64 ",\"root_expires\":%lld,\"timestamp_version\":%" PRIu64
			       ",\"timestamp_expires\":%lld}",
			       st.trust.root_version, (long long)st.trust.root_expires, st.trust.ts_version,
			       (long long)st.trust.ts_expires);
		else
			printf("null");
		printf(",");
		json_policy(&st.policy);
		printf(",\"rollout\":");
		if (st.rollout.staged)
			printf("{\"number\":%" PRIu64 ",\"percent\":%u,\"halted\":%s,\"selected\":%s}",
			       st.offered_number, st.rollout.percent, st.rollout.halted ? "true" : "false",
			       st.rollout.selected ? "true" : "false");
		else
			printf("null");
		printf(",\"device\":");
		if (st.report_id[0])
			json_str(st.report_id);
		else
			printf("null");
		printf("}\n");
		return EQ_EXIT_OK;
	}
	printf("booted slot: %s\n", st.booted >= 0 ? eq_bl_slot_name((unsigned)st.booted) : "unknown");
	if (st.trust.root_mode) {
		char re[EQ_MANIFEST_TIME_LEN + 1], te[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(st.trust.root_expires, re);
		eq_manifest_format_time(st.trust.ts_expires, te);
		printf("trust: root version %" PRIu64 " (expires %s), ", st.trust.root_version, re);
		if (st.trust.ts_version)
			printf("timestamp version %" PRIu64 " (expires %s)\n", st.trust.ts_version, te);
		else
			printf("no timestamp accepted yet\n");
	}
	for (int s = 0; s < EQ_BL_SLOTS; s++) {
		if (st.slot[s].has_release)
			printf("slot %s: release '%s' (number %" PRIu64 "), %zu packages\n",
			       eq_bl_slot_name((unsigned)s), st.slot[s].release, st.slot[s].number,
			       st.slot[s].packages);
		else
			printf("slot %s: no verified release\n", eq_bl_slot_name((unsigned)s));
	}
	printf("bootloader: order '");
	for (size_t i = 0; i < st.bl.n_order; i++)
		printf("%s%s", i ? " " : "", eq_bl_slot_name(st.bl.order[i]));
	printf("', attempts A=%u B=%u, trial %s%s\n", st.bl.left[0], st.bl.left[1],
	       st.bl.trial >= 0 ? eq_bl_slot_name((unsigned)st.bl.trial) : "none",
	       st.bl_garbled ? " (environment was garbled)" : "");
	printf("update: %s", eq_phase_name(st.state.phase));
	if (st.state.target_slot >= 0)
		printf(" (release %" PRIu64 " into slot %s)", st.state.target_number,
		       eq_bl_slot_name((unsigned)st.state.target_slot));
	printf("\n");
	if (st.state.failed_number)
		printf("last failed release: %" PRIu64 ": %s\n", st.state.failed_number, st.state.failed_reason);
	if (st.state.error_number) {
		char at[EQ_MANIFEST_TIME_LEN + 1], next[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(st.state.error_at, at);
		eq_manifest_format_time(st.state.next_attempt, next);
		printf("last install error: release %" PRIu64 ", attempt %" PRIu64 " at %s: %s\nnext attempt due: %s\n",
		       st.state.error_number, st.state.attempts, at, st.state.error, next);
	}
	if (st.policy.pin)
		printf("pin: release %" PRIu64 " at most ([update] pin)\n", st.policy.pin);
	if (st.policy.held_until) {
		char until[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(st.policy.held_until, until);
		printf("hold: no update until %s (%s)\n", until,
		       st.policy.hold_by_command ? "'eqota hold'" : "[update] hold-until");
	}
	if (st.report_id[0])
		printf("device: %s in reports\n", st.report_id);
	else
		printf("device: no id (reports name no device)\n");
	if (st.rollout.staged) {
		printf("rollout of release %" PRIu64 " (last timestamp): %u %%%s; this device is %s\n",
		       st.offered_number, st.rollout.percent, st.rollout.halted ? ", halted" : "",
		       st.rollout.selected       ? "included"
		       : st.rollout.no_device_id ? "not included (no device id)"
						 : "not included yet");
	}
	return EQ_EXIT_OK;
}

static int cmd_check(struct eq_agent *a)
{
	struct eq_check c;
	struct eq_error e;
	if (eq_agent_check(a, opt.retry, &c, &e))
		return fail(&e);
	struct eq_manifest_header hr, hn;
	if (eq_manifest_get_header(c.running, &hr, &e) || eq_manifest_get_header(c.next, &hn, &e)) {
		eq_check_done(&c);
		return fail(&e);
	}
	if (opt.json) {
		printf("{\"schema\":\"" EQ_JSON_CHECK_SCHEMA "\",\"running\":{\"release\":");
		json_str(hr.release);
		printf(",\"number\":%" PRIu64 "},\"available\":{\"release\":", hr.number);
		json_str(hn.release);
		printf(",\"number\":%" PRIu64 "},\"up_to_date\":%s,\"skipped_failed\":%s,\"plan\":[", hn.number,
		       c.up_to_date ? "true" : "false", c.skipped_failed ? "true" : "false");
		for (size_t i = 0; i < c.plan.n; i++) {
			const struct eq_plan_item *it = &c.plan.items[i];
			const char *name = it->pkg ? it->pkg->name : it->old->name;
			printf("%s{\"name\":", i ? "," : "");
			json_str(name);
			printf(",\"action\":\"%s\",\"from\":", eq_plan_action_name(it->action));
			if (it->old)
				json_str(it->old->version);
			else
				printf("null");
			printf(",\"to\":");
			if (it->pkg)
				json_str(it->pkg->version);
			else
				printf("null");
			printf(",\"bytes\":%" PRIu64 "}", it->download);
		}
		printf("],\"download_bytes\":%" PRIu64 ",\"full_bytes\":%" PRIu64 ",\"channel_number\":%" PRIu64 ",",
		       c.plan.download_bytes, c.plan.full_bytes, c.channel_number);
		json_policy(&c.policy);
		printf(",\"rollout\":");
		json_rollout(&c.rollout);
		printf(",\"deferred\":");
		if (c.deferred)
			printf("\"%s\"", eq_defer_name(c.deferred));
		else
			printf("null");
		printf("}\n");
	} else {
		printf("running release '%s' (number %" PRIu64 "), repository offers '%s' (number %" PRIu64 ")\n",
		       hr.release, hr.number, hn.release, hn.number);
		if (c.up_to_date) {
			printf("up to date\n");
		} else {
			if (c.skipped_failed)
				printf("this release failed before; 'eqota update --retry' tries it again\n");
			if (hn.number != c.channel_number)
				printf("the channel's current release is number %" PRIu64 "; [update] pin = %" PRIu64
				       " stops this device at '%s'\n",
				       c.channel_number, c.policy.pin, hn.release);
			if (c.deferred) {
				char why[512];
				eqota_defer_text(c.deferred, &c.policy, &c.rollout, hn.number, why, sizeof(why));
				printf("not now: %s\n", why);
			}
			for (size_t i = 0; i < c.plan.n; i++) {
				const struct eq_plan_item *it = &c.plan.items[i];
				if (it->action == EQ_PLAN_KEEP)
					continue;
				/* Every item has the new package, the old one, or both. */
				const struct eq_manifest_package *named = it->pkg ? it->pkg : it->old;
				printf("%-7s %s %s -> %s %" PRIu64 "\n", eq_plan_action_name(it->action), named->name,
				       it->old ? it->old->version : "-", it->pkg ? it->pkg->version : "-",
				       it->download);
			}
			printf("plan: %zu keep, %zu delta, %zu full, %zu remove; download %" PRIu64 " of %" PRIu64
			       " bytes\n",
			       c.plan.count[EQ_PLAN_KEEP], c.plan.count[EQ_PLAN_DELTA], c.plan.count[EQ_PLAN_FULL],
			       c.plan.count[EQ_PLAN_REMOVE], c.plan.download_bytes, c.plan.full_bytes);
		}
	}
	int rc = EQ_EXIT_OK;
	eq_check_done(&c);
	return rc;
}

int eqota_reboot(void)
{
	/* The init system does the orderly shutdown; eqota only asks. */
	eq_log(EQ_LOG_NOTICE, "rebooting");
	fflush(NULL);
	execl("/sbin/reboot", "reboot", (char *)NULL);
	eq_log(EQ_LOG_ERR, "cannot run /sbin/reboot: %s", strerror(errno));
	return EQ_EXIT_FAILED;
}

static int cmd_update(struct eq_agent *a)
{
	struct eq_update_result res;
	struct eq_error e;
	if (eq_agent_update(a, opt.retry, &res, &e))
		return fail(&e);
	if (res.exit == EQ_EXIT_OK && res.deferred) {
		char why[512];
		eqota_defer_text(res.deferred, &res.policy, &res.rollout, res.number, why, sizeof(why));
		printf("nothing installed: %s\n", why);
		return EQ_EXIT_OK;
	}
	if (res.exit == EQ_EXIT_OK && res.skipped_failed) {
		printf("nothing installed: release '%s' (number %" PRIu64 ") failed on this device before; "
		       "'eqota update --retry' installs it again\n",
		       res.release, res.number);
		return EQ_EXIT_OK;
	}
	if (res.exit == EQ_EXIT_OK) {
		printf("up to date (release '%s', number %" PRIu64 ")\n", res.release, res.number);
		return EQ_EXIT_OK;
	}
	printf("installed release '%s' (number %" PRIu64 ") in %.1f s: %zu packages kept, %zu from deltas, %zu full, "
	       "%zu fell back to full objects; it is tried at the next boot\n",
	       res.release, res.number, res.seconds, res.install.kept, res.install.delta, res.install.full,
	       res.install.fallback);
	if (res.install.components)
		printf("image: %zu components (%" PRIu64 " bytes of payload), %zu package entries set aside\n",
		       res.install.components, res.install.component_bytes, res.install.aside);
	if (opt.reboot)
		return eqota_reboot();
	return res.exit;
}

int eqota_confirm(struct eq_agent *a, bool reboot)
{
	enum eq_exit ex;
	struct eq_error e;
	if (eq_agent_confirm(a, &ex, &e))
		return fail(&e);
	/* eqota-confirm.service: the previous slot is marked good again, and
	 * only a reboot puts the device back on it. */
	if (ex == EQ_EXIT_ROLLED_BACK && reboot && !eqota_stop_requested)
		return eqota_reboot();
	return ex;
}

static int cmd_rollback(struct eq_agent *a, const char *why)
{
	struct eq_error e;
	if (eq_agent_rollback(a, why, &e))
		return fail(&e);
	return EQ_EXIT_ROLLED_BACK;
}

/* The problems of `verify`, grouped by package as they come. With --json
 * they go to memory first: on an error stdout gets no half document. */
struct verify_out {
	FILE *f;
	char last[160]; /* the package of the previous problem */
	size_t n;
};

static void verify_print(void *ctx, const char *package, const char *path, const char *problem)
{
	struct verify_out *o = ctx;
	bool same = o->n && !strcmp(o->last, package);
	if (opt.json) {
		fputs(same ? "," : o->n ? "]},{\"package\":" : "{\"package\":", o->f);
		if (!same) {
			eq_json_put_str(o->f, package);
			fputs(",\"problems\":[", o->f);
		}
		fputs("{\"path\":", o->f);
		eq_json_put_str(o->f, path);
		fputs(",\"problem\":", o->f);
		eq_json_put_str(o->f, problem);
		fputs("}", o->f);
	} else {
		if (!same)
			fprintf(o->f, "package %s:\n", package);
		fprintf(o->f, "  %s%s%s\n", path, *path ? ": " : "", problem);
	}
	snprintf(o->last, sizeof(o->last), "%s", package);
	o->n++;
}

static int cmd_verify(struct eq_agent *a)
{
	struct verify_out o = {.f = stdout};
	char *buf = NULL;
	size_t len = 0;
	if (opt.json && !(o.f = open_memstream(&buf, &len))) {
		eq_log(EQ_LOG_ERR, "verify: out of memory");
		return EQ_EXIT_FAILED;
	}
	struct eq_verify_report rep;
	struct eq_slot_info slot;
	int booted;
	struct eq_error e;
	eq_err r = eq_agent_verify(a, verify_print, &o, &rep, &slot, &booted, &e);
	if (opt.json)
		fclose(o.f);
	if (r) {
		free(buf); /* open_memstream's buffer: malloc'ed by libc */
		return fail(&e);
	}
	if (opt.json) {
		printf("{\"schema\":\"" EQ_JSON_VERIFY_SCHEMA "\",\"slot\":\"%s\",\"release\":{\"release\":",
		       eq_bl_slot_name((unsigned)booted));
		json_str(slot.release);
		printf(",\"number\":%" PRIu64 "},\"packages\":%zu,\"entries\":%zu,\"bytes\":%" PRIu64
		       ",\"persistent\":%zu,\"aside\":%zu,\"components\":%zu,\"damaged_packages\":%zu,\"problems\":%zu,"
		       "\"damaged\":[%s%s]}\n",
		       slot.number, rep.packages, rep.entries, rep.bytes, rep.persistent, rep.aside, rep.components,
		       rep.damaged, rep.problems, buf ? buf : "", o.n ? "]}" : "");
		free(buf);
	} else {
		printf("slot %s, release '%s' (number %" PRIu64 "): %zu packages, %zu entries, %" PRIu64
		       " bytes read: %s",
		       eq_bl_slot_name((unsigned)booted), slot.release, slot.number, rep.packages, rep.entries,
		       rep.bytes, rep.damaged ? "" : "every file matches its record\n");
		if (rep.persistent)
			printf("%zu entr%s at [persist] paths: the device's own files there are not checked, the "
			       "release's version kept beside the records is\n",
			       rep.persistent, rep.persistent == 1 ? "y" : "ies");
		if (rep.components || rep.aside)
			printf("image release: %zu of the packages are image components; %zu package entr%s the image "
			       "replaces or removes checked in the version set aside beside the records\n",
			       rep.components, rep.aside, rep.aside == 1 ? "y" : "ies");
		if (rep.damaged)
			printf("%zu package%s differ%s from %s records (%zu problems); the next update downloads "
			       "%s instead of copying %s\n",
			       rep.damaged, rep.damaged == 1 ? "" : "s", rep.damaged == 1 ? "s" : "",
			       rep.damaged == 1 ? "its" : "their", rep.problems, rep.damaged == 1 ? "it" : "them",
			       rep.damaged == 1 ? "it" : "them");
	}
	return rep.damaged ? EQ_EXIT_FAILED : EQ_EXIT_OK;
}

/* "90m", "6h", "2d": a hold's length in seconds; 0 if not one. */
static int64_t parse_duration(const char *s)
{
	char *end;
	if (*s < '0' || *s > '9')
		return 0;
	unsigned long long v = strtoull(s, &end, 10);
	int64_t unit = !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600 : !strcmp(end, "d") ? 86400 : 0;
	if (!unit || v == 0 || v > (unsigned long long)EQ_HOLD_MAX_S)
		return 0;
	return (int64_t)v * unit;
}

static int cmd_hold(struct eq_agent *a)
{
	if (!!opt.until + !!opt.hold_for + opt.off != 1)
		return usage_error("hold needs one of --until TIME, --for DURATION or --off", NULL);
	int64_t until = 0;
	if (opt.until && !eq_manifest_parse_time(opt.until, &until))
		return usage_error("--until expects a UTC time such as 2026-12-24T06:00:00Z, not", opt.until);
	if (opt.hold_for) {
		int64_t d = parse_duration(opt.hold_for);
		if (!d)
			return usage_error("--for expects a number and m, h or d (such as 6h), not", opt.hold_for);
		until = (int64_t)time(NULL) + d;
	}
	struct eq_error e;
	if (eq_agent_hold(a, until, &e))
		return fail(&e);
	if (opt.off) {
		printf("hold lifted%s\n", "");
	} else {
		char when[EQ_MANIFEST_TIME_LEN + 1];
		eq_manifest_format_time(until, when);
		printf("no new release is installed until %s ('eqota hold --off' lifts the hold)\n", when);
	}
	return EQ_EXIT_OK;
}

static int cmd_provision(struct eq_agent *a)
{
	if (!opt.slot)
		return usage_error("provision needs --slot A|B", NULL);
	int slot = eq_bl_slot_index(opt.slot);
	if (slot < 0)
		return usage_error("--slot must be A or B, not", opt.slot);
	struct eq_update_result res;
	struct eq_error e;
	if (eq_agent_provision(a, (unsigned)slot, opt.release, &res, &e))
		return fail(&e);
	printf("provisioned slot %s with release '%s' (number %" PRIu64 ") in %.1f s: %zu packages\n", opt.slot,
	       res.release, res.number, res.seconds, res.install.full);
	return EQ_EXIT_OK;
}

/* How long `mark-good` waits for another eqota's lock (an operator's
 * `check` at boot, a daemon confirm started at the same time) before it
 * leaves the trial undecided. Builds with test hooks only (EQ_TEST_HOOKS):
 * EQ_TEST_LOCK_WAIT_MS replaces it. */
#define CONFIRM_LOCK_WAIT_MS (5u * 60u * 1000u)

static unsigned confirm_lock_wait_ms(void)
{
#ifdef EQ_TEST_HOOKS
	const char *t = secure_getenv("EQ_TEST_LOCK_WAIT_MS");
	if (t && *t) {
		char *end;
		long long v = strtoll(t, &end, 10);
		if (!*end && v >= 0 && v <= (long long)CONFIRM_LOCK_WAIT_MS)
			return (unsigned)v;
	}
#endif
	return CONFIRM_LOCK_WAIT_MS;
}

/* Runs a one-shot command on a ready agent; the daemon makes its own. */
typedef int (*cmd_fn)(struct eq_agent *a);

static int cmd_mark_good(struct eq_agent *a)
{
	return eqota_confirm(a, opt.reboot);
}

static int cmd_mark_bad(struct eq_agent *a)
{
	return cmd_rollback(a, "marked bad by 'eqota mark-bad'");
}

static int cmd_rollback_op(struct eq_agent *a)
{
	return cmd_rollback(a, "rolled back by 'eqota rollback'");
}

/* The options after the command. Each command takes only those its table
 * row names: anything else is a usage error before any work, so a mistyped
 * `status --reboot` cannot look as if it did something. */
enum {
	OPT_JSON = 1u << 0,
	OPT_RETRY = 1u << 1,
	OPT_REBOOT = 1u << 2,
	OPT_SLOT = 1u << 3,
	OPT_RELEASE = 1u << 4,
	OPT_UNTIL = 1u << 5,
	OPT_FOR = 1u << 6,
	OPT_OFF = 1u << 7,
};

static const struct cmd_option {
	const char *name;
	unsigned bit;
	const char **value; /* where its argument goes; NULL for a flag */
	bool *flag;
} cmd_options[] = {
	{.name = "--json", .bit = OPT_JSON, .flag = &opt.json},
	{.name = "--retry", .bit = OPT_RETRY, .flag = &opt.retry},
	{.name = "--reboot", .bit = OPT_REBOOT, .flag = &opt.reboot},
	{.name = "--slot", .bit = OPT_SLOT, .value = &opt.slot},
	{.name = "--release", .bit = OPT_RELEASE, .value = &opt.release},
	{.name = "--until", .bit = OPT_UNTIL, .value = &opt.until},
	{.name = "--for", .bit = OPT_FOR, .value = &opt.hold_for},
	{.name = "--off", .bit = OPT_OFF, .flag = &opt.off},
};

/* What a command needs around it: the daemon builds its agents per poll;
 * readers take no lock; mark-good waits for the lock a while. */
enum cmd_kind { CMD_DAEMON, CMD_READ, CMD_WRITE, CMD_CONFIRM };

static const struct command {
	const char *name;
	cmd_fn run;
	unsigned options;
	enum cmd_kind kind;
} commands[] = {
	{"status", cmd_status, OPT_JSON, CMD_READ},
	{"check", cmd_check, OPT_JSON | OPT_RETRY, CMD_WRITE},
	{"update", cmd_update, OPT_RETRY | OPT_REBOOT, CMD_WRITE},
	{"mark-good", cmd_mark_good, OPT_REBOOT, CMD_CONFIRM},
	{"mark-bad", cmd_mark_bad, 0, CMD_WRITE},
	{"rollback", cmd_rollback_op, 0, CMD_WRITE},
	{"daemon", NULL, 0, CMD_DAEMON},
	{"provision", cmd_provision, OPT_SLOT | OPT_RELEASE, CMD_WRITE},
	{"hold", cmd_hold, OPT_UNTIL | OPT_FOR | OPT_OFF, CMD_WRITE},
	{"verify", cmd_verify, OPT_JSON, CMD_READ},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The hidden --list-commands: the tables above as the test of every
 * command against every option it does not take reads them
 * (tests/integration/agent_cli.sh), so that test cannot go stale. */
static int list_commands(void)
{
	for (size_t i = 0; i < N_OF(cmd_options); i++)
		printf("option %s%s\n", cmd_options[i].name, cmd_options[i].value ? " VALUE" : "");
	for (size_t c = 0; c < N_OF(commands); c++) {
		printf("command %s", commands[c].name);
		for (size_t i = 0; i < N_OF(cmd_options); i++)
			if (commands[c].options & cmd_options[i].bit)
				printf(" %s", cmd_options[i].name);
		printf("\n");
	}
	return EQ_EXIT_OK;
}

/* The command's options, argv[i..argc): a usage error for an option the
 * command does not take, before the configuration is even read. */
static int parse_command_options(const struct command *c, int i, int argc, char **argv)
{
	for (; i < argc; i++) {
		const struct cmd_option *o = NULL;
		for (size_t k = 0; k < N_OF(cmd_options) && !o; k++)
			if (!strcmp(argv[i], cmd_options[k].name))
				o = &cmd_options[k];
		if (!o)
			return usage_error("unknown argument", argv[i]);
		if (!(c->options & o->bit)) {
			fprintf(stderr, "eqota: %s does not take the option '%s'\n%s", c->name, o->name, usage_text);
			return EQ_EXIT_USAGE;
		}
		if (o->value) {
			if (i + 1 >= argc) {
				fprintf(stderr, "eqota: %s: option '%s' needs a value\n%s", c->name, o->name,
					usage_text);
				return EQ_EXIT_USAGE;
			}
			*o->value = argv[++i];
		} else {
			*o->flag = true;
		}
	}
	return EQ_EXIT_OK;
}

int main(int argc, char **argv)
{
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			opt.config = argv[++i];
		else if (!strcmp(argv[i], "-v"))
			eq_log_set_level(eq_log_get_level() == EQ_LOG_INFO ? EQ_LOG_DEBUG : EQ_LOG_INFO);
		else if (!strcmp(argv[i], "-q"))
			eq_log_set_level(EQ_LOG_WARNING);
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return EQ_EXIT_OK;
		} else if (!strcmp(argv[i], "--version")) {
			printf("eqota %s\n", EQ_VERSION);
			return EQ_EXIT_OK;
		} else if (!strcmp(argv[i], "--list-commands")) {
			return list_commands();
		} else {
			return usage_error("unknown option", argv[i]);
		}
	}
	if (i >= argc)
		return usage_error("missing command", NULL);
	const struct command *c = NULL;
	for (size_t k = 0; k < N_OF(commands) && !c; k++)
		if (!strcmp(argv[i], commands[k].name))
			c = &commands[k];
	if (!c)
		return usage_error("unknown command", argv[i]);
	int prc = parse_command_options(c, i + 1, argc, argv);
	if (prc)
		return prc;

	struct eq_config cfg;
	struct eq_error e;
	if (eq_config_load(opt.config, &cfg, &e)) {
		eq_log(EQ_LOG_ERR, "%s", eq_error_msg(&e));
		return EQ_EXIT_USAGE;
	}
	if (c->kind == CMD_DAEMON) {
		int rc = eqota_daemon(&cfg);
		eq_config_done(&cfg);
		return rc;
	}
	eqota_catch_stop(eqota_on_work_term, true);
	struct eq_agent *a = NULL;
	if (eq_agent_new(&cfg, &a, &e)) {
		eq_config_done(&cfg);
		return fail(&e);
	}
	eq_agent_set_stop(a, &eqota_stop_requested);
	/* Readers take no lock; everything else may write the slots, the
	 * bootloader, the state or the caches. */
	if (c->kind != CMD_READ) {
		/* mark-good waits a while: a confirmation given up on leaves a
		 * trial that the bootloader ends at the next boot. */
		bool confirm = c->kind == CMD_CONFIRM;
		eq_err lr = eq_agent_lock(a, c->name, confirm ? confirm_lock_wait_ms() : 0, &e);
		if (lr == EQ_ERR_STATE && confirm && !eqota_stop_requested)
			(void)eq_error_prefix(&e, lr,
					      "a slot on trial stays undecided, neither committed nor marked bad: "
					      "the daemon confirms it at its next poll, or the bootloader's try "
					      "counter decides at the next boot");
		if (lr) {
			eq_agent_free(a);
			eq_config_done(&cfg);
			return fail(&e);
		}
	}
	struct eq_progress_printer pp;
	eq_progress_printer_init(&pp, STDERR_FILENO);
	if (eq_log_get_level() >= EQ_LOG_NOTICE && !opt.json)
		eq_agent_set_progress(a, eq_progress_print, &pp);

	int rc = c->run(a);
	if (eq_log_get_level() >= EQ_LOG_NOTICE && !opt.json)
		eq_progress_printer_done(&pp);
	eq_agent_free(a);
	eq_config_done(&cfg);
	/* Stopped by a signal: die of it, as a shell script running eqota
	 * expects (exit status 128 + signal), now that the agent stopped at
	 * a safe point. */
	int sig = eqota_stop_requested;
	if (sig) {
		fflush(NULL);
		signal(sig, SIG_DFL);
		raise(sig);
	}
	return rc;
}
