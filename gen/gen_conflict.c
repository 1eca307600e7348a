/*
 * The release-wide path table: which package ships which path, the owner
 * rules that settle a shared path, and the check that a release ships every
 * path once (rules in eq/gen.h, user's view in docs/eqota-gen.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eq/gen.h"
#include <eq/gen_conflict.h>
#include <eq/gen_package.h>

#include "gen_priv.h"

struct rule {
	char *path, *owner;
	char *where;      /* "--path-owner 'P=O'" or "FILE:LINE", for messages */
	char *taken_from; /* first package the path was removed from, or NULL */
};

/* A package seen by the table: its rules-trimmed paths and its file. */
struct tpkg {
	char *name;
	char *file;     /* base name of the package file, or NULL */
	char **removed; /* paths eq_path_table_apply() removed */
	size_t n_removed, cap_removed;
	bool component; /* an image component (eqg_path_table_mark_component()) */
};

struct eq_path_table {
	struct rule *rules; /* sorted by path after eq_path_table_new() */
	size_t n_rules, cap_rules;
	struct tpkg *pkgs;
	size_t n_pkgs, cap_pkgs;
	struct rec *recs;
	size_t n_recs, cap_recs;
};

static void rule_done(struct rule *r)
{
	eq_free(r->path);
	eq_free(r->owner);
	eq_free(r->where);
	eq_free(r->taken_from);
}

void eq_path_table_free(struct eq_path_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_rules; i++)
		rule_done(&t->rules[i]);
	eq_free(t->rules);
	for (size_t i = 0; i < t->n_pkgs; i++) {
		eq_free(t->pkgs[i].name);
		eq_free(t->pkgs[i].file);
		for (size_t k = 0; k < t->pkgs[i].n_removed; k++)
			eq_free(t->pkgs[i].removed[k]);
		eq_free(t->pkgs[i].removed);
	}
	eq_free(t->pkgs);
	for (size_t i = 0; i < t->n_recs; i++) {
		eq_free(t->recs[i].path);
		eq_free(t->recs[i].link);
	}
	eq_free(t->recs);
	eq_free(t);
}

size_t eq_path_table_rule_count(const struct eq_path_table *t)
{
	return t->n_rules;
}

/* Grows *@v (of @size-byte elements) to hold one more. */
static eq_err grow(void **v, size_t *cap, size_t n, size_t size, struct eq_error *err)
{
	if (n < *cap)
		return EQ_OK;
	size_t c = *cap ? *cap * 2 : 64;
	void *p = eq_realloc(*v, c * size);
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
	*v = p;
	*cap = c;
	return EQ_OK;
}

/* ---- rules ----------------------------------------------------------------- */

static bool valid_pkg_name(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > EQ_PKG_FIELD_MAX)
		return false;
	for (const unsigned char *p = (const unsigned char *)n; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return false;
	return true;
}

/* The path as a payload spells it: no leading "/" or "./", no trailing
 * "/". NULL (with @why) for a path no payload can hold. Caller frees. */
static char *norm_path(const char *in, const char **why)
{
	while (in[0] == '/' || (in[0] == '.' && in[1] == '/'))
		in += in[0] == '/' ? 1 : 2;
	size_t len = strlen(in);
	while (len && in[len - 1] == '/')
		len--;
	*why = "empty path";
	if (!len)
		return NULL;
	*why = "longer than 4096 bytes";
	if (len > 4096)
		return NULL;
	char *p = eq_strndup(in, len);
	*why = NULL; /* out of memory */
	if (!p)
		return NULL;
	for (const char *c = p;;) {
		const char *s = strchr(c, '/');
		size_t cl = s ? (size_t)(s - c) : strlen(c);
		if (!cl || (cl == 1 && c[0] == '.') || (cl == 2 && c[0] == '.' && c[1] == '.')) {
			*why = "empty, '.' or '..' component";
			eq_free(p);
			return NULL;
		}
		if (!s)
			break;
		c = s + 1;
	}
	return p;
}

static eq_err add_rule(struct eq_path_table *t, const char *path, const char *owner, const char *where,
		       struct eq_error *err)
{
	eq_err code = where[0] == '-' ? EQ_ERR_INVAL : EQ_ERR_PARSE;
	const char *why;
	EQ_AUTOFREE char *p = norm_path(path, &why);
	if (!p && !why)
		return eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
	if (!p)
		return eq_error_set(err, code, "%s: path '%s': %s", where, path, why);
	if (!valid_pkg_name(owner))
		return eq_error_set(err, code, "%s: '%s' is not a package name", where, owner);
	for (size_t i = 0; i < t->n_rules; i++) {
		if (strcmp(t->rules[i].path, p))
			continue;
		if (!strcmp(t->rules[i].owner, owner))
			return EQ_OK;
		return eq_error_set(err, code, "%s: '%s' already has the owner '%s' (%s); a path has one owner", where,
				    p, t->rules[i].owner, t->rules[i].where);
	}
	if (t->n_rules >= EQ_PATH_RULES_MAX)
		return eq_error_set(err, EQ_ERR_LIMIT, "%s: more than %u path owner rules", where, EQ_PATH_RULES_MAX);
	eq_err r = grow((void **)&t->rules, &t->cap_rules, t->n_rules, sizeof(*t->rules), err);
	if (r)
		return r;
	struct rule *ru = &t->rules[t->n_rules];
	*ru = (struct rule){.owner = eq_strdup(owner), .where = eq_strdup(where)};
	if (!ru->owner || !ru->where) {
		rule_done(ru);
		return eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
	}
	ru->path = eq_steal_ptr(p);
	t->n_rules++;
	return EQ_OK;
}

