/*
 * Where the fleet stands, from the reports devices POST (agent/report.c,
 * docs/fleet.md "Reports"): JSON lines as a web server stored them. Every
 * line is hostile until checked: any device, or anyone who can reach the
 * collector, writes them. A line that is not a report is counted and
 * named (FILE:LINE: why), never trusted, and never stops the summary.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <eq/gen_fleet.h>

#include "gen_priv.h"

/* Caps on what a report file can make us hold (issue 29, finding 6): a
 * line, the reason kept from it, the reports read, and the distinct
 * names any sender chooses. Past a cap a line is a bad line naming it. */
#define LINE_MAX_BYTES 4096u
#define REASON_MAX 256u
#define EVENTS_MAX 20000000u
#define CHANNELS_MAX 1024u
#define RELEASES_MAX 65536u
#define REASONS_MAX 65536u
#define MEMBERS_MAX 32
#define TIME_MAX INT64_C(253402300799)
#define NO_REASON UINT32_MAX
#define OTHER_REASON (UINT32_MAX - 1)

enum kind { K_INSTALLED, K_COMMITTED, K_ROLLED_BACK, K_FAILED, K__COUNT };
static const char *const kind_names[K__COUNT] = {"installed", "committed", "rolled_back", "failed"};

/* One counted report. Names are numbers into the reader's sets: an event
 * owns nothing, so 20 million of them stay near 1.1 GiB. */
struct event {
	int64_t time;
	uint64_t seq; /* order read: breaks ties of equal times */
	uint64_t bytes;
	uint64_t component_bytes; /* of bytes */
	uint32_t chan;            /* index into fleet->channels */
	uint32_t rel;             /* index into that channel's releases (before their sort) */
	uint32_t who;             /* into reader.who: the identity the device counts as */
	uint32_t reason;          /* into reader.reasons, NO_REASON or OTHER_REASON */
	enum kind kind;
};

struct reader {
	struct eq_fleet *f;
	const struct eq_fleet_opts *o;
	struct eqg_names channels; /* "board\0channel" */
	struct eqg_names releases; /* channel index and number, 12 bytes */
	uint32_t *rel_index;       /* per entry of releases: its index in the channel */
	size_t rel_cap;
	struct eqg_names who; /* 'a' + authenticated identity, or 'd' + device id */
	struct eqg_names reasons;
	struct eqg_names inventory;
	struct event *ev;
	size_t n, cap;
};

/* ---- checking one line -------------------------------------------------- */

static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > EQ_MANIFEST_NAME_MAX || s[0] == '.')
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static bool release_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > EQ_MANIFEST_NAME_MAX ||
	    !strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", s[0]))
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+-") == n;
}

bool eq_fleet_identity_ok(const char *s, size_t len)
{
	if (len == 0 || len > EQ_FLEET_IDENTITY_MAX || s[0] == ' ' || s[len - 1] == ' ')
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e || s[i] == '"' || s[i] == '\\')
			return false;
	return true;
}

static bool uint_ok(const cJSON *j, uint64_t max, uint64_t *ret)
{
	if (!cJSON_IsNumber(j))
		return false;
	double v = j->valuedouble;
	if (!(v >= 0) || v > (double)max || (double)(uint64_t)v != v)
		return false;
	*ret = (uint64_t)v;
	return true;
}

/* A release object {"release", "number"}; null allowed when @nullable. */
static const char *check_release(const cJSON *j, bool nullable, uint64_t *number, const char **name)
{
	*number = 0;
	*name = NULL;
	if (cJSON_IsNull(j) && nullable)
		return NULL;
	if (!cJSON_IsObject(j))
		return "expected an object {\"release\", \"number\"}";
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "release");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "number");
	if (!cJSON_IsString(r) || !release_ok(r->valuestring))
		return "release: expected a release name";
	if (!uint_ok(n, EQ_MANIFEST_NUMBER_MAX, number) || *number == 0)
		return "number: expected 1..2^53";
	*name = r->valuestring;
	return NULL;
}

