/*
 * The agent's configuration file: a strict INI dialect in the spirit of
 * RAUC's system.conf (STYLE 25). Every key is known in advance, checked at
 * load and stored in one plain struct; anything unknown, repeated or out of
 * range is refused with FILE:LINE and the key, because a typo in a device's
 * config must not silently fall back to a default in the field.
 */
#include <assert.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <eq/agent.h>

#include "persist.h"

#define LINE_MAX_BYTES 4096u

enum section {
	SEC_NONE = -1,
	SEC_REPOSITORY,
	SEC_SLOTS,
	SEC_BOOTLOADER,
	SEC_PATHS,
	SEC_HEALTH,
	SEC_DAEMON,
	SEC_UPDATE,
	SEC_REPORT,
	SEC_PERSIST,
	SEC__COUNT
};

static const char *const section_names[SEC__COUNT] = {
	[SEC_REPOSITORY] = "repository", [SEC_SLOTS] = "slots",   [SEC_BOOTLOADER] = "bootloader",
	[SEC_PATHS] = "paths",           [SEC_HEALTH] = "health", [SEC_DAEMON] = "daemon",
	[SEC_UPDATE] = "update",         [SEC_REPORT] = "report", [SEC_PERSIST] = "persist",
};

enum kind {
	K_URL,      /* http/https/file URL, trailing '/' removed */
	K_NAME,     /* a path component of the repository (board, channel) */
	K_BLVAR,    /* a bootloader variable name */
	K_PATH,     /* absolute path */
	K_CMD,      /* free text (a command line) */
	K_UINT,     /* unsigned in [min, max] */
	K_SLOTTYPE, /* dir | block */
	K_BACKEND,  /* file | uboot | grub */
	K_CHECK,    /* [health] check: repeatable */
	K_TIME,     /* UTC time YYYY-MM-DDTHH:MM:SSZ, as in manifests */
	K_PERSIST,  /* [persist] paths: space-separated, may be empty */
};

struct key_def {
	enum section sec;
	const char *name;
	enum kind kind;
	size_t off; /* into struct eq_config */
	unsigned min, max;
};