static eq_err load_rules(struct eq_path_table *t, const char *file, struct eq_error *err)
{
	uint8_t *data = NULL;
	size_t len = 0;
	eq_err r = eq_file_read_all(file, EQ_PATH_OWNERS_FILE_MAX, &data, &len, err);
	if (r)
		return eq_error_prefix(err, r, "path owners file");
	char *text = (char *)data;
	if (memchr(text, '\0', len)) {
		eq_free(data);
		return eq_error_set(err, EQ_ERR_PARSE, "%s: NUL byte", file);
	}
	size_t lineno = 0;
	char *p = text, *line;
	while (!r && (line = eqg_next_line(&p))) {
		lineno++;
		char *cur = line;
		char *path = eqg_next_field(&cur);
		if (!path || path[0] == '#')
			continue;
		char *owner = eqg_next_field(&cur);
		char *extra = eqg_next_field(&cur);
		char where[64 + 4096];
		snprintf(where, sizeof(where), "%s:%zu", file, lineno);
		if (!owner)
			r = eq_error_set(err, EQ_ERR_PARSE, "%s: expected \"PATH PACKAGE\", found only '%s'", where,
					 path);
		else if (extra)
			r = eq_error_set(err, EQ_ERR_PARSE, "%s: extra field '%s' after \"PATH PACKAGE\"", where,
					 extra);
		else
			r = add_rule(t, path, owner, where, err);
	}
	eq_free(data);
	return r;
}

static int cmp_rule(const void *a, const void *b)
{
	return strcmp(((const struct rule *)a)->path, ((const struct rule *)b)->path);
}

eq_err eq_path_table_new(const char *const *owners, size_t n_owners, const char *owners_file,
			 struct eq_path_table **ret, struct eq_error *err)
{
	struct eq_path_table *t = eq_calloc(1, sizeof(*t));
	if (!t)
		return eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
	eq_err r = EQ_OK;
	for (size_t i = 0; i < n_owners && !r; i++) {
		const char *eq = strrchr(owners[i], '=');
		char where[64 + 4096];
		snprintf(where, sizeof(where), "--path-owner '%s'", owners[i]);
		if (!eq || eq == owners[i] || !eq[1]) {
			r = eq_error_set(err, EQ_ERR_INVAL, "%s: expected PATH=PACKAGE", where);
			break;
		}
		EQ_AUTOFREE char *path = eq_strndup(owners[i], (size_t)(eq - owners[i]));
		if (!path)
			r = eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
		else
			r = add_rule(t, path, eq + 1, where, err);
	}
	if (!r && owners_file)
		r = load_rules(t, owners_file, err);
	if (r) {
		eq_path_table_free(t);
		return r;
	}
	if (t->n_rules)
		qsort(t->rules, t->n_rules, sizeof(*t->rules), cmp_rule);
	*ret = t;
	return EQ_OK;
}

/* ---- packages -------------------------------------------------------------- */

/* The package named @name, added when new (@file may be NULL). */
static eq_err get_pkg(struct eq_path_table *t, const char *name, const char *file, size_t *ret_idx,
		      struct eq_error *err)
{
	for (size_t i = t->n_pkgs; i-- > 0;) {
		if (strcmp(t->pkgs[i].name, name))
			continue;
		if (!t->pkgs[i].file && file) {
			const char *base = strrchr(file, '/');
			if (!(t->pkgs[i].file = eq_strdup(base ? base + 1 : file)))
				return eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
		}
		*ret_idx = i;
		return EQ_OK;
	}
	eq_err r = grow((void **)&t->pkgs, &t->cap_pkgs, t->n_pkgs, sizeof(*t->pkgs), err);
	if (r)
		return r;
	struct tpkg *p = &t->pkgs[t->n_pkgs];
	*p = (struct tpkg){.name = eq_strdup(name)};
	const char *base = file ? strrchr(file, '/') : NULL;
	if (file)
		p->file = eq_strdup(base ? base + 1 : file);
	if (!p->name || (file && !p->file)) {
		eq_free(p->name);
		eq_free(p->file);
		return eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
	}
	*ret_idx = t->n_pkgs++;
	return EQ_OK;
}

eq_err eqg_path_table_strip(const struct eq_path_table *t, const char *pkg_name, struct eq_payload_builder *b,
			    struct eqg_strv *removed, struct eq_error *err)
{
	eq_err r = EQ_OK;
	for (size_t i = 0; i < t->n_rules && !r; i++) {
		const struct rule *ru = &t->rules[i];
		if (!strcmp(ru->owner, pkg_name))
			continue;
		bool gone;
		r = eq_payload_builder_remove(b, ru->path, &gone, err);
		if (!r && gone)
			r = eqg_strv_add(removed, ru->path, err);
	}
	if (r)
		return eq_error_prefix(err, r, "package '%s': path owner rules", pkg_name);
	return EQ_OK;
}

