/*
 * The publisher's input cache: what reading a package file taught (its
 * identity, payload hash and size, the payload rules' findings, the path
 * table's records), keyed by the file's identity, so that republishing an
 * unchanged release reads no package (docs/internals/publish.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>


#include "gen_priv.h"

/* Bumped whenever what is cached, or how payloads are made or checked,
 * changes: older entries then simply miss. */
#define INPUT_CACHE_FORMAT 1u

/* A file changed this recently may change again within the timestamps'
 * granularity without its key changing (git's "racy clean"): not stored. */
#define INPUT_STABLE_S 2

/* Entries not written again for this long are dropped when the cache is
 * opened, so it holds about what the last releases read. */
#define INPUT_KEEP_DAYS 60

#define INPUT_BUSY_MS 30000

/* ---- small containers and the byte format ---------------------------------- */

eq_err eqg_strv_add(struct eqg_strv *s, const char *str, struct eq_error *err)
{
	if (s->n == s->cap) {
		size_t c = s->cap ? s->cap * 2 : 8;
		char **v = eq_realloc(s->v, c * sizeof(*v));
		if (!v)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		s->v = v;
		s->cap = c;
	}
	if (!(s->v[s->n] = eq_strdup(str)))
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	s->n++;
	return EQ_OK;
}

void eqg_strv_done(struct eqg_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		eq_free(s->v[i]);
	eq_free(s->v);
	memset(s, 0, sizeof(*s));
}

eq_err eqg_put_u64(struct eq_buf *b, uint64_t v, struct eq_error *err)
{
	uint8_t d[8];
	for (int i = 0; i < 8; i++)
		d[i] = (uint8_t)(v >> (8 * i));
	return eq_buf_append(b, d, sizeof(d), err);
}

/* A NULL string is stored as length UINT64_MAX. */
eq_err eqg_put_str(struct eq_buf *b, const char *s, struct eq_error *err)
{
	size_t len = s ? strlen(s) : 0;
	eq_err r = eqg_put_u64(b, s ? len : UINT64_MAX, err);
	return r || !len ? r : eq_buf_append(b, s, len, err);
}

uint64_t eqg_get_u64(struct eqg_unpack *u)
{
	if (u->bad || u->n < 8) {
		u->bad = true;
		return 0;
	}
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)u->p[i] << (8 * i);
	u->p += 8;
	u->n -= 8;
	return v;
}

void eqg_get_bytes(struct eqg_unpack *u, void *out, size_t len)
{
	if (u->bad || u->n < len) {
		u->bad = true;
		memset(out, 0, len);
		return;
	}
	memcpy(out, u->p, len);
	u->p += len;
	u->n -= len;
}

char *eqg_get_str(struct eqg_unpack *u)
{
	uint64_t len = eqg_get_u64(u);
	if (u->bad || len == UINT64_MAX)
		return NULL;
	if (len > u->n || memchr(u->p, '\0', (size_t)len)) {
		u->bad = true;
		return NULL;
	}
	char *s = eq_malloc((size_t)len + 1);
	if (!s) {
		u->bad = u->nomem = true;
		return NULL;
	}
	memcpy(s, u->p, (size_t)len);
	s[len] = '\0';
	u->p += len;
	u->n -= len;
	return s;
}

/* ---- entries --------------------------------------------------------------- */

void eqg_input_done(struct eqg_input *in)
{
	eq_free(in->name);
	eq_free(in->version);
	eq_free(in->arch);
	eqg_strv_done(&in->special);
	eqg_strv_done(&in->removed);
	eqg_path_recs_free(in->recs);
	memset(in, 0, sizeof(*in));
}

static eq_err put_strv(struct eq_buf *b, const struct eqg_strv *s, struct eq_error *err)
{
	eq_err r = eqg_put_u64(b, s->n, err);
	for (size_t i = 0; i < s->n && !r; i++)
		r = eqg_put_str(b, s->v[i], err);
	return r;
}

static void get_strv(struct eqg_unpack *u, struct eqg_strv *s)
{
	uint64_t n = eqg_get_u64(u);
	if (n > u->n / 8) /* each string takes at least its length */
		u->bad = true;
	for (uint64_t i = 0; i < n && !u->bad; i++) {
		EQ_AUTOFREE char *str = eqg_get_str(u);
		if (str && eqg_strv_add(s, str, NULL))
			u->nomem = true;
		if (!str || u->nomem)
			u->bad = true;
	}
}