#define S(field) offsetof(struct eq_config, field)
static const struct key_def keys[] = {
	{SEC_REPOSITORY, "url", K_URL, S(url), 0, 0},
	{SEC_REPOSITORY, "board", K_NAME, S(board), 0, 0},
	{SEC_REPOSITORY, "channel", K_NAME, S(channel), 0, 0},
	{SEC_REPOSITORY, "root", K_PATH, S(root), 0, 0},
	{SEC_REPOSITORY, "key", K_PATH, S(key), 0, 0},
	{SEC_REPOSITORY, "trust", K_PATH, S(trust), 0, 0},
	{SEC_REPOSITORY, "ca-file", K_PATH, S(ca_file), 0, 0},
	{SEC_REPOSITORY, "connect-timeout", K_UINT, S(connect_timeout_s), 1, 600},
	{SEC_REPOSITORY, "low-speed-time", K_UINT, S(low_speed_time_s), 1, 3600},
	{SEC_REPOSITORY, "min-rate", K_UINT, S(min_rate), 1, 100000000},
	{SEC_REPOSITORY, "retries", K_UINT, S(retries), 0, 20},
	{SEC_REPOSITORY, "retry-delay-ms", K_UINT, S(retry_delay_ms), 10, 600000},
	{SEC_SLOTS, "type", K_SLOTTYPE, S(slot_type), 0, 0},
	{SEC_SLOTS, "A", K_PATH, S(slot_a), 0, 0},
	{SEC_SLOTS, "B", K_PATH, S(slot_b), 0, 0},
	{SEC_SLOTS, "mkfs", K_CMD, S(mkfs), 0, 0},
	{SEC_BOOTLOADER, "backend", K_BACKEND, S(bl_backend), 0, 0},
	{SEC_BOOTLOADER, "path", K_PATH, S(bl_path), 0, 0},
	{SEC_BOOTLOADER, "cmdline", K_PATH, S(cmdline), 0, 0},
	{SEC_BOOTLOADER, "good-attempts", K_UINT, S(bl_good_attempts), 1, 9},
	{SEC_BOOTLOADER, "try-attempts", K_UINT, S(bl_try_attempts), 1, 9},
	{SEC_BOOTLOADER, "var-order", K_BLVAR, S(bl_var_order), 0, 0},
	{SEC_BOOTLOADER, "var-a-left", K_BLVAR, S(bl_var_a_left), 0, 0},
	{SEC_BOOTLOADER, "var-b-left", K_BLVAR, S(bl_var_b_left), 0, 0},
	{SEC_BOOTLOADER, "var-trial", K_BLVAR, S(bl_var_trial), 0, 0},
	{SEC_PATHS, "data", K_PATH, S(data_dir), 0, 0},
	{SEC_HEALTH, "check", K_CHECK, 0, 0, 0},
	{SEC_HEALTH, "timeout", K_UINT, S(health_timeout_s), 1, 86400},
	{SEC_DAEMON, "interval", K_UINT, S(poll_interval_s), 60, 604800},
	{SEC_DAEMON, "jitter", K_UINT, S(poll_jitter_s), 0, 86400},
	{SEC_DAEMON, "cycle-timeout", K_UINT, S(cycle_timeout_s), 10, 604800},
	{SEC_UPDATE, "pin", K_UINT, S(pin), 1, 4000000000u},
	{SEC_UPDATE, "hold-until", K_TIME, S(hold_until), 0, 0},
	{SEC_UPDATE, "device-id-file", K_PATH, S(device_id_file), 0, 0},
	{SEC_REPORT, "url", K_URL, S(report_url), 0, 0},
	{SEC_REPORT, "ca-file", K_PATH, S(report_ca_file), 0, 0},
	{SEC_REPORT, "client-cert", K_PATH, S(report_cert), 0, 0},
	{SEC_REPORT, "client-key", K_PATH, S(report_key), 0, 0},
	{SEC_REPORT, "queue", K_UINT, S(report_queue), 1, 10000},
	{SEC_REPORT, "timeout", K_UINT, S(report_timeout_s), 1, 600},
	{SEC_PERSIST, "paths", K_PERSIST, 0, 0, 0},
	{SEC_PERSIST, "max-bytes", K_UINT, S(persist_max_bytes), 1, EQ_CONFIG_MAX_PERSIST_BYTES},
};
#undef S
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))


struct parser {
	const char *name;
	unsigned line;
	unsigned seen[N_KEYS];             /* line of the key's first occurrence, 0 if absent */
	unsigned section_line[SEC__COUNT]; /* line of each section header, 0 if absent */
	struct eq_config c;
	struct eq_error *err;
};

