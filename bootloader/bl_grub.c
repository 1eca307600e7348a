/*
 * The "grub" backend: the boot variables in GRUB environment blocks, read
 * and written by eqota itself (no grub-editenv), in two copies: PATH and
 * PATH.2. The environment lives on the EFI system partition, and FAT has no
 * atomic rename, so instead of replacing one file eqota overwrites, in place
 * and sector by sector, the copy that does not hold the current state; the
 * board's grub.cfg reads the valid copy with the higher EQ_SEQ.
 *
 * Block layout as eqota writes it (1024 bytes, two 512-byte sectors):
 *   "# GRUB Environment Block\n" "EQ_SEQ=<n>\n" BOOT_ORDER, BOOT_A_LEFT,
 *   BOOT_B_LEFT, BOOT_TRIAL, the other variables of the copy read, then
 *   '#' up to a '\n' at byte 511; at byte 512 "EQ_SEQ2=<n>\n" and '#' up
 *   to byte 1023. A copy is valid when it is such a block as GRUB parses it
 *   and EQ_SEQ equals EQ_SEQ2 (or neither is set: sequence 0), so a write
 *   torn between the two sectors shows. Power-cut analysis:
 *   docs/bootloader.md, "The grub backend".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bl_priv.h"

#define BLOCK_SIZE 1024u
#define SECTOR_SIZE 512u
#define SIGNATURE "# GRUB Environment Block\n"
#define SIG_LEN (sizeof(SIGNATURE) - 1)
/* A line is at least "x=\n". */
#define MAX_VARS ((BLOCK_SIZE - SIG_LEN) / 3u + 1u)
/* GRUB's `test -gt` converts with strtoul base 0 into a C int: decimal
 * without leading zeros (octal otherwise) and below 2^31. */
#define SEQ_MAX 999999999ul
#define VAR_SEQ "EQ_SEQ"
#define VAR_SEQ2 "EQ_SEQ2"

struct gvar {
	const char *name;  /* into block.text */
	const char *value; /* unescaped, into block.text */
	size_t offset;     /* of the line in the block */
};

struct block {
	char raw[BLOCK_SIZE];
	/* Unescaped names and values: never longer than the escaped line. */
	char text[BLOCK_SIZE + 2];
	struct gvar var[MAX_VARS];
	size_t n_var;
};

enum copy_kind {
	COPY_MISSING,
	COPY_VALID,
	COPY_INVALID,    /* a GRUB environment block, but torn or garbled */
	COPY_FOREIGN,    /* not a GRUB environment block at all: never overwritten */
	COPY_UNREADABLE, /* open or read failed */
};

struct copy {
	const char *path;
	enum copy_kind kind;
	unsigned long seq;      /* COPY_VALID */
	unsigned long seq_seen; /* highest well-formed EQ_SEQ or EQ_SEQ2 in it, valid or not */
	struct eq_error why;    /* when not COPY_VALID */
	struct block blk;
};

struct grub_priv {
	char *path2;
};

/* ---- the test-only power-cut hook ------------------------------------- */

/* Counts the steps of one set_vars call, for eq_bl_grub_crash_at. */
struct wctx {
	unsigned long step;
};

#ifdef EQ_TEST_HOOKS
unsigned long eq_bl_grub_crash_at;

static bool cut_here(struct wctx *w)
{
	return ++w->step == eq_bl_grub_crash_at;
}
#else
static bool cut_here(struct wctx *w)
{
	(void)w;
	return false;
}
#endif

static eq_err cut(const struct wctx *w, const char *path, struct eq_error *err)
{
	return eq_error_set(err, EQ_ERR_IO, "%s: simulated power cut after write step %lu (test hook)", path, w->step);
}

/* ---- parsing, as grub-core/lib/envblk.c does ----------------------------- */

static size_t line_no(const char *raw, size_t off)
{
	size_t n = 1;
	for (size_t i = 0; i < off && i < BLOCK_SIZE; i++)
		n += raw[i] == '\n';
	return n;
}

static void invalid(struct copy *c, size_t off, const char *fmt, ...) EQ_PRINTF(3, 4);
static void invalid(struct copy *c, size_t off, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	eq_error_setv(&c->why, EQ_ERR_PARSE, fmt, ap);
	va_end(ap);
	c->kind = COPY_INVALID;
	eq_error_prefix(&c->why, EQ_ERR_PARSE, "%s: line %zu (byte %zu)", c->path, line_no(c->blk.raw, off), off);
}