/* A report as checked: pointers into the parsed document. */
struct report {
	int64_t time;
	const char *device; /* 32 hex digits, or NULL */
	const char *board, *channel, *release, *reason, *auth;
	enum kind kind;
	uint64_t to, bytes;
	uint64_t component_bytes; /* optional in the report: 0 when absent */
};

/* No member twice, in the report or a release object: which of two a
 * reader would take is a question a forger could use. */
static bool members_unique(const cJSON *j)
{
	int n = 0;
	for (const cJSON *a = j->child; a; a = a->next, n++) {
		if (n == MEMBERS_MAX || !a->string)
			return false;
		for (const cJSON *b = j->child; b != a; b = b->next)
			if (!strcmp(a->string, b->string))
				return false;
		if (cJSON_IsObject(a) && !members_unique(a))
			return false;
	}
	return true;
}

/* Parses and checks one line. On success *ret_j holds the document (the
 * caller deletes it) and *rep points into it; else the reason why. */
static const char *check_report(const char *text, size_t len, cJSON **ret_j, struct report *rep)
{
	*ret_j = NULL;
	memset(rep, 0, sizeof(*rep));
	if (memchr(text, '\0', len))
		return "a NUL byte";
	cJSON *j = cJSON_ParseWithLength(text, len);
	const char *why = NULL;
	const cJSON *it;
	uint64_t u = 0, from = 0;
	const char *from_rel = NULL;
	if (!cJSON_IsObject(j))
		why = "not a JSON object";
	else if (!members_unique(j))
		why = "a member named twice, or more than 32 members";
	else if (!cJSON_IsString(it = cJSON_GetObjectItemCaseSensitive(j, "schema")) ||
		 strcmp(it->valuestring, EQ_FLEET_REPORT_SCHEMA) != 0)
		why = "schema: expected \"" EQ_FLEET_REPORT_SCHEMA "\"";
	else if (!uint_ok(cJSON_GetObjectItemCaseSensitive(j, "time"), (uint64_t)TIME_MAX, &u))
		why = "time: expected seconds since 1970";
	if (!why) {
		rep->time = (int64_t)u;
		it = cJSON_GetObjectItemCaseSensitive(j, "device");
		if (cJSON_IsNull(it))
			rep->device = NULL;
		else if (!cJSON_IsString(it) || strlen(it->valuestring) != EQ_FLEET_DEVICE_LEN ||
			 strspn(it->valuestring, "0123456789abcdef") != EQ_FLEET_DEVICE_LEN)
			why = "device: expected 32 lower-case hex digits or null";
		else
			rep->device = it->valuestring;
	}
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "board"),
		    *c = cJSON_GetObjectItemCaseSensitive(j, "channel");
	if (!why && (!cJSON_IsString(b) || !name_ok(b->valuestring)))
		why = "board: expected a board name";
	if (!why && (!cJSON_IsString(c) || !name_ok(c->valuestring)))
		why = "channel: expected a channel name";
	if (!why) {
		it = cJSON_GetObjectItemCaseSensitive(j, "event");
		rep->kind = K__COUNT;
		for (int k = 0; cJSON_IsString(it) && k < K__COUNT; k++)
			if (!strcmp(it->valuestring, kind_names[k]))
				rep->kind = (enum kind)k;
		if (rep->kind == K__COUNT)
			why = "event: expected installed, committed, rolled_back or failed";
	}
	if (!why && check_release(cJSON_GetObjectItemCaseSensitive(j, "from"), true, &from, &from_rel))
		why = "from: not a release or null";
	if (!why && check_release(cJSON_GetObjectItemCaseSensitive(j, "to"), false, &rep->to, &rep->release))
		why = "to: not a release";
	if (!why) {
		it = cJSON_GetObjectItemCaseSensitive(j, "reason");
		if (!cJSON_IsNull(it) && !cJSON_IsString(it))
			why = "reason: expected a string or null";
		else if (!uint_ok(cJSON_GetObjectItemCaseSensitive(j, "bytes"), UINT64_C(1) << 53, &rep->bytes))
			why = "bytes: expected a whole number";
		else
			rep->reason = cJSON_IsString(it) ? it->valuestring : NULL;
	}
	/* Added after the first agents: absent means none (or an agent that
	 * does not say). A part of bytes, never more. */
	if (!why && (it = cJSON_GetObjectItemCaseSensitive(j, "component_bytes"))) {
		if (!uint_ok(it, UINT64_C(1) << 53, &rep->component_bytes))
			why = "component_bytes: expected a whole number";
		else if (rep->component_bytes > rep->bytes)
			why = "component_bytes: more than bytes";
	}
	if (!why) {
		it = cJSON_GetObjectItemCaseSensitive(j, EQ_FLEET_AUTH_MEMBER);
		if (it && !(cJSON_IsString(it) && eq_fleet_identity_ok(it->valuestring, strlen(it->valuestring))))
			why = EQ_FLEET_AUTH_MEMBER ": expected the identity the collector verified";
		else if (it)
			rep->auth = it->valuestring;
	}
	if (why) {
		cJSON_Delete(j);
		return why;
	}
	rep->board = b->valuestring;
	rep->channel = c->valuestring;
	*ret_j = j;
	return NULL;
}