void eq_config_done(struct eq_config *c)
{
	if (!c)
		return;
	eq_free(c->url);
	eq_free(c->board);
	eq_free(c->channel);
	eq_free(c->root);
	eq_free(c->key);
	eq_free(c->trust);
	eq_free(c->ca_file);
	eq_free(c->slot_a);
	eq_free(c->slot_b);
	eq_free(c->mkfs);
	eq_free(c->bl_backend);
	eq_free(c->bl_path);
	eq_free(c->bl_var_order);
	eq_free(c->bl_var_a_left);
	eq_free(c->bl_var_b_left);
	eq_free(c->bl_var_trial);
	eq_free(c->cmdline);
	eq_free(c->data_dir);
	eq_free(c->device_id_file);
	eq_free(c->report_url);
	eq_free(c->report_ca_file);
	eq_free(c->report_cert);
	eq_free(c->report_key);
	for (size_t i = 0; i < c->n_checks && i < EQ_CONFIG_MAX_CHECKS; i++)
		eq_free(c->checks[i]);
	for (size_t i = 0; i < c->n_persist && i < EQ_CONFIG_MAX_PERSIST; i++)
		eq_free(c->persist_paths[i]);
	memset(c, 0, sizeof(*c));
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* Trims [*s, *e) in place of the pointers. */
static void trim(const char **s, const char **e)
{
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

static eq_err nomem(struct parser *p)
{
	return eq_error_set(p->err, EQ_ERR_NOMEM, "%s:%u: out of memory", p->name, p->line);
}

static eq_err parse_uint(struct parser *p, const struct key_def *k, const char *v, unsigned *ret)
{
	unsigned long long n = 0;
	bool ok = *v != '\0';
	for (const char *q = v; *q && ok; q++) {
		if (*q < '0' || *q > '9')
			ok = false;
		else if ((n = n * 10u + (unsigned)(*q - '0')) > UINT_MAX)
			ok = false;
	}
	if (!ok)
		return eq_error_set(p->err, EQ_ERR_INVAL, "%s:%u: %s = %s: expected a whole number %u..%u", p->name,
				    p->line, k->name, v, k->min, k->max);
	if (n < k->min || n > k->max)
		return eq_error_set(p->err, EQ_ERR_INVAL, "%s:%u: %s = %s: expected %u..%u", p->name, p->line, k->name,
				    v, k->min, k->max);
	*ret = (unsigned)n;
	return EQ_OK;
}

/* Board and channel end up as path components of URLs and directories, so
 * only a conservative set of characters is allowed. */
static bool valid_name(const char *v)
{
	if (v[0] == '.' || strlen(v) > 128)
		return false;
	for (const char *q = v; *q; q++) {
		char ch = *q;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
		      ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

/* The space-separated [persist] paths of @v into the config; "" is none.
 * @p->line is 0 for the built-in default. */
static eq_err set_persist(struct parser *p, const char *v)
{
	for (const char *s = v; *s;) {
		while (is_space(*s))
			s++;
		if (!*s)
			break;
		const char *e = s;
		while (*e && !is_space(*e))
			e++;
		char path[LINE_MAX_BYTES + 1];
		snprintf(path, sizeof(path), "%.*s", (int)(e - s), s);
		s = e;
		const char *why = eq_persist_path_problem(path);
		if (why)
			return eq_error_set(p->err, EQ_ERR_INVAL, "%s:%u: [persist] paths: '%s': %s", p->name, p->line,
					    path, why);
		for (size_t i = 0; i < p->c.n_persist; i++) {
			if (!strcmp(p->c.persist_paths[i], path))
				return eq_error_set(p->err, EQ_ERR_INVAL,
						    "%s:%u: [persist] paths: '%s' is listed twice", p->name, p->line,
						    path);
			if (eq_persist_paths_overlap(p->c.persist_paths[i], path))
				return eq_error_set(p->err, EQ_ERR_INVAL,
						    "%s:%u: [persist] paths: '%s' and '%s' overlap (a folder is "
						    "copied with what it holds)",
						    p->name, p->line, p->c.persist_paths[i], path);
		}
		if (p->c.n_persist >= EQ_CONFIG_MAX_PERSIST)
			return eq_error_set(p->err, EQ_ERR_LIMIT, "%s:%u: [persist] paths: more than %u paths", p->name,
					    p->line, EQ_CONFIG_MAX_PERSIST);
		if (!(p->c.persist_paths[p->c.n_persist] = eq_strdup(path)))
			return nomem(p);
		p->c.n_persist++;
	}
	return EQ_OK;
}

static eq_err set_value(struct parser *p, size_t ki, const char *v)
{
	const struct key_def *k = &keys[ki];
	char **str = (char **)(void *)((char *)&p->c + k->off);
	switch (k->kind) {
	case K_UINT: return parse_uint(p, k, v, (unsigned *)(void *)((char *)&p->c + k->off));
	case K_SLOTTYPE:
		if (strcmp(v, "dir") == 0)
			p->c.slot_type = EQ_SLOT_DIR;
		else if (strcmp(v, "block") == 0)
			p->c.slot_type = EQ_SLOT_BLOCK;
		else
			return eq_error_set(p->err, EQ_ERR_INVAL, "%s:%u: %s = %s: expected dir or block", p->name,
					    p->line, k->name, v);
		return EQ_OK;
	case K_BACKEND:
		if (strcmp(v, "file") != 0 && strcmp(v, "uboot") != 0 && strcmp(v, "grub") != 0)
			return eq_error_set(p->err, EQ_ERR_INVAL, "%s:%u: %s = %s: expected file, uboot or grub",
					    p->name, p->line, k->name, v);
		break;
	case K_URL:
		if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0 && strncmp(v, "file://", 7) != 0)
			return eq_error_set(p->err, EQ_ERR_INVAL,
					    "%s:%u: %s = %s: expected an http://, https:// or file:// URL", p->name,
					    p->line, k->name, v);
		if (strpbrk(v, " \t?#"))
			return eq_error_set(p->err, EQ_ERR_INVAL,
					    "%s:%u: %s = %s: the base URL may not contain spaces, '?' or '#'", p->name,
					    p->line, k->name, v);
		break;
	case K_BLVAR:
		/* The rule of the narrowest environment (GRUB's), as the
		 * bootloader module applies it; refused here with the line. */
		if (!*v || strlen(v) > 64 || (*v >= '0' && *v <= '9') ||
		    strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != strlen(v))
			return eq_error_set(p->err, EQ_ERR_INVAL,
					    "%s:%u: %s = %s: expected 1 to 64 of A-Z a-z 0-9 _, not starting with a "
					    "digit",
					    p->name, p->line, k->name, v);
		break;
	case K_NAME:
		if (!valid_name(v))
			return eq_error_set(p->err, EQ_ERR_INVAL,
					    "%s:%u: %s = %s: expected up to 128 of A-Z a-z 0-9 . _ - (not starting "
					    "with '.')",
					    p->name, p->line, k->name, v);
		break;
	case K_PATH:
		/* The daemon's working directory is not part of its contract. */
		if (v[0] != '/')
			return eq_error_set(p->err, EQ_ERR_INVAL, "%s:%u: %s = %s: expected an absolute path", p->name,
					    p->line, k->name, v);
		break;
	case K_CMD: break;
	case K_TIME:
		if (!eq_manifest_parse_time(v, (int64_t *)(void *)((char *)&p->c + k->off)))
			return eq_error_set(p->err, EQ_ERR_INVAL,
					    "%s:%u: %s = %s: expected a UTC time such as 2026-12-24T06:00:00Z", p->name,
					    p->line, k->name, v);
		return EQ_OK;
	case K_PERSIST: return set_persist(p, v);
	case K_CHECK:
		if (p->c.n_checks >= EQ_CONFIG_MAX_CHECKS)
			return eq_error_set(p->err, EQ_ERR_LIMIT, "%s:%u: more than %u check lines in [health]",
					    p->name, p->line, EQ_CONFIG_MAX_CHECKS);
		if (!(p->c.checks[p->c.n_checks] = eq_strdup(v)))
			return nomem(p);
		p->c.n_checks++;
		return EQ_OK;
	}
	char *dup = eq_strdup(v);
	if (!dup)
		return nomem(p);
	if (k->kind == K_URL) {
		/* URLs are built as base + "/" + path; "https://x/" would give "//".
		 * One character after "://" stays, so "file:///" keeps its root. */
		size_t keep = (size_t)(strstr(dup, "://") - dup) + 4, l = strlen(dup);
		while (l > keep && dup[l - 1] == '/')
			dup[--l] = '\0';
	}
	eq_free(*str);
	*str = dup;
	return EQ_OK;
}

/* A hint for the spelling people guess first: RAUC and most INI files use
 * '_' or camel case, eqota uses '-'. */
static const char *spelling_hint(enum section sec, const char *key)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		if (keys[i].sec != sec || strlen(keys[i].name) != strlen(key))
			continue;
		bool same = true;
		for (size_t j = 0; key[j] && same; j++) {
			char a = key[j] == '_' ? '-' : key[j], b = keys[i].name[j];
			if (a >= 'A' && a <= 'Z')
				a = (char)(a - 'A' + 'a');
			if (b >= 'A' && b <= 'Z')
				b = (char)(b - 'A' + 'a');
			same = a == b;
		}
		if (same)
			return keys[i].name;
	}
	return NULL;
}

static eq_err parse_line(struct parser *p, enum section *sec, const char *s, const char *e)
{
	trim(&s, &e);
	if (s == e || *s == '#' || *s == ';')
		return EQ_OK;
	size_t len = (size_t)(e - s);
	char buf[LINE_MAX_BYTES + 1];
	if (*s == '[') {
		if (e[-1] != ']' || len < 3)
			return eq_error_set(p->err, EQ_ERR_PARSE, "%s:%u: expected '[section]'", p->name, p->line);
		const char *ns = s + 1, *ne = e - 1;
		trim(&ns, &ne);
		snprintf(buf, sizeof(buf), "%.*s", (int)(ne - ns), ns);
		for (int i = 0; i < SEC__COUNT; i++) {
			if (strcmp(buf, section_names[i]) != 0)
				continue;
			if (p->section_line[i])
				return eq_error_set(p->err, EQ_ERR_PARSE,
						    "%s:%u: section [%s] appears twice (first at line %u)", p->name,
						    p->line, buf, p->section_line[i]);
			p->section_line[i] = p->line;
			*sec = (enum section)i;
			return EQ_OK;
		}
		return eq_error_set(p->err, EQ_ERR_PARSE, "%s:%u: unknown section '[%s]'", p->name, p->line, buf);
	}
	const char *eq = memchr(s, '=', len);
	if (!eq)
		return eq_error_set(p->err, EQ_ERR_PARSE, "%s:%u: expected 'key = value' or '[section]'", p->name,
				    p->line);
	const char *ks = s, *ke = eq, *vs = eq + 1, *ve = e;
	trim(&ks, &ke);
	if (ks == ke)
		return eq_error_set(p->err, EQ_ERR_PARSE, "%s:%u: missing key before '='", p->name, p->line);
	char key[LINE_MAX_BYTES + 1];
	snprintf(key, sizeof(key), "%.*s", (int)(ke - ks), ks);
	if (*sec == SEC_NONE)
		return eq_error_set(p->err, EQ_ERR_PARSE, "%s:%u: key '%s' outside of any [section]", p->name, p->line,
				    key);
	size_t ki = N_KEYS;
	for (size_t i = 0; i < N_KEYS; i++)
		if (keys[i].sec == *sec && strcmp(keys[i].name, key) == 0)
			ki = i;
	if (ki == N_KEYS) {
		const char *hint = spelling_hint(*sec, key);
		if (hint)
			return eq_error_set(p->err, EQ_ERR_PARSE,
					    "%s:%u: unknown key '%s' in [%s] (did you mean '%s'?)", p->name, p->line,
					    key, section_names[*sec], hint);
		return eq_error_set(p->err, EQ_ERR_PARSE, "%s:%u: unknown key '%s' in [%s]", p->name, p->line, key,
				    section_names[*sec]);
	}
	if (p->seen[ki] && keys[ki].kind != K_CHECK)
		return eq_error_set(p->err, EQ_ERR_PARSE, "%s:%u: duplicate key '%s' in [%s] (first at line %u)",
				    p->name, p->line, key, section_names[*sec], p->seen[ki]);
	if (!p->seen[ki])
		p->seen[ki] = p->line;

	/* An inline comment needs whitespace before '#', so that URLs with a
	 * fragment-like '#' and commands such as "test -n x#y" survive. */
	for (const char *q = vs; q < ve; q++) {
		if (*q == '#' && q > vs && is_space(q[-1])) {
			ve = q;
			break;
		}
	}
	trim(&vs, &ve);
	/* "paths =" is how [persist] is turned off. */
	if (vs == ve && keys[ki].kind == K_PERSIST)
		return EQ_OK;
	if (vs == ve)
		return eq_error_set(p->err, EQ_ERR_INVAL, "%s:%u: %s: empty value", p->name, p->line, key);
	if ((*vs == '"' || *vs == '\'') && ve - vs >= 2 && ve[-1] == *vs)
		return eq_error_set(p->err, EQ_ERR_PARSE, "%s:%u: %s: values are written without quotes", p->name,
				    p->line, key);
	snprintf(buf, sizeof(buf), "%.*s", (int)(ve - vs), vs);
	return set_value(p, ki, buf);
}

static eq_err set_default(struct parser *p, char **field, const char *value)
{
	if (*field)
		return EQ_OK;
	if (!(*field = eq_strdup(value)))
		return eq_error_set(p->err, EQ_ERR_NOMEM, "%s: out of memory", p->name);
	return EQ_OK;
}

/* Line of the first occurrence of a key, 0 if absent. */
static unsigned seen_at(const struct parser *p, enum section sec, const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (keys[i].sec == sec && strcmp(keys[i].name, name) == 0)
			return p->seen[i];
	assert(!"unknown key in seen_at");
	return 0;
}

static eq_err check_required(struct parser *p)
{
	static const struct {
		enum section sec;
		const char *name;
	} required[] = {
		{SEC_REPOSITORY, "url"}, {SEC_REPOSITORY, "board"}, {SEC_REPOSITORY, "channel"},
		{SEC_SLOTS, "A"},        {SEC_SLOTS, "B"},          {SEC_BOOTLOADER, "backend"},
	};
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		if (!seen_at(p, required[i].sec, required[i].name))
			return eq_error_set(p->err, EQ_ERR_INVAL, "%s: [%s] %s is required", p->name,
					    section_names[required[i].sec], required[i].name);
	}
	unsigned key_line = seen_at(p, SEC_REPOSITORY, "key"), trust_line = seen_at(p, SEC_REPOSITORY, "trust");
	if (key_line && trust_line)
		return eq_error_set(p->err, EQ_ERR_INVAL,
				    "%s:%u: [repository] key and trust exclude each other (key at line %u)", p->name,
				    trust_line, key_line);
	unsigned root_line = seen_at(p, SEC_REPOSITORY, "root");
	if (root_line && (key_line || trust_line))
		return eq_error_set(p->err, EQ_ERR_INVAL,
				    "%s:%u: [repository] root excludes key and trust (%s at line %u): the root names "
				    "the keys",
				    p->name, root_line, key_line ? "key" : "trust", key_line ? key_line : trust_line);
	if (!key_line && !trust_line && !root_line)
		return eq_error_set(p->err, EQ_ERR_INVAL, "%s: [repository] needs one of root, key or trust", p->name);
	if (strcmp(p->c.slot_a, p->c.slot_b) == 0)
		return eq_error_set(p->err, EQ_ERR_INVAL, "%s:%u: [slots] A and B are both '%s'", p->name,
				    seen_at(p, SEC_SLOTS, "B"), p->c.slot_b);
	unsigned url_line = seen_at(p, SEC_REPORT, "url");
	if (url_line && strncmp(p->c.report_url, "http://", 7) != 0 && strncmp(p->c.report_url, "https://", 8) != 0)
		return eq_error_set(p->err, EQ_ERR_INVAL,
				    "%s:%u: [report] url = %s: expected an http:// or https:// URL", p->name, url_line,
				    p->c.report_url);
	static const char *const needs_url[] = {"ca-file", "client-cert", "client-key", "queue", "timeout"};
	for (size_t i = 0; !url_line && i < sizeof(needs_url) / sizeof(needs_url[0]); i++) {
		unsigned l = seen_at(p, SEC_REPORT, needs_url[i]);
		if (l)
			return eq_error_set(p->err, EQ_ERR_INVAL, "%s:%u: [report] %s without [report] url", p->name, l,
					    needs_url[i]);
	}
	if (!seen_at(p, SEC_REPORT, "client-cert") != !seen_at(p, SEC_REPORT, "client-key"))
		return eq_error_set(
			p->err, EQ_ERR_INVAL,
			"%s: [report] client-cert and client-key go together (a certificate without its key, "
			"or the reverse, cannot authenticate)",
			p->name);
	if (!p->c.bl_path && strcmp(p->c.bl_backend, "file") == 0)
		return eq_error_set(p->err, EQ_ERR_INVAL, "%s: [bootloader] path is required for backend '%s'", p->name,
				    p->c.bl_backend);
	return EQ_OK;
}