static eq_err pack_input(const struct eqg_input *in, struct eq_buf *b, struct eq_error *err)
{
	eq_err r = eqg_put_u64(b, INPUT_CACHE_FORMAT, err);
	if (!r)
		r = eqg_put_str(b, in->name, err);
	if (!r)
		r = eqg_put_str(b, in->version, err);
	if (!r)
		r = eqg_put_str(b, in->arch, err);
	if (!r)
		r = eq_buf_append(b, in->payload_sha256, EQ_SHA256_LEN, err);
	if (!r)
		r = eqg_put_u64(b, in->payload_size, err);
	if (!r)
		r = put_strv(b, &in->special, err);
	if (!r)
		r = put_strv(b, &in->removed, err);
	if (!r)
		r = eqg_path_recs_pack(in->recs, b, err);
	return r;
}

/* 1: decoded into @in; 0: the bytes are not an entry; -1: out of memory. */
static int unpack_input(const void *data, size_t len, struct eqg_input *in)
{
	struct eqg_unpack u = {data, len, false, false};
	memset(in, 0, sizeof(*in));
	if (eqg_get_u64(&u) != INPUT_CACHE_FORMAT)
		return 0;
	in->name = eqg_get_str(&u);
	in->version = eqg_get_str(&u);
	in->arch = eqg_get_str(&u);
	eqg_get_bytes(&u, in->payload_sha256, EQ_SHA256_LEN);
	in->payload_size = eqg_get_u64(&u);
	get_strv(&u, &in->special);
	get_strv(&u, &in->removed);
	if (!u.bad && !eqg_path_recs_unpack(&u, &in->recs))
		u.bad = true;
	if (u.bad || u.n || !in->name || !in->version || !in->arch) {
		eqg_input_done(in);
		return u.nomem ? -1 : 0;
	}
	return 1;
}

/* ---- keys ------------------------------------------------------------------ */

struct eqg_input_cache {
	sqlite3 *db;
	sqlite3_stmt *get, *put;
	char *path;
	/* This program's version and its executable file: a rebuilt eqota-gen
	 * may make or check payloads otherwise. */
	uint8_t build[EQ_SHA256_LEN];
};

eq_err eqg_input_cache_key(const struct eqg_input_cache *c, const char *file, const uint8_t context[EQ_SHA256_LEN],
			   uint8_t key[EQ_SHA256_LEN], bool *ret_stable, struct eq_error *err)
{
	EQ_AUTOFREE char *abs = realpath(file, NULL);
	if (!abs)
		return eq_error_errno(err, EQ_ERR_IO, "cannot resolve '%s'", file);
	struct stat st;
	if (stat(abs, &st) != 0)
		return eq_error_errno(err, EQ_ERR_IO, "cannot stat '%s'", file);
	/* ctime cannot be set from user space: a file rewritten to the same
	 * size with its mtime put back still gets a new key. */
	int64_t f[] = {
		(int64_t)st.st_dev,          (int64_t)st.st_ino,          (int64_t)st.st_size,
		(int64_t)st.st_mtim.tv_sec,  (int64_t)st.st_mtim.tv_nsec, (int64_t)st.st_ctim.tv_sec,
		(int64_t)st.st_ctim.tv_nsec,
	};
	static const char tag[] = "eqota-input-v1";
	uint32_t format = INPUT_CACHE_FORMAT;
	struct eq_sha256 s;
	eq_sha256_init(&s);
	eq_sha256_update(&s, tag, sizeof(tag));
	eq_sha256_update(&s, &format, sizeof(format));
	eq_sha256_update(&s, c->build, sizeof(c->build));
	eq_sha256_update(&s, context, EQ_SHA256_LEN);
	eq_sha256_update(&s, abs, strlen(abs) + 1);
	eq_sha256_update(&s, f, sizeof(f));
	eq_sha256_final(&s, key);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	*ret_stable =
		st.st_ctim.tv_sec + INPUT_STABLE_S < now.tv_sec && st.st_mtim.tv_sec + INPUT_STABLE_S < now.tv_sec;
	return EQ_OK;
}

/* ---- the database ---------------------------------------------------------- */

void eqg_input_cache_close(struct eqg_input_cache *c)
{
	if (!c)
		return;
	sqlite3_finalize(c->get);
	sqlite3_finalize(c->put);
	sqlite3_close(c->db);
	eq_free(c->path);
	eq_free(c);
}

static eq_err db_err(struct eqg_input_cache *c, const char *what, struct eq_error *err)
{
	return eq_error_set(err, EQ_ERR_IO, "input cache '%s': %s: %s", c->path, what, sqlite3_errmsg(c->db));
}