eq_err eq_fleet_collect(const char *body, size_t len, const char *identity, char **ret_line, struct eq_error *err)
{
	cJSON *j = NULL;
	struct report rep;
	const char *why = check_report(body, len, &j, &rep);
	if (why)
		return eq_error_set(err, EQ_ERR_PARSE, "not an eqota report: %s", why);
	eq_err r = EQ_OK;
	char *line = NULL;
	if (rep.auth)
		r = eq_error_set(err, EQ_ERR_VERIFY,
				 "'" EQ_FLEET_AUTH_MEMBER "' is set by the collector from the client certificate, "
				 "never by a device");
	else if (identity && !eq_fleet_identity_ok(identity, strlen(identity)))
		r = eq_error_set(
			err, EQ_ERR_VERIFY,
			"the client certificate's name is not an identity (1 to %u printable ASCII characters, "
			"no quote or backslash)",
			EQ_FLEET_IDENTITY_MAX);
	else if (identity && !cJSON_AddStringToObject(j, EQ_FLEET_AUTH_MEMBER, identity))
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	/* Printed again from the checked document: what is stored is one line
	 * of JSON whatever bytes the device sent. */
	if (!r && !(line = cJSON_PrintUnformatted(j)))
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (!r && strlen(line) > LINE_MAX_BYTES)
		r = eq_error_set(err, EQ_ERR_LIMIT, "longer than %u bytes once stored", LINE_MAX_BYTES);
	if (!r && !(*ret_line = eq_strdup(line)))
		r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	cJSON_free(line);
	cJSON_Delete(j);
	return r;
}

static void bad_line(struct eq_fleet *f, const char *file, size_t line, const char *why)
{
	f->bad++;
	if (f->n_errors < EQ_FLEET_MAX_ERRORS)
		snprintf(f->errors[f->n_errors++], sizeof(f->errors[0]), "%s:%zu: %s", file, line, why);
}

/* A set's cap reached is a bad line; any other failure ends the read. */
static eq_err capped(struct eq_fleet *f, eq_err r, const char *file, size_t line, const char *what)
{
	if (r != EQ_ERR_LIMIT)
		return r;
	char why[96];
	snprintf(why, sizeof(why), "more than %s, ignoring", what);
	f->reports--; /* a bad line now, not a report */
	bad_line(f, file, line, why);
	return EQ_OK;
}

static eq_err add_channel(struct reader *rd, const struct report *rep, uint32_t *ret, struct eq_error *err)
{
	struct eq_fleet *f = rd->f;
	char key[2 * (EQ_MANIFEST_NAME_MAX + 1)];
	size_t bl = strlen(rep->board), cl = strlen(rep->channel);
	memcpy(key, rep->board, bl + 1);
	memcpy(key + bl + 1, rep->channel, cl);
	eq_err r = eqg_names_add(&rd->channels, key, bl + 1 + cl, ret, err);
	if (r || *ret < f->n_channels)
		return r;
	struct eq_fleet_channel *nc = eq_realloc(f->channels, (f->n_channels + 1) * sizeof(*nc));
	if (!nc)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	f->channels = nc;
	struct eq_fleet_channel *c = &f->channels[f->n_channels++];
	memset(c, 0, sizeof(*c));
	snprintf(c->board, sizeof(c->board), "%s", rep->board);
	snprintf(c->channel, sizeof(c->channel), "%s", rep->channel);
	return EQ_OK;
}

