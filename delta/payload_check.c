/*
 * The path rules of a payload, in one place: the device's extractor and the
 * publisher (eqota-gen publish) both call them, so a package the publisher
 * accepts is one every device accepts, and the two cannot drift apart.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "payload_tar.h"

struct eq_payload_checker {
	struct eq_payload_limits lim;
	char **owned; /* copies of every entry path, for the sets below */
	size_t n_owned, cap_owned;
	struct tar_strset all;      /* every path seen */
	struct tar_strset nondir;   /* valid hard link targets */
	struct tar_strset symlinks; /* symlinks (and hard links of them) */
};

eq_err eq_payload_checker_new(const struct eq_payload_limits *limits, struct eq_payload_checker **ret,
			      struct eq_error *err)
{
	struct eq_payload_checker *c = eq_calloc(1, sizeof(*c));
	if (!c)
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory for the path checker");
	eq_payload_limits_resolve(limits, &c->lim);
	tar_strset_init(&c->all);
	tar_strset_init(&c->nondir);
	tar_strset_init(&c->symlinks);
	*ret = c;
	return EQ_OK;
}

void eq_payload_checker_free(struct eq_payload_checker *c)
{
	if (!c)
		return;
	tar_strset_done(&c->all);
	tar_strset_done(&c->nondir);
	tar_strset_done(&c->symlinks);
	for (size_t i = 0; i < c->n_owned; i++)
		eq_free(c->owned[i]);
	eq_free(c->owned);
	eq_free(c);
}

/* A component longer than NAME_MAX fails on every Linux file system; it
 * is refused here so the publisher sees it, not each device. */
static const char *long_component(const char *path)
{
	for (const char *p = path;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n > EQ_PAYLOAD_NAME_MAX)
			return p;
		if (!slash)
			return NULL;
		p = slash + 1;
	}
}

/* The reserved folder, or below it. */
static bool under_reserved(const char *path)
{
	size_t n = strlen(EQ_PAYLOAD_RESERVED_DIR);
	return !strncmp(path, EQ_PAYLOAD_RESERVED_DIR, n) && (path[n] == '\0' || path[n] == '/');
}

/* "usr", "usr/lib", "usr/lib/eqota": folders on the way to the reserved
 * one, which a package may share but not replace. */
static bool above_reserved(const char *path)
{
	size_t n = strlen(path);
	return n < strlen(EQ_PAYLOAD_RESERVED_DIR) && !strncmp(path, EQ_PAYLOAD_RESERVED_DIR, n) &&
	       EQ_PAYLOAD_RESERVED_DIR[n] == '/';
}

/* Every parent of @path must be neither a symlink nor another
 * non-directory of this payload. */
static eq_err check_prefixes(struct eq_payload_checker *c, const char *path, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	EQ_AUTOFREE char *p = eq_strdup(path);
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	for (char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (tar_strset_has(&c->symlinks, p))
			return eq_error_set(err, EQ_ERR_UNSAFE, "path goes through symlink '%s' of this payload",
					    eq_quote(q, sizeof(q), p));
		if (tar_strset_has(&c->nondir, p))
			return eq_error_set(err, EQ_ERR_UNSAFE,
					    "path goes through '%s', a non-directory of this payload",
					    eq_quote(q, sizeof(q), p));
		*s = '/';
	}
	return EQ_OK;
}

static eq_err check_path(struct eq_payload_checker *c, const char *path, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	const char *why = tar_path_problem(path);
	if (why)
		return eq_error_set(err, EQ_ERR_UNSAFE, "%s", why);
	if (strlen(path) > c->lim.max_path)
		return eq_error_set(err, EQ_ERR_LIMIT, "path is longer than %zu bytes", c->lim.max_path);
	const char *lc = long_component(path);
	if (lc) {
		size_t n = strcspn(lc, "/");
		return eq_error_set(err, EQ_ERR_LIMIT, "path component '%.40s...' is %zu bytes long, the limit is %u",
				    lc, n, EQ_PAYLOAD_NAME_MAX);
	}
	if (under_reserved(path))
		return eq_error_set(err, EQ_ERR_UNSAFE, "'%s' is eqota's own folder, reserved for the agent",
				    eq_quote(q, sizeof(q), EQ_PAYLOAD_RESERVED_DIR));
	return EQ_OK;
}

