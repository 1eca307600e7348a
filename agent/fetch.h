/*
 * The repository client of eq_agent (fetch.c, libcurl), private to the
 * module and reached by its tests.
 */
#ifndef EQ_AGENT_FETCH_H
#define EQ_AGENT_FETCH_H

#include <eq/agent.h>

struct eq_fetcher;

/*
 * Creates a fetcher for the repository of @cfg. Partial and finished
 * downloads live in @download_dir (created if missing). Free with
 * eq_fetcher_free().
 */
eq_err eq_fetcher_new(const struct eq_config *cfg, const char *download_dir, struct eq_fetcher **ret,
		      struct eq_error *err) EQ_MUST_CHECK;
void eq_fetcher_free(struct eq_fetcher *f);
void eq_fetcher_set_progress(struct eq_fetcher *f, eq_progress_fn fn, void *ctx);
/* Added. @flag (set from a signal handler, may be NULL) stops a transfer or
 * a retry wait within about a second: the call fails with EQ_ERR_STOPPED
 * and an object's .part stays, to be resumed. @flag must outlive @f. */
void eq_fetcher_set_stop(struct eq_fetcher *f, const volatile sig_atomic_t *flag);
void eq_fetcher_stats(const struct eq_fetcher *f, struct eq_fetch_stats *ret);

/*
 * Fetches boards/<board>/<channel>/manifest.json and its .sig. Conditional
 * GET: the validators (ETag, Last-Modified) of the last successful fetch are
 * kept in the download dir; when the server answers 304, *ret_not_modified
 * is true and nothing else is returned. Otherwise the exact bytes of both
 * files (each capped at its EQ_MANIFEST_*_MAX_BYTES) are returned; the caller
 * frees them with eq_free() and must verify before parsing. The validators
 * are remembered only once eq_fetch_manifest_commit() is called (after the
 * caller verified the bytes), so a rejected manifest is fetched again.
 */
eq_err eq_fetch_manifest(struct eq_fetcher *f, bool *ret_not_modified, uint8_t **ret_manifest, size_t *ret_manifest_len,
			 uint8_t **ret_sig, size_t *ret_sig_len, struct eq_error *err) EQ_MUST_CHECK;
eq_err eq_fetch_manifest_commit(struct eq_fetcher *f, struct eq_error *err) EQ_MUST_CHECK;
/*
 * Fetches release @number's manifest and .sig from
 * boards/<board>/<channel>/releases/<number>/ (unconditionally; the caller
 * frees both with eq_free() and verifies before parsing). EQ_ERR_NOTFOUND
 * when the repository no longer keeps that release.
 */
eq_err eq_fetch_release_manifest(struct eq_fetcher *f, uint64_t number, uint8_t **ret_manifest,
				 size_t *ret_manifest_len, uint8_t **ret_sig, size_t *ret_sig_len,
				 struct eq_error *err) EQ_MUST_CHECK;
/*
 * GETs the file @rel of the repository (a root, a timestamp, a manifest of
 * root mode) into memory, at most @max bytes (EQ_ERR_LIMIT past them,
 * without reading on), with the fetcher's retries and deadlines.
 * EQ_ERR_NOTFOUND for HTTP 404/410 or a missing file: URL. The caller
 * frees *ret with eq_free() and verifies before parsing.
 */
eq_err eq_fetch_file(struct eq_fetcher *f, const char *rel, size_t max, uint8_t **ret, size_t *ret_len,
		     struct eq_error *err) EQ_MUST_CHECK;
/*
 * eq_fetch_file() made conditional: a non-empty @etag goes out as
 * If-None-Match, and a 304 answer sets *ret_not_modified with nothing in
 * *ret (NULL, length 0). Otherwise *ret_etag (when not NULL) receives the
 * answer's ETag, or NULL when it had none; the caller frees it with
 * eq_free(), and should keep it only once it has verified the bytes.
 */
/*
 * Whether the file @rel is in the repository, by a HEAD request: EQ_OK
 * when it is (and would fit @max, if the server says its length),
 * EQ_ERR_NOTFOUND for 404/410, other codes as eq_fetch_file(). For probes
 * that usually find nothing (the next root version): a 404 to a GET
 * carries the server's error page, which a HEAD does not.
 */
eq_err eq_fetch_exists(struct eq_fetcher *f, const char *rel, size_t max, struct eq_error *err) EQ_MUST_CHECK;
eq_err eq_fetch_file_cond(struct eq_fetcher *f, const char *rel, size_t max, const char *etag, bool *ret_not_modified,
			  uint8_t **ret, size_t *ret_len, char **ret_etag, struct eq_error *err) EQ_MUST_CHECK;
/* Forgets the validators so that the next eq_fetch_manifest() is a full GET. */
void eq_fetch_manifest_forget(struct eq_fetcher *f);

/*
 * Downloads repository file @rel_path (e.g. "objects/<sha>") which must have
 * exactly @size bytes with SHA-256 @sha256_hex. Data goes to
 * "<download_dir>/<sha256_hex>.part"; an existing .part is continued with an
 * HTTP Range request. A server sending more than @size bytes is cut off and
 * the download rejected (EQ_ERR_LIMIT); a hash mismatch removes the file
 * (EQ_ERR_VERIFY). On success the file is renamed to
 * "<download_dir>/<sha256_hex>" and *ret_path (malloc'ed, caller frees) names
 * it; an already complete and verified file is returned without a request.
 */
eq_err eq_fetch_object(struct eq_fetcher *f, const char *rel_path, const char *sha256_hex, uint64_t size,
		       char **ret_path, struct eq_error *err) EQ_MUST_CHECK;

#endif