/* The index of release @rep->to in channel @chan, added when new (named
 * by the first report that mentions it). */
static eq_err add_release(struct reader *rd, uint32_t chan, const struct report *rep, uint32_t *ret,
			  struct eq_error *err)
{
	unsigned char key[12];
	memcpy(key, &chan, 4);
	memcpy(key + 4, &rep->to, 8);
	uint32_t g = 0;
	size_t before = rd->releases.n;
	eq_err r = eqg_names_add(&rd->releases, key, sizeof(key), &g, err);
	if (r)
		return r;
	if (rd->releases.n == before) {
		*ret = rd->rel_index[g];
		return EQ_OK;
	}
	struct eq_fleet_channel *c = &rd->f->channels[chan];
	if (g >= rd->rel_cap) {
		size_t nc = rd->rel_cap ? rd->rel_cap * 2 : 64;
		uint32_t *ni = eq_realloc(rd->rel_index, nc * sizeof(*ni));
		if (!ni)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		rd->rel_index = ni;
		rd->rel_cap = nc;
	}
	struct eq_fleet_release *nr = eq_realloc(c->releases, (c->n_releases + 1) * sizeof(*nr));
	if (!nr)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	c->releases = nr;
	struct eq_fleet_release *rel = &c->releases[c->n_releases];
	memset(rel, 0, sizeof(*rel));
	rel->number = rep->to;
	snprintf(rel->release, sizeof(rel->release), "%s", rep->release);
	rd->rel_index[g] = (uint32_t)c->n_releases;
	*ret = (uint32_t)c->n_releases++;
	return EQ_OK;
}

/* Checks one line; a report becomes an event, anything else a bad line. */
static eq_err read_line(struct reader *rd, const char *file, size_t line, const char *text, size_t len,
			struct eq_error *err)
{
	struct eq_fleet *f = rd->f;
	cJSON *j = NULL;
	struct report rep;
	const char *why = check_report(text, len, &j, &rep);
	if (why) {
		bad_line(f, file, line, why);
		return EQ_OK;
	}
	f->reports++;
	const struct eq_fleet_opts *o = rd->o;
	if ((o->board && strcmp(rep.board, o->board) != 0) || (o->channel && strcmp(rep.channel, o->channel) != 0) ||
	    (o->number && rep.to != o->number)) {
		cJSON_Delete(j);
		return EQ_OK;
	}
	struct event ev;
	memset(&ev, 0, sizeof(ev));
	ev.time = rep.time;
	ev.bytes = rep.bytes;
	ev.component_bytes = rep.component_bytes;
	ev.kind = rep.kind;
	ev.reason = NO_REASON;
	/* Who the report counts as: the identity the collector verified, or,
	 * when asked, the id the sender wrote, which anyone can invent. */
	char who[1 + EQ_FLEET_IDENTITY_MAX + 1];
	size_t wl = 0;
	if (rep.auth) {
		wl = strlen(rep.auth);
		who[0] = 'a';
		memcpy(who + 1, rep.auth, wl);
	} else if (!rd->o->unauthenticated) {
		f->unauthenticated++;
	} else if (!rep.device) {
		f->anonymous++;
	} else {
		wl = EQ_FLEET_DEVICE_LEN;
		who[0] = 'd';
		memcpy(who + 1, rep.device, wl);
	}
	uint32_t idx = 0;
	if (wl && rd->o->inventory && !eqg_names_find(&rd->inventory, who + 1, wl, &idx)) {
		f->uninventoried++;
		wl = 0;
	}
	eq_err r = EQ_OK;
	if (!wl)
		goto out;
	if ((r = add_channel(rd, &rep, &ev.chan, err))) {
		r = capped(f, r, file, line, "1024 board/channel pairs");
		goto out;
	}
	if ((r = add_release(rd, ev.chan, &rep, &ev.rel, err))) {
		r = capped(f, r, file, line, "65536 releases");
		goto out;
	}
	if ((r = eqg_names_add(&rd->who, who, wl + 1, &ev.who, err)))
		goto out;
	if (ev.kind == K_ROLLED_BACK || ev.kind == K_FAILED) {
		const char *t = rep.reason ? rep.reason : "(no reason given)";
		r = eqg_names_add(&rd->reasons, t, strnlen(t, REASON_MAX), &ev.reason, err);
		if (r == EQ_ERR_LIMIT) {
			ev.reason = OTHER_REASON;
			r = EQ_OK;
		}
		if (r)
			goto out;
	}
	if (rd->n == EVENTS_MAX) {
		r = eq_error_set(err, EQ_ERR_LIMIT, "%s:%zu: more than %u reports", file, line, EVENTS_MAX);
		goto out;
	}
	if (rd->n == rd->cap) {
		size_t nc = rd->cap ? rd->cap * 2 : 1024;
		struct event *ne = eq_realloc(rd->ev, nc * sizeof(*ne));
		if (!ne) {
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			goto out;
		}
		rd->ev = ne;
		rd->cap = nc;
	}
	ev.seq = rd->n;
	rd->ev[rd->n++] = ev;
out:
	cJSON_Delete(j);
	return r;
}

