/*
 * The embedded equivalence store: bitbake-hashserv's report/get semantics
 * (shared/HASHEQUIV.md section 2) on an SQLite file.
 */
#include <assert.h>
#include <errno.h>
#include <pwd.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "eq/gen.h"
#include <eq/gen_store.h>

#include "gen_priv.h"

/* "EQOT": marks the file as ours, so a foreign SQLite file is refused
 * before anything writes to it. */
#define STORE_APPLICATION_ID 0x45514f54
#define STORE_SCHEMA_VERSION 1
/* Per attempt; the outer loop in run_txn() enforces the overall deadline. */
#define STORE_BUSY_MS 1000

/* Statements kept prepared for the store's life: parsing SQL was a tenth
 * of a republish's time, when every call prepared its statement again. */
#define STMT_CACHE 24

struct stmt_slot {
	const char *sql; /* a string literal of this file */
	sqlite3_stmt *st;
	bool in_use;
};

struct eq_store {
	sqlite3 *db;
	char *path;
	bool busy; /* the last failed SQLite call said SQLITE_BUSY/LOCKED */
	struct stmt_slot cache[STMT_CACHE];
};

static const char schema_sql[] = "CREATE TABLE unihashes ("
				 " id INTEGER PRIMARY KEY,"
				 " method TEXT NOT NULL,"
				 " taskhash TEXT NOT NULL,"
				 " unihash TEXT NOT NULL,"
				 " UNIQUE(method, taskhash));"
				 "CREATE INDEX unihashes_unihash ON unihashes(method, unihash);"
				 /* id is the insertion order: hashserv's "oldest" (section 2.5). */
				 "CREATE TABLE outhashes ("
				 " id INTEGER PRIMARY KEY,"
				 " method TEXT NOT NULL,"
				 " taskhash TEXT NOT NULL,"
				 " outhash TEXT NOT NULL,"
				 " created TEXT NOT NULL,"
				 " pn TEXT,"
				 " pv TEXT,"
				 " UNIQUE(method, taskhash, outhash));"
				 "CREATE INDEX outhashes_outhash ON outhashes(method, outhash);"
				 "CREATE TABLE published ("
				 " method TEXT NOT NULL,"
				 " unihash TEXT NOT NULL,"
				 " payload_sha256 TEXT NOT NULL,"
				 " payload_size INTEGER NOT NULL,"
				 " object_sha256 TEXT NOT NULL,"
				 " object_size INTEGER NOT NULL,"
				 " created TEXT NOT NULL,"
				 " PRIMARY KEY(method, unihash));";

#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%fZ','now')"

/* ---- errors and validation ------------------------------------------- */

static eq_err db_fail(struct eq_store *s, int rc, const char *what, struct eq_error *err)
{
	int prim = rc & 0xff;
	if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED) {
		s->busy = true;
		return eq_error_set(err, EQ_ERR_STATE, "%s: %s: database is locked by another process", s->path, what);
	}
	eq_err code = EQ_ERR_IO;
	if (prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB)
		code = EQ_ERR_PARSE;
	else if (prim == SQLITE_NOMEM)
		code = EQ_ERR_NOMEM;
	return eq_error_set(err, code, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

static eq_err check_hash(const char *field, const char *v, struct eq_error *err)
{
	if (!v)
		return eq_error_set(err, EQ_ERR_INVAL, "%s: missing", field);
	if (!eq_is_sha256_hex(v))
		return eq_error_set(err, EQ_ERR_INVAL, "%s '%.80s': expected 64 lower-case hex digits", field, v);
	return EQ_OK;
}

static bool printable(const char *v, bool allow_space)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p < 0x20 || *p == 0x7f || (*p == ' ' && !allow_space))
			return false;
	}
	return true;
}

static eq_err check_method(const char *m, struct eq_error *err)
{
	if (!m || !*m)
		return eq_error_set(err, EQ_ERR_INVAL, "method: missing");
	/* Spaces would break hashserv's get-stream line format "METHOD TASKHASH". */
	if (strlen(m) > EQ_STORE_METHOD_MAX || !printable(m, false))
		return eq_error_set(err, EQ_ERR_INVAL,
				    "method '%.80s': expected 1..%d printable characters without spaces", m,
				    EQ_STORE_METHOD_MAX);
	return EQ_OK;
}