eq_err eqg_path_table_note_removed(struct eq_path_table *t, const char *pkg_name, const struct eqg_strv *removed,
				   struct eq_error *err)
{
	eq_err r = EQ_OK;
	for (size_t k = 0; k < removed->n && !r; k++) {
		struct rule *ru = NULL;
		for (size_t i = 0; i < t->n_rules && !ru; i++)
			if (!strcmp(t->rules[i].path, removed->v[k]) && strcmp(t->rules[i].owner, pkg_name))
				ru = &t->rules[i];
		if (!ru) /* a cached list from other rules: the cache key has them */
			return eq_error_set(err, EQ_ERR_STATE, "package '%s': no owner rule for removed path '%s'",
					    pkg_name, removed->v[k]);
		size_t pi = 0;
		r = get_pkg(t, pkg_name, NULL, &pi, err);
		struct tpkg *p = &t->pkgs[pi];
		if (!r)
			r = grow((void **)&p->removed, &p->cap_removed, p->n_removed, sizeof(char *), err);
		if (r)
			break;
		if (!(p->removed[p->n_removed] = eq_strdup(ru->path)))
			r = eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
		else
			p->n_removed++;
		if (!r && !ru->taken_from && !(ru->taken_from = eq_strdup(pkg_name)))
			r = eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
	}
	if (r)
		return eq_error_prefix(err, r, "package '%s': path owner rules", pkg_name);
	return EQ_OK;
}

eq_err eq_path_table_apply(struct eq_path_table *t, const char *pkg_name, struct eq_payload_builder *b,
			   size_t *ret_removed, struct eq_error *err)
{
	struct eqg_strv removed = {0};
	eq_err r = eqg_path_table_strip(t, pkg_name, b, &removed, err);
	if (!r)
		r = eqg_path_table_note_removed(t, pkg_name, &removed, err);
	if (!r && ret_removed)
		*ret_removed = removed.n;
	eqg_strv_done(&removed);
	return r;
}

void eqg_path_table_rules_sha(const struct eq_path_table *t, uint8_t out[EQ_SHA256_LEN])
{
	struct eq_sha256 s;
	eq_sha256_init(&s);
	for (size_t i = 0; i < t->n_rules; i++) {
		eq_sha256_update(&s, t->rules[i].path, strlen(t->rules[i].path) + 1);
		eq_sha256_update(&s, t->rules[i].owner, strlen(t->rules[i].owner) + 1);
	}
	eq_sha256_final(&s, out);
}

eq_err eq_path_table_taskhash(const struct eq_path_table *t, const char *pkg_name, char taskhash[EQ_SHA256_HEX_LEN + 1],
			      struct eq_error *err)
{
	(void)err;
	const struct tpkg *p = NULL;
	for (size_t i = 0; i < t->n_pkgs && !p; i++)
		if (!strcmp(t->pkgs[i].name, pkg_name))
			p = &t->pkgs[i];
	if (!p || !p->n_removed)
		return EQ_OK;
	/* Rules are sorted by path and applied in that order, so the removed
	 * paths already are in byte order. */
	struct eq_sha256 s;
	eq_sha256_init(&s);
	static const char tag[] = "eqota-path-owner-v1";
	eq_sha256_update(&s, tag, sizeof(tag));
	eq_sha256_update(&s, taskhash, strlen(taskhash));
	for (size_t i = 0; i < p->n_removed; i++) {
		eq_sha256_update(&s, "", 1);
		eq_sha256_update(&s, p->removed[i], strlen(p->removed[i]));
	}
	uint8_t d[EQ_SHA256_LEN];
	eq_sha256_final(&s, d);
	eq_hex_encode(d, sizeof(d), taskhash);
	return EQ_OK;
}

/* ---- entries --------------------------------------------------------------- */

/* The record of entry @e (@sha256: a regular file's content); its strings
 * are new, .pkg is left 0. */
static eq_err rec_fill(struct rec *o, const struct eq_payload_entry *e, const uint8_t *sha256, struct eq_error *err)
{
	*o = (struct rec){
		.type = e->type,
		.mode = e->mode,
		.uid = e->uid,
		.gid = e->gid,
		.linked = e->type == EQ_ENTRY_HARDLINK,
	};
	if (e->type == EQ_ENTRY_FILE) {
		o->size = e->size;
		if (sha256)
			memcpy(o->sha, sha256, EQ_SHA256_LEN);
	}
	if (e->type == EQ_ENTRY_CHR || e->type == EQ_ENTRY_BLK) {
		o->devmajor = e->devmajor;
		o->devminor = e->devminor;
	}
	/* In payload order (sorted by name), as image entries are. */
	eq_payload_xattr_digest(e->xattrs, e->n_xattrs, o->xsha);
	o->path = eq_strdup(e->path);
	if (e->link && (e->type == EQ_ENTRY_SYMLINK || e->type == EQ_ENTRY_HARDLINK))
		o->link = eq_strdup(e->link);
	if (!o->path || (e->link && (e->type == EQ_ENTRY_SYMLINK || e->type == EQ_ENTRY_HARDLINK) && !o->link)) {
		eq_free(o->path);
		eq_free(o->link);
		return eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
	}
	return EQ_OK;
}