/* Reads @file's lines (at most 4096 bytes each) and hands each non-empty
 * one to @fn; a longer line goes to @fn with @text NULL. */
typedef eq_err (*line_fn)(void *ctx, const char *file, size_t line, const char *text, size_t len, struct eq_error *err);

static eq_err each_line(const char *file, line_fn fn, void *ctx, struct eq_error *err)
{
	FILE *fp = fopen(file, "rb");
	if (!fp)
		return eq_error_errno(err, errno == ENOENT ? EQ_ERR_NOTFOUND : EQ_ERR_IO, "cannot open '%s'", file);
	char *buf = eq_malloc(LINE_MAX_BYTES + 2);
	if (!buf) {
		fclose(fp);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	eq_err r = EQ_OK;
	size_t line = 0;
	/* By hand, not fgets(): a NUL byte must not cut a line short. */
	for (int ch = 0; !r && ch != EOF;) {
		size_t len = 0;
		bool longer = false;
		while ((ch = getc(fp)) != EOF && ch != '\n') {
			if (len < LINE_MAX_BYTES + 1)
				buf[len++] = (char)ch;
			else
				longer = true;
		}
		line++;
		if (len && buf[len - 1] == '\r')
			len--;
		if (len == 0 && !longer)
			continue;
		r = fn(ctx, file, line, longer || len > LINE_MAX_BYTES ? NULL : buf, len, err);
	}
	if (!r && ferror(fp))
		r = eq_error_errno(err, EQ_ERR_IO, "cannot read '%s'", file);
	eq_free(buf);
	fclose(fp);
	return r;
}

static eq_err report_line(void *ctx, const char *file, size_t line, const char *text, size_t len, struct eq_error *err)
{
	struct reader *rd = ctx;
	rd->f->lines++;
	if (!text) {
		bad_line(rd->f, file, line, "longer than 4096 bytes");
		return EQ_OK;
	}
	return read_line(rd, file, line, text, len, err);
}

static eq_err inventory_line(void *ctx, const char *file, size_t line, const char *text, size_t len,
			     struct eq_error *err)
{
	struct reader *rd = ctx;
	uint32_t idx;
	if (text && text[0] == '#')
		return EQ_OK;
	if (!text || !eq_fleet_identity_ok(text, len))
		return eq_error_set(
			err, EQ_ERR_PARSE,
			"%s:%zu: expected one device identity per line (1 to %u printable ASCII characters, "
			"no quote or backslash), or a # comment",
			file, line, EQ_FLEET_IDENTITY_MAX);
	eq_err r = eqg_names_add(&rd->inventory, text, len, &idx, err);
	if (r == EQ_ERR_LIMIT)
		eq_error_prefix(err, r, "%s:%zu: identities", file, line);
	return r;
}

/* ---- summing up ---------------------------------------------------------- */

static int cmp_event(const void *pa, const void *pb)
{
	const struct event *a = pa, *b = pb;
	if (a->chan != b->chan)
		return a->chan < b->chan ? -1 : 1;
	if (a->who != b->who)
		return a->who < b->who ? -1 : 1;
	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static eq_err push_time(struct eq_fleet_times *t, int64_t v, struct eq_error *err)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 16;
		int64_t *nv = eq_realloc(t->v, nc * sizeof(*nv));
		if (!nv)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		t->v = nv;
		t->cap = nc;
	}
	t->v[t->n++] = v;
	return EQ_OK;
}