static eq_err check_meta(const char *field, const char *v, struct eq_error *err)
{
	if (v && (strlen(v) > EQ_STORE_META_MAX || !printable(v, true)))
		return eq_error_set(err, EQ_ERR_INVAL, "%s '%.80s': expected at most %d printable characters", field, v,
				    EQ_STORE_META_MAX);
	return EQ_OK;
}

/* ---- statements and transactions ------------------------------------- */

/* *ret is the statement for @sql, prepared once and kept; give it back
 * with release(). One already in use (a statement run while another of the
 * same text steps) is prepared anew and finalized on release. */
static eq_err prepare(struct eq_store *s, const char *sql, sqlite3_stmt **ret, struct eq_error *err)
{
	struct stmt_slot *free_slot = NULL;
	for (size_t i = 0; i < STMT_CACHE; i++) {
		struct stmt_slot *c = &s->cache[i];
		if (c->sql == sql && !c->in_use) {
			c->in_use = true;
			*ret = c->st;
			return EQ_OK;
		}
		if (!c->sql && !free_slot)
			free_slot = c;
	}
	int rc = sqlite3_prepare_v3(s->db, sql, -1, free_slot ? SQLITE_PREPARE_PERSISTENT : 0, ret, NULL);
	if (rc != SQLITE_OK)
		return db_fail(s, rc, "prepare", err);
	if (free_slot)
		*free_slot = (struct stmt_slot){sql, *ret, true};
	return EQ_OK;
}

/* Gives back a statement from prepare() (NULL is allowed). */
static void release(struct eq_store *s, sqlite3_stmt *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < STMT_CACHE; i++) {
		if (s->cache[i].st == st) {
			(void)sqlite3_reset(st);
			(void)sqlite3_clear_bindings(st);
			s->cache[i].in_use = false;
			return;
		}
	}
	sqlite3_finalize(st);
}

static eq_err bind_texts(struct eq_store *s, sqlite3_stmt *st, const char *const *v, int n, struct eq_error *err)
{
	for (int i = 0; i < n; i++) {
		int rc = v[i] ? sqlite3_bind_text(st, i + 1, v[i], -1, SQLITE_STATIC) : sqlite3_bind_null(st, i + 1);
		if (rc != SQLITE_OK)
			return db_fail(s, rc, "bind", err);
	}
	return EQ_OK;
}

/* Runs a statement that returns no rows; *ret_changes (may be NULL) gets the
 * number of rows it inserted. */
static eq_err exec_stmt(struct eq_store *s, const char *sql, const char *const *v, int n, int *ret_changes,
			struct eq_error *err)
{
	sqlite3_stmt *st = NULL;
	eq_err r = prepare(s, sql, &st, err);
	if (r == EQ_OK)
		r = bind_texts(s, st, v, n, err);
	if (r == EQ_OK) {
		int rc = sqlite3_step(st);
		if (rc != SQLITE_DONE)
			r = db_fail(s, rc, "write", err);
		else if (ret_changes)
			*ret_changes = sqlite3_changes(s->db);
	}
	release(s, st);
	return r;
}

/* Runs a query whose first row's first column is a text; *ret_found says
 * whether there was a row. */
static eq_err query_text(struct eq_store *s, const char *sql, const char *const *v, int n, char *ret, size_t ret_size,
			 bool *ret_found, struct eq_error *err)
{
	sqlite3_stmt *st = NULL;
	eq_err r = prepare(s, sql, &st, err);
	if (r == EQ_OK)
		r = bind_texts(s, st, v, n, err);
	if (r == EQ_OK) {
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			const unsigned char *t = sqlite3_column_text(st, 0);
			/* Only this code writes the store, but the file may have been
			 * edited: never hand out what the API promises is 64 hex. */
			if (!t || strlen((const char *)t) >= ret_size || !eq_is_sha256_hex((const char *)t)) {
				r = eq_error_set(err, EQ_ERR_PARSE, "%s: stored hash is malformed", s->path);
			} else {
				memcpy(ret, t, strlen((const char *)t) + 1);
				*ret_found = true;
			}
		} else if (rc == SQLITE_DONE) {
			*ret_found = false;
		} else {
			r = db_fail(s, rc, "read", err);
		}
	}
	release(s, st);
	return r;
}

