/*
 * The manifest model: header, sorted package records, field rules shared by
 * the API and the parser, times, anti-rollback.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <eq/repo_layout.h>

#include "manifest_priv.h"

/* ---- field rules ------------------------------------------------------- */

enum charset {
	CS_NAME,    /* board, channel, arch */
	CS_RELEASE, /* release and package name */
	CS_VERSION, /* package version (Debian/opkg versions use ~ and :) */
};

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool in_charset(char c, enum charset cs)
{
	if (is_alnum(c) || c == '.' || c == '_' || c == '-')
		return true;
	switch (cs) {
	case CS_NAME: return false;
	case CS_RELEASE: return c == '+';
	case CS_VERSION: return c == '+' || c == '~' || c == ':';
	}
	return false;
}

/*
 * Returns NULL when @s is acceptable, else the reason. Board, channel and
 * package names become path components and file names on the device, so
 * they must start with an alphanumeric character ("." and ".." impossible).
 */
static const char *check_text(const char *s, size_t max, enum charset cs, bool alnum_first)
{
	if (!s || !*s)
		return "must not be empty";
	size_t n = strnlen(s, max + 1);
	if (n > max)
		return max == EQ_MANIFEST_PKG_MAX ? "longer than 128 characters" : "longer than 64 characters";
	if (alnum_first && !is_alnum(s[0]))
		return "must start with a letter or digit";
	for (size_t i = 0; i < n; i++) {
		if (!in_charset(s[i], cs)) {
			switch (cs) {
			case CS_NAME: return "may contain only A-Z a-z 0-9 . _ -";
			case CS_RELEASE: return "may contain only A-Z a-z 0-9 . _ + -";
			case CS_VERSION: return "may contain only A-Z a-z 0-9 . _ + ~ : -";
			}
		}
	}
	return NULL;
}

const char *eqm_check_name(const char *s)
{
	return check_text(s, EQ_MANIFEST_NAME_MAX, CS_NAME, true);
}

const char *eqm_check_package_name(const char *s)
{
	return check_text(s, EQ_MANIFEST_PKG_MAX, CS_RELEASE, true);
}

static eq_err field_err(struct eq_error *err, eq_err code, const char *where, const char *key, const char *why)
{
	char path[160];
	eqm_path(path, sizeof(path), where, key);
	return eq_error_set(err, code, "%s: %s", path, why);
}

static eq_err check_hash(const char *hex, const char *where, const char *key, eq_err bad, struct eq_error *err)
{
	if (!eq_is_sha256_hex(hex))
		return field_err(err, bad, where, key, "expected 64 lower-case hex digits");
	return EQ_OK;
}

static eq_err check_size(uint64_t v, const char *where, const char *key, eq_err bad, struct eq_error *err)
{
	if (v > EQ_MANIFEST_NUMBER_MAX)
		return field_err(err, bad, where, key, "larger than 2^53");
	return EQ_OK;
}

bool eqm_path_unsafe(const char *path)
{
	return path[0] == '/' || strstr(path, "..") || strstr(path, "//") || strchr(path, '\\');
}

/*
 * Paths are fully determined by hashes, so the rule is equality with the
 * expected text. Anything that could leave the repository folder is
 * reported as unsafe rather than merely malformed.
 */
static eq_err check_path(const char *path, size_t cap, const char *expected, const char *where, const char *key,
			 const char *pattern, eq_err bad, struct eq_error *err)
{
	size_t n = strnlen(path, cap + 1);
	if (n <= cap && strcmp(path, expected) == 0)
		return EQ_OK;
	char msg[128];
	if (eqm_path_unsafe(path)) {
		snprintf(msg, sizeof(msg), "path leaves the repository, must be '%s'", pattern);
		return field_err(err, EQ_ERR_UNSAFE, where, key, msg);
	}
	snprintf(msg, sizeof(msg), "must be '%s'", pattern);
	return field_err(err, bad, where, key, msg);
}

