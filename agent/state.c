/*
 * The agent's state file. It is rewritten at every phase change, so a power
 * cut or a bad flash block can leave anything in it: the reader accepts
 * exactly what eq_state_save() writes and names the first thing that is
 * not, and the agent (agent.c) rebuilds a safe state when it cannot read it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <eq/agent.h>

#include "state.h"

/* Release numbers are capped like the manifest's; times at year 9999. */
#define NUMBER_MAX (UINT64_C(1) << 53)
#define TIME_MAX INT64_C(253402300799)

const char *eq_phase_name(enum eq_phase p)
{
	switch (p) {
	case EQ_PHASE_IDLE: return "idle";
	case EQ_PHASE_INSTALLING: return "installing";
	case EQ_PHASE_INSTALLED: return "installed";
	case EQ_PHASE_TRYING: return "trying";
	}
	return "?";
}

void eq_state_init(struct eq_state *s)
{
	memset(s, 0, sizeof(*s));
	s->phase = EQ_PHASE_IDLE;
	s->target_slot = -1;
	s->from_slot = -1;
}

int64_t eq_state_backoff_s(uint64_t attempts)
{
	int64_t d = EQ_RETRY_FIRST_S;
	for (uint64_t i = 1; i < attempts && d < EQ_RETRY_MAX_S; i++)
		d *= 2;
	return d < EQ_RETRY_MAX_S ? d : EQ_RETRY_MAX_S;
}

static bool parse_u64(const char *v, uint64_t max, uint64_t *ret)
{
	return eq_parse_u64(v, strlen(v), max, ret);
}

static bool parse_slot(const char *v, int *ret)
{
	if (!strcmp(v, "-")) {
		*ret = -1;
		return true;
	}
	int i = eq_bl_slot_index(v);
	if (i < 0)
		return false;
	*ret = i;
	return true;
}