/* sqlite3_exec() of one statement without rows, from the statement cache
 * (a publish runs a transaction per package): an SQLite result code. */
static int exec_cached(struct eq_store *s, const char *sql)
{
	sqlite3_stmt *st = NULL;
	struct eq_error ignored;
	if (prepare(s, sql, &st, &ignored))
		return sqlite3_errcode(s->db);
	int rc = sqlite3_step(st);
	release(s, st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

typedef eq_err (*txn_body)(struct eq_store *s, void *ctx, struct eq_error *err);

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * One operation = one transaction. Writers take the write lock up front
 * (BEGIN IMMEDIATE), so the read-decide-insert of report() cannot interleave
 * with another process's, and a busy lock is retried until the deadline.
 */
static eq_err run_txn(struct eq_store *s, bool write, txn_body body, void *ctx, struct eq_error *err)
{
	double deadline = eq_now_s() + EQ_STORE_BUSY_TIMEOUT_S;
	unsigned delay = 1;
	for (;;) {
		s->busy = false;
		eq_err r;
		int rc = exec_cached(s, write ? "BEGIN IMMEDIATE" : "BEGIN");
		if (rc != SQLITE_OK) {
			r = db_fail(s, rc, "begin transaction", err);
		} else {
			r = body(s, ctx, err);
			if (r == EQ_OK) {
				rc = exec_cached(s, "COMMIT");
				if (rc == SQLITE_OK)
					return EQ_OK;
				r = db_fail(s, rc, "commit", err);
			}
		}
		if (!sqlite3_get_autocommit(s->db))
			(void)exec_cached(s, "ROLLBACK");
		if (!s->busy)
			return r;
		if (eq_now_s() >= deadline)
			return eq_error_set(err, EQ_ERR_STATE, "%s: database stayed locked for %d s", s->path,
					    EQ_STORE_BUSY_TIMEOUT_S);
		sleep_ms(delay);
		delay = delay < 64 ? delay * 2 : 100;
	}
}

/* ---- open / close ---------------------------------------------------- */

static eq_err pragma_int(struct eq_store *s, const char *sql, int *ret, struct eq_error *err)
{
	sqlite3_stmt *st = NULL;
	eq_err r = prepare(s, sql, &st, err);
	if (r == EQ_OK) {
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			*ret = sqlite3_column_int(st, 0);
		else
			r = db_fail(s, rc, "read header", err);
	}
	release(s, st);
	return r;
}

static eq_err schema_body(struct eq_store *s, void *ctx, struct eq_error *err)
{
	(void)ctx;
	int app = 0, version = 0, tables = 0;
	eq_err r = pragma_int(s, "PRAGMA application_id", &app, err);
	if (r == EQ_OK)
		r = pragma_int(s, "PRAGMA user_version", &version, err);
	if (r == EQ_OK)
		r = pragma_int(s, "SELECT count(*) FROM sqlite_master", &tables, err);
	if (r != EQ_OK)
		return r;
	if (app == 0 && version == 0 && tables == 0) {
		int rc = sqlite3_exec(s->db, schema_sql, NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			return db_fail(s, rc, "create schema", err);
		char *sql = eq_asprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", STORE_APPLICATION_ID,
					STORE_SCHEMA_VERSION);
		if (!sql)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
		eq_free(sql);
		if (rc != SQLITE_OK)
			return db_fail(s, rc, "write header", err);
		return EQ_OK;
	}
	if (app != STORE_APPLICATION_ID)
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "%s: not an eqota equivalence store", s->path);
	if (version > STORE_SCHEMA_VERSION)
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "%s: schema version %d is newer than this program's (%d)",
				    s->path, version, STORE_SCHEMA_VERSION);
	if (version < 1)
		return eq_error_set(err, EQ_ERR_PARSE, "%s: schema version %d is invalid", s->path, version);
	return EQ_OK;
}

/* Statements that cannot run inside a transaction, retried while busy. */
static eq_err exec_outside_txn(struct eq_store *s, const char *sql, const char *what, struct eq_error *err)
{
	double deadline = eq_now_s() + EQ_STORE_BUSY_TIMEOUT_S;
	for (;;) {
		s->busy = false;
		int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			return EQ_OK;
		eq_err r = db_fail(s, rc, what, err);
		if (!s->busy || eq_now_s() >= deadline)
			return r;
		sleep_ms(10);
	}
}