eq_err eq_payload_checker_add(struct eq_payload_checker *c, const struct eq_payload_entry *e, struct eq_error *err)
{
	char q[TAR_QUOTE_MAX];
	eq_err r = check_path(c, e->path, err);
	if (r)
		return r;
	if (e->type != EQ_ENTRY_DIR && above_reserved(e->path))
		return eq_error_set(err, EQ_ERR_UNSAFE, "a non-directory on the way to eqota's reserved folder '%s'",
				    EQ_PAYLOAD_RESERVED_DIR);
	if (tar_strset_has(&c->all, e->path))
		return eq_error_set(err, EQ_ERR_PARSE, "duplicate entry");
	r = check_prefixes(c, e->path, err);
	if (r)
		return r;
	if ((e->type == EQ_ENTRY_SYMLINK || e->type == EQ_ENTRY_HARDLINK) && (!e->link || !e->link[0]))
		return eq_error_set(err, EQ_ERR_PARSE, "empty link target");
	if (e->type == EQ_ENTRY_SYMLINK && strlen(e->link) > c->lim.max_path)
		return eq_error_set(err, EQ_ERR_LIMIT, "link target is longer than %zu bytes", c->lim.max_path);
	if (e->type == EQ_ENTRY_HARDLINK) {
		const char *why = tar_path_problem(e->link);
		if (why)
			return eq_error_set(err, EQ_ERR_UNSAFE, "hard link target '%s': %s",
					    eq_quote(q, sizeof(q), e->link), why);
		if (!tar_strset_has(&c->nondir, e->link))
			return eq_error_set(err, EQ_ERR_UNSAFE,
					    "hard link to '%s', which is not an earlier file of the payload",
					    eq_quote(q, sizeof(q), e->link));
		r = check_prefixes(c, e->link, err);
		if (r)
			return r;
	}
	/* Remember it. */
	if (c->n_owned == c->cap_owned) {
		size_t cap = c->cap_owned ? c->cap_owned * 2 : 256;
		char **n = eq_realloc(c->owned, cap * sizeof(*n));
		if (!n)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		c->owned = n;
		c->cap_owned = cap;
	}
	char *p = eq_strdup(e->path);
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	c->owned[c->n_owned++] = p;
	bool added;
	r = tar_strset_add(&c->all, p, &added, err);
	if (!r && e->type != EQ_ENTRY_DIR)
		r = tar_strset_add(&c->nondir, p, &added, err);
	bool is_link =
		e->type == EQ_ENTRY_SYMLINK || (e->type == EQ_ENTRY_HARDLINK && tar_strset_has(&c->symlinks, e->link));
	if (!r && is_link)
		r = tar_strset_add(&c->symlinks, p, &added, err);
	return r;
}

/* ---- a whole payload ---------------------------------------------------- */

void eq_payload_findings_done(struct eq_payload_findings *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_special; i++)
		eq_free(f->special[i]);
	eq_free(f->special);
	memset(f, 0, sizeof(*f));
}

static const char *special_kind(const struct eq_payload_entry *e)
{
	if (e->type == EQ_ENTRY_CHR)
		return "character device";
	if (e->type == EQ_ENTRY_BLK)
		return "block device";
	if (e->type != EQ_ENTRY_FILE)
		return NULL;
	if ((e->mode & 06000) == 06000)
		return "setuid and setgid";
	if (e->mode & 04000)
		return "setuid";
	if (e->mode & 02000)
		return "setgid";
	return NULL;
}

static eq_err note_special(struct eq_payload_findings *f, const struct eq_payload_entry *e, struct eq_error *err)
{
	const char *kind = special_kind(e);
	if (!kind)
		return EQ_OK;
	char **n = eq_realloc(f->special, (f->n_special + 1) * sizeof(*n));
	if (!n)
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory");
	f->special = n;
	f->special[f->n_special] = eq_asprintf("%s (%s)", e->path, kind);
	if (!f->special[f->n_special])
		return eq_error_set(err, EQ_ERR_NOMEM, "payload: out of memory");
	f->n_special++;
	return EQ_OK;
}

eq_err eq_payload_check(eq_read_fn src, void *src_ctx, const struct eq_payload_limits *limits,
			struct eq_payload_findings *ret, struct eq_error *err)
{
	struct eq_payload_findings f = {0};
	struct eq_payload_reader *rd = NULL;
	struct eq_payload_checker *c = NULL;
	eq_err r = eq_payload_reader_new(src, src_ctx, limits, &rd, err);
	if (!r)
		r = eq_payload_checker_new(limits, &c, err);
	while (!r) {
		const struct eq_payload_entry *e;
		r = eq_payload_reader_next(rd, &e, err);
		if (r || !e)
			break;
		r = eq_payload_checker_add(c, e, err);
		if (r) {
			char q[TAR_QUOTE_MAX];
			r = eq_error_prefix(err, r, "payload: entry '%s' at byte %" PRIu64,
					    eq_quote(q, sizeof(q), e->path), tar_reader_entry_offset(rd));
			break;
		}
		f.entries++;
		if (ret)
			r = note_special(&f, e, err);
	}
	eq_payload_checker_free(c);
	eq_payload_reader_free(rd);
	if (r || !ret) {
		eq_payload_findings_done(&f);
		return r;
	}
	*ret = f;
	return EQ_OK;
}