eq_err eq_path_table_add_entry(struct eq_path_table *t, const char *pkg_name, const char *pkg_file,
			       const struct eq_payload_entry *e, const uint8_t sha256[EQ_SHA256_LEN],
			       struct eq_error *err)
{
	if (t->n_recs >= EQ_PATH_TABLE_MAX_ENTRIES)
		return eq_error_set(err, EQ_ERR_LIMIT, "path table: more than %u entries in the release",
				    EQ_PATH_TABLE_MAX_ENTRIES);
	size_t pi = 0;
	eq_err r = get_pkg(t, pkg_name, pkg_file, &pi, err);
	if (!r)
		r = grow((void **)&t->recs, &t->cap_recs, t->n_recs, sizeof(*t->recs), err);
	if (r)
		return r;
	r = rec_fill(&t->recs[t->n_recs], e, sha256, err);
	if (r)
		return r;
	t->recs[t->n_recs].pkg = pi;
	t->n_recs++;
	return EQ_OK;
}

void eqg_path_recs_free(struct eqg_path_recs *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->n; i++) {
		eq_free(rs->v[i].path);
		eq_free(rs->v[i].link);
	}
	eq_free(rs->v);
	eq_free(rs);
}

static eq_err recs_new(struct eqg_path_recs **ret, struct eq_error *err)
{
	*ret = eq_calloc(1, sizeof(**ret));
	return *ret ? EQ_OK : eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
}

eq_err eqg_path_recs_read(const char *payload_path, struct eqg_path_recs **ret, struct eq_error *err)
{
	struct eqg_path_recs *rs;
	eq_err r = recs_new(&rs, err);
	if (r)
		return r;
	int fd = open(payload_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		eqg_path_recs_free(rs);
		return eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", payload_path);
	}
	struct eq_payload_reader *rd = NULL;
	r = eq_payload_reader_new(eq_fd_read, &fd, NULL, &rd, err);
	EQ_AUTOFREE uint8_t *buf = r ? NULL : eq_malloc(64 * 1024);
	if (!r && !buf)
		r = eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
	while (!r) {
		const struct eq_payload_entry *e;
		r = eq_payload_reader_next(rd, &e, err);
		if (r || !e)
			break;
		uint8_t sha[EQ_SHA256_LEN] = {0};
		if (e->type == EQ_ENTRY_FILE)
			r = eq_payload_reader_hash(rd, buf, 64 * 1024, sha, NULL, err);
		if (!r && rs->n >= EQ_PATH_TABLE_MAX_ENTRIES)
			r = eq_error_set(err, EQ_ERR_LIMIT, "more than %u entries", EQ_PATH_TABLE_MAX_ENTRIES);
		if (!r)
			r = grow((void **)&rs->v, &rs->cap, rs->n, sizeof(*rs->v), err);
		if (!r && !(r = rec_fill(&rs->v[rs->n], e, sha, err)))
			rs->n++;
	}
	eq_payload_reader_free(rd);
	close(fd);
	if (r) {
		eqg_path_recs_free(rs);
		return eq_error_prefix(err, r, "%s", payload_path);
	}
	*ret = rs;
	return EQ_OK;
}

eq_err eqg_path_table_add_recs(struct eq_path_table *t, const char *pkg_name, const char *pkg_file,
			       struct eqg_path_recs *rs, struct eq_error *err)
{
	if (rs->n > EQ_PATH_TABLE_MAX_ENTRIES - t->n_recs)
		return eq_error_set(err, EQ_ERR_LIMIT, "path table: more than %u entries in the release",
				    EQ_PATH_TABLE_MAX_ENTRIES);
	size_t pi = 0;
	eq_err r = get_pkg(t, pkg_name, pkg_file, &pi, err);
	if (r)
		return r;
	if (t->cap_recs - t->n_recs < rs->n) {
		size_t c = t->cap_recs ? t->cap_recs : 64;
		while (c - t->n_recs < rs->n)
			c *= 2;
		void *v = eq_realloc(t->recs, c * sizeof(*t->recs));
		if (!v)
			return eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
		t->recs = v;
		t->cap_recs = c;
	}
	for (size_t i = 0; i < rs->n; i++) {
		t->recs[t->n_recs] = rs->v[i];
		t->recs[t->n_recs++].pkg = pi;
	}
	rs->n = 0; /* the strings belong to the table now */
	return EQ_OK;
}

eq_err eqg_path_table_mark_component(struct eq_path_table *t, const char *pkg_name, struct eq_error *err)
{
	size_t pi = 0;
	eq_err r = get_pkg(t, pkg_name, NULL, &pi, err);
	if (!r)
		t->pkgs[pi].component = true;
	return r;
}