eq_err eq_store_open(const char *path, struct eq_store **ret, struct eq_error *err)
{
	if (!path || !*path)
		return eq_error_set(err, EQ_ERR_INVAL, "store path: missing");
	struct eq_store *s = eq_calloc(1, sizeof(*s));
	if (!s)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	s->path = eq_strdup(path);
	if (!s->path) {
		eq_free(s);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	eq_err r;
	int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		if (!s->db)
			r = eq_error_set(err, EQ_ERR_NOMEM, "%s: out of memory", path);
		else
			r = eq_error_set(err, EQ_ERR_IO, "%s: cannot open: %s", path, sqlite3_errmsg(s->db));
		goto fail;
	}
	(void)sqlite3_extended_result_codes(s->db, 1);
	(void)sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
	/* WAL lets readers (equiv get/list) run beside a writer; FULL makes a
	 * reported mapping durable before the publisher relies on it. */
	r = exec_outside_txn(s, "PRAGMA journal_mode=WAL", "set WAL mode", err);
	if (r == EQ_OK)
		r = exec_outside_txn(s, "PRAGMA synchronous=FULL", "set synchronous", err);
	if (r == EQ_OK)
		r = run_txn(s, true, schema_body, NULL, err);
	if (r != EQ_OK)
		goto fail;
	*ret = s;
	return EQ_OK;
fail:
	eq_store_close(s);
	return r;
}

void eq_store_close(struct eq_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < STMT_CACHE; i++)
		sqlite3_finalize(s->cache[i].st);
	sqlite3_close(s->db);
	eq_free(s->path);
	eq_free(s);
}

/*
 * The store decides which rebuilt packages devices skip, so whoever can
 * replace it can keep a security fix off every device: the folder is made
 * private, and an existing one others may write to is refused rather than
 * silently chmod'ed (the user may have made it so on purpose, e.g. a shared
 * build account). Missing parents get 0700 too, as the XDG base directory
 * spec asks.
 */
eq_err eqg_make_private_dir(const char *db_path, const char *what, const char *option, struct eq_error *err)
{
	EQ_AUTOFREE char *dir = eq_strdup(db_path);
	if (!dir)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	char *slash = strrchr(dir, '/');
	assert(slash && slash != dir);
	*slash = '\0';
	slash = strrchr(dir, '/');
	if (slash != dir) {
		*slash = '\0';
		eq_err r = eq_mkdir_p(dir, 0700, err);
		*slash = '/';
		if (r)
			return eq_error_prefix(err, r, "cannot create the default %s folder '%s'", what, dir);
	}
	if (mkdir(dir, 0700) == 0) {
		/* Exactly 0700 whatever the umask; it is our own new folder. */
		if (chmod(dir, 0700) != 0)
			return eq_error_errno(err, EQ_ERR_IO, "cannot chmod the default %s folder '%s'", what, dir);
		return EQ_OK;
	}
	if (errno != EEXIST)
		return eq_error_errno(err, EQ_ERR_IO, "cannot create the default %s folder '%s'", what, dir);
	struct stat st;
	if (stat(dir, &st) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot stat the default %s folder '%s'", what, dir);
	if (!S_ISDIR(st.st_mode))
		return eq_error_set(err, EQ_ERR_IO,
				    "the default %s folder '%s' exists and is not a folder: move it away or pass %s",
				    what, dir, option);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return eq_error_set(err, EQ_ERR_UNSAFE,
				    "the default %s folder '%s' is writable by others (mode %04o): "
				    "run 'chmod go-w %s' or pass %s",
				    what, dir, (unsigned)(st.st_mode & 07777), dir, option);
	return EQ_OK;
}

eq_err eqg_xdg_path(const char *xdg_var, const char *home_rel, const char *file, const char *what, const char *option,
		    char **ret, struct eq_error *err)
{
	const char *xdg = secure_getenv(xdg_var);
	char *p;
	/* The XDG spec says relative values are invalid and must be ignored. */
	if (xdg && xdg[0] == '/') {
		p = eq_asprintf("%s/eqota/%s", xdg, file);
	} else {
		const char *home = secure_getenv("HOME");
		struct passwd pw, *res = NULL;
		char buf[4096];
		if ((!home || home[0] != '/') && getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) == 0 && res &&
		    res->pw_dir && res->pw_dir[0] == '/')
			home = res->pw_dir;
		if (!home || home[0] != '/')
			return eq_error_set(err, EQ_ERR_NOTFOUND,
					    "no home directory for the default %s: set HOME or %s, or pass %s", what,
					    xdg_var, option);
		p = eq_asprintf("%s/%s/eqota/%s", home, home_rel, file);
	}
	if (!p)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	eq_err r = eqg_make_private_dir(p, what, option, err);
	if (r) {
		eq_free(p);
		return r;
	}
	*ret = p;
	return EQ_OK;
}