/* The fixed-size hash/path fields of a caller-filled record may lack a NUL. */
static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static eq_err check_package(const struct eq_manifest_package *p, const char *where, eq_err bad, struct eq_error *err)
{
	const char *why;
	eq_err r;
	if ((why = check_text(p->name, EQ_MANIFEST_PKG_MAX, CS_RELEASE, true)))
		return field_err(err, bad, where, "name", why);
	if ((why = check_text(p->version, EQ_MANIFEST_PKG_MAX, CS_VERSION, false)))
		return field_err(err, bad, where, "version", why);
	if ((why = check_text(p->arch, EQ_MANIFEST_NAME_MAX, CS_NAME, false)))
		return field_err(err, bad, where, "arch", why);
	if (!terminated(p->taskhash, sizeof(p->taskhash)) || !terminated(p->unihash, sizeof(p->unihash)) ||
	    !terminated(p->payload.sha256, sizeof(p->payload.sha256)) ||
	    !terminated(p->object.sha256, sizeof(p->object.sha256)) ||
	    !terminated(p->object.path, sizeof(p->object.path)))
		return eq_error_set(err, bad, "%s: a hash or path field is not NUL-terminated", where);
	if ((r = check_hash(p->taskhash, where, "taskhash", bad, err)) ||
	    (r = check_hash(p->unihash, where, "unihash", bad, err)) ||
	    (r = check_hash(p->payload.sha256, where, "payload.sha256", bad, err)) ||
	    (r = check_size(p->payload.size, where, "payload.size", bad, err)) ||
	    (r = check_hash(p->object.sha256, where, "object.sha256", bad, err)) ||
	    (r = check_size(p->object.size, where, "object.size", bad, err)))
		return r;
	EQ_AUTOFREE char *expected = NULL;
	if ((r = eq_layout_object(NULL, p->object.sha256, &expected, err)) ||
	    (r = check_path(p->object.path, EQ_MANIFEST_OBJECT_PATH_LEN, expected, where, "object.path",
			    "objects/<object.sha256>", bad, err)))
		return r;
	if (p->n_deltas > EQ_MANIFEST_MAX_DELTAS)
		return eq_error_set(err, EQ_ERR_LIMIT, "%s.deltas: %zu deltas, at most %u", where, p->n_deltas,
				    EQ_MANIFEST_MAX_DELTAS);
	if (p->n_deltas && !p->deltas)
		return eq_error_set(err, EQ_ERR_INVAL, "%s.deltas: NULL with a count", where);
	for (size_t i = 0; i < p->n_deltas; i++) {
		const struct eq_manifest_delta *d = &p->deltas[i];
		char dw[128];
		snprintf(dw, sizeof(dw), "%s.deltas[%zu]", where, i);
		if (!terminated(d->from, sizeof(d->from)) || !terminated(d->sha256, sizeof(d->sha256)) ||
		    !terminated(d->path, sizeof(d->path)))
			return eq_error_set(err, bad, "%s: a hash or path field is not NUL-terminated", dw);
		if ((r = check_hash(d->from, dw, "from", bad, err)) ||
		    (r = check_hash(d->sha256, dw, "sha256", bad, err)) ||
		    (r = check_size(d->size, dw, "size", bad, err)))
			return r;
		if (strcmp(d->from, p->payload.sha256) == 0)
			return field_err(err, bad, dw, "from", "equals the package's own payload sha256");
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->deltas[j].from, d->from) == 0)
				return field_err(err, bad, dw, "from", "a delta from this payload is already listed");
		EQ_AUTOFREE char *dexp = NULL;
		if ((r = eq_layout_delta(NULL, d->from, p->payload.sha256, &dexp, err)) ||
		    (r = check_path(d->path, EQ_MANIFEST_DELTA_PATH_LEN, dexp, dw, "path",
				    "deltas/<from>-<payload.sha256>", bad, err)))
			return r;
	}
	return EQ_OK;
}

/* ---- lifecycle ---------------------------------------------------------- */

eq_err eq_manifest_new(struct eq_manifest **ret_m, struct eq_error *err)
{
	assert(ret_m);
	struct eq_manifest *m = eq_calloc(1, sizeof(*m));
	if (!m)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	*ret_m = m;
	return EQ_OK;
}

void eq_manifest_free(struct eq_manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_pkgs; i++)
		eq_free(m->pkgs[i]);
	eq_free(m->pkgs);
	eqm_image_free(m->image);
	eq_free(m);
}

/* ---- header ------------------------------------------------------------- */

