/*
 * The "file" backend: the boot variables as "NAME=value" lines in a plain
 * file, for simulated devices (with tests/tools/eq-simboot as the boot
 * script) and tests. Same variables as the U-Boot and GRUB environments.
 *
 * Format: one NAME=value per line, NAME of [A-Za-z0-9_.-], value up to the
 * end of the line (no quoting); empty lines and lines starting with '#' are
 * comments. Lines that are not eqota's are kept verbatim on every write.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bl_priv.h"

#define NAME_MAX_LEN 128

enum line_kind { LINE_COMMENT, LINE_VAR, LINE_GARBLED };

struct line {
	const char *p;
	size_t len;
	size_t no;       /* 1-based line number */
	size_t name_len; /* LINE_VAR */
	int var;         /* LINE_VAR: enum eq_bl_var, or -1 for another variable */
};

/* Calls @fn for every line of @data; a missing final newline is fine. */
static eq_err each_line(const char *data, size_t len, eq_err (*fn)(const struct line *l, void *ctx), void *ctx)
{
	size_t no = 0;
	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (data + pos)) : len - pos;
		no++;
		struct line line = {.p = data + pos, .len = l, .no = no, .var = -1};
		eq_err r = fn(&line, ctx);
		if (r)
			return r;
		pos += l + (nl ? 1 : 0);
	}
	return EQ_OK;
}

static bool name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
	       c == '-';
}

/* Sorts @l into a kind; for a garbled line writes why into @why. */
static enum line_kind classify(const struct eq_bl *bl, struct line *l, char *why, size_t why_size)
{
	for (size_t i = 0; i < l->len; i++) {
		unsigned char c = (unsigned char)l->p[i];
		if (c == '\r' && i + 1 == l->len) {
			snprintf(why, why_size, "ends in a carriage return (DOS line endings are not allowed)");
			return LINE_GARBLED;
		}
		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			snprintf(why, why_size, "binary data (byte 0x%02x at column %zu)", c, i + 1);
			return LINE_GARBLED;
		}
	}
	if (l->len == 0 || l->p[0] == '#')
		return LINE_COMMENT;
	const char *eq = memchr(l->p, '=', l->len);
	size_t n = eq ? (size_t)(eq - l->p) : l->len;
	bool ok = eq && n > 0 && n <= NAME_MAX_LEN;
	for (size_t i = 0; ok && i < n; i++)
		ok = name_char(l->p[i]);
	if (!ok) {
		char q[48];
		snprintf(why, why_size, "expected NAME=value, got '%s'", eq_quote_n(q, sizeof(q), l->p, l->len));
		return LINE_GARBLED;
	}
	l->name_len = n;
	l->var = eq_bl_var_find(bl, l->p, n);
	return LINE_VAR;
}

/* ---- reading ----------------------------------------------------------- */

struct reader {
	const struct eq_bl *bl;
	const char *path;
	struct eq_bl_vars *vars;
	size_t seen_on[EQ_BL_VAR__COUNT];
	unsigned problems;
	struct eq_error *err;
};

static void reader_problem(struct reader *rd, const struct line *l, const char *why)
{
	if (rd->problems++ == 0)
		eq_error_set(rd->err, EQ_ERR_PARSE, "%s: line %zu: %s", rd->path, l->no, why);
}

static eq_err read_line(const struct line *cl, void *ctx)
{
	struct reader *rd = ctx;
	struct line l = *cl;
	char why[160];
	enum line_kind k = classify(rd->bl, &l, why, sizeof(why));
	if (k == LINE_GARBLED) {
		reader_problem(rd, &l, why);
		return EQ_OK;
	}
	if (k != LINE_VAR || l.var < 0)
		return EQ_OK;
	if (rd->seen_on[l.var]) {
		/* Sourcing such a file, the later value wins. */
		snprintf(why, sizeof(why), "%s set again (first on line %zu), the later value counts",
			 eq_bl_var_name(rd->bl, (enum eq_bl_var)l.var), rd->seen_on[l.var]);
		reader_problem(rd, &l, why);
	}
	rd->seen_on[l.var] = l.no;
	char *v = eq_strndup(l.p + l.name_len + 1, l.len - l.name_len - 1);
	if (!v)
		return eq_error_set(rd->err, EQ_ERR_NOMEM, "out of memory");
	eq_free(rd->vars->val[l.var]);
	rd->vars->val[l.var] = v;
	return EQ_OK;
}