eq_err eq_store_default_path(char **ret_path, struct eq_error *err)
{
	return eqg_xdg_path("XDG_DATA_HOME", ".local/share", "equiv.db", "store", "--store", ret_path, err);
}

/* ---- report ---------------------------------------------------------- */

struct report_ctx {
	const char *method, *taskhash, *outhash, *proposed, *pn, *pv;
	char unihash[EQ_SHA256_HEX_LEN + 1];
	unsigned flags;
};

static eq_err report_body(struct eq_store *s, void *vctx, struct eq_error *err)
{
	struct report_ctx *c = vctx;
	c->flags = 0;
	const char *ins[] = {c->method, c->taskhash, c->outhash, c->pn, c->pv};
	int changes = 0;
	eq_err r = exec_stmt(s,
			     "INSERT OR IGNORE INTO outhashes(method, taskhash, outhash, created, pn, pv)"
			     " VALUES(?1, ?2, ?3, " NOW_SQL ", ?4, ?5)",
			     ins, 5, &changes, err);
	if (r != EQ_OK)
		return r;
	char found[EQ_SHA256_HEX_LEN + 1];
	bool have = false;
	if (changes > 0) {
		c->flags |= EQ_STORE_NEW_OUTHASH;
		const char *k3[] = {c->method, c->taskhash, c->outhash};
		r = query_text(s,
			       "SELECT unihash FROM unihashes WHERE method = ?1 AND taskhash = ?2 AND EXISTS ("
			       " SELECT 1 FROM outhashes WHERE method = ?1 AND taskhash = ?2 AND outhash <> ?3)",
			       k3, 3, found, sizeof(found), &have, err);
		if (r != EQ_OK)
			return r;
		if (have)
			c->flags |= EQ_STORE_OUTHASH_CHANGED;
		/* The oldest other taskhash with this output that has a unihash. */
		r = query_text(s,
			       "SELECT u.unihash FROM outhashes o JOIN unihashes u"
			       " ON u.method = o.method AND u.taskhash = o.taskhash"
			       " WHERE o.method = ?1 AND o.outhash = ?3 AND o.taskhash <> ?2"
			       " ORDER BY o.id LIMIT 1",
			       k3, 3, found, sizeof(found), &have, err);
		if (r != EQ_OK)
			return r;
		const char *map[] = {c->method, c->taskhash, have ? found : c->proposed};
		r = exec_stmt(s, "INSERT OR IGNORE INTO unihashes(method, taskhash, unihash) VALUES(?1, ?2, ?3)", map,
			      3, &changes, err);
		if (r != EQ_OK)
			return r;
		if (changes > 0)
			c->flags |= EQ_STORE_NEW_MAPPING | (have ? EQ_STORE_INHERITED : 0u);
	}
	const char *k2[] = {c->method, c->taskhash};
	r = query_text(s, "SELECT unihash FROM unihashes WHERE method = ?1 AND taskhash = ?2", k2, 2, c->unihash,
		       sizeof(c->unihash), &have, err);
	if (r != EQ_OK)
		return r;
	/* hashserv answers with the proposal when no mapping exists (a row
	 * whose mapping was removed); keep that for compatibility. */
	if (!have)
		memcpy(c->unihash, c->proposed, EQ_SHA256_HEX_LEN + 1);
	return EQ_OK;
}