eq_err eq_config_parse(const char *name, const char *text, size_t len, struct eq_config *ret, struct eq_error *err)
{
	if (!name)
		name = "config";
	if (len > EQ_CONFIG_MAX_BYTES)
		return eq_error_set(err, EQ_ERR_LIMIT, "%s: larger than the limit of %u bytes", name,
				    EQ_CONFIG_MAX_BYTES);
	struct parser *p = eq_calloc(1, sizeof(*p));
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", name);
	p->name = name;
	p->err = err;
	p->c.connect_timeout_s = 15;
	p->c.low_speed_time_s = 60;
	p->c.min_rate = 1024;
	p->c.retries = 5;
	p->c.retry_delay_ms = 1000;
	p->c.slot_type = EQ_SLOT_DIR;
	p->c.health_timeout_s = 60;
	p->c.poll_interval_s = 3600;
	p->c.poll_jitter_s = 600;
	p->c.cycle_timeout_s = 10800;
	p->c.report_queue = 100;
	p->c.report_timeout_s = 10;
	p->c.persist_max_bytes = EQ_CONFIG_DEFAULT_PERSIST_BYTES;

	eq_err r = EQ_OK;
	enum section sec = SEC_NONE;
	size_t pos = 0;
	while (pos < len && r == EQ_OK) {
		p->line++;
		const char *s = text + pos;
		const char *nl = memchr(s, '\n', len - pos);
		const char *e = nl ? nl : text + len;
		pos = (size_t)(e - text) + (nl ? 1 : 0);
		if (e > s && e[-1] == '\r')
			e--;
		if ((size_t)(e - s) > LINE_MAX_BYTES) {
			r = eq_error_set(err, EQ_ERR_LIMIT, "%s:%u: line longer than %u bytes", name, p->line,
					 LINE_MAX_BYTES);
			break;
		}
		if (memchr(s, '\0', (size_t)(e - s))) {
			r = eq_error_set(err, EQ_ERR_PARSE, "%s:%u: NUL byte in line", name, p->line);
			break;
		}
		r = parse_line(p, &sec, s, e);
	}
	if (r == EQ_OK)
		r = check_required(p);
	if (r == EQ_OK)
		r = set_default(p, &p->c.mkfs, EQ_CONFIG_DEFAULT_MKFS);
	if (r == EQ_OK)
		r = set_default(p, &p->c.cmdline, "/proc/cmdline");
	if (r == EQ_OK)
		r = set_default(p, &p->c.data_dir, EQ_CONFIG_DEFAULT_DATA_DIR);
	if (r == EQ_OK)
		r = set_default(p, &p->c.device_id_file, "/etc/machine-id");
	if (r == EQ_OK && !seen_at(p, SEC_PERSIST, "paths")) {
		p->line = 0;
		r = set_persist(p, EQ_CONFIG_DEFAULT_PERSIST);
	}
	if (r == EQ_OK)
		*ret = p->c;
	else
		eq_config_done(&p->c);
	eq_free(p);
	return r;
}

eq_err eq_config_load(const char *path, struct eq_config *ret, struct eq_error *err)
{
	uint8_t *data = NULL;
	size_t len = 0;
	if (!path)
		path = EQ_CONFIG_DEFAULT_PATH;
	eq_err r = eq_file_read_all(path, EQ_CONFIG_MAX_BYTES, &data, &len, err);
	if (r != EQ_OK)
		return r;
	r = eq_config_parse(path, (const char *)data, len, ret, err);
	eq_free(data);
	return r;
}