eq_err eq_path_table_add(struct eq_path_table *t, const char *pkg_name, const char *pkg_file, const char *payload_path,
			 struct eq_error *err)
{
	struct eqg_path_recs *rs = NULL;
	eq_err r = eqg_path_recs_read(payload_path, &rs, err);
	if (r)
		return eq_error_prefix(err, r, "payload of '%s'", pkg_name);
	r = eqg_path_table_add_recs(t, pkg_name, pkg_file, rs, err);
	eqg_path_recs_free(rs);
	return r;
}

/* The cache's form of a record list: the fields in a fixed order. */
eq_err eqg_path_recs_pack(const struct eqg_path_recs *rs, struct eq_buf *b, struct eq_error *err)
{
	eq_err r = eqg_put_u64(b, rs->n, err);
	for (size_t i = 0; i < rs->n && !r; i++) {
		const struct rec *o = &rs->v[i];
		uint64_t f[8] = {o->type, o->mode, o->uid, o->gid, o->devmajor, o->devminor, o->size, o->linked};
		for (size_t k = 0; k < 8 && !r; k++)
			r = eqg_put_u64(b, f[k], err);
		if (!r)
			r = eq_buf_append(b, o->sha, EQ_SHA256_LEN, err);
		if (!r)
			r = eq_buf_append(b, o->xsha, EQ_SHA256_LEN, err);
		if (!r)
			r = eqg_put_str(b, o->path, err);
		if (!r)
			r = eqg_put_str(b, o->link, err);
	}
	return r;
}

bool eqg_path_recs_unpack(struct eqg_unpack *u, struct eqg_path_recs **ret)
{
	struct eqg_path_recs *rs;
	uint64_t n = eqg_get_u64(u);
	if (u->bad || n > EQ_PATH_TABLE_MAX_ENTRIES || n > u->n)
		return false;
	if (recs_new(&rs, NULL)) {
		u->bad = u->nomem = true;
		return false;
	}
	if (n && !(rs->v = eq_calloc((size_t)n, sizeof(*rs->v)))) {
		eq_free(rs);
		u->bad = u->nomem = true;
		return false;
	}
	rs->cap = (size_t)n;
	for (; rs->n < n && !u->bad; rs->n++) {
		struct rec *o = &rs->v[rs->n];
		uint64_t f[8];
		for (size_t k = 0; k < 8; k++)
			f[k] = eqg_get_u64(u);
		if (f[0] > EQ_ENTRY_FIFO || f[1] > 07777 || f[2] > UINT32_MAX || f[3] > UINT32_MAX ||
		    f[4] > UINT32_MAX || f[5] > UINT32_MAX || f[7] > 1)
			u->bad = true;
		*o = (struct rec){.type = (enum eq_entry_type)f[0],
				  .mode = (uint32_t)f[1],
				  .uid = (uint32_t)f[2],
				  .gid = (uint32_t)f[3],
				  .devmajor = (uint32_t)f[4],
				  .devminor = (uint32_t)f[5],
				  .size = f[6],
				  .linked = f[7] != 0};
		eqg_get_bytes(u, o->sha, EQ_SHA256_LEN);
		eqg_get_bytes(u, o->xsha, EQ_SHA256_LEN);
		o->path = eqg_get_str(u);
		o->link = eqg_get_str(u);
		if (!o->path || !o->path[0])
			u->bad = true;
	}
	if (u->bad) {
		eqg_path_recs_free(rs);
		return false;
	}
	*ret = rs;
	return true;
}

/* ---- check ----------------------------------------------------------------- */

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c = strcmp(x->path, y->path);
	if (c)
		return c;
	return (x->pkg > y->pkg) - (x->pkg < y->pkg);
}

/* The record of (@path, @pkg), or SIZE_MAX; records are sorted. */
static size_t find_rec(const struct eq_path_table *t, const char *path, size_t pkg)
{
	size_t lo = 0, hi = t->n_recs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->recs[mid].path, path);
		if (!c)
			c = (t->recs[mid].pkg > pkg) - (t->recs[mid].pkg < pkg);
		if (!c)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

static const char *type_name(enum eq_entry_type ty)
{
	switch (ty) {
	case EQ_ENTRY_FILE: return "file";
	case EQ_ENTRY_DIR: return "directory";
	case EQ_ENTRY_SYMLINK: return "symlink";
	case EQ_ENTRY_HARDLINK: return "hard link";
	case EQ_ENTRY_CHR: return "character device";
	case EQ_ENTRY_BLK: return "block device";
	case EQ_ENTRY_FIFO: return "fifo";
	}
	return "entry";
}