/* Text as eq_state_save() writes it: no control characters. */
static bool parse_text(const char *v, char *out, size_t cap)
{
	size_t n = strlen(v);
	if (n >= cap)
		return false;
	for (const unsigned char *c = (const unsigned char *)v; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return false;
	memcpy(out, v, n + 1);
	return true;
}

/* Empty, or a release name's characters (eq_manifest_header.release). */
static bool parse_release(const char *v, char out[65])
{
	if (strlen(v) > 64 || (*v && !strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", *v)))
		return false;
	if (strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+-") != strlen(v))
		return false;
	memcpy(out, v, strlen(v) + 1);
	return true;
}

static bool parse_boot_id(const char *v, char out[EQ_STATE_BOOT_ID_MAX + 1])
{
	if (strlen(v) > EQ_STATE_BOOT_ID_MAX || strspn(v, "0123456789abcdef-") != strlen(v))
		return false;
	memcpy(out, v, strlen(v) + 1);
	return true;
}

static bool parse_time(const char *v, int64_t *ret)
{
	uint64_t x;
	if (!parse_u64(v, (uint64_t)TIME_MAX, &x))
		return false;
	*ret = (int64_t)x;
	return true;
}

enum key {
	K_PHASE,
	K_TARGET_SLOT,
	K_FROM_SLOT,
	K_TARGET_NUMBER,
	K_TARGET_RELEASE,
	K_FAILED_NUMBER,
	K_FAILED_REASON,
	K_CHANGED_AT,
	K_REQUIRED, /* the keys above are required, the ones below were added later */
	K_BOOT_ID = K_REQUIRED,
	K_ERROR_NUMBER,
	K_ERROR,
	K_ERROR_AT,
	K_ATTEMPTS,
	K_NEXT_ATTEMPT,
	K_COUNT
};

static const char *const key_names[K_COUNT] = {
	"phase",         "target_slot",   "from_slot",  "target_number", "target_release",
	"failed_number", "failed_reason", "changed_at", "boot_id",       "error_number",
	"error",         "error_at",      "attempts",   "next_attempt",
};

static bool parse_value(struct eq_state *s, enum key k, const char *v)
{
	switch (k) {
	case K_PHASE:
		for (int p = EQ_PHASE_IDLE; p <= EQ_PHASE_TRYING; p++)
			if (!strcmp(v, eq_phase_name((enum eq_phase)p))) {
				s->phase = (enum eq_phase)p;
				return true;
			}
		return false;
	case K_TARGET_SLOT: return parse_slot(v, &s->target_slot);
	case K_FROM_SLOT: return parse_slot(v, &s->from_slot);
	case K_TARGET_NUMBER: return parse_u64(v, NUMBER_MAX, &s->target_number);
	case K_TARGET_RELEASE: return parse_release(v, s->target_release);
	case K_FAILED_NUMBER: return parse_u64(v, NUMBER_MAX, &s->failed_number);
	case K_FAILED_REASON: return parse_text(v, s->failed_reason, sizeof(s->failed_reason));
	case K_CHANGED_AT: return parse_time(v, &s->changed_at);
	case K_BOOT_ID: return parse_boot_id(v, s->boot_id);
	case K_ERROR_NUMBER: return parse_u64(v, NUMBER_MAX, &s->error_number);
	case K_ERROR: return parse_text(v, s->error, sizeof(s->error));
	case K_ERROR_AT: return parse_time(v, &s->error_at);
	case K_ATTEMPTS: return parse_u64(v, UINT32_MAX, &s->attempts);
	case K_NEXT_ATTEMPT: return parse_time(v, &s->next_attempt);
	case K_COUNT: break;
	}
	return false;
}

static eq_err parse_line(struct eq_state *s, bool seen[K_COUNT], char *line, struct eq_error *err)
{
	char *eq = strchr(line, '=');
	if (!eq)
		return eq_error_set(err, EQ_ERR_PARSE, "expected key=value");
	*eq = '\0';
	const char *v = eq + 1;
	for (int k = 0; k < K_COUNT; k++) {
		if (strcmp(line, key_names[k]))
			continue;
		if (seen[k])
			return eq_error_set(err, EQ_ERR_PARSE, "%s: repeated", line);
		seen[k] = true;
		if (!parse_value(s, (enum key)k, v))
			return eq_error_set(err, EQ_ERR_PARSE, "%s: bad value '%.64s'", line, v);
		return EQ_OK;
	}
	return eq_error_set(err, EQ_ERR_PARSE, "unknown key '%.64s'", line);
}

/* What the writer never produces even though each line is fine. */
static eq_err check_whole(const struct eq_state *s, struct eq_error *err)
{
	if (s->phase == EQ_PHASE_IDLE) {
		if (s->target_slot >= 0 || s->from_slot >= 0 || s->target_number)
			return eq_error_set(err, EQ_ERR_PARSE, "phase idle with a target");
	} else {
		if (s->target_slot < 0 || s->from_slot < 0 || s->from_slot == s->target_slot)
			return eq_error_set(err, EQ_ERR_PARSE, "phase %s without a target and a different from_slot",
					    eq_phase_name(s->phase));
		if (!s->target_number)
			return eq_error_set(err, EQ_ERR_PARSE, "phase %s without a target_number",
					    eq_phase_name(s->phase));
	}
	if (!s->error_number && (s->error[0] || s->attempts || s->error_at || s->next_attempt))
		return eq_error_set(err, EQ_ERR_PARSE, "an install error without its error_number");
	if (s->error_number && !s->attempts)
		return eq_error_set(err, EQ_ERR_PARSE, "error_number %" PRIu64 " with 0 attempts", s->error_number);
	return EQ_OK;
}

static eq_err parse_all(char *text, size_t len, struct eq_state *s, struct eq_error *err)
{
	if (len == 0)
		return eq_error_set(err, EQ_ERR_PARSE, "empty");
	if (memchr(text, '\0', len))
		return eq_error_set(err, EQ_ERR_PARSE, "NUL byte at offset %zu",
				    (size_t)((char *)memchr(text, '\0', len) - text));
	/* Every line the writer produces ends in a newline: one missing is a
	 * cut-off write, even if the part left happens to parse. */
	if (text[len - 1] != '\n')
		return eq_error_set(err, EQ_ERR_PARSE, "truncated: the last line has no newline");
	bool seen[K_COUNT] = {false};
	char *p = text;
	unsigned line = 0;
	eq_err r;
	while (*p) {
		line++;
		char *nl = strchr(p, '\n');
		*nl = '\0';
		if ((r = parse_line(s, seen, p, err)))
			return eq_error_prefix(err, r, "line %u", line);
		p = nl + 1;
	}
	/* The added keys come all together (this writer) or not at all (an
	 * older agent's file): only some of them is a file cut at a line's
	 * end, which would lose e.g. the backoff of an install error. */
	bool added = false;
	for (int k = K_REQUIRED; k < K_COUNT; k++)
		added = added || seen[k];
	for (int k = 0; k < K_COUNT; k++)
		if (!seen[k] && (k < K_REQUIRED || added))
			return eq_error_set(err, EQ_ERR_PARSE, "no %s line", key_names[k]);
	return check_whole(s, err);
}

eq_err eq_state_load(const char *path, struct eq_state *ret, struct eq_error *err)
{
	struct eq_state s;
	eq_state_init(&s);
	uint8_t *data;
	size_t len;
	eq_err r = eq_file_read_all(path, EQ_STATE_MAX_BYTES, &data, &len, err);
	if (r == EQ_ERR_NOTFOUND) {
		*ret = s;
		return EQ_OK;
	}
	if (r)
		return eq_error_prefix(err, r, "state file %s", path);
	r = parse_all((char *)data, len, &s, err);
	eq_free(data);
	if (r)
		return eq_error_prefix(err, r, "state file %s", path);
	*ret = s;
	return EQ_OK;
}

static void clean_text(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src);
	for (unsigned char *c = (unsigned char *)dst; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			*c = ' ';
}

eq_err eq_state_save(const char *path, const struct eq_state *s, struct eq_error *err)
{
	char buf[2048];
	char reason[EQ_STATE_REASON_MAX], error[EQ_STATE_REASON_MAX];
	/* A newline in a text would end its line early. */
	clean_text(reason, sizeof(reason), s->failed_reason);
	clean_text(error, sizeof(error), s->error);
	int n = snprintf(buf, sizeof(buf),
			 "phase=%s\ntarget_slot=%s\nfrom_slot=%s\ntarget_number=%" PRIu64 "\ntarget_release=%s\n"
			 "failed_number=%" PRIu64 "\nfailed_reason=%s\nchanged_at=%lld\nboot_id=%s\n"
			 "error_number=%" PRIu64 "\nerror=%s\nerror_at=%lld\nattempts=%" PRIu64 "\nnext_attempt=%lld\n",
			 eq_phase_name(s->phase), s->target_slot >= 0 ? eq_bl_slot_name((unsigned)s->target_slot) : "-",
			 s->from_slot >= 0 ? eq_bl_slot_name((unsigned)s->from_slot) : "-", s->target_number,
			 s->target_release, s->failed_number, reason, (long long)time(NULL), s->boot_id,
			 s->error_number, error, (long long)s->error_at, s->attempts, (long long)s->next_attempt);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return eq_error_set(err, EQ_ERR_LIMIT, "state file %s: state too long", path);
	return eq_file_replace_atomic(path, buf, (size_t)n, 0644, err);
}