/* What one device did with one release. Releases are held by index: the
 * channel's array is sorted only after all devices are read. */
struct dev_rel {
	size_t rel;
	enum kind last;
	uint32_t reason;
	int64_t installed_at, committed_at, rolled_back_at;
	uint64_t bytes, component_bytes;
};

/* Reasons are counted per release: devices whose last word on it was a
 * rollback (or a failed install) with that text. */
struct reason_ref {
	uint32_t chan;
	size_t rel;
	bool failed;
	uint32_t text;
};

struct reasons {
	struct reason_ref *v;
	size_t n, cap;
	const struct eqg_names *names;
};

static const char *reason_text(const struct reasons *rs, uint32_t i)
{
	return i == OTHER_REASON ? "(one of more than 65536 distinct reasons)" : rs->names->keys[i];
}

static eq_err close_device(struct eq_fleet_channel *c, uint32_t chan, const struct dev_rel *dr, size_t n,
			   uint64_t running, struct reasons *rs, struct eq_error *err)
{
	eq_err r = EQ_OK;
	for (size_t i = 0; !r && i < n; i++) {
		struct eq_fleet_release *rel = &c->releases[dr[i].rel];
		rel->devices++;
		rel->bytes_total += dr[i].bytes;
		rel->component_bytes_total += dr[i].component_bytes;
		if (dr[i].bytes > rel->bytes_max)
			rel->bytes_max = dr[i].bytes;
		if (rel->number == running)
			rel->running++;
		if (dr[i].committed_at)
			rel->committed++;
		bool failed_only = dr[i].last == K_FAILED && !dr[i].installed_at;
		if (dr[i].last == K_INSTALLED)
			rel->trying++;
		else if (dr[i].last == K_ROLLED_BACK)
			rel->rolled_back++;
		else if (failed_only)
			rel->failed++;
		if (dr[i].installed_at)
			r = push_time(&rel->t_installed, dr[i].installed_at, err);
		if (!r && dr[i].committed_at)
			r = push_time(&rel->t_committed, dr[i].committed_at, err);
		if (!r && dr[i].last == K_ROLLED_BACK)
			r = push_time(&rel->t_rolled_back, dr[i].rolled_back_at, err);
		if (r || !(dr[i].last == K_ROLLED_BACK || failed_only))
			continue;
		if (rs->n == rs->cap) {
			size_t nc = rs->cap ? rs->cap * 2 : 64;
			struct reason_ref *nv = eq_realloc(rs->v, nc * sizeof(*nv));
			if (!nv) {
				r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
				break;
			}
			rs->v = nv;
			rs->cap = nc;
		}
		rs->v[rs->n++] = (struct reason_ref){chan, dr[i].rel, failed_only, dr[i].reason};
	}
	return r;
}

static int cmp_reason(const void *pa, const void *pb)
{
	const struct reason_ref *a = pa, *b = pb;
	if (a->chan != b->chan)
		return a->chan < b->chan ? -1 : 1;
	if (a->rel != b->rel)
		return a->rel < b->rel ? -1 : 1;
	if (a->failed != b->failed)
		return a->failed ? 1 : -1;
	return a->text < b->text ? -1 : a->text > b->text;
}

/* A reason text and its count while counting (texts owned by the set). */
struct cand {
	const char *text;
	size_t devices;
};

static int cmp_count_desc(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	if (a->devices != b->devices)
		return a->devices > b->devices ? -1 : 1;
	return strcmp(a->text, b->text);
}