/* GRUB's find_next_line(): a backslash escapes the next byte, an escaped
 * newline included, so such a newline does not end the line. */
static size_t next_line(const char *raw, size_t p)
{
	while (p < BLOCK_SIZE) {
		if (raw[p] == '\\')
			p += 2;
		else if (raw[p] == '\n')
			break;
		else
			p++;
	}
	return p + 1;
}

static const struct gvar *find_var(const struct block *b, const char *name)
{
	for (size_t i = 0; i < b->n_var; i++)
		if (strcmp(b->var[i].name, name) == 0)
			return &b->var[i];
	return NULL;
}

/* "0".."999999999" without leading zeros, so GRUB's base-0 conversion and
 * ours agree. */
static bool parse_seq(const char *s, unsigned long *ret)
{
	uint64_t v;
	if (!eq_parse_u64(s, strlen(s), SEQ_MAX, &v))
		return false;
	*ret = (unsigned long)v;
	return true;
}

/*
 * Mirrors grub_envblk_iterate(): '#' lines are skipped, NAME=value lines with
 * backslash escapes. Where GRUB stops ("broken": no '=' or no newline before
 * the end) the copy is invalid; so is what GRUB would read wrongly without
 * complaint: a line without '=' (it becomes part of the next name), an empty
 * name, a NUL byte (GRUB's strings end there) and a variable set twice (GRUB
 * reads the last and save_env rewrites the first).
 */
static bool parse_lines(struct copy *c)
{
	struct block *b = &c->blk;
	const char *raw = b->raw;
	size_t p = SIG_LEN, t = 0;
	char q[48];
	b->n_var = 0;
	while (p < BLOCK_SIZE) {
		if (raw[p] == '#') {
			p = next_line(raw, p);
			continue;
		}
		size_t start = p;
		while (p < BLOCK_SIZE && raw[p] != '=')
			p++;
		size_t name_len = p - start;
		const char *bad = NULL;
		if (p == BLOCK_SIZE)
			bad = "no '=' before the end of the block (GRUB stops reading there)";
		else if (memchr(raw + start, '\n', name_len))
			bad = "a line without '=' (GRUB reads it as part of the next variable's name)";
		else if (name_len == 0)
			bad = "a variable without a name";
		else if (memchr(raw + start, '\0', name_len))
			bad = "a NUL byte in a variable name";
		if (bad) {
			invalid(c, start, "%s", bad);
			return false;
		}
		size_t value_start = ++p;
		while (p < BLOCK_SIZE && raw[p] != '\n')
			p += raw[p] == '\\' ? 2u : 1u;
		if (p >= BLOCK_SIZE) {
			invalid(c, start, "the value runs to the end of the block without a newline");
			return false;
		}
		if (b->n_var == MAX_VARS) {
			invalid(c, start, "more than %u variables", (unsigned)MAX_VARS);
			return false;
		}
		char *name = b->text + t;
		memcpy(name, raw + start, name_len);
		name[name_len] = '\0';
		t += name_len + 1;
		char *value = b->text + t;
		size_t vl = 0;
		for (size_t i = value_start; i < p; i++) {
			if (raw[i] == '\\')
				i++;
			value[vl++] = raw[i];
		}
		value[vl] = '\0';
		t += vl + 1;
		if (memchr(value, '\0', vl)) {
			invalid(c, start, "a NUL byte in the value of %s", eq_quote(q, sizeof(q), name));
			return false;
		}
		const struct gvar *dup = find_var(b, name);
		if (dup) {
			invalid(c, start, "%s set again (first on line %zu): GRUB reads one and saves the other",
				eq_quote(q, sizeof(q), name), line_no(raw, dup->offset));
			return false;
		}
		b->var[b->n_var++] = (struct gvar){.name = name, .value = value, .offset = start};
		p++;
	}
	return true;
}