eq_err eq_store_report(struct eq_store *s, const char *method, const char *taskhash, const char *outhash,
		       const char *proposed_unihash, const char *pn, const char *pv,
		       char ret_unihash[EQ_SHA256_HEX_LEN + 1], unsigned *ret_flags, struct eq_error *err)
{
	if (!proposed_unihash)
		proposed_unihash = taskhash;
	eq_err r = check_method(method, err);
	if (r == EQ_OK)
		r = check_hash("taskhash", taskhash, err);
	if (r == EQ_OK)
		r = check_hash("outhash", outhash, err);
	if (r == EQ_OK)
		r = check_hash("unihash", proposed_unihash, err);
	if (r == EQ_OK)
		r = check_meta("pn", pn, err);
	if (r == EQ_OK)
		r = check_meta("pv", pv, err);
	if (r != EQ_OK)
		return r;
	struct report_ctx c = {.method = method,
			       .taskhash = taskhash,
			       .outhash = outhash,
			       .proposed = proposed_unihash,
			       .pn = pn,
			       .pv = pv};
	r = run_txn(s, true, report_body, &c, err);
	if (r != EQ_OK)
		return r;
	memcpy(ret_unihash, c.unihash, sizeof(c.unihash));
	if (ret_flags)
		*ret_flags = c.flags;
	return EQ_OK;
}

/* ---- report-equiv / get ---------------------------------------------- */

struct map_ctx {
	const char *method, *taskhash, *unihash;
	char out[EQ_SHA256_HEX_LEN + 1];
	bool found;
};

static eq_err equiv_body(struct eq_store *s, void *vctx, struct eq_error *err)
{
	struct map_ctx *c = vctx;
	const char *map[] = {c->method, c->taskhash, c->unihash};
	eq_err r = exec_stmt(s, "INSERT OR IGNORE INTO unihashes(method, taskhash, unihash) VALUES(?1, ?2, ?3)", map, 3,
			     NULL, err);
	if (r != EQ_OK)
		return r;
	return query_text(s, "SELECT unihash FROM unihashes WHERE method = ?1 AND taskhash = ?2", map, 2, c->out,
			  sizeof(c->out), &c->found, err);
}

eq_err eq_store_report_equiv(struct eq_store *s, const char *method, const char *taskhash, const char *unihash,
			     char ret_unihash[EQ_SHA256_HEX_LEN + 1], struct eq_error *err)
{
	eq_err r = check_method(method, err);
	if (r == EQ_OK)
		r = check_hash("taskhash", taskhash, err);
	if (r == EQ_OK)
		r = check_hash("unihash", unihash, err);
	if (r != EQ_OK)
		return r;
	struct map_ctx c = {.method = method, .taskhash = taskhash, .unihash = unihash};
	r = run_txn(s, true, equiv_body, &c, err);
	if (r != EQ_OK)
		return r;
	if (!c.found)
		return eq_error_set(err, EQ_ERR_STATE, "%s: mapping vanished after insert", s->path);
	memcpy(ret_unihash, c.out, sizeof(c.out));
	return EQ_OK;
}

static eq_err get_body(struct eq_store *s, void *vctx, struct eq_error *err)
{
	struct map_ctx *c = vctx;
	const char *k[] = {c->method, c->taskhash};
	return query_text(s, "SELECT unihash FROM unihashes WHERE method = ?1 AND taskhash = ?2", k, 2, c->out,
			  sizeof(c->out), &c->found, err);
}

eq_err eq_store_get(struct eq_store *s, const char *method, const char *taskhash,
		    char ret_unihash[EQ_SHA256_HEX_LEN + 1], struct eq_error *err)
{
	eq_err r = check_method(method, err);
	if (r == EQ_OK)
		r = check_hash("taskhash", taskhash, err);
	if (r != EQ_OK)
		return r;
	struct map_ctx c = {.method = method, .taskhash = taskhash};
	r = run_txn(s, false, get_body, &c, err);
	if (r != EQ_OK)
		return r;
	if (!c.found)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "taskhash %s: no unihash under method '%s'", taskhash,
				    method);
	memcpy(ret_unihash, c.out, sizeof(c.out));
	return EQ_OK;
}

/* ---- list ------------------------------------------------------------ */

struct list_ctx {
	const char *method;
	eq_store_list_fn fn;
	void *ctx;
};

