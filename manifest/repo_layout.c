/*
 * The repository layout (see <eq/repo_layout.h>): the one place that turns
 * names and hashes into repository paths. Board and channel names follow
 * the manifest's rule (eqm_check_name), so a name a device accepts in its
 * configuration and the name a signed manifest carries are checked alike.
 */
#include <inttypes.h>
#include <string.h>

#include <eq/manifest.h>
#include <eq/repo_layout.h>

#include "manifest_priv.h"

static const char *const FILE_NAMES[EQ_LAYOUT_FILE_COUNT] = {
	[EQ_LAYOUT_DIR] = NULL,
	[EQ_LAYOUT_MANIFEST] = "manifest.json",
	[EQ_LAYOUT_MANIFEST_SIG] = "manifest.json.sig",
	[EQ_LAYOUT_MANIFEST_SHA256] = "manifest.json.sha256",
	[EQ_LAYOUT_MANIFEST_ZST] = "manifest.json.zst",
	[EQ_LAYOUT_MANIFEST_DELTAS] = "manifest-deltas",
	[EQ_LAYOUT_TIMESTAMP] = "timestamp.json",
	[EQ_LAYOUT_TIMESTAMP_SIG] = "timestamp.json.sig",
	[EQ_LAYOUT_RELEASES] = "releases",
	[EQ_LAYOUT_HISTORY] = "publisher-history",
};

const char *eq_layout_check_name(const char *name)
{
	return eqm_check_name(name);
}

/* "<top>/" or "" */
static const char *sep(const char *top)
{
	return top ? "/" : "";
}

static eq_err done(char *p, char **ret, struct eq_error *err)
{
	*ret = p;
	return p ? EQ_OK : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
}

static eq_err check_names(const char *board, const char *channel, struct eq_error *err)
{
	const char *why;
	if ((why = eqm_check_name(board)))
		return eq_error_set(err, EQ_ERR_INVAL, "board '%.80s': %s", board ? board : "", why);
	if ((why = eqm_check_name(channel)))
		return eq_error_set(err, EQ_ERR_INVAL, "channel '%.80s': %s", channel ? channel : "", why);
	return EQ_OK;
}

static eq_err check_hash(const char *hex, const char *what, struct eq_error *err)
{
	if (!hex || !eq_is_sha256_hex(hex))
		return eq_error_set(err, EQ_ERR_INVAL, "%s: expected 64 lower-case hex digits", what);
	return EQ_OK;
}

static bool valid_file(enum eq_layout_file file)
{
	return (unsigned)file < EQ_LAYOUT_FILE_COUNT;
}

eq_err eq_layout_channel(const char *top, const char *board, const char *channel, enum eq_layout_file file, char **ret,
			 struct eq_error *err)
{
	*ret = NULL;
	eq_err r = check_names(board, channel, err);
	if (r)
		return r;
	if (!valid_file(file))
		return eq_error_set(err, EQ_ERR_INVAL, "no such file of a channel folder: %d", (int)file);
	const char *f = FILE_NAMES[file];
	return done(eq_asprintf("%s%s" EQ_LAYOUT_BOARDS_DIR "/%s/%s%s%s", top ? top : "", sep(top), board, channel,
				f ? "/" : "", f ? f : ""),
		    ret, err);
}

eq_err eq_layout_release(const char *top, const char *board, const char *channel, uint64_t number,
			 enum eq_layout_file file, char **ret, struct eq_error *err)
{
	*ret = NULL;
	eq_err r = check_names(board, channel, err);
	if (r)
		return r;
	/* The timestamp, the history and the list of releases belong to the
	 * channel; a release folder holds only its manifest's files. */
	if (!valid_file(file) || file == EQ_LAYOUT_TIMESTAMP || file == EQ_LAYOUT_TIMESTAMP_SIG ||
	    file == EQ_LAYOUT_RELEASES || file == EQ_LAYOUT_HISTORY)
		return eq_error_set(err, EQ_ERR_INVAL, "no such file of a release folder: %d", (int)file);
	const char *f = FILE_NAMES[file];
	return done(eq_asprintf("%s%s" EQ_LAYOUT_BOARDS_DIR "/%s/%s/releases/%" PRIu64 "%s%s", top ? top : "", sep(top),
				board, channel, number, f ? "/" : "", f ? f : ""),
		    ret, err);
}

eq_err eq_layout_manifest_delta(const char *top, const char *board, const char *channel, const char *from_sha256,
				const char *to_sha256, char **ret, struct eq_error *err)
{
	*ret = NULL;
	eq_err r;
	if ((r = check_names(board, channel, err)) || (r = check_hash(from_sha256, "manifest delta source", err)) ||
	    (r = check_hash(to_sha256, "manifest delta target", err)))
		return r;
	return done(eq_asprintf("%s%s" EQ_LAYOUT_BOARDS_DIR "/%s/%s/manifest-deltas/%s-%s.delta", top ? top : "",
				sep(top), board, channel, from_sha256, to_sha256),
		    ret, err);
}

eq_err eq_layout_root(const char *top, uint64_t version, char **ret, struct eq_error *err)
{
	*ret = NULL;
	return done(eq_asprintf("%s%s" EQ_LAYOUT_ROOT_DIR "/%" PRIu64 ".root.json", top ? top : "", sep(top), version),
		    ret, err);
}

eq_err eq_layout_object(const char *top, const char *sha256, char **ret, struct eq_error *err)
{
	*ret = NULL;
	eq_err r = check_hash(sha256, "object", err);
	if (r)
		return r;
	return done(eq_asprintf("%s%s" EQ_LAYOUT_OBJECTS_DIR "/%s", top ? top : "", sep(top), sha256), ret, err);
}

eq_err eq_layout_delta(const char *top, const char *from_sha256, const char *to_sha256, char **ret,
		       struct eq_error *err)
{
	*ret = NULL;
	eq_err r;
	if ((r = check_hash(from_sha256, "delta source", err)) || (r = check_hash(to_sha256, "delta target", err)))
		return r;
	return done(eq_asprintf("%s%s" EQ_LAYOUT_DELTAS_DIR "/%s-%s", top ? top : "", sep(top), from_sha256, to_sha256),
		    ret, err);
}