static void parse_block(struct copy *c)
{
	const struct block *b = &c->blk;
	char q[48];
	bool lines_ok = parse_lines(c);
	/* Even from a broken copy: GRUB has loaded the variables before the
	 * break, so a boot script may see these. */
	const struct gvar *s1 = find_var(b, VAR_SEQ), *s2 = find_var(b, VAR_SEQ2);
	unsigned long v1 = 0, v2 = 0;
	bool d1 = s1 && parse_seq(s1->value, &v1), d2 = s2 && parse_seq(s2->value, &v2);
	c->seq_seen = d1 && v1 > v2 ? v1 : (d2 ? v2 : 0);
	if (!lines_ok)
		return;
	if (!s1 && !s2) {
		/* Written by grub-editenv or GRUB itself. */
		c->kind = COPY_VALID;
		c->seq = 0;
		return;
	}
	if (!s1 || !s2) {
		const struct gvar *has = s1 ? s1 : s2;
		invalid(c, has->offset,
			"%s='%s' without %s: a write was cut between the block's two sectors, or it is garbled",
			has->name, eq_quote(q, sizeof(q), has->value), s1 ? VAR_SEQ2 : VAR_SEQ);
	} else if (!d1 || !d2) {
		const struct gvar *bad = d1 ? s2 : s1;
		invalid(c, bad->offset, "%s='%s' is not a decimal number 0..%lu without leading zeros", bad->name,
			eq_quote(q, sizeof(q), bad->value), SEQ_MAX);
	} else if (v1 != v2) {
		invalid(c, s2->offset, "EQ_SEQ=%lu but EQ_SEQ2=%lu: a write was cut between the block's two sectors",
			v1, v2);
	} else {
		c->kind = COPY_VALID;
		c->seq = v1;
	}
}

/* ---- reading both copies ---------------------------------------------------- */

static eq_err pread_all(int fd, char *buf, size_t len, const char *path, struct eq_error *err)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return eq_error_errno(err, EQ_ERR_IO, "cannot read '%s'", path);
		if (n == 0)
			return eq_error_set(err, EQ_ERR_IO, "'%s' shrank while being read", path);
		got += (size_t)n;
	}
	return EQ_OK;
}

/* Sorts what a stat says into FOREIGN or not; fills c->why. */
static bool foreign_file(struct copy *c, const struct stat *st)
{
	if (S_ISDIR(st->st_mode))
		eq_error_set(&c->why, EQ_ERR_PARSE, "%s: is a directory, not a GRUB environment block", c->path);
	else if (!S_ISREG(st->st_mode))
		eq_error_set(&c->why, EQ_ERR_PARSE, "%s: is not a regular file, not a GRUB environment block", c->path);
	else if (st->st_size != (off_t)BLOCK_SIZE)
		eq_error_set(&c->why, EQ_ERR_PARSE,
			     "%s: %lld bytes, a GRUB environment block has exactly %u (wrong path?)", c->path,
			     (long long)st->st_size, BLOCK_SIZE);
	else
		return false;
	c->kind = COPY_FOREIGN;
	return true;
}

static void load_copy(struct copy *c)
{
	c->seq = c->seq_seen = 0;
	eq_error_clear(&c->why);
	/* O_NONBLOCK: a FIFO at the path must not hang the agent. */
	int fd = open(c->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT) {
			c->kind = COPY_MISSING;
			eq_error_set(&c->why, EQ_ERR_NOTFOUND, "%s: does not exist", c->path);
		} else {
			c->kind = COPY_UNREADABLE;
			eq_error_errno(&c->why, EQ_ERR_IO, "cannot open '%s'", c->path);
		}
		return;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		c->kind = COPY_UNREADABLE;
		eq_error_errno(&c->why, EQ_ERR_IO, "cannot stat '%s'", c->path);
	} else if (!foreign_file(c, &st)) {
		if (pread_all(fd, c->blk.raw, BLOCK_SIZE, c->path, &c->why)) {
			c->kind = COPY_UNREADABLE;
		} else if (memcmp(c->blk.raw, SIGNATURE, SIG_LEN) != 0) {
			c->kind = COPY_FOREIGN;
			eq_error_set(&c->why, EQ_ERR_PARSE,
				     "%s: byte 0: no GRUB environment block signature '# GRUB Environment Block' "
				     "(wrong path?)",
				     c->path);
		} else {
			parse_block(c);
		}
	}
	close(fd);
}

/* Index of the copy a boot script reads: the valid one with the higher
 * sequence, copy 1 on a tie; -1 when none is valid. */
static int pick(const struct copy c[2])
{
	int w = -1;
	for (int i = 0; i < 2; i++)
		if (c[i].kind == COPY_VALID && (w < 0 || c[i].seq > c[w].seq))
			w = i;
	return w;
}

static eq_err load_both(struct eq_bl *bl, struct copy **ret, struct eq_error *err)
{
	const struct grub_priv *priv = bl->priv;
	struct copy *c = eq_calloc(2, sizeof(*c));
	if (!c)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	c[0].path = bl->path;
	c[1].path = priv->path2;
	load_copy(&c[0]);
	load_copy(&c[1]);
	*ret = c;
	return EQ_OK;
}