static const char *col(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

static eq_err list_body(struct eq_store *s, void *vctx, struct eq_error *err)
{
	struct list_ctx *c = vctx;
	sqlite3_stmt *st = NULL;
	eq_err r = prepare(s,
			   "SELECT u.method, u.taskhash, u.unihash, o.outhash, o.pn, o.pv, o.created"
			   " FROM unihashes u LEFT JOIN outhashes o ON o.id = ("
			   "  SELECT min(id) FROM outhashes WHERE method = u.method AND taskhash = u.taskhash)"
			   " WHERE ?1 IS NULL OR u.method = ?1 ORDER BY u.method, u.id",
			   &st, err);
	if (r == EQ_OK)
		r = bind_texts(s, st, &c->method, 1, err);
	while (r == EQ_OK) {
		int rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			break;
		if (rc != SQLITE_ROW) {
			r = db_fail(s, rc, "read", err);
			break;
		}
		struct eq_store_entry e = {
			.method = col(st, 0),
			.taskhash = col(st, 1),
			.unihash = col(st, 2),
			.outhash = col(st, 3),
			.pn = col(st, 4),
			.pv = col(st, 5),
			.created = col(st, 6),
		};
		if (!e.method || !e.taskhash || !e.unihash) {
			r = eq_error_set(err, EQ_ERR_PARSE, "%s: malformed row", s->path);
			break;
		}
		r = c->fn(c->ctx, &e, err);
	}
	release(s, st);
	return r;
}

eq_err eq_store_list(struct eq_store *s, const char *method, eq_store_list_fn fn, void *ctx, struct eq_error *err)
{
	if (method) {
		eq_err r = check_method(method, err);
		if (r != EQ_OK)
			return r;
	}
	struct list_ctx c = {.method = method, .fn = fn, .ctx = ctx};
	return run_txn(s, false, list_body, &c, err);
}

/* ---- published ------------------------------------------------------- */

struct pub_ctx {
	const char *method, *unihash;
	const struct eq_store_published *in;
	struct eq_store_published out;
	bool found, inserted;
};

static eq_err pub_read(struct eq_store *s, struct pub_ctx *c, struct eq_error *err)
{
	sqlite3_stmt *st = NULL;
	const char *k[] = {c->method, c->unihash};
	eq_err r = prepare(s,
			   "SELECT payload_sha256, payload_size, object_sha256, object_size FROM published"
			   " WHERE method = ?1 AND unihash = ?2",
			   &st, err);
	if (r == EQ_OK)
		r = bind_texts(s, st, k, 2, err);
	if (r == EQ_OK) {
		int rc = sqlite3_step(st);
		c->found = false;
		if (rc == SQLITE_ROW) {
			const char *ps = col(st, 0), *os = col(st, 2);
			sqlite3_int64 pz = sqlite3_column_int64(st, 1), oz = sqlite3_column_int64(st, 3);
			if (!ps || !os || !eq_is_sha256_hex(ps) || !eq_is_sha256_hex(os) || pz < 0 || oz < 0) {
				r = eq_error_set(err, EQ_ERR_PARSE, "%s: malformed published row for unihash %s",
						 s->path, c->unihash);
			} else {
				memcpy(c->out.payload_sha256, ps, EQ_SHA256_HEX_LEN + 1);
				memcpy(c->out.object_sha256, os, EQ_SHA256_HEX_LEN + 1);
				c->out.payload_size = (uint64_t)pz;
				c->out.object_size = (uint64_t)oz;
				c->found = true;
			}
		} else if (rc != SQLITE_DONE) {
			r = db_fail(s, rc, "read", err);
		}
	}
	release(s, st);
	return r;
}

static eq_err pub_get_body(struct eq_store *s, void *vctx, struct eq_error *err)
{
	return pub_read(s, vctx, err);
}

static eq_err pub_set_body(struct eq_store *s, void *vctx, struct eq_error *err)
{
	struct pub_ctx *c = vctx;
	sqlite3_stmt *st = NULL;
	const char *k[] = {c->method, c->unihash, c->in->payload_sha256, c->in->object_sha256};
	eq_err r = prepare(s,
			   "INSERT OR IGNORE INTO published(method, unihash, payload_sha256, object_sha256,"
			   " payload_size, object_size, created) VALUES(?1, ?2, ?3, ?4, ?5, ?6, " NOW_SQL ")",
			   &st, err);
	if (r == EQ_OK)
		r = bind_texts(s, st, k, 4, err);
	if (r == EQ_OK) {
		int rc = sqlite3_bind_int64(st, 5, (sqlite3_int64)c->in->payload_size);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(st, 6, (sqlite3_int64)c->in->object_size);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(st);
		if (rc != SQLITE_DONE)
			r = db_fail(s, rc, "write", err);
		else
			c->inserted = sqlite3_changes(s->db) > 0;
	}
	release(s, st);
	if (r != EQ_OK)
		return r;
	r = pub_read(s, c, err);
	if (r == EQ_OK && !c->found)
		r = eq_error_set(err, EQ_ERR_STATE, "%s: published row vanished after insert", s->path);
	return r;
}

eq_err eq_store_get_published(struct eq_store *s, const char *method, const char *unihash,
			      struct eq_store_published *ret, struct eq_error *err)
{
	eq_err r = check_method(method, err);
	if (r == EQ_OK)
		r = check_hash("unihash", unihash, err);
	if (r != EQ_OK)
		return r;
	struct pub_ctx c = {.method = method, .unihash = unihash};
	r = run_txn(s, false, pub_get_body, &c, err);
	if (r != EQ_OK)
		return r;
	if (!c.found)
		return eq_error_set(err, EQ_ERR_NOTFOUND, "unihash %s: nothing published under method '%s'", unihash,
				    method);
	*ret = c.out;
	return EQ_OK;
}

eq_err eq_store_set_published(struct eq_store *s, const char *method, const char *unihash,
			      const struct eq_store_published *pub, struct eq_store_published *ret, bool *ret_inserted,
			      struct eq_error *err)
{
	eq_err r = check_method(method, err);
	if (r == EQ_OK)
		r = check_hash("unihash", unihash, err);
	if (r == EQ_OK)
		r = check_hash("payload_sha256", pub->payload_sha256, err);
	if (r == EQ_OK)
		r = check_hash("object_sha256", pub->object_sha256, err);
	if (r != EQ_OK)
		return r;
	if (pub->payload_size > (uint64_t)INT64_MAX || pub->object_size > (uint64_t)INT64_MAX)
		return eq_error_set(err, EQ_ERR_INVAL, "unihash %s: payload or object size out of range", unihash);
	struct pub_ctx c = {.method = method, .unihash = unihash, .in = pub};
	r = run_txn(s, true, pub_set_body, &c, err);
	if (r != EQ_OK)
		return r;
	*ret = c.out;
	if (ret_inserted)
		*ret_inserted = c.inserted;
	return EQ_OK;
}

/* ---- output owners ---------------------------------------------------- */

struct owner_ctx {
	const char *method, *outhash, *pn;
	bool found;
};

static eq_err owner_body(struct eq_store *s, void *vctx, struct eq_error *err)
{
	struct owner_ctx *c = vctx;
	sqlite3_stmt *st = NULL;
	const char *k[] = {c->method, c->outhash, c->pn};
	eq_err r =
		prepare(s, "SELECT 1 FROM outhashes WHERE method = ?1 AND outhash = ?2 AND pn = ?3 LIMIT 1", &st, err);
	if (r == EQ_OK)
		r = bind_texts(s, st, k, 3, err);
	if (r == EQ_OK) {
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			c->found = true;
		else if (rc != SQLITE_DONE)
			r = db_fail(s, rc, "read", err);
	}
	release(s, st);
	return r;
}

eq_err eq_store_output_of(struct eq_store *s, const char *method, const char *outhash, const char *pn, bool *ret_found,
			  struct eq_error *err)
{
	eq_err r = check_method(method, err);
	if (r == EQ_OK)
		r = check_hash("outhash", outhash, err);
	if (r == EQ_OK)
		r = check_meta("pn", pn, err);
	if (r != EQ_OK)
		return r;
	struct owner_ctx c = {.method = method, .outhash = outhash, .pn = pn};
	r = run_txn(s, false, owner_body, &c, err);
	if (r == EQ_OK)
		*ret_found = c.found;
	return r;
}