/* Why @a and @b differ ("" when they are the same in every field). */
static void what_differs(const struct rec *a, const struct rec *b, char *out, size_t n)
{
	if (a->type != b->type)
		snprintf(out, n, "%s vs %s", type_name(a->type), type_name(b->type));
	else if (a->type == EQ_ENTRY_FILE && (a->size != b->size || memcmp(a->sha, b->sha, EQ_SHA256_LEN)))
		snprintf(out, n, "content differs");
	else if ((a->link || b->link) && (!a->link || !b->link || strcmp(a->link, b->link)))
		snprintf(out, n, "link '%s' vs '%s'", a->link ? a->link : "", b->link ? b->link : "");
	else if (a->mode != b->mode)
		snprintf(out, n, "mode %04" PRIo32 " vs %04" PRIo32, a->mode, b->mode);
	else if (a->uid != b->uid || a->gid != b->gid)
		snprintf(out, n, "owner %" PRIu32 ":%" PRIu32 " vs %" PRIu32 ":%" PRIu32, a->uid, a->gid, b->uid,
			 b->gid);
	else if (a->devmajor != b->devmajor || a->devminor != b->devminor)
		snprintf(out, n, "device numbers differ");
	else if (memcmp(a->xsha, b->xsha, EQ_SHA256_LEN))
		snprintf(out, n, "xattrs differ");
	else
		out[0] = '\0';
}

/* "A (a.deb), B (b.deb) and C (c.deb)" for the records @idx[0 .. n). */
static eq_err list_pkgs(const struct eq_path_table *t, const size_t *idx, size_t n, struct eq_buf *out,
			struct eq_error *err)
{
	eq_err r = EQ_OK;
	for (size_t k = 0; k < n && !r; k++) {
		const struct tpkg *p = &t->pkgs[t->recs[idx[k]].pkg];
		const char *sep = k == 0 ? "" : k + 1 == n ? " and " : ", ";
		if (p->file)
			r = eq_buf_printf(out, err, "%s%s (%s)", sep, p->name, p->file);
		else
			r = eq_buf_printf(out, err, "%s%s", sep, p->name);
	}
	return r;
}

struct problems {
	eq_path_note_fn note;
	void *ctx;
	size_t n;
	char first[EQ_ERROR_MSG_MAX];
	bool landing, first_landing; /* the problem at hand / the first one is a check_landing() one */
};

/* Hands one problem (the NUL-terminated text of @b) to the note callback. */
static void problem(struct problems *pr, bool error, struct eq_buf *b)
{
	const char *msg = b->data ? (const char *)b->data : "";
	if (error && !pr->n++) {
		snprintf(pr->first, sizeof(pr->first), "%s", msg);
		pr->first_landing = pr->landing;
	}
	if (pr->note && (!error || pr->n <= EQ_PATH_CONFLICTS_LISTED))
		pr->note(pr->ctx, error, msg);
	eq_buf_reset(b);
}

/* One path shipped by the records @idx[0 .. n), n > 1. */
static eq_err check_group(const struct eq_path_table *t, const size_t *idx, size_t n, struct problems *pr,
			  struct eq_buf *b, struct eq_error *err)
{
	const struct rec *a = &t->recs[idx[0]];
	char why[4200] = "";
	bool dirs = true, linked = false;
	for (size_t k = 0; k < n; k++) {
		dirs &= t->recs[idx[k]].type == EQ_ENTRY_DIR;
		linked |= t->recs[idx[k]].linked;
		if (!why[0])
			what_differs(a, &t->recs[idx[k]], why, sizeof(why));
	}
	eq_err r = EQ_OK;
	if (dirs) {
		if (!why[0])
			return EQ_OK;
		/* The device installs in manifest (name) order, and its last
		 * chmod wins; dpkg keeps the first package's. Not worth a
		 * refusal, but a device compares a kept package's directories
		 * with its record, so the other packages are downloaded on each
		 * update instead of kept: --path-owner gives it one owner. */
		size_t last = idx[0];
		for (size_t k = 0; k < n; k++)
			if (strcmp(t->pkgs[t->recs[idx[k]].pkg].name, t->pkgs[t->recs[last].pkg].name) > 0)
				last = idx[k];
		r = eq_buf_printf(b, err, "directory %s is shipped by ", a->path);
		if (!r)
			r = list_pkgs(t, idx, n, b, err);
		if (!r)
			r = eq_buf_printf(b, err,
					  " with different metadata (%s): devices get %s's and download the others "
					  "instead of keeping them (see --path-owner), continuing",
					  why, t->pkgs[t->recs[last].pkg].name);
		if (!r)
			r = eq_buf_append(b, "", 1, err);
		if (!r)
			problem(pr, false, b);
		return r;
	}
	if (!why[0] && !linked)
		return EQ_OK;
	r = eq_buf_printf(b, err, "%s is shipped by ", a->path);
	if (!r)
		r = list_pkgs(t, idx, n, b, err);
	if (!r)
		r = eq_buf_printf(b, err, " (%s)",
				  why[0] ? why : "identical, but a hard link: installing one breaks the other's link");
	if (!r)
		r = eq_buf_append(b, "", 1, err);
	if (!r)
		problem(pr, true, b);
	return r;
}

