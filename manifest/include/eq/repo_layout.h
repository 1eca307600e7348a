/*
 * eq_layout: where each file of a repository lives. The layout is the
 * protocol between the publisher (eqota-gen writes these paths) and the
 * device (the agent fetches them), so both build every path here and
 * nowhere else:
 *
 *   root/<N>.root.json (+ .sig)                the root of trust, version N >= 1
 *   objects/<sha256>                           a package's stored object
 *   deltas/<from>-<to>                         a delta between two payloads
 *   boards/<board>/<channel>/manifest.json     the current release (+ .sig,
 *                                              .sha256, .zst companions)
 *   boards/<board>/<channel>/manifest-deltas/<from>-<to>.delta
 *   boards/<board>/<channel>/timestamp.json    (+ .sig)
 *   boards/<board>/<channel>/publisher-history the publisher's own index
 *   boards/<board>/<channel>/releases/<N>/     every release kept, same files
 *
 * Every function takes @top, the repository's folder or URL, and returns
 * "<top>/<path>"; with @top NULL it returns the path relative to the top,
 * as the agent's fetcher wants it. The result is allocated (eq_free) and
 * *@ret is NULL on error.
 *
 * Board and channel names and hashes often come from the network or a
 * command line: each is checked before it becomes a path component, so no
 * path returned here can leave the repository. A name that fails is
 * EQ_ERR_INVAL with the reason, a hash that fails EQ_ERR_INVAL too.
 */
#ifndef EQ_REPO_LAYOUT_H
#define EQ_REPO_LAYOUT_H

#include <stdint.h>

#include <eq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The top-level folders of a repository. */
#define EQ_LAYOUT_ROOT_DIR "root"
#define EQ_LAYOUT_OBJECTS_DIR "objects"
#define EQ_LAYOUT_DELTAS_DIR "deltas"
#define EQ_LAYOUT_BOARDS_DIR "boards"

/* The files of a channel folder and of each of its release folders. */
enum eq_layout_file {
	EQ_LAYOUT_DIR,             /* the folder itself */
	EQ_LAYOUT_MANIFEST,        /* manifest.json */
	EQ_LAYOUT_MANIFEST_SIG,    /* manifest.json.sig */
	EQ_LAYOUT_MANIFEST_SHA256, /* manifest.json.sha256: the cheap "has it changed" pointer */
	EQ_LAYOUT_MANIFEST_ZST,    /* manifest.json.zst */
	EQ_LAYOUT_MANIFEST_DELTAS, /* manifest-deltas/ */
	EQ_LAYOUT_TIMESTAMP,       /* timestamp.json (channel folder only) */
	EQ_LAYOUT_TIMESTAMP_SIG,   /* timestamp.json.sig (channel folder only) */
	EQ_LAYOUT_RELEASES,        /* releases/ (channel folder only) */
	EQ_LAYOUT_HISTORY,         /* publisher-history (channel folder only) */
	EQ_LAYOUT_FILE_COUNT
};

/*
 * NULL when @name may be a board or channel name (1 to
 * EQ_MANIFEST_NAME_MAX of A-Z a-z 0-9 . _ -, starting with a letter or
 * digit, so never "." or ".."), else why not.
 */
EQ_API const char *eq_layout_check_name(const char *name);

/* boards/<board>/<channel>[/<file>] */
EQ_API eq_err eq_layout_channel(const char *top, const char *board, const char *channel, enum eq_layout_file file,
				char **ret, struct eq_error *err) EQ_MUST_CHECK;

/* boards/<board>/<channel>/releases/<number>[/<file>]; only the
 * manifest's files live in a release folder. Numbers cannot leave the
 * repository, so whether one is in use is the caller's business. */
EQ_API eq_err eq_layout_release(const char *top, const char *board, const char *channel, uint64_t number,
				enum eq_layout_file file, char **ret, struct eq_error *err) EQ_MUST_CHECK;

/* boards/<board>/<channel>/manifest-deltas/<from>-<to>.delta, from the
 * manifest with SHA-256 @from_sha256 to the one with @to_sha256. */
EQ_API eq_err eq_layout_manifest_delta(const char *top, const char *board, const char *channel, const char *from_sha256,
				       const char *to_sha256, char **ret, struct eq_error *err) EQ_MUST_CHECK;

/* root/<version>.root.json (versions start at 1). */
EQ_API eq_err eq_layout_root(const char *top, uint64_t version, char **ret, struct eq_error *err) EQ_MUST_CHECK;

/* objects/<sha256> */
EQ_API eq_err eq_layout_object(const char *top, const char *sha256, char **ret, struct eq_error *err) EQ_MUST_CHECK;

/* deltas/<from>-<to>: from payload @from_sha256 to payload @to_sha256. */
EQ_API eq_err eq_layout_delta(const char *top, const char *from_sha256, const char *to_sha256, char **ret,
			      struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* EQ_REPO_LAYOUT_H */
