/*
 * eqota-gen prune: keeps the newest releases of every board and channel
 * and removes what none of them needs: the older release folders, then
 * objects, deltas and manifest deltas nothing kept refers to. A grace
 * period protects what devices may be in the middle of downloading: a
 * release is only removed once the release after it has been out that
 * long, and a file only once it is that old. Runs under the publish lock.
 */
#include <eq/repo_layout.h>

#include <eq/gen_prune.h>

#include "gen_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct prune {
	const struct eq_prune_opts *o;
	struct eq_prune_report *rep;
	struct eqg_strv keep; /* repository paths kept releases refer to, sorted once filled */
	int64_t now, grace;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool kept(const struct prune *p, const char *rel)
{
	return p->keep.n && bsearch(&rel, p->keep.v, p->keep.n, sizeof(char *), cmp_str) != NULL;
}

/* Removes (or with --dry-run only reports) the file or folder @path of
 * @size bytes, counting it in *@count. */
static eq_err drop(struct prune *p, const char *path, uint64_t size, size_t *count, struct eq_error *err)
{
	if (p->o->list)
		p->o->list(p->o->list_ctx, path, size);
	(*count)++;
	p->rep->bytes += size;
	if (p->o->dry_run)
		return EQ_OK;
	return eqg_repo_remove(p->o->repo, path, err);
}

/* The objects and deltas @m refers to go to the kept set. */
static eq_err keep_refs(struct prune *p, const struct eq_manifest *m, struct eq_error *err)
{
	eq_err r = EQ_OK;
	for (size_t i = 0; !r && i < eq_manifest_package_count(m); i++) {
		const struct eq_manifest_package *mp = eq_manifest_package_at(m, i);
		r = eqg_strv_add(&p->keep, mp->object.path, err);
		for (size_t k = 0; !r && k < mp->n_deltas; k++)
			r = eqg_strv_add(&p->keep, mp->deltas[k].path, err);
	}
	return r;
}

/* The names in @dir (no dot files), sorted; a missing folder is empty. */
static eq_err list_names(const char *dir, struct eqg_strv *ret, struct eq_error *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? EQ_OK : eq_error_errno(err, EQ_ERR_IO, "cannot read '%s'", dir);
	eq_err r = EQ_OK;
	struct dirent *de;
	while (!r && (de = readdir(d)))
		if (de->d_name[0] != '.')
			r = eqg_strv_add(ret, de->d_name, err);
	closedir(d);
	if (!r && ret->n)
		qsort(ret->v, ret->n, sizeof(char *), cmp_str);
	return r;
}

/*
 * One board/channel, newest release first: the newest @keep stay (and what
 * they refer to); an older one goes once the release after it has been out
 * for the grace period (a device may be fetching it until then). Each
 * manifest is read once.
 */
static eq_err prune_channel(struct prune *p, const char *board, const char *channel, struct eq_error *err)
{
	const char *repo = p->o->repo;
	EQ_AUTOFREE char *rdir = NULL, *cur = NULL;
	eq_err r;
	if ((r = eq_layout_channel(repo, board, channel, EQ_LAYOUT_RELEASES, &rdir, err)) ||
	    (r = eq_layout_channel(repo, board, channel, EQ_LAYOUT_MANIFEST, &cur, err)))
		return r;
	uint64_t *nums = NULL;
	size_t n = 0;
	r = eqg_release_numbers(rdir, &nums, &n, err);
	struct eq_manifest *m = NULL;
	/* The current manifest always stays, whatever folders exist. */
	if (!r && access(cur, F_OK) == 0 && !(r = eqg_manifest_read(cur, &m, err)))
		r = keep_refs(p, m, err);
	eq_manifest_free(m);
	bool removed = false;
	int64_t next_issued = 0; /* of the release after the one looked at */
	for (size_t i = n; !r && i-- > 0;) {
		EQ_AUTOFREE char *rel = NULL, *mp = NULL;
		if ((r = eq_layout_release(repo, board, channel, nums[i], EQ_LAYOUT_DIR, &rel, err)) ||
		    (r = eq_layout_release(repo, board, channel, nums[i], EQ_LAYOUT_MANIFEST, &mp, err)))
			break;
		struct eq_manifest_header h;
		if ((r = eqg_manifest_read(mp, &m, err)) || (r = eq_manifest_get_header(m, &h, err))) {
			eq_manifest_free(m);
			break;
		}
		if (n - i > p->o->keep && p->now - next_issued >= p->grace) {
			struct stat st;
			uint64_t size = stat(mp, &st) == 0 ? (uint64_t)st.st_size : 0;
			r = drop(p, rel, size, &p->rep->releases, err);
			removed = true;
		} else {
			p->rep->kept_releases++;
			r = keep_refs(p, m, err);
		}
		eq_manifest_free(m);
		next_issued = h.issued;
	}
	eq_free(nums);
	/* The publisher's summary is rebuilt from what is left. */
	if (!r && removed && !p->o->dry_run) {
		EQ_AUTOFREE char *hist = NULL;
		if (!(r = eq_layout_channel(repo, board, channel, EQ_LAYOUT_HISTORY, &hist, err)))
			r = eqg_repo_remove(p->o->repo, hist, err);
	}
	return r;
}