eq_err eqm_set_header(struct eq_manifest *m, const struct eq_manifest_header *h, eq_err bad, struct eq_error *err)
{
	const char *why;
	if ((why = check_text(h->board, EQ_MANIFEST_NAME_MAX, CS_NAME, true)))
		return field_err(err, bad, "", "board", why);
	if ((why = check_text(h->channel, EQ_MANIFEST_NAME_MAX, CS_NAME, true)))
		return field_err(err, bad, "", "channel", why);
	if ((why = check_text(h->release, EQ_MANIFEST_NAME_MAX, CS_RELEASE, false)))
		return field_err(err, bad, "", "release", why);
	if (h->number < 1 || h->number > EQ_MANIFEST_NUMBER_MAX)
		return field_err(err, bad, "", "number", "must be between 1 and 2^53");
	if (h->issued < 0 || h->issued > EQM_TIME_MAX)
		return field_err(err, bad, "", "issued", "must be between 1970 and 9999");
	if (h->expires < 0 || h->expires > EQM_TIME_MAX)
		return field_err(err, bad, "", "expires", "must be between 1970 and 9999");
	if (h->expires <= h->issued)
		return field_err(err, bad, "", "expires", "must be after issued");
	snprintf(m->board, sizeof(m->board), "%s", h->board);
	snprintf(m->channel, sizeof(m->channel), "%s", h->channel);
	snprintf(m->release, sizeof(m->release), "%s", h->release);
	m->number = h->number;
	m->issued = h->issued;
	m->expires = h->expires;
	m->has_header = true;
	return EQ_OK;
}

eq_err eq_manifest_set_header(struct eq_manifest *m, const struct eq_manifest_header *h, struct eq_error *err)
{
	assert(m && h);
	return eqm_set_header(m, h, EQ_ERR_INVAL, err);
}

eq_err eq_manifest_get_header(const struct eq_manifest *m, struct eq_manifest_header *ret_h, struct eq_error *err)
{
	assert(m && ret_h);
	if (!m->has_header)
		return eq_error_set(err, EQ_ERR_STATE, "manifest has no header yet");
	*ret_h = (struct eq_manifest_header){
		.board = m->board,
		.channel = m->channel,
		.release = m->release,
		.number = m->number,
		.issued = m->issued,
		.expires = m->expires,
	};
	return EQ_OK;
}

/* ---- packages ----------------------------------------------------------- */