static eq_err file_get_vars(struct eq_bl *bl, struct eq_bl_vars *ret, struct eq_error *err)
{
	uint8_t *data;
	size_t len;
	eq_err r = eq_file_read_all(bl->path, EQ_BL_FILE_MAX, &data, &len, err);
	if (r)
		return r;
	struct reader rd = {.bl = bl, .path = bl->path, .vars = ret, .err = err};
	r = each_line((const char *)data, len, read_line, &rd);
	eq_free(data);
	if (r) {
		eq_bl_vars_done(ret);
		return r;
	}
	if (rd.problems > 1 && err) {
		size_t l = strlen(err->msg);
		snprintf(err->msg + l, sizeof(err->msg) - l, " (and %u more garbled lines)", rd.problems - 1);
	}
	return rd.problems ? EQ_ERR_PARSE : EQ_OK;
}

/* ---- writing ------------------------------------------------------------ */

struct writer {
	const struct eq_bl *bl;
	const char *path;
	const struct eq_bl_vars *vars;
	bool written[EQ_BL_VAR__COUNT];
	struct eq_buf out;
	struct eq_error *err;
};

static eq_err put_var(struct writer *w, int var)
{
	const char *v = w->vars->val[var] ? w->vars->val[var] : "";
	w->written[var] = true;
	return eq_buf_printf(&w->out, w->err, "%s=%s\n", eq_bl_var_name(w->bl, (enum eq_bl_var)var), v);
}

static eq_err write_line(const struct line *cl, void *ctx)
{
	struct writer *w = ctx;
	struct line l = *cl;
	char why[160];
	enum line_kind k = classify(w->bl, &l, why, sizeof(why));
	if (k == LINE_GARBLED)
		return eq_error_set(w->err, EQ_ERR_PARSE,
				    "%s: line %zu: %s; not a boot environment this backend can rewrite, refusing to "
				    "overwrite it (fix or remove the line)",
				    w->path, l.no, why);
	if (k == LINE_VAR && l.var >= 0) {
		if (w->written[l.var])
			return eq_error_set(
				w->err, EQ_ERR_PARSE,
				"%s: line %zu: %s set again; refusing to overwrite an ambiguous environment", w->path,
				l.no, eq_bl_var_name(w->bl, (enum eq_bl_var)l.var));
		return put_var(w, l.var);
	}
	eq_err r = eq_buf_append(&w->out, l.p, l.len, w->err);
	return r ? r : eq_buf_append(&w->out, "\n", 1, w->err);
}

static eq_err file_set_vars(struct eq_bl *bl, const struct eq_bl_vars *vars, struct eq_error *err)
{
	for (int i = 0; i < EQ_BL_VAR__COUNT; i++)
		if (vars->val[i] && strpbrk(vars->val[i], "\n\r"))
			return eq_error_set(err, EQ_ERR_INVAL, "%s: a line break in the value of %s", bl->path,
					    eq_bl_var_name(bl, (enum eq_bl_var)i));
	/* Write through a symlink to its target rather than replacing the link. */
	EQ_AUTOFREE char *real = realpath(bl->path, NULL);
	const char *path = real ? real : bl->path;
	mode_t mode = 0644;
	struct stat st;
	if (stat(path, &st) == 0)
		mode = st.st_mode & 07777;
	uint8_t *data = NULL;
	size_t len = 0;
	eq_err r = eq_file_read_all(path, EQ_BL_FILE_MAX, &data, &len, err);
	if (r == EQ_ERR_LIMIT)
		return eq_error_prefix(err, r, "refusing to overwrite what cannot be a boot environment");
	if (r && r != EQ_ERR_NOTFOUND)
		return r;
	struct writer w = {.bl = bl, .path = bl->path, .vars = vars, .err = err};
	eq_buf_init(&w.out, EQ_BL_FILE_MAX);
	r = each_line((const char *)data, len, write_line, &w);
	for (int i = 0; !r && i < EQ_BL_VAR__COUNT; i++)
		if (!w.written[i])
			r = put_var(&w, i);
	eq_free(data);
	if (r == EQ_ERR_LIMIT)
		eq_error_set(err, r, "%s: the environment would grow past %u bytes", bl->path, EQ_BL_FILE_MAX);
	if (!r)
		r = eq_file_replace_atomic(path, w.out.data ? (const void *)w.out.data : "", w.out.len, mode, err);
	eq_buf_done(&w.out);
	return r;
}

const struct eq_bl_ops eq_bl_file_ops = {
	.name = "file",
	.default_path = NULL,
	.get_vars = file_get_vars,
	.set_vars = file_set_vars,
};