/* Manifest deltas lead from an old manifest to the current one; those to
 * another manifest serve nobody once they are older than the grace. */
static eq_err prune_manifest_deltas(struct prune *p, const char *board, const char *channel, struct eq_error *err)
{
	EQ_AUTOFREE char *ddir = NULL, *cur = NULL;
	eq_err lr;
	if ((lr = eq_layout_channel(p->o->repo, board, channel, EQ_LAYOUT_MANIFEST_DELTAS, &ddir, err)) ||
	    (lr = eq_layout_channel(p->o->repo, board, channel, EQ_LAYOUT_MANIFEST, &cur, err)))
		return lr;
	uint8_t sha[EQ_SHA256_LEN];
	char to[EQ_SHA256_HEX_LEN + 1];
	if (eq_sha256_file(cur, sha, NULL, NULL) != EQ_OK)
		return EQ_OK; /* no current manifest: nothing is known to be stale */
	eq_hex_encode(sha, sizeof(sha), to);
	struct eqg_strv names = {0};
	eq_err r = list_names(ddir, &names, err);
	for (size_t i = 0; !r && i < names.n; i++) {
		const char *nm = names.v[i];
		size_t l = strlen(nm);
		if (l > EQ_SHA256_HEX_LEN + 6 && !strncmp(nm + l - 6 - EQ_SHA256_HEX_LEN, to, EQ_SHA256_HEX_LEN))
			continue;
		EQ_AUTOFREE char *path = eq_asprintf("%s/%s", ddir, nm);
		struct stat st;
		if (!path)
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		else if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && p->now - (int64_t)st.st_mtime >= p->grace)
			r = drop(p, path, (uint64_t)st.st_size, &p->rep->manifest_deltas, err);
	}
	eqg_strv_done(&names);
	return r;
}

/* objects/ or deltas/: every file no kept release refers to, once it is
 * older than the grace. */
static eq_err prune_store(struct prune *p, const char *sub, size_t *count, struct eq_error *err)
{
	EQ_AUTOFREE char *dir = eq_asprintf("%s/%s", p->o->repo, sub);
	if (!dir)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	struct eqg_strv names = {0};
	eq_err r = list_names(dir, &names, err);
	for (size_t i = 0; !r && i < names.n; i++) {
		EQ_AUTOFREE char *rel = eq_asprintf("%s/%s", sub, names.v[i]);
		EQ_AUTOFREE char *path = eq_asprintf("%s/%s", dir, names.v[i]);
		struct stat st;
		if (!rel || !path)
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		else if (!kept(p, rel) && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
			 p->now - (int64_t)st.st_mtime >= p->grace)
			r = drop(p, path, (uint64_t)st.st_size, count, err);
	}
	eqg_strv_done(&names);
	return r;
}

eq_err eq_gen_prune(const struct eq_prune_opts *o, struct eq_prune_report *ret, struct eq_error *err)
{
	if (!o->repo || o->keep < 1)
		return eq_error_set(err, EQ_ERR_INVAL, "prune: a repository and --keep 1 or more are needed");
	memset(ret, 0, sizeof(*ret));
	struct prune p = {.o = o, .rep = ret};
	p.now = o->now ? o->now : (int64_t)time(NULL);
	p.grace = (int64_t)o->grace_hours * 3600;
	EQ_AUTOFREE char *bdir = eq_asprintf("%s/" EQ_LAYOUT_BOARDS_DIR, o->repo);
	if (!bdir)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if (access(bdir, F_OK) != 0)
		return eq_error_errno(err, EQ_ERR_NOTFOUND, "'%s' is not a repository (no boards/)", o->repo);
	/* No publish or promote runs meanwhile: what they write is referred to
	 * only once their manifest is in place. */
	int fd = -1;
	eq_err r = eqg_lock_repo(o->repo, &fd, err);
	struct eqg_strv boards = {0};
	if (!r)
		r = list_names(bdir, &boards, err);
	/* Every channel's kept releases first: a file is only free when no
	 * board or channel needs it. */
	for (int pass = 0; pass < 2 && !r; pass++) {
		for (size_t b = 0; !r && b < boards.n; b++) {
			EQ_AUTOFREE char *bd = eq_asprintf("%s/%s", bdir, boards.v[b]);
			struct eqg_strv chans = {0};
			r = bd ? list_names(bd, &chans, err) : eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
			for (size_t c = 0; !r && c < chans.n; c++) {
				if (pass == 0)
					r = prune_channel(&p, boards.v[b], chans.v[c], err);
				else
					r = prune_manifest_deltas(&p, boards.v[b], chans.v[c], err);
			}
			eqg_strv_done(&chans);
		}
		if (!r && pass == 0 && p.keep.n)
			qsort(p.keep.v, p.keep.n, sizeof(char *), cmp_str);
	}
	if (!r)
		r = prune_store(&p, EQ_LAYOUT_OBJECTS_DIR, &ret->objects, err);
	if (!r)
		r = prune_store(&p, EQ_LAYOUT_DELTAS_DIR, &ret->deltas, err);
	eqg_strv_done(&boards);
	eqg_strv_done(&p.keep);
	if (fd >= 0)
		close(fd);
	return r;
}