/* Index of the first package whose name is >= @name. */
static size_t lower_bound(const struct eq_manifest *m, const char *name)
{
	size_t lo = 0, hi = m->n_pkgs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(m->pkgs[mid]->name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* One allocation: record, deltas, then the three strings. */
static struct eq_manifest_package *copy_package(const struct eq_manifest_package *p)
{
	size_t ln = strlen(p->name) + 1, lv = strlen(p->version) + 1, la = strlen(p->arch) + 1;
	size_t size = sizeof(*p) + p->n_deltas * sizeof(p->deltas[0]) + ln + lv + la;
	struct eq_manifest_package *c = eq_malloc(size);
	if (!c)
		return NULL;
	*c = *p;
	struct eq_manifest_delta *d = (struct eq_manifest_delta *)(c + 1);
	if (p->n_deltas)
		memcpy(d, p->deltas, p->n_deltas * sizeof(*d));
	char *s = (char *)(d + p->n_deltas);
	c->deltas = p->n_deltas ? d : NULL;
	c->name = memcpy(s, p->name, ln);
	c->version = memcpy(s + ln, p->version, lv);
	c->arch = memcpy(s + ln + lv, p->arch, la);
	return c;
}

eq_err eqm_add_package(struct eq_manifest *m, const struct eq_manifest_package *p, const char *where, eq_err bad,
		       struct eq_error *err)
{
	eq_err r = check_package(p, where, bad, err);
	if (r)
		return r;
	if (m->n_pkgs >= EQ_MANIFEST_MAX_PACKAGES)
		return eq_error_set(err, EQ_ERR_LIMIT, "more than %u packages", EQ_MANIFEST_MAX_PACKAGES);
	size_t at = lower_bound(m, p->name);
	if (at < m->n_pkgs && strcmp(m->pkgs[at]->name, p->name) == 0)
		return eq_error_set(err, EQ_ERR_STATE, "%s.name: package '%s' is listed twice", where, p->name);
	if (m->n_pkgs == m->cap_pkgs) {
		size_t cap = m->cap_pkgs ? m->cap_pkgs * 2 : 64;
		if (cap > EQ_MANIFEST_MAX_PACKAGES)
			cap = EQ_MANIFEST_MAX_PACKAGES;
		// NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
		struct eq_manifest_package **np = eq_realloc(m->pkgs, cap * sizeof(*np));
		if (!np)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		m->pkgs = np;
		m->cap_pkgs = cap;
	}
	struct eq_manifest_package *c = copy_package(p);
	if (!c)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	// NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
	memmove(&m->pkgs[at + 1], &m->pkgs[at], (m->n_pkgs - at) * sizeof(m->pkgs[0]));
	m->pkgs[at] = c;
	m->n_pkgs++;
	return EQ_OK;
}

eq_err eq_manifest_add_package(struct eq_manifest *m, const struct eq_manifest_package *p, struct eq_error *err)
{
	assert(m && p);
	char where[EQ_MANIFEST_PKG_MAX + 16];
	char q[68];
	eq_quote(q, sizeof(q), p->name ? p->name : "");
	snprintf(where, sizeof(where), "package '%s'", q);
	return eqm_add_package(m, p, where, EQ_ERR_INVAL, err);
}

size_t eq_manifest_package_count(const struct eq_manifest *m)
{
	return m->n_pkgs;
}

const struct eq_manifest_package *eq_manifest_package_at(const struct eq_manifest *m, size_t i)
{
	return i < m->n_pkgs ? m->pkgs[i] : NULL;
}

const struct eq_manifest_package *eq_manifest_find_package(const struct eq_manifest *m, const char *name)
{
	size_t at = lower_bound(m, name);
	if (at < m->n_pkgs && strcmp(m->pkgs[at]->name, name) == 0)
		return m->pkgs[at];
	return NULL;
}

eq_err eq_manifest_check_newer(const struct eq_manifest *m, uint64_t installed_number, struct eq_error *err)
{
	if (m->number <= installed_number)
		return eq_error_set(err, EQ_ERR_STATE,
				    "release number %" PRIu64 " is not newer than the installed %" PRIu64, m->number,
				    installed_number);
	return EQ_OK;
}

bool eq_manifest_release_number_arg(const char *arg, uint64_t *ret_number)
{
	/* Typed by a person, who may write "007" for release 7. */
	return eq_parse_u64_padded(arg, strlen(arg), UINT64_MAX, ret_number);
}

enum eq_release_match eq_manifest_release_match(const char *name, uint64_t number, const char *arg)
{
	if (!strcmp(name, arg))
		return EQ_RELEASE_BY_NAME;
	uint64_t n;
	if (eq_manifest_release_number_arg(arg, &n) && n == number)
		return EQ_RELEASE_BY_NUMBER;
	return EQ_RELEASE_NO_MATCH;
}

/* ---- time --------------------------------------------------------------- */

/*
 * Proleptic Gregorian calendar <-> days since 1970-01-01, by the usual
 * era-of-400-years arithmetic; our own code so that neither time_t width
 * nor the TZ environment can change what a manifest means.
 */
static int64_t days_from_civil(int64_t y, int64_t mo, int64_t d)
{
	y -= mo <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int64_t *mo, int64_t *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*mo = mp < 10 ? mp + 3 : mp - 9;
	*y = yoe + era * 400 + (*mo <= 2);
}

void eq_manifest_format_time(int64_t t, char out[EQ_MANIFEST_TIME_LEN + 1])
{
	if (t < 0 || t > EQM_TIME_MAX) {
		memcpy(out, "0000-00-00T00:00:00Z", EQ_MANIFEST_TIME_LEN + 1);
		return;
	}
	int64_t days = t / 86400, secs = t % 86400, y, mo, d;
	civil_from_days(days, &y, &mo, &d);
	/* The range check above bounds every field; the wider buffer only
	 * tells the compiler so (-Wformat-truncation at -O2). */
	char buf[64];
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)y, (int)mo, (int)d, (int)(secs / 3600),
		 (int)(secs / 60 % 60), (int)(secs % 60));
	memcpy(out, buf, EQ_MANIFEST_TIME_LEN);
	out[EQ_MANIFEST_TIME_LEN] = '\0';
}

static bool digits(const char *s, size_t n, int64_t *ret)
{
	int64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*ret = v;
	return true;
}

bool eq_manifest_parse_time(const char *s, int64_t *ret_t)
{
	int64_t y, mo, d, h, mi, se;
	if (strnlen(s, EQ_MANIFEST_TIME_LEN + 1) != EQ_MANIFEST_TIME_LEN || s[4] != '-' || s[7] != '-' ||
	    s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z')
		return false;
	if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) || !digits(s + 11, 2, &h) ||
	    !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &se))
		return false;
	static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) || h > 23 ||
	    mi > 59 || se > 59)
		return false;
	*ret_t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
	return true;
}