/* Why no copy can be read: both messages, each cut to fit. */
static eq_err no_valid_copy(const struct copy c[2], struct eq_error *err)
{
	if (c[0].kind == COPY_MISSING && c[1].kind == COPY_MISSING)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "%s: no GRUB environment (neither it nor '%s' exists)",
				    c[0].path, c[1].path);
	eq_err code = (c[0].kind == COPY_UNREADABLE || c[1].kind == COPY_UNREADABLE) ? EQ_ERR_IO : EQ_ERR_PARSE;
	const int half = (EQ_ERROR_MSG_MAX - 48) / 2;
	return eq_error_set(err, code, "no valid copy of the GRUB environment: %.*s; %.*s", half, c[0].why.msg, half,
			    c[1].why.msg);
}

static eq_err grub_get_vars(struct eq_bl *bl, struct eq_bl_vars *ret, struct eq_error *err)
{
	struct copy *c = NULL;
	eq_err r = load_both(bl, &c, err);
	if (r)
		return r;
	int w = pick(c);
	if (w < 0) {
		r = no_valid_copy(c, err);
		eq_free(c);
		return r;
	}
	if (c[1 - w].kind != COPY_VALID)
		eq_log(EQ_LOG_DEBUG, "%s, reading '%s' (EQ_SEQ=%lu)", c[1 - w].why.msg, c[w].path, c[w].seq);
	for (int v = 0; v < EQ_BL_VAR__COUNT && !r; v++) {
		const struct gvar *g = find_var(&c[w].blk, eq_bl_var_name(bl, (enum eq_bl_var)v));
		if (g && !(ret->val[v] = eq_strdup(g->value)))
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	eq_free(c);
	if (r)
		eq_bl_vars_done(ret);
	return r;
}

/* ---- building a block ----------------------------------------------------------- */

/* A bounded writer that keeps counting past its capacity, so an overflow
 * reports how much room was needed. */
struct out {
	char *buf;
	size_t cap;
	size_t len;
};

static void out_byte(struct out *o, char ch)
{
	if (o->len < o->cap)
		o->buf[o->len] = ch;
	o->len++;
}

static void out_str(struct out *o, const char *s)
{
	for (; *s; s++)
		out_byte(o, *s);
}

/* NAME=value\n with GRUB's escapes (grub_envblk_set: '\\' and '\n'). */
static void out_var(struct out *o, const char *name, const char *value)
{
	out_str(o, name);
	out_byte(o, '=');
	for (; *value; value++) {
		if (*value == '\\' || *value == '\n')
			out_byte(o, '\\');
		out_byte(o, *value);
	}
	out_byte(o, '\n');
}

static bool eqota_var(const struct eq_bl *bl, const char *name)
{
	return strcmp(name, VAR_SEQ) == 0 || strcmp(name, VAR_SEQ2) == 0 || eq_bl_var_find(bl, name, strlen(name)) >= 0;
}

static eq_err build_block(const struct eq_bl *bl, char blk[BLOCK_SIZE], const char *path, unsigned long seq,
			  const struct eq_bl_vars *vars, const struct block *keep, struct eq_error *err)
{
	char num[24];
	snprintf(num, sizeof(num), "%lu", seq);
	/* At least "#\n" ends the first sector: a bare "\n" would be an empty
	 * line, which GRUB reads as the start of the next variable's name. */
	struct out o = {.buf = blk, .cap = SECTOR_SIZE - 2};
	out_str(&o, SIGNATURE);
	out_var(&o, VAR_SEQ, num);
	for (int v = 0; v < EQ_BL_VAR__COUNT; v++)
		out_var(&o, eq_bl_var_name(bl, (enum eq_bl_var)v), vars->val[v] ? vars->val[v] : "");
	for (size_t i = 0; keep && i < keep->n_var; i++)
		if (!eqota_var(bl, keep->var[i].name))
			out_var(&o, keep->var[i].name, keep->var[i].value);
	if (o.len > o.cap)
		return eq_error_set(err, EQ_ERR_LIMIT,
				    "%s: the signature and variables take %zu bytes, more than the %u that fit in the "
				    "block's first 512-byte sector; nothing written",
				    path, o.len, SECTOR_SIZE - 2);
	memset(blk + o.len, '#', SECTOR_SIZE - 1 - o.len);
	blk[SECTOR_SIZE - 1] = '\n';
	struct out o2 = {.buf = blk + SECTOR_SIZE, .cap = SECTOR_SIZE - 1};
	out_var(&o2, VAR_SEQ2, num);
	memset(blk + SECTOR_SIZE + o2.len, '#', SECTOR_SIZE - o2.len);
	return EQ_OK;
}

/* ---- writing one copy ---------------------------------------------------------------- */

static eq_err pwrite_all(int fd, const char *buf, size_t len, off_t off, const char *path, struct eq_error *err)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pwrite(fd, buf + done, len - done, off + (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return eq_error_errno(err, EQ_ERR_IO, "cannot write '%s'", path);
		done += (size_t)n;
	}
	return EQ_OK;
}

/*
 * Overwrites the existing 1024-byte copy at @path in place: same clusters,
 * same size, no directory change, which is what FAT can do safely. A power
 * cut can leave any mix of old and new sectors in this copy; the other copy
 * is untouched and valid meanwhile.
 */
static eq_err write_in_place(const char *path, const char blk[BLOCK_SIZE], struct wctx *w, struct eq_error *err)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot open '%s' for writing", path);
	eq_err r = EQ_OK;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		r = eq_error_errno(err, EQ_ERR_IO, "cannot stat '%s'", path);
	} else if (!S_ISREG(st.st_mode) || st.st_size != (off_t)BLOCK_SIZE) {
		r = eq_error_set(err, EQ_ERR_PARSE,
				 "%s: changed since it was read (no longer a 1024-byte file); not written", path);
	} else if (cut_here(w)) {
		r = cut(w, path, err); /* nothing of the new block on disk */
	} else if (cut_here(w)) {
		/* the disk wrote the second sector first */
		r = pwrite_all(fd, blk + SECTOR_SIZE, SECTOR_SIZE, SECTOR_SIZE, path, err);
		r = r ? r : cut(w, path, err);
	} else if (cut_here(w)) {
		r = pwrite_all(fd, blk, SECTOR_SIZE, 0, path, err);
		r = r ? r : cut(w, path, err);
	} else if ((r = pwrite_all(fd, blk, BLOCK_SIZE, 0, path, err))) {
		/* error set */
	} else if (cut_here(w)) {
		r = cut(w, path, err); /* written, not yet synced */
	} else if (fsync(fd) != 0) {
		r = eq_error_errno(err, EQ_ERR_IO, "fsync of '%s' failed", path);
	} else if (cut_here(w)) {
		r = cut(w, path, err);
	}
	if (close(fd) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "close of '%s' failed", path);
	return r;
}