static eq_err check_rules(const struct eq_path_table *t, struct problems *pr, struct eq_buf *b, struct eq_error *err)
{
	eq_err r = EQ_OK;
	for (size_t i = 0; i < t->n_rules && !r; i++) {
		const struct rule *ru = &t->rules[i];
		size_t owner = SIZE_MAX;
		for (size_t k = 0; k < t->n_pkgs && owner == SIZE_MAX; k++)
			if (!strcmp(t->pkgs[k].name, ru->owner))
				owner = k;
		if (owner != SIZE_MAX && find_rec(t, ru->path, owner) != SIZE_MAX)
			continue;
		if (ru->taken_from) {
			r = eq_buf_printf(b, err,
					  "%s: %s does not ship %s, which was left out of %s: no package would "
					  "install it",
					  ru->where, ru->owner, ru->path, ru->taken_from);
			if (!r)
				r = eq_buf_append(b, "", 1, err);
			if (!r)
				problem(pr, true, b);
		} else {
			r = eq_buf_printf(b, err, "%s: no package of the release ships %s, ignoring", ru->where,
					  ru->path);
			if (!r)
				r = eq_buf_append(b, "", 1, err);
			if (!r)
				problem(pr, false, b);
		}
	}
	return r;
}

/* ---- paths after the release's symlinks ----------------------------------------- */

/* Longest resolved path followed; a device's kernel gives up sooner. */
#define RESOLVE_MAX (3u * 4096u)
/* Symlinks crossed on one path before giving up, as Linux's ELOOP. */
#define RESOLVE_HOPS 40

/* The record of the symlink at @path (the first package's), or NULL;
 * records are sorted by path. */
static const struct rec *find_symlink(const struct eq_path_table *t, const char *path, size_t len)
{
	size_t lo = 0, hi = t->n_recs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *p = t->recs[mid].path;
		int c = strncmp(p, path, len);
		if (!c && p[len])
			c = 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < t->n_recs && !strncmp(t->recs[i].path, path, len) && !t->recs[i].path[len]; i++)
		if (t->recs[i].type == EQ_ENTRY_SYMLINK && t->recs[i].link)
			return &t->recs[i];
	return NULL;
}

/*
 * Resolves directory @dir (a payload path, "" for the root) through the
 * symlinks of every package of the release, as a device's kernel does
 * with RESOLVE_IN_ROOT: an absolute target starts again at the slot's
 * root, ".." stops there. Writes the result to @out ("" = the root) and
 * the first symlink crossed to *ret_via (NULL when none). False when the
 * path cannot be followed (too long, too many symlinks): the device then
 * refuses the entry itself.
 */
static bool resolve_dir(const struct eq_path_table *t, const char *dir, char *out, const struct rec **ret_via)
{
	char rest[RESOLVE_MAX + 1];
	size_t olen = 0;
	int hops = 0;
	*ret_via = NULL;
	out[0] = '\0';
	if (strlen(dir) > RESOLVE_MAX)
		return false;
	snprintf(rest, sizeof(rest), "%s", dir);
	for (const char *c = rest; *c;) {
		size_t n = strcspn(c, "/");
		const char *next = c + n + (c[n] == '/');
		if (!n || (n == 1 && c[0] == '.')) {
			c = next;
			continue;
		}
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			while (olen && out[olen - 1] != '/')
				olen--;
			olen -= olen ? 1 : 0;
			out[olen] = '\0';
			c = next;
			continue;
		}
		size_t keep = olen;
		if (olen + 1 + n > RESOLVE_MAX)
			return false;
		if (olen)
			out[olen++] = '/';
		memcpy(out + olen, c, n);
		olen += n;
		out[olen] = '\0';
		const struct rec *s = find_symlink(t, out, olen);
		if (!s) {
			c = next;
			continue;
		}
		if (++hops > RESOLVE_HOPS)
			return false;
		if (!*ret_via)
			*ret_via = s;
		/* The target, then what was left after the symlink. */
		char tmp[RESOLVE_MAX + 1];
		int w = snprintf(tmp, sizeof(tmp), "%s/%s", s->link, next);
		if (w < 0 || (size_t)w > RESOLVE_MAX)
			return false;
		memcpy(rest, tmp, (size_t)w + 1);
		olen = s->link[0] == '/' ? 0 : keep;
		out[olen] = '\0';
		c = rest;
	}
	return true;
}

/* Where @path lands after the release's symlinks is eqota's own folder,
 * in it, or (for a non-directory) a folder on the way to it. */
static const char *reserved_problem(const char *path, bool is_dir)
{
	size_t n = strlen(EQ_PAYLOAD_RESERVED_DIR), len = strlen(path);
	if (!strncmp(path, EQ_PAYLOAD_RESERVED_DIR, n) && (path[n] == '\0' || path[n] == '/'))
		return path[n] ? "inside eqota's own folder" : "eqota's own folder";
	if (!is_dir && len < n && !strncmp(path, EQ_PAYLOAD_RESERVED_DIR, len) && EQ_PAYLOAD_RESERVED_DIR[len] == '/')
		return "a folder on the way to eqota's own folder, as a non-directory";
	return NULL;
}