static bool same_list(const struct reason_ref *a, const struct reason_ref *b)
{
	return a->chan == b->chan && a->rel == b->rel && a->failed == b->failed;
}

/* The most frequent texts of each release's rollbacks and failures. */
static eq_err top_reasons(struct eq_fleet *f, struct reasons *rs, struct eq_error *err)
{
	struct reason_ref *rr = rs->v;
	size_t n = rs->n;
	if (n)
		qsort(rr, n, sizeof(*rr), cmp_reason);
	for (size_t i = 0; i < n;) {
		struct eq_fleet_release *rel = &f->channels[rr[i].chan].releases[rr[i].rel];
		bool failed = rr[i].failed;
		struct eq_fleet_reason *list = failed ? rel->failed_reasons : rel->rolled_back_reasons;
		size_t *nl = failed ? &rel->n_failed_reasons : &rel->n_rolled_back_reasons;
		/* One slot more than kept: each new run replaces the smallest. */
		struct cand top[EQ_FLEET_MAX_REASONS + 1];
		size_t n_top = 0, j = i;
		while (j < n && same_list(&rr[j], &rr[i])) {
			size_t k = j;
			while (k < n && same_list(&rr[k], &rr[i]) && rr[k].text == rr[j].text)
				k++;
			struct cand c = {.text = reason_text(rs, rr[j].text), .devices = k - j};
			if (n_top < EQ_FLEET_MAX_REASONS + 1)
				top[n_top++] = c;
			else if (cmp_count_desc(&c, &top[n_top - 1]) < 0)
				top[n_top - 1] = c;
			qsort(top, n_top, sizeof(top[0]), cmp_count_desc);
			j = k;
		}
		for (size_t k = 0; k < n_top && k < EQ_FLEET_MAX_REASONS; k++) {
			if (!(list[k].text = eq_strdup(top[k].text)))
				return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			list[k].devices = top[k].devices;
			(*nl)++;
		}
		i = j;
	}
	return EQ_OK;
}

static int cmp_i64(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
	return a < b ? -1 : a > b;
}

static int cmp_release(const void *pa, const void *pb)
{
	const struct eq_fleet_release *a = pa, *b = pb;
	return a->number < b->number ? -1 : a->number > b->number;
}

/* Folds one device's reports (@ev[0..n), oldest first) into its channel. */
static eq_err add_device(struct eq_fleet *f, const struct event *ev, size_t n, struct reasons *rs, struct eq_error *err)
{
	struct eq_fleet_channel *c = &f->channels[ev[0].chan];
	/* A device reports on a few releases; past 64 the oldest fold into
	 * the 64th, which only a hostile or very old device reaches. */
	struct dev_rel dr[64];
	size_t nd = 0;
	uint64_t running = 0;
	for (size_t k = 0; k < n; k++) {
		const struct event *e = &ev[k];
		size_t d;
		for (d = 0; d < nd && dr[d].rel != e->rel; d++)
			;
		if (d == nd && nd == sizeof(dr) / sizeof(dr[0]))
			d = nd - 1;
		else if (d == nd)
			memset(&dr[nd++], 0, sizeof(dr[0]));
		dr[d].rel = e->rel;
		dr[d].last = e->kind;
		dr[d].bytes += e->bytes;
		dr[d].component_bytes += e->component_bytes;
		/* 0 means "not yet": a report from 1970 still counts. */
		int64_t t = e->time ? e->time : 1;
		if (e->kind == K_INSTALLED && !dr[d].installed_at)
			dr[d].installed_at = t;
		if (e->kind == K_COMMITTED && !dr[d].committed_at)
			dr[d].committed_at = t;
		if (e->kind == K_ROLLED_BACK)
			dr[d].rolled_back_at = t;
		if (e->kind == K_ROLLED_BACK || e->kind == K_FAILED)
			dr[d].reason = e->reason;
		if (e->kind == K_COMMITTED)
			running = c->releases[e->rel].number;
		if (!f->first || t < f->first)
			f->first = t;
		if (t > f->last)
			f->last = t;
	}
	return close_device(c, ev[0].chan, dr, nd, running, rs, err);
}

