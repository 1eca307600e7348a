/*
 * The JSON form of the manifest: a strict scanner run before cJSON, the
 * schema checks, the parser and the deterministic writer.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "manifest_priv.h"

/* ---- messages ----------------------------------------------------------- */

void eqm_path(char *out, size_t size, const char *where, const char *key)
{
	if (where && *where)
		snprintf(out, size, "%s.%s", where, key);
	else
		snprintf(out, size, "%s", key);
}

/* ---- strict scanner ----------------------------------------------------- */

/*
 * cJSON is lenient (any byte <= 0x20 is whitespace, a BOM is skipped, UTF-8
 * is not checked, a "\u0000" escape silently cuts a string short) and on
 * failure cannot tell malformed input from an allocation failure. This
 * scanner accepts only strict RFC 8259 JSON, enforces the depth and count
 * caps before cJSON allocates anything, and names the line and column of
 * the first problem. Whatever it accepts, cJSON parses, so a later cJSON
 * failure can only be out of memory.
 */
struct scan {
	const uint8_t *start, *p, *end;
	unsigned depth;
	struct eq_error *err;
};

#define SCAN_NUMBER_MAX 32

static void position(const uint8_t *start, const uint8_t *at, unsigned long *line, unsigned long *col)
{
	*line = 1;
	*col = 1;
	for (const uint8_t *q = start; q < at; q++) {
		if (*q == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static eq_err fail_at(struct scan *s, const uint8_t *at, eq_err code, const char *what)
{
	unsigned long line, col;
	position(s->start, at, &line, &col);
	return eq_error_set(s->err, code, "line %lu column %lu: %s", line, col, what);
}

static eq_err fail(struct scan *s, const char *what)
{
	if (s->p >= s->end)
		return fail_at(s, s->p, EQ_ERR_PARSE, "unexpected end of input");
	return fail_at(s, s->p, EQ_ERR_PARSE, what);
}

static void skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* Length of the well-formed UTF-8 sequence at @p (no overlongs, surrogates
 * or code points past U+10FFFF), 0 if malformed. */
static size_t utf8_seq(const uint8_t *p, const uint8_t *end)
{
	uint8_t c = p[0];
	size_t n;
	uint8_t lo = 0x80, hi = 0xbf;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

static bool hex4(const uint8_t *p, const uint8_t *end, unsigned *ret)
{
	if (end - p < 4)
		return false;
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		uint8_t c = p[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return false;
		v = v * 16 + d;
	}
	*ret = v;
	return true;
}

static eq_err scan_string(struct scan *s)
{
	assert(*s->p == '"');
	s->p++;
	while (s->p < s->end) {
		uint8_t c = *s->p;
		if (c == '"') {
			s->p++;
			return EQ_OK;
		}
		if (c < 0x20)
			return fail(s, "control character in string");
		if (c == '\\') {
			s->p++;
			if (s->p >= s->end)
				break;
			switch (*s->p) {
			case '"':
			case '\\':
			case '/':
			case 'b':
			case 'f':
			case 'n':
			case 'r':
			case 't': s->p++; continue;
			case 'u': break;
			default: return fail(s, "invalid escape sequence in string");
			}
			unsigned u, lo;
			if (!hex4(s->p + 1, s->end, &u))
				return fail(s, "invalid \\u escape in string");
			if (u == 0)
				return fail(s, "\\u0000 is not allowed in strings");
			if (u >= 0xdc00 && u <= 0xdfff)
				return fail(s, "unpaired surrogate in \\u escape");
			if (u >= 0xd800 && u <= 0xdbff) {
				if (s->end - s->p < 11 || s->p[5] != '\\' || s->p[6] != 'u' ||
				    !hex4(s->p + 7, s->end, &lo) || lo < 0xdc00 || lo > 0xdfff)
					return fail(s, "unpaired surrogate in \\u escape");
				s->p += 6;
			}
			s->p += 5;
			continue;
		}
		size_t n = utf8_seq(s->p, s->end);
		if (!n)
			return fail(s, "invalid UTF-8 in string");
		s->p += n;
	}
	return fail_at(s, s->end, EQ_ERR_PARSE, "unterminated string");
}

static bool is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

static eq_err scan_number(struct scan *s)
{
	const uint8_t *begin = s->p;
	if (*s->p == '-')
		s->p++;
	if (s->p >= s->end || !is_digit(*s->p))
		return fail(s, "invalid number");
	if (*s->p == '0')
		s->p++;
	else
		while (s->p < s->end && is_digit(*s->p))
			s->p++;
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (s->p >= s->end || !is_digit(*s->p))
			return fail(s, "invalid number");
		while (s->p < s->end && is_digit(*s->p))
			s->p++;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (s->p >= s->end || !is_digit(*s->p))
			return fail(s, "invalid number");
		while (s->p < s->end && is_digit(*s->p))
			s->p++;
	}
	/* cJSON reads at most 63 characters of a number; ours are far shorter */
	if (s->p - begin > SCAN_NUMBER_MAX)
		return fail_at(s, begin, EQ_ERR_LIMIT, "number longer than 32 characters");
	return EQ_OK;
}

static eq_err scan_value(struct scan *s);

static eq_err scan_container(struct scan *s)
{
	bool object = *s->p == '{';
	uint8_t close = object ? '}' : ']';
	if (s->depth >= EQ_MANIFEST_MAX_DEPTH)
		return fail_at(s, s->p, EQ_ERR_LIMIT, "JSON nesting deeper than 8 levels");
	s->depth++;
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		s->depth--;
		return EQ_OK;
	}
	unsigned long count = 0;
	unsigned long max = object ? EQM_MAX_MEMBERS : EQ_MANIFEST_MAX_PACKAGES;
	for (;;) {
		eq_err r;
		if (++count > max)
			return fail_at(s, s->p, EQ_ERR_LIMIT,
				       object ? "object has more than 64 members"
					      : "array has more than 100000 elements");
		if (object) {
			if (s->p >= s->end || *s->p != '"')
				return fail(s, "expected a string as object key");
			if ((r = scan_string(s)))
				return r;
			skip_ws(s);
			if (s->p >= s->end || *s->p != ':')
				return fail(s, "expected ':' after object key");
			s->p++;
			skip_ws(s);
		}
		if ((r = scan_value(s)))
			return r;
		skip_ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			skip_ws(s);
			continue;
		}
		if (s->p < s->end && *s->p == close) {
			s->p++;
			s->depth--;
			return EQ_OK;
		}
		return fail(s, object ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static eq_err scan_literal(struct scan *s, const char *lit)
{
	size_t n = strlen(lit);
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
		return fail(s, "invalid literal");
	s->p += n;
	return EQ_OK;
}

static eq_err scan_value(struct scan *s)
{
	if (s->p >= s->end)
		return fail(s, "expected a value");
	switch (*s->p) {
	case '{':
	case '[': return scan_container(s);
	case '"': return scan_string(s);
	case 't': return scan_literal(s, "true");
	case 'f': return scan_literal(s, "false");
	case 'n': return scan_literal(s, "null");
	default:
		if (*s->p == '-' || is_digit(*s->p))
			return scan_number(s);
		return fail(s, "expected a value");
	}
}

/* The strict scan of a whole document (see eqm_json_parse()). */
static eq_err strict_scan(const uint8_t *data, size_t len, struct eq_error *err)
{
	struct scan s = {.start = data, .p = data, .end = data + len, .err = err};
	skip_ws(&s);
	if (s.p >= s.end)
		return fail_at(&s, s.p, EQ_ERR_PARSE, "empty input");
	if (*s.p != '{')
		return fail(&s, "expected a JSON object");
	eq_err r = scan_value(&s);
	if (r)
		return r;
	skip_ws(&s);
	if (s.p != s.end)
		return fail(&s, "unexpected data after the end of the JSON object");
	return EQ_OK;
}

static eq_err tree(const uint8_t *data, size_t len, const uint8_t *pos_base, cJSON **ret_root, struct eq_error *err)
{
	const char *parse_end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts((const char *)data, len, &parse_end, false);
	if (!root) {
		unsigned long line = 0, col = 0;
		if (parse_end && (const uint8_t *)parse_end >= data && (const uint8_t *)parse_end <= data + len)
			position(pos_base, (const uint8_t *)parse_end, &line, &col);
		return eq_error_set(err, EQ_ERR_NOMEM,
				    "out of memory building the JSON tree (stopped at line %lu column %lu)", line, col);
	}
	*ret_root = root;
	return EQ_OK;
}

eq_err eqm_json_parse(const uint8_t *data, size_t len, cJSON **ret_root, struct eq_error *err)
{
	eq_err r = strict_scan(data, len, err);
	return r ? r : tree(data, len, data, ret_root, err);
}

/* ---- walking scanned JSON without a tree -------------------------------- */

/*
 * A manifest of 5,000 packages is 3 MB of JSON and cJSON would make some
 * 100,000 nodes of it at once; the device's memory must not grow that way
 * with the package count. So the manifest's "packages" array is walked over
 * the bytes the strict scanner already accepted, and each package becomes
 * a small tree of its own, freed before the next. These walkers run only on
 * scanned input, so their checks are belts for the braces.
 */
struct span {
	const uint8_t *p, *end;
};

/* Steps @s over one value and the whitespace after it; @ret the value. */
static eq_err walk_value(struct scan *s, struct span *ret)
{
	ret->p = s->p;
	eq_err r = scan_value(s);
	ret->end = s->p;
	skip_ws(s);
	return r;
}

/* Enters the container at s->p ('{' or '['). */
static void walk_enter(struct scan *s)
{
	s->p++;
	skip_ws(s);
}

/* After a member or element: true and positioned on the next one, or
 * false at the end of the container. */
static bool walk_more(struct scan *s, uint8_t close, bool first)
{
	if (s->p < s->end && *s->p == close)
		return false;
	if (!first && s->p < s->end && *s->p == ',') {
		s->p++;
		skip_ws(s);
	}
	return s->p < s->end && *s->p != close;
}

/* Whether the JSON string token @key decodes to @want. */
static eq_err key_is(const struct span *key, const char *want, bool *ret, struct eq_error *err)
{
	size_t n = (size_t)(key->end - key->p);
	if (!memchr(key->p, '\\', n)) {
		*ret = n == strlen(want) + 2 && memcmp(key->p + 1, want, n - 2) == 0;
		return EQ_OK;
	}
	cJSON *k = NULL;
	eq_err r = tree(key->p, n, key->p, &k, err);
	if (r)
		return r;
	*ret = cJSON_IsString(k) && strcmp(k->valuestring, want) == 0;
	cJSON_Delete(k);
	return EQ_OK;
}

/* Finds the top-level member "packages" of the scanned document; @ret->p is
 * NULL when there is none. A second one is the duplicate-key error the
 * tree's schema check would give. */
static eq_err find_packages(const uint8_t *data, size_t len, struct span *ret, struct eq_error *err)
{
	struct scan s = {.start = data, .p = data, .end = data + len, .err = err};
	ret->p = ret->end = NULL;
	skip_ws(&s);
	walk_enter(&s);
	for (bool first = true; walk_more(&s, '}', first); first = false) {
		struct span key, val;
		bool is = false;
		eq_err r = walk_value(&s, &key);
		if (!r && s.p < s.end && *s.p == ':') {
			s.p++;
			skip_ws(&s);
		}
		if (r || (r = walk_value(&s, &val)) || (r = key_is(&key, "packages", &is, err)))
			return r;
		if (!is)
			continue;
		if (ret->p)
			return eq_error_set(err, EQ_ERR_PARSE, "packages: duplicate key");
		*ret = val;
	}
	return EQ_OK;
}

/* ---- schema helpers ----------------------------------------------------- */

static bool type_ok(const cJSON *item, enum eqm_type t)
{
	switch (t) {
	case EQM_STRING: return cJSON_IsString(item) && item->valuestring;
	case EQM_NUMBER: return cJSON_IsNumber(item);
	case EQM_OBJECT: return cJSON_IsObject(item);
	case EQM_ARRAY: return cJSON_IsArray(item);
	case EQM_BOOL: return cJSON_IsBool(item);
	}
	return false;
}

static const char *type_name(enum eqm_type t)
{
	switch (t) {
	case EQM_STRING: return "a string";
	case EQM_NUMBER: return "a number";
	case EQM_OBJECT: return "an object";
	case EQM_ARRAY: return "an array";
	case EQM_BOOL: return "true or false";
	}
	return "?";
}

eq_err eqm_fields(const cJSON *obj, const char *where, const struct eqm_field *fields, size_t n,
		  const cJSON **ret_items, struct eq_error *err)
{
	for (size_t i = 0; i < n; i++)
		ret_items[i] = NULL;
	for (const cJSON *c = obj->child; c; c = c->next) {
		char q[68];
		size_t i;
		eq_quote(q, sizeof(q), c->string ? c->string : "");
		for (i = 0; i < n; i++)
			if (c->string && strcmp(c->string, fields[i].key) == 0)
				break;
		if (i == n) {
			if (where && *where)
				return eq_error_set(err, EQ_ERR_PARSE, "%s: unknown key '%s'", where, q);
			return eq_error_set(err, EQ_ERR_PARSE, "unknown key '%s' at the top level", q);
		}
		char path[160];
		eqm_path(path, sizeof(path), where, fields[i].key);
		if (ret_items[i])
			return eq_error_set(err, EQ_ERR_PARSE, "%s: duplicate key", path);
		if (!type_ok(c, fields[i].type))
			return eq_error_set(err, EQ_ERR_PARSE, "%s: expected %s", path, type_name(fields[i].type));
		ret_items[i] = c;
	}
	for (size_t i = 0; i < n; i++) {
		if (!ret_items[i]) {
			char path[160];
			eqm_path(path, sizeof(path), where, fields[i].key);
			return eq_error_set(err, EQ_ERR_PARSE, "%s: missing", path);
		}
	}
	return EQ_OK;
}

eq_err eqm_uint(const cJSON *item, const char *where, const char *key, uint64_t min, uint64_t max, uint64_t *ret,
		struct eq_error *err)
{
	double v = item->valuedouble;
	char path[160];
	eqm_path(path, sizeof(path), where, key);
	/* written so that NaN fails too */
	if (!(v >= (double)min && v <= (double)max))
		return eq_error_set(err, EQ_ERR_PARSE, "%s: must be an integer from %" PRIu64 " to %" PRIu64, path, min,
				    max);
	uint64_t u = (uint64_t)v;
	if ((double)u != v)
		return eq_error_set(err, EQ_ERR_PARSE, "%s: must be an integer", path);
	*ret = u;
	return EQ_OK;
}

/* ---- manifest parser ---------------------------------------------------- */

/* Hash fields must fit exactly; a longer string must not be cut to a valid one. */
static eq_err copy_hash(char *dst, const cJSON *item, const char *where, const char *key, struct eq_error *err)
{
	const char *s = item->valuestring;
	if (strnlen(s, EQ_MANIFEST_HASH_LEN + 1) != EQ_MANIFEST_HASH_LEN) {
		char path[160];
		eqm_path(path, sizeof(path), where, key);
		return eq_error_set(err, EQ_ERR_PARSE, "%s: expected 64 lower-case hex digits", path);
	}
	memcpy(dst, s, EQ_MANIFEST_HASH_LEN + 1);
	return EQ_OK;
}

static eq_err copy_path(char *dst, size_t cap, const cJSON *item, const char *where, const char *key,
			struct eq_error *err)
{
	const char *s = item->valuestring;
	if (strnlen(s, cap + 1) > cap) {
		char path[160];
		eqm_path(path, sizeof(path), where, key);
		if (eqm_path_unsafe(s))
			return eq_error_set(err, EQ_ERR_UNSAFE, "%s: path leaves the repository", path);
		return eq_error_set(err, EQ_ERR_PARSE, "%s: longer than %zu characters", path, cap);
	}
	memcpy(dst, s, strlen(s) + 1);
	return EQ_OK;
}

eq_err eqm_time(const cJSON *item, const char *key, int64_t *ret, struct eq_error *err)
{
	if (!eq_manifest_parse_time(item->valuestring, ret))
		return eq_error_set(err, EQ_ERR_PARSE, "%s: expected a UTC time like 2026-12-03T08:00:00Z", key);
	return EQ_OK;
}

static eq_err parse_delta(const cJSON *obj, const char *where, struct eq_manifest_delta *d, struct eq_error *err)
{
	static const struct eqm_field fields[] = {
		{"from", EQM_STRING}, {"path", EQM_STRING}, {"sha256", EQM_STRING}, {"size", EQM_NUMBER}};
	const cJSON *it[4];
	eq_err r;
	if (!cJSON_IsObject(obj))
		return eq_error_set(err, EQ_ERR_PARSE, "%s: expected an object", where);
	if ((r = eqm_fields(obj, where, fields, 4, it, err)) || (r = copy_hash(d->from, it[0], where, "from", err)) ||
	    (r = copy_path(d->path, EQ_MANIFEST_DELTA_PATH_LEN, it[1], where, "path", err)) ||
	    (r = copy_hash(d->sha256, it[2], where, "sha256", err)) ||
	    (r = eqm_uint(it[3], where, "size", 0, EQ_MANIFEST_NUMBER_MAX, &d->size, err)))
		return r;
	return EQ_OK;
}

static eq_err parse_package(struct eq_manifest *m, const cJSON *obj, size_t index, struct eq_error *err)
{
	static const struct eqm_field fields[] = {
		{"name", EQM_STRING},    {"version", EQM_STRING}, {"arch", EQM_STRING},   {"taskhash", EQM_STRING},
		{"unihash", EQM_STRING}, {"payload", EQM_OBJECT}, {"object", EQM_OBJECT}, {"deltas", EQM_ARRAY}};
	static const struct eqm_field payload_fields[] = {{"sha256", EQM_STRING}, {"size", EQM_NUMBER}};
	static const struct eqm_field object_fields[] = {
		{"path", EQM_STRING}, {"sha256", EQM_STRING}, {"size", EQM_NUMBER}};
	char where[48], sub[64];
	const cJSON *it[8], *pit[2], *oit[3];
	struct eq_manifest_package p = {0};
	struct eq_manifest_delta deltas[EQ_MANIFEST_MAX_DELTAS];
	eq_err r;

	snprintf(where, sizeof(where), "packages[%zu]", index);
	if (!cJSON_IsObject(obj))
		return eq_error_set(err, EQ_ERR_PARSE, "%s: expected an object", where);
	if ((r = eqm_fields(obj, where, fields, 8, it, err)))
		return r;
	p.name = it[0]->valuestring;
	p.version = it[1]->valuestring;
	p.arch = it[2]->valuestring;
	if ((r = copy_hash(p.taskhash, it[3], where, "taskhash", err)) ||
	    (r = copy_hash(p.unihash, it[4], where, "unihash", err)))
		return r;
	snprintf(sub, sizeof(sub), "%s.payload", where);
	if ((r = eqm_fields(it[5], sub, payload_fields, 2, pit, err)) ||
	    (r = copy_hash(p.payload.sha256, pit[0], sub, "sha256", err)) ||
	    (r = eqm_uint(pit[1], sub, "size", 0, EQ_MANIFEST_NUMBER_MAX, &p.payload.size, err)))
		return r;
	snprintf(sub, sizeof(sub), "%s.object", where);
	if ((r = eqm_fields(it[6], sub, object_fields, 3, oit, err)) ||
	    (r = copy_path(p.object.path, EQ_MANIFEST_OBJECT_PATH_LEN, oit[0], sub, "path", err)) ||
	    (r = copy_hash(p.object.sha256, oit[1], sub, "sha256", err)) ||
	    (r = eqm_uint(oit[2], sub, "size", 0, EQ_MANIFEST_NUMBER_MAX, &p.object.size, err)))
		return r;
	size_t nd = 0;
	for (const cJSON *d = it[7]->child; d; d = d->next) {
		if (nd == EQ_MANIFEST_MAX_DELTAS)
			return eq_error_set(err, EQ_ERR_LIMIT, "%s.deltas: more than %u deltas", where,
					    EQ_MANIFEST_MAX_DELTAS);
		snprintf(sub, sizeof(sub), "%s.deltas[%zu]", where, nd);
		memset(&deltas[nd], 0, sizeof(deltas[nd]));
		if ((r = parse_delta(d, sub, &deltas[nd], err)))
			return r;
		nd++;
	}
	p.deltas = deltas;
	p.n_deltas = nd;

	/* The signed order is part of the format: sorted, so a device can
	 * binary-search, and unique, so a name means one package. */
	if (m->n_pkgs > 0) {
		const char *prev = m->pkgs[m->n_pkgs - 1]->name;
		int c = strcmp(prev, p.name);
		if (c >= 0) {
			char q[68], qp[68];
			eq_quote(q, sizeof(q), p.name);
			eq_quote(qp, sizeof(qp), prev);
			if (c == 0)
				return eq_error_set(err, EQ_ERR_PARSE, "%s.name: package '%s' is listed twice", where,
						    q);
			return eq_error_set(err, EQ_ERR_PARSE,
					    "%s.name: '%s' is not after '%s' (packages must be sorted by name)", where,
					    q, qp);
		}
	}
	return eqm_add_package(m, &p, where, EQ_ERR_PARSE, err);
}

eq_err eqm_check_format_max(const cJSON *root, bool allow_image, int *ret_format, struct eq_error *err)
{
	/* Checked before the other keys, so that a newer manifest says
	 * "unsupported" rather than "unknown key". */
	const cJSON *f = NULL;
	for (const cJSON *c = root->child; c && !f; c = c->next)
		if (c->string && strcmp(c->string, "format") == 0)
			f = c;
	if (!f)
		return eq_error_set(err, EQ_ERR_PARSE, "format: missing");
	if (!cJSON_IsNumber(f))
		return eq_error_set(err, EQ_ERR_PARSE, "format: expected a number");
	int fmt = 0;
	if (f->valuedouble == (double)EQ_MANIFEST_FORMAT)
		fmt = EQ_MANIFEST_FORMAT;
	else if (allow_image && f->valuedouble == (double)EQ_MANIFEST_FORMAT_IMAGE)
		fmt = EQ_MANIFEST_FORMAT_IMAGE;
	if (!fmt) {
		if (allow_image)
			return eq_error_set(err, EQ_ERR_UNSUPPORTED,
					    "format version %g is not supported (this build reads versions %d and %d)",
					    f->valuedouble, EQ_MANIFEST_FORMAT, EQ_MANIFEST_FORMAT_IMAGE);
		return eq_error_set(err, EQ_ERR_UNSUPPORTED,
				    "format version %g is not supported (this build reads version %d)", f->valuedouble,
				    EQ_MANIFEST_FORMAT);
	}
	if (ret_format)
		*ret_format = fmt;
	return EQ_OK;
}

eq_err eqm_check_format(const cJSON *root, struct eq_error *err)
{
	return eqm_check_format_max(root, false, NULL, err);
}

static eq_err build_header(const cJSON *root, struct eq_manifest *m, struct eq_error *err)
{
	static const struct eqm_field fields[] = {
		{"format", EQM_NUMBER}, {"board", EQM_STRING},  {"channel", EQM_STRING}, {"release", EQM_STRING},
		{"number", EQM_NUMBER}, {"issued", EQM_STRING}, {"expires", EQM_STRING}, {"packages", EQM_ARRAY}};
	static const struct eqm_field fields2[] = {
		{"format", EQM_NUMBER},  {"board", EQM_STRING},   {"channel", EQM_STRING},
		{"release", EQM_STRING}, {"number", EQM_NUMBER},  {"issued", EQM_STRING},
		{"expires", EQM_STRING}, {"packages", EQM_ARRAY}, {"image", EQM_OBJECT}};
	const cJSON *it[9];
	struct eq_manifest_header h = {0};
	int fmt = 0;
	eq_err r;
	if ((r = eqm_check_format_max(root, true, &fmt, err)))
		return r;
	/* Format 2 is format 1 plus "image", required there and unknown in 1. */
	if (fmt == EQ_MANIFEST_FORMAT_IMAGE)
		r = eqm_fields(root, "", fields2, 9, it, err);
	else
		r = eqm_fields(root, "", fields, 8, it, err);
	if (r || (fmt == EQ_MANIFEST_FORMAT_IMAGE && (r = eqm_image_parse(m, it[8], err))))
		return r;
	h.board = it[1]->valuestring;
	h.channel = it[2]->valuestring;
	h.release = it[3]->valuestring;
	if ((r = eqm_uint(it[4], "", "number", 1, EQ_MANIFEST_NUMBER_MAX, &h.number, err)) ||
	    (r = eqm_time(it[5], "issued", &h.issued, err)) || (r = eqm_time(it[6], "expires", &h.expires, err)) ||
	    (r = eqm_set_header(m, &h, EQ_ERR_PARSE, err)))
		return r;
	return EQ_OK;
}

/* The header: a tree of the document with the packages array cut to "[]". */
static eq_err parse_header(const uint8_t *data, size_t len, const struct span *pk, struct eq_manifest *m,
			   struct eq_error *err)
{
	size_t before = (size_t)(pk->p - data), after = (size_t)(data + len - pk->end);
	uint8_t *doc = eq_malloc(before + 2 + after);
	if (!doc)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	memcpy(doc, data, before);
	memcpy(doc + before, "[]", 2);
	memcpy(doc + before + 2, pk->end, after);
	cJSON *root = NULL;
	eq_err r = tree(doc, before + 2 + after, doc, &root, err);
	if (!r)
		r = build_header(root, m, err);
	cJSON_Delete(root);
	eq_free(doc);
	return r;
}

static eq_err parse_packages(const uint8_t *data, size_t len, const struct span *pk, struct eq_manifest *m,
			     struct eq_error *err)
{
	struct scan s = {.start = data, .p = pk->p, .end = data + len, .err = err};
	walk_enter(&s);
	size_t i = 0;
	for (bool first = true; walk_more(&s, ']', first); first = false, i++) {
		struct span el;
		cJSON *obj = NULL;
		if (i == EQ_MANIFEST_MAX_PACKAGES)
			return eq_error_set(err, EQ_ERR_LIMIT, "packages: more than %u packages",
					    EQ_MANIFEST_MAX_PACKAGES);
		eq_err r = walk_value(&s, &el);
		if (!r)
			r = tree(el.p, (size_t)(el.end - el.p), data, &obj, err);
		if (!r)
			r = parse_package(m, obj, i, err);
		cJSON_Delete(obj);
		if (r)
			return r;
	}
	return EQ_OK;
}

eq_err eq_manifest_parse_unverified(const uint8_t *data, size_t len, struct eq_manifest **ret_m, struct eq_error *err)
{
	assert(ret_m);
	if (len > EQ_MANIFEST_MAX_BYTES)
		return eq_error_set(err, EQ_ERR_LIMIT, "manifest is %zu bytes, more than the limit of %u", len,
				    EQ_MANIFEST_MAX_BYTES);
	struct eq_manifest *m = NULL;
	struct span pk;
	eq_err r = strict_scan(data, len, err);
	if (!r)
		r = find_packages(data, len, &pk, err);
	if (r)
		return r;
	if ((r = eq_manifest_new(&m, err)))
		return r;
	if (pk.p && *pk.p == '[') {
		if (!(r = parse_header(data, len, &pk, m, err)))
			r = parse_packages(data, len, &pk, m, err);
	} else {
		/* No packages array: the whole tree is small, and the schema
		 * check names what is wrong. */
		cJSON *root = NULL;
		if (!(r = tree(data, len, data, &root, err)))
			r = build_header(root, m, err);
		cJSON_Delete(root);
	}
	if (!r)
		r = eqm_image_check_packages(m, EQ_ERR_PARSE, err);
	if (r) {
		eq_manifest_free(m);
		return r;
	}
	*ret_m = m;
	return EQ_OK;
}

/* ---- writer ------------------------------------------------------------- */

/*
 * Hand-written rather than cJSON_Print: the key order and layout are part
 * of the format, numbers must print as integers, and the model's rules
 * already guarantee that no string needs escaping.
 */
static eq_err write_package(struct eq_buf *b, const struct eq_manifest_package *p, bool last, struct eq_error *err)
{
	eq_err r =
		eq_buf_printf(b, err,
			      "    {\n"
			      "      \"name\": \"%s\",\n"
			      "      \"version\": \"%s\",\n"
			      "      \"arch\": \"%s\",\n"
			      "      \"taskhash\": \"%s\",\n"
			      "      \"unihash\": \"%s\",\n"
			      "      \"payload\": {\n"
			      "        \"sha256\": \"%s\",\n"
			      "        \"size\": %" PRIu64 "\n"
			      "      },\n"
			      "      \"object\": {\n"
			      "        \"path\": \"%s\",\n"
			      "        \"sha256\": \"%s\",\n"
			      "        \"size\": %" PRIu64 "\n"
			      "      },\n"
			      "      \"deltas\": [%s",
			      p->name, p->version, p->arch, p->taskhash, p->unihash, p->payload.sha256, p->payload.size,
			      p->object.path, p->object.sha256, p->object.size, p->n_deltas ? "\n" : "");
	for (size_t i = 0; !r && i < p->n_deltas; i++) {
		const struct eq_manifest_delta *d = &p->deltas[i];
		r = eq_buf_printf(b, err,
				  "        {\n"
				  "          \"from\": \"%s\",\n"
				  "          \"path\": \"%s\",\n"
				  "          \"sha256\": \"%s\",\n"
				  "          \"size\": %" PRIu64 "\n"
				  "        }%s\n",
				  d->from, d->path, d->sha256, d->size, i + 1 < p->n_deltas ? "," : "");
	}
	if (!r)
		r = eq_buf_printf(b, err, "%s]\n    }%s\n", p->n_deltas ? "      " : "", last ? "" : ",");
	return r;
}

eq_err eq_manifest_to_json(const struct eq_manifest *m, uint8_t **ret_data, size_t *ret_len, struct eq_error *err)
{
	assert(m && ret_data);
	if (!m->has_header)
		return eq_error_set(err, EQ_ERR_STATE, "manifest has no header yet");
	eq_err ri = eqm_image_check_packages(m, EQ_ERR_STATE, err);
	if (ri)
		return ri;
	char issued[EQ_MANIFEST_TIME_LEN + 1], expires[EQ_MANIFEST_TIME_LEN + 1];
	eq_manifest_format_time(m->issued, issued);
	eq_manifest_format_time(m->expires, expires);
	struct eq_buf b;
	eq_buf_init(&b, EQ_MANIFEST_MAX_BYTES);
	eq_err r = eq_buf_printf(&b, err,
				 "{\n"
				 "  \"format\": %d,\n"
				 "  \"board\": \"%s\",\n"
				 "  \"channel\": \"%s\",\n"
				 "  \"release\": \"%s\",\n"
				 "  \"number\": %" PRIu64 ",\n"
				 "  \"issued\": \"%s\",\n"
				 "  \"expires\": \"%s\",\n"
				 "  \"packages\": [%s",
				 m->image ? EQ_MANIFEST_FORMAT_IMAGE : EQ_MANIFEST_FORMAT, m->board, m->channel,
				 m->release, m->number, issued, expires, m->n_pkgs ? "\n" : "");
	for (size_t i = 0; !r && i < m->n_pkgs; i++)
		r = write_package(&b, m->pkgs[i], i + 1 == m->n_pkgs, err);
	if (!r)
		r = eq_buf_printf(&b, err, "%s]%s\n", m->n_pkgs ? "  " : "", m->image ? "," : "");
	if (!r && m->image)
		r = eqm_image_write(&b, m, err);
	if (!r)
		r = eq_buf_printf(&b, err, "}\n");
	if (r) {
		eq_buf_done(&b);
		if (r == EQ_ERR_LIMIT)
			return eq_error_set(err, r, "manifest would be larger than the limit of %u bytes",
					    EQ_MANIFEST_MAX_BYTES);
		return r;
	}
	*ret_data = eq_buf_steal(&b, ret_len);
	return EQ_OK;
}
