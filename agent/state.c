#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <eq/agent.h>

#define STATE_MAX_BYTES 8192

const char *eq_phase_name(enum eq_phase p)
{
	switch (p) {
	case EQ_PHASE_IDLE:
		return "idle";
	case EQ_PHASE_INSTALLING:
		return "installing";
	case EQ_PHASE_INSTALLED:
		return "installed";
	case EQ_PHASE_TRYING:
		return "trying";
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

static bool parse_u64(const char *v, uint64_t *ret)
{
	char *end;
	if (!*v || *v == '-')
		return false;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (*end || errno)
		return false;
	*ret = x;
	return true;
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

static eq_err parse_line(struct eq_state *s, char *line, struct eq_error *err)
{
	char *eq = strchr(line, '=');
	if (!eq)
		return eq_error_set(err, EQ_ERR_PARSE, "expected key=value");
	*eq = '\0';
	const char *k = line, *v = eq + 1;
	uint64_t n;
	if (!strcmp(k, "phase")) {
		for (int p = EQ_PHASE_IDLE; p <= EQ_PHASE_TRYING; p++)
			if (!strcmp(v, eq_phase_name((enum eq_phase)p))) {
				s->phase = (enum eq_phase)p;
				return EQ_OK;
			}
	} else if (!strcmp(k, "target_slot")) {
		if (parse_slot(v, &s->target_slot))
			return EQ_OK;
	} else if (!strcmp(k, "from_slot")) {
		if (parse_slot(v, &s->from_slot))
			return EQ_OK;
	} else if (!strcmp(k, "target_number")) {
		if (parse_u64(v, &s->target_number))
			return EQ_OK;
	} else if (!strcmp(k, "target_release")) {
		if (strlen(v) < sizeof(s->target_release)) {
			snprintf(s->target_release, sizeof(s->target_release), "%s", v);
			return EQ_OK;
		}
	} else if (!strcmp(k, "failed_number")) {
		if (parse_u64(v, &s->failed_number))
			return EQ_OK;
	} else if (!strcmp(k, "failed_reason")) {
		snprintf(s->failed_reason, sizeof(s->failed_reason), "%s", v);
		return EQ_OK;
	} else if (!strcmp(k, "changed_at")) {
		if (parse_u64(v, &n)) {
			s->changed_at = (int64_t)n;
			return EQ_OK;
		}
	} else {
		return eq_error_set(err, EQ_ERR_PARSE, "unknown key '%s'", k);
	}
	return eq_error_set(err, EQ_ERR_PARSE, "%s: bad value '%s'", k, v);
}

eq_err eq_state_load(const char *path, struct eq_state *ret, struct eq_error *err)
{
	struct eq_state s;
	eq_state_init(&s);
	uint8_t *data;
	size_t len;
	eq_err r = eq_file_read_all(path, STATE_MAX_BYTES, &data, &len, err);
	if (r == EQ_ERR_NOTFOUND) {
		*ret = s;
		return EQ_OK;
	}
	if (r)
		return r;
	char *p = (char *)data;
	unsigned line = 0;
	while (*p) {
		line++;
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		if (*p && (r = parse_line(&s, p, err))) {
			eq_error_prefix(err, r, "%s:%u", path, line);
			break;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	eq_free(data);
	if (!r && s.phase != EQ_PHASE_IDLE && s.target_slot < 0)
		r = eq_error_set(err, EQ_ERR_PARSE, "%s: phase %s without a target slot", path, eq_phase_name(s.phase));
	if (!r)
		*ret = s;
	return r;
}

eq_err eq_state_save(const char *path, const struct eq_state *s, struct eq_error *err)
{
	char buf[1024];
	/* Newlines in the reason would end its line early. */
	char reason[EQ_STATE_REASON_MAX];
	snprintf(reason, sizeof(reason), "%s", s->failed_reason);
	for (char *c = reason; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	int n = snprintf(buf, sizeof(buf),
			 "phase=%s\ntarget_slot=%s\nfrom_slot=%s\ntarget_number=%" PRIu64 "\ntarget_release=%s\n"
			 "failed_number=%" PRIu64 "\nfailed_reason=%s\nchanged_at=%lld\n",
			 eq_phase_name(s->phase), s->target_slot >= 0 ? eq_bl_slot_name((unsigned)s->target_slot) : "-",
			 s->from_slot >= 0 ? eq_bl_slot_name((unsigned)s->from_slot) : "-", s->target_number,
			 s->target_release, s->failed_number, reason, (long long)time(NULL));
	if (n < 0 || (size_t)n >= sizeof(buf))
		return eq_error_set(err, EQ_ERR_LIMIT, "state too long");
	return eq_file_replace_atomic(path, buf, (size_t)n, 0644, err);
}
