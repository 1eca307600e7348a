/*
 * Build index: "PACKAGE TASKHASH" lines that give each package of a build
 * the taskhash its build system computed (format in eq/gen.h).
 */
#include <stdlib.h>
#include <string.h>

#include "eq/gen.h"
#include <eq/gen_index.h>

#include "gen_priv.h"

struct index_entry {
	char *name; /* points into the index's text buffer */
	char taskhash[EQ_SHA256_HEX_LEN + 1];
	size_t line;
};

struct eq_build_index {
	char *text;
	struct index_entry *entries;
	size_t n;
};

void eq_build_index_free(struct eq_build_index *idx)
{
	if (!idx)
		return;
	eq_free(idx->entries);
	eq_free(idx->text);
	eq_free(idx);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct index_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	/* Ties by line, so the duplicate report names the earlier line first. */
	return (x->line > y->line) - (x->line < y->line);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

char *eqg_next_line(char **p)
{
	char *line = *p;
	if (!*line)
		return NULL;
	char *nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		*p = line + strlen(line);
	}
	size_t n = strlen(line);
	if (n && line[n - 1] == '\r')
		line[n - 1] = '\0';
	return line;
}

char *eqg_next_field(char **p)
{
	char *s = *p;
	while (is_blank(*s))
		s++;
	if (!*s)
		return NULL;
	char *f = s;
	while (*s && !is_blank(*s))
		s++;
	if (*s)
		*s++ = '\0';
	*p = s;
	return f;
}

static bool valid_name(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > 255)
		return false;
	for (const unsigned char *p = (const unsigned char *)n; *p; p++) {
		if (*p <= 0x20 || *p >= 0x7f)
			return false;
	}
	return true;
}

static int cmp_by_taskhash(const void *a, const void *b)
{
	const struct index_entry *x = *(const struct index_entry *const *)a, *y = *(const struct index_entry *const *)b;
	int c = memcmp(x->taskhash, y->taskhash, EQ_SHA256_HEX_LEN);
	return c ? c : (x->line > y->line) - (x->line < y->line);
}

/*
 * Two packages under one taskhash get one unihash, so the publisher would
 * serve one package's bytes under the other's name. Yocto makes this the
 * natural mistake: every package of a recipe shares the recipe's task hashes.
 */
static eq_err check_taskhashes(struct eq_build_index *idx, const char *path, struct eq_error *err)
{
	if (idx->n < 2)
		return EQ_OK;
	// NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
	const struct index_entry **v = eq_calloc(idx->n, sizeof(*v));
	if (!v)
		return eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", path);
	for (size_t i = 0; i < idx->n; i++)
		v[i] = &idx->entries[i];
	// NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
	qsort(v, idx->n, sizeof(*v), cmp_by_taskhash);
	eq_err r = EQ_OK;
	for (size_t i = 1; i < idx->n && !r; i++) {
		if (memcmp(v[i - 1]->taskhash, v[i]->taskhash, EQ_SHA256_HEX_LEN))
			continue;
		r = eq_error_set(
			err, EQ_ERR_PARSE,
			"%s:%zu: package '%s' has the taskhash of package '%s' (line %zu): every package needs "
			"its own taskhash, or one gets the other's unihash and bytes. All packages of a Yocto "
			"recipe share its task hashes: hash the recipe's unihash with the package name "
			"(docs/yocto.md)",
			path, v[i]->line, v[i]->name, v[i - 1]->name, v[i - 1]->line);
	}
	eq_free(v);
	return r;
}

static eq_err parse(struct eq_build_index *idx, const char *path, size_t len, struct eq_error *err)
{
	const char *nul = memchr(idx->text, '\0', len);
	if (nul) {
		size_t at = 1;
		for (const char *q = idx->text; q < nul; q++)
			at += *q == '\n';
		return eq_error_set(err, EQ_ERR_PARSE, "%s:%zu: NUL byte", path, at);
	}
	size_t cap = 0;
	size_t lineno = 0;
	char *p = idx->text;
	for (char *line; (line = eqg_next_line(&p));) {
		lineno++;
		char *cur = line;
		char *name = eqg_next_field(&cur);
		if (!name || name[0] == '#')
			continue;
		char *hash = eqg_next_field(&cur);
		if (!hash)
			return eq_error_set(err, EQ_ERR_PARSE, "%s:%zu: package '%.80s': missing taskhash", path,
					    lineno, name);
		char *extra = eqg_next_field(&cur);
		if (extra)
			return eq_error_set(err, EQ_ERR_PARSE, "%s:%zu: unexpected text '%.40s' after the taskhash",
					    path, lineno, extra);
		if (!valid_name(name))
			return eq_error_set(err, EQ_ERR_PARSE,
					    "%s:%zu: package name '%.80s': expected 1..255 printable characters", path,
					    lineno, name);
		if (!eq_is_sha256_hex(hash))
			return eq_error_set(
				err, EQ_ERR_PARSE,
				"%s:%zu: package '%.80s': bad taskhash '%.80s': expected 64 lower-case hex digits",
				path, lineno, name, hash);
		if (idx->n == cap) {
			if (cap >= EQ_BUILD_INDEX_MAX_ENTRIES)
				return eq_error_set(err, EQ_ERR_LIMIT, "%s:%zu: more than %u packages", path, lineno,
						    EQ_BUILD_INDEX_MAX_ENTRIES);
			size_t ncap = cap ? cap * 2 : 64;
			if (ncap > EQ_BUILD_INDEX_MAX_ENTRIES)
				ncap = EQ_BUILD_INDEX_MAX_ENTRIES;
			struct index_entry *ne = eq_realloc(idx->entries, ncap * sizeof(*ne));
			if (!ne)
				return eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", path);
			idx->entries = ne;
			cap = ncap;
		}
		struct index_entry *e = &idx->entries[idx->n++];
		e->name = name;
		memcpy(e->taskhash, hash, sizeof(e->taskhash));
		e->line = lineno;
	}
	if (idx->n > 1)
		qsort(idx->entries, idx->n, sizeof(*idx->entries), cmp_entry);
	for (size_t i = 1; i < idx->n; i++) {
		if (strcmp(idx->entries[i - 1].name, idx->entries[i].name) == 0)
			return eq_error_set(err, EQ_ERR_PARSE, "%s:%zu: duplicate package '%s' (first at line %zu)",
					    path, idx->entries[i].line, idx->entries[i].name, idx->entries[i - 1].line);
	}
	return check_taskhashes(idx, path, err);
}

eq_err eq_build_index_load(const char *path, struct eq_build_index **ret, struct eq_error *err)
{
	struct eq_build_index *idx = eq_calloc(1, sizeof(*idx));
	if (!idx)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	uint8_t *data = NULL;
	size_t len = 0;
	eq_err r = eq_file_read_all(path, EQ_BUILD_INDEX_MAX_BYTES, &data, &len, err);
	if (r != EQ_OK) {
		eq_build_index_free(idx);
		return r;
	}
	idx->text = (char *)data;
	r = parse(idx, path, len, err);
	if (r != EQ_OK) {
		eq_build_index_free(idx);
		return r;
	}
	*ret = idx;
	return EQ_OK;
}

const char *eq_build_index_lookup(const struct eq_build_index *idx, const char *name)
{
	if (!idx || !name)
		return NULL;
	size_t lo = 0, hi = idx->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, idx->entries[mid].name);
		if (c == 0)
			return idx->entries[mid].taskhash;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}