/* One entry (or a hard link's target, @what) through the symlinks. */
static eq_err check_landing(const struct eq_path_table *t, const struct rec *r, const char *path, bool is_dir,
			    char *dir, struct problems *pr, struct eq_buf *b, struct eq_error *err)
{
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	EQ_AUTOFREE char *parent = eq_strndup(path, dlen);
	if (!parent)
		return eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
	const struct rec *via;
	if (!resolve_dir(t, parent, dir, &via) || !via)
		return EQ_OK; /* unresolvable, or literal: the payload rules judged it */
	const char *base = slash ? slash + 1 : path;
	EQ_AUTOFREE char *landed = dir[0] ? eq_asprintf("%s/%s", dir, base) : eq_strdup(base);
	if (!landed)
		return eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
	const char *why = reserved_problem(landed, is_dir);
	if (!why)
		return EQ_OK;
	const struct tpkg *p = &t->pkgs[r->pkg];
	const struct tpkg *vp = &t->pkgs[via->pkg];
	eq_err e = eq_buf_printf(b, err,
				 "package %s%s%s%s: entry '%s'%s%s%s resolves to '%s' through symlink '%s' -> '%s' "
				 "of package %s: %s, which only the agent writes",
				 p->name, p->file ? " (" : "", p->file ? p->file : "", p->file ? ")" : "", r->path,
				 path == r->path ? "" : " (a hard link to '", path == r->path ? "" : path,
				 path == r->path ? "" : "')", landed, via->path, via->link, vp->name, why);
	if (!e)
		e = eq_buf_append(b, "", 1, err);
	pr->landing = true;
	if (!e)
		problem(pr, true, b);
	pr->landing = false;
	return e;
}

/* Every entry and hard link target, resolved through the symlinks of the
 * whole release: a path is judged by where it lands on the device, not by
 * its spelling in one package (issue 29). */
static eq_err check_landings(const struct eq_path_table *t, struct problems *pr, struct eq_buf *b, struct eq_error *err)
{
	EQ_AUTOFREE char *dir = eq_malloc(RESOLVE_MAX + 1);
	if (!dir)
		return eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
	eq_err r = EQ_OK;
	for (size_t i = 0; i < t->n_recs && !r; i++) {
		const struct rec *e = &t->recs[i];
		r = check_landing(t, e, e->path, e->type == EQ_ENTRY_DIR, dir, pr, b, err);
		if (!r && e->type == EQ_ENTRY_HARDLINK && e->link)
			r = check_landing(t, e, e->link, false, dir, pr, b, err);
	}
	return r;
}

eq_err eq_path_table_check(struct eq_path_table *t, eq_path_note_fn note, void *note_ctx, struct eq_error *err)
{
	if (t->n_recs)
		qsort(t->recs, t->n_recs, sizeof(*t->recs), cmp_rec);
	/* A hard link's target in its own package is "linked" too. */
	for (size_t i = 0; i < t->n_recs; i++) {
		if (t->recs[i].type != EQ_ENTRY_HARDLINK || !t->recs[i].link)
			continue;
		size_t j = find_rec(t, t->recs[i].link, t->recs[i].pkg);
		if (j != SIZE_MAX)
			t->recs[j].linked = true;
	}
	struct problems pr = {.note = note, .ctx = note_ctx};
	struct eq_buf b;
	eq_buf_init(&b, 64 * 1024);
	eq_err r = EQ_OK;
	size_t *idx = NULL, cap = 0;
	for (size_t i = 0; i < t->n_recs && !r;) {
		size_t end = i + 1;
		while (end < t->n_recs && !strcmp(t->recs[end].path, t->recs[i].path))
			end++;
		if (end - i > 1 && end - i > cap) {
			size_t *v = eq_realloc(idx, (end - i) * sizeof(*idx));
			if (!v) {
				r = eq_error_set(err, EQ_ERR_NOMEM, "path table: out of memory");
				break;
			}
			idx = v;
			cap = end - i;
		}
		/* Image components overlap packages on purpose: they place the
		 * image's version after the packages (DESIGN31 "after"), and a
		 * package's folder where the image's skeleton has a symlink
		 * ("bin" with "bin -> usr/bin") is extracted through it. */
		bool skel_link = false;
		for (size_t k = i; k < end; k++)
			skel_link |= t->pkgs[t->recs[k].pkg].component && t->recs[k].type == EQ_ENTRY_SYMLINK;
		size_t n = 0;
		for (size_t k = i; k < end && end - i > 1; k++)
			if (!t->pkgs[t->recs[k].pkg].component && !(skel_link && t->recs[k].type == EQ_ENTRY_DIR))
				idx[n++] = k;
		if (n > 1)
			r = check_group(t, idx, n, &pr, &b, err);
		i = end;
	}
	eq_free(idx);
	if (!r)
		r = check_rules(t, &pr, &b, err);
	if (!r)
		r = check_landings(t, &pr, &b, err);
	eq_buf_done(&b);
	if (r)
		return r;
	if (pr.n == 1 && pr.first_landing)
		return eq_error_set(err, EQ_ERR_UNSAFE, "%s", pr.first);
	if (pr.n == 1)
		return eq_error_set(err, EQ_ERR_STATE, "%s; a release may ship a path once (see --path-owner)",
				    pr.first);
	if (pr.n)
		return eq_error_set(
			err, EQ_ERR_STATE,
			"%zu paths are shipped by more than one package, ruled wrongly or land in eqota's own "
			"folder (each one logged): "
			"%s, ...; a release may ship a path once (see --path-owner)",
			pr.n, pr.first);
	return EQ_OK;
}