/*
 * Creates the missing copy @path: temporary file, fsync, rename, fsync of
 * the directory. Not eq_file_replace_atomic() only so that the test hook can
 * cut between the steps; on FAT the rename may not be atomic, which is fine
 * because this copy is not the one a boot script reads until it is complete.
 */
static eq_err create_copy(const char *path, const char blk[BLOCK_SIZE], struct wctx *w, struct eq_error *err)
{
	EQ_AUTOFREE char *tmp = eq_asprintf("%s.tmp.XXXXXX", path);
	if (!tmp)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot create a temporary file for '%s'", path);
	eq_err r = EQ_OK;
	bool keep_tmp = false; /* a simulated power cut leaves it as a real one would */
	if (cut_here(w)) {
		r = cut(w, path, err);
		keep_tmp = true;
	} else if ((r = pwrite_all(fd, blk, BLOCK_SIZE, 0, tmp, err))) {
		/* error set */
	} else if (cut_here(w)) {
		r = cut(w, path, err);
		keep_tmp = true;
	} else if (fchmod(fd, 0644) != 0) {
		r = eq_error_errno(err, EQ_ERR_IO, "chmod of '%s' failed", tmp);
	} else if (fsync(fd) != 0) {
		r = eq_error_errno(err, EQ_ERR_IO, "fsync of '%s' failed", tmp);
	} else if (cut_here(w)) {
		r = cut(w, path, err);
		keep_tmp = true;
	}
	if (close(fd) != 0 && !r)
		r = eq_error_errno(err, EQ_ERR_IO, "close of '%s' failed", tmp);
	if (!r && rename(tmp, path) != 0)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot rename '%s' to '%s'", tmp, path);
	if (r) {
		if (!keep_tmp)
			(void)unlink(tmp);
		return r;
	}
	if (cut_here(w))
		return cut(w, path, err); /* renamed, directory not yet synced */
	r = eq_fsync_dir_of(path, err);
	if (!r && cut_here(w))
		r = cut(w, path, err);
	return r;
}