eq_err eqg_input_cache_open(const char *path, struct eqg_input_cache **ret, struct eq_error *err)
{
	struct eqg_input_cache *c = eq_calloc(1, sizeof(*c));
	if (!c || !(c->path = eq_strdup(path))) {
		eq_free(c);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	eq_err r;
	struct stat st;
	if (stat("/proc/self/exe", &st) != 0)
		memset(&st, 0, sizeof(st));
	int64_t exe[] = {(int64_t)st.st_dev, (int64_t)st.st_ino, (int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec,
			 (int64_t)st.st_mtim.tv_nsec};
	struct eq_sha256 s;
	eq_sha256_init(&s);
	eq_sha256_update(&s, EQ_GEN_VERSION, sizeof(EQ_GEN_VERSION));
	eq_sha256_update(&s, exe, sizeof(exe));
	eq_sha256_final(&s, c->build);
	if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		r = c->db ? db_err(c, "cannot open", err) : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		goto out;
	}
	(void)sqlite3_busy_timeout(c->db, INPUT_BUSY_MS);
	/* A lost cache costs one slower publish, never a wrong one: no syncs. */
	static const char schema[] = "PRAGMA journal_mode=WAL;"
				     "PRAGMA synchronous=OFF;"
				     "CREATE TABLE IF NOT EXISTS inputs("
				     " key BLOB PRIMARY KEY, value BLOB NOT NULL, written INTEGER NOT NULL);";
	if (sqlite3_exec(c->db, schema, NULL, NULL, NULL) != SQLITE_OK) {
		r = db_err(c, "cannot set up", err);
		goto out;
	}
	char sql[128];
	snprintf(sql, sizeof(sql), "DELETE FROM inputs WHERE written < %lld",
		 (long long)time(NULL) - INPUT_KEEP_DAYS * 86400LL);
	if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		r = db_err(c, "cannot drop old entries", err);
		goto out;
	}
	if (sqlite3_prepare_v2(c->db, "SELECT value FROM inputs WHERE key = ?1", -1, &c->get, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db, "INSERT OR REPLACE INTO inputs(key, value, written) VALUES(?1, ?2, ?3)", -1,
			       &c->put, NULL) != SQLITE_OK) {
		r = db_err(c, "cannot prepare", err);
		goto out;
	}
	*ret = c;
	return EQ_OK;
out:
	eqg_input_cache_close(c);
	return r;
}

eq_err eqg_input_cache_default_path(char **ret, struct eq_error *err)
{
	/* Whoever can write the cache chooses what a package file is said to
	 * contain: private, as the store. */
	return eqg_xdg_path("XDG_CACHE_HOME", ".cache", "inputs.db", "cache", "--cache", ret, err);
}

eq_err eqg_input_cache_get(struct eqg_input_cache *c, const uint8_t key[EQ_SHA256_LEN], struct eqg_input *ret,
			   bool *ret_hit, struct eq_error *err)
{
	int got = 0;
	sqlite3_reset(c->get);
	if (sqlite3_bind_blob(c->get, 1, key, EQ_SHA256_LEN, SQLITE_STATIC) == SQLITE_OK &&
	    sqlite3_step(c->get) == SQLITE_ROW) {
		const void *v = sqlite3_column_blob(c->get, 0);
		int n = sqlite3_column_bytes(c->get, 0);
		got = v && n > 0 ? unpack_input(v, (size_t)n, ret) : 0;
		if (got == 0)
			eq_log(EQ_LOG_DEBUG, "input cache '%s': an entry does not decode, ignored", c->path);
	}
	sqlite3_reset(c->get);
	*ret_hit = got == 1;
	return got < 0 ? eq_error_set(err, EQ_ERR_NOMEM, "out of memory") : EQ_OK;
}

eq_err eqg_input_cache_put(struct eqg_input_cache *c, const uint8_t key[EQ_SHA256_LEN], const struct eqg_input *in,
			   struct eq_error *err)
{
	struct eq_buf b;
	eq_buf_init(&b, 256u * 1024 * 1024);
	eq_err r = pack_input(in, &b, err);
	if (!r) {
		sqlite3_reset(c->put);
		if (sqlite3_bind_blob(c->put, 1, key, EQ_SHA256_LEN, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_blob64(c->put, 2, b.data, b.len, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_int64(c->put, 3, (sqlite3_int64)time(NULL)) != SQLITE_OK ||
		    sqlite3_step(c->put) != SQLITE_DONE)
			r = db_err(c, "cannot write", err);
		sqlite3_reset(c->put);
	}
	eq_buf_done(&b);
	return r;
}

eq_err eqg_input_cache_begin(struct eqg_input_cache *c, struct eq_error *err)
{
	return sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? EQ_OK
										     : db_err(c, "cannot begin", err);
}

eq_err eqg_input_cache_commit(struct eqg_input_cache *c, struct eq_error *err)
{
	return sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? EQ_OK : db_err(c, "cannot commit", err);
}