static eq_err sum_up(struct eq_fleet *f, struct event *ev, size_t n, const struct eqg_names *reasons,
		     struct eq_error *err)
{
	if (n)
		qsort(ev, n, sizeof(*ev), cmp_event);
	struct reasons rs = {.names = reasons};
	eq_err r = EQ_OK;
	for (size_t i = 0; !r && i < n;) {
		size_t j = i;
		while (j < n && ev[j].chan == ev[i].chan && ev[j].who == ev[i].who)
			j++;
		f->devices++;
		r = add_device(f, ev + i, j - i, &rs, err);
		i = j;
	}
	if (!r)
		r = top_reasons(f, &rs, err);
	eq_free(rs.v);
	for (size_t ci = 0; !r && ci < f->n_channels; ci++) {
		struct eq_fleet_channel *c = &f->channels[ci];
		if (c->n_releases)
			qsort(c->releases, c->n_releases, sizeof(*c->releases), cmp_release);
		for (size_t k = 0; k < c->n_releases; k++) {
			struct eq_fleet_times *ts[] = {&c->releases[k].t_installed, &c->releases[k].t_committed,
						       &c->releases[k].t_rolled_back};
			for (size_t t = 0; t < 3; t++)
				if (ts[t]->n)
					qsort(ts[t]->v, ts[t]->n, sizeof(int64_t), cmp_i64);
		}
	}
	return r;
}

static void release_free(struct eq_fleet_release *r)
{
	for (size_t k = 0; k < r->n_rolled_back_reasons; k++)
		eq_free(r->rolled_back_reasons[k].text);
	for (size_t k = 0; k < r->n_failed_reasons; k++)
		eq_free(r->failed_reasons[k].text);
	eq_free(r->t_installed.v);
	eq_free(r->t_committed.v);
	eq_free(r->t_rolled_back.v);
}

void eq_fleet_free(struct eq_fleet *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_channels; i++) {
		for (size_t k = 0; k < f->channels[i].n_releases; k++)
			release_free(&f->channels[i].releases[k]);
		eq_free(f->channels[i].releases);
	}
	eq_free(f->channels);
	eq_free(f);
}

eq_err eq_fleet_read(const char *const *files, size_t n_files, const struct eq_fleet_opts *opts, struct eq_fleet **ret,
		     struct eq_error *err)
{
	static const struct eq_fleet_opts defaults = {0};
	struct eq_fleet *f = eq_calloc(1, sizeof(*f));
	if (!f)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	struct reader rd = {.f = f, .o = opts ? opts : &defaults};
	eqg_names_init(&rd.channels, CHANNELS_MAX);
	eqg_names_init(&rd.releases, RELEASES_MAX);
	eqg_names_init(&rd.who, EVENTS_MAX);
	eqg_names_init(&rd.reasons, REASONS_MAX);
	eqg_names_init(&rd.inventory, EVENTS_MAX);
	eq_err r = EQ_OK;
	if (rd.o->inventory)
		r = each_line(rd.o->inventory, inventory_line, &rd, err);
	for (size_t i = 0; !r && i < n_files; i++)
		r = each_line(files[i], report_line, &rd, err);
	if (!r)
		r = sum_up(f, rd.ev, rd.n, &rd.reasons, err);
	eq_free(rd.ev);
	eq_free(rd.rel_index);
	eqg_names_done(&rd.channels);
	eqg_names_done(&rd.releases);
	eqg_names_done(&rd.who);
	eqg_names_done(&rd.reasons);
	eqg_names_done(&rd.inventory);
	if (r) {
		eq_fleet_free(f);
		return r;
	}
	*ret = f;
	return EQ_OK;
}

const struct eq_fleet_release *eq_fleet_find(const struct eq_fleet *f, const char *board, const char *channel,
					     uint64_t number)
{
	for (size_t i = 0; i < f->n_channels; i++) {
		const struct eq_fleet_channel *c = &f->channels[i];
		if (strcmp(c->board, board) || strcmp(c->channel, channel))
			continue;
		for (size_t k = 0; k < c->n_releases; k++)
			if (c->releases[k].number == number)
				return &c->releases[k];
	}
	return NULL;
}