static eq_err write_copy(const struct copy *c, const char blk[BLOCK_SIZE], struct wctx *w, struct eq_error *err)
{
	if (c->kind == COPY_MISSING)
		return create_copy(c->path, blk, w, err);
	return write_in_place(c->path, blk, w, err);
}

/*
 * Writes the new block over the copy that is not the current one (the older
 * or the invalid one), never touching the current one, so at every instant
 * one valid copy holds the old or the new state and the next write goes to
 * the other copy.
 */
static eq_err grub_set_vars(struct eq_bl *bl, const struct eq_bl_vars *vars, struct eq_error *err)
{
	struct copy *c = NULL;
	eq_err r = load_both(bl, &c, err);
	if (r)
		return r;
	for (int i = 0; i < 2 && !r; i++) {
		if (c[i].kind == COPY_FOREIGN)
			r = eq_error_set(err, EQ_ERR_PARSE, "%s; refusing to overwrite it", c[i].why.msg);
		else if (c[i].kind == COPY_UNREADABLE)
			r = eq_error_set(err, EQ_ERR_IO, "%s; not writing the GRUB environment", c[i].why.msg);
	}
	int w = pick(c);
	/* With no valid copy, copy 1 is rewritten; its sequence still beats
	 * whatever the other copy claims, in case a boot script sees it valid. */
	int target = w < 0 ? 0 : 1 - w;
	unsigned long base = c[1 - target].seq_seen;
	if (!r && base >= SEQ_MAX)
		r = eq_error_set(err, EQ_ERR_LIMIT, "%s: EQ_SEQ=%lu, no higher sequence number is left",
				 c[1 - target].path, base);
	char block[BLOCK_SIZE];
	if (!r)
		r = build_block(bl, block, bl->path, base + 1, vars, w < 0 ? NULL : &c[w].blk, err);
	struct wctx wc = {0};
	if (!r && c[0].kind == COPY_MISSING && c[1].kind == COPY_MISSING) {
		/* A new environment: copy 2 first with sequence 1, then copy 1
		 * with 2, the same state, so both exist (later writes are all in
		 * place) and copy 1 is the current one. */
		r = write_copy(&c[1], block, &wc, err);
		char block1[BLOCK_SIZE];
		if (!r)
			r = build_block(bl, block1, bl->path, base + 2, vars, NULL, err);
		if (!r)
			r = write_copy(&c[0], block1, &wc, err);
	} else if (!r) {
		r = write_copy(&c[target], block, &wc, err);
	}
	eq_free(c);
	return r;
}

/* ---- open / close ------------------------------------------------------------- */

static eq_err grub_open(struct eq_bl *bl, struct eq_error *err)
{
	struct grub_priv *p = eq_calloc(1, sizeof(*p));
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	bl->priv = p;
	p->path2 = eq_asprintf("%s.2", bl->path);
	if (!p->path2)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	return EQ_OK;
}

static void grub_close(struct eq_bl *bl)
{
	struct grub_priv *p = bl->priv;
	if (!p)
		return;
	eq_free(p->path2);
	eq_free(p);
	bl->priv = NULL;
}

#ifdef EQ_TEST_HOOKS
eq_err eq_bl_grub_inspect(struct eq_bl *bl, struct eq_bl_grub_info *ret, struct eq_error *err)
{
	struct copy *c = NULL;
	eq_err r = load_both(bl, &c, err);
	if (r)
		return r;
	memset(ret, 0, sizeof(*ret));
	ret->winner = pick(c) + 1;
	for (int i = 0; i < 2; i++) {
		ret->seq[i] = c[i].seq;
		ret->status[i] = c[i].kind == COPY_VALID ? EQ_OK : c[i].why.code;
		snprintf(ret->why[i], sizeof(ret->why[i]), "%s", c[i].why.msg);
	}
	eq_free(c);
	return EQ_OK;
}
#endif

const struct eq_bl_ops eq_bl_grub_ops = {
	.name = "grub",
	.default_path = "/boot/efi/EFI/eqota/grubenv",
	.open = grub_open,
	.close = grub_close,
	.get_vars = grub_get_vars,
	.set_vars = grub_set_vars,
};
