/*
 * Image components (eq/gen_image.h, DESIGN31.md): from an image every
 * package was attributed to, the skeleton that goes before the packages,
 * the components that go after them, and the package paths the device sets
 * aside. The data of the components' files is read from the root
 * filesystem a second time and checked against the first read.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eq/beneath.h>
#include <eq/gen_image.h>

#include "gen_priv.h"

#define QMAX 160
#define DATA_BUF (256u * 1024u)
/* Longest top folder name used as it is in a component's name. */
#define TOP_NAME_MAX 100u

static eq_err nomem(struct eq_error *err)
{
	return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
}

bool eq_image_is_component_name(const char *name)
{
	return !strcmp(name, EQ_IMAGE_SKELETON) || !strcmp(name, EQ_IMAGE_TOP) ||
	       !strncmp(name, EQ_IMAGE_PREFIX, strlen(EQ_IMAGE_PREFIX));
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
	       c == '+' || c == '-';
}

/* The top folder whose second level also splits the components: what
 * the running system writes there (/var/log/wtmp, written at every boot)
 * then costs a device its own small component, not a fresh copy of
 * dpkg's database beside it in /var/lib. */
#define SPLIT_TOP "var/"

/* The component an entry at @path goes to (caller frees). */
static char *component_name(const char *path, bool is_dir)
{
	const char *s = strchr(path, '/');
	if (!s && !is_dir)
		return eq_strdup(EQ_IMAGE_TOP);
	if (s && !strncmp(path, SPLIT_TOP, strlen(SPLIT_TOP))) {
		/* var/X and everything below it; var's own files stay in var's. */
		const char *s2 = strchr(s + 1, '/');
		if (s2 || is_dir)
			s = s2 ? s2 : s + 1 + strlen(s + 1);
	}
	size_t len = s ? (size_t)(s - path) : strlen(path);
	bool plain = len <= TOP_NAME_MAX;
	for (size_t i = 0; i < len && plain; i++)
		plain = name_char(path[i]) || (path[i] == '/' && path + i == strchr(path, '/'));
	if (plain) {
		/* var/log -> eqota-image.var.log: a name that would also be a
		 * top folder's ("var.log") only joins that one's component. */
		char *name = eq_asprintf("%s%.*s", EQ_IMAGE_PREFIX, (int)len, path);
		char *slash = name ? strchr(name, '/') : NULL;
		if (slash)
			*slash = '.';
		return name;
	}
	/* A package name is a file name on the device and in the manifest:
	 * other bytes get a stable name from their hash. */
	uint8_t h[EQ_SHA256_LEN];
	char hex[2 * 8 + 1];
	eq_sha256(path, len, h);
	eq_hex_encode(h, 8, hex);
	return eq_asprintf("%sx%s", EQ_IMAGE_PREFIX, hex);
}

void eq_image_components_free(struct eq_image_components *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		eq_free(c->v[i].name);
		eq_payload_builder_free(c->v[i].b);
	}
	eq_free(c->v);
	for (size_t i = 0; i < c->n_replace; i++)
		eq_free(c->replace[i]);
	eq_free(c->replace);
	for (size_t i = 0; i < c->n_remove; i++)
		eq_free(c->remove[i]);
	eq_free(c->remove);
	if (c->data_fd >= 0)
		close(c->data_fd);
	eq_free(c);
}

/* The work of one eq_image_compose(). */
struct compose {
	struct eq_image *img;
	const struct eq_image_compose_opts *o;
	struct eqg_image_found f;
	size_t n;
	uint8_t *skel, *after;
	size_t *gleader; /* per hard-link group: the member with the first path */
	uint32_t n_groups;
	uint8_t *need, *got; /* per entry: its data is wanted / in the data file */
	uint64_t *off;       /* ... at this offset */
	uint64_t end;
	int fd;
	uint8_t *buf;
};

/* The entry whose data an entry has: its group's first path, or itself. */
static size_t data_of(const struct compose *c, size_t i)
{
	const struct eq_image_entry *e = eq_image_get(c->img, i);
	return e->link_group ? c->gleader[e->link_group] : i;
}

/* Marks @path's folders (the image's entries, not the path itself) for the
 * skeleton. */
static eq_err mark_parents(struct compose *c, const char *path, struct eq_error *err)
{
	EQ_AUTOFREE char *p = eq_strdup(path);
	if (!p)
		return nomem(err);
	for (char *s = strrchr(p, '/'); s; s = strrchr(p, '/')) {
		*s = '\0';
		size_t k = eq_image_find(c->img, p);
		if (k != SIZE_MAX && eq_image_get(c->img, k)->type == EQ_ENTRY_DIR)
			c->skel[k] = 1;
	}
	return EQ_OK;
}

static eq_err find_skeleton(struct compose *c, struct eq_error *err)
{
	eq_err r = EQ_OK;
	for (size_t i = 0; i < c->n && !r; i++) {
		if (!c->f.skel[i])
			continue;
		const struct eq_image_entry *e = eq_image_get(c->img, i);
		c->skel[i] = 1;
		if ((r = mark_parents(c, e->path, err)))
			break;
		/* The folder the symlink leads to, and those on the way to it. */
		char *to = NULL;
		if ((r = eq_image_resolve(c->img, e->path, true, &to, err)))
			break;
		size_t k = to[0] ? eq_image_find(c->img, to) : SIZE_MAX;
		if (k != SIZE_MAX && eq_image_get(c->img, k)->type == EQ_ENTRY_DIR) {
			c->skel[k] = 1;
			r = mark_parents(c, to, err);
		}
		eq_free(to);
	}
	return r;
}

eq_err eq_image_check_devices(const struct eq_image *img, bool devices, struct eq_error *err)
{
	char q[QMAX];
	for (size_t i = 0; i < eq_image_count(img); i++) {
		const struct eq_image_entry *e = eq_image_get(img, i);
		if (e->type != EQ_ENTRY_CHR && e->type != EQ_ENTRY_BLK)
			continue;
		if (!devices)
			return eq_error_set(err, EQ_ERR_UNSAFE,
					    "entry '%s': a device node (give --image-devices to ship the image's "
					    "device nodes, which are then made under dev/ only)",
					    eq_quote(q, sizeof(q), e->path));
		if (strncmp(e->path, "dev/", 4))
			return eq_error_set(err, EQ_ERR_UNSAFE,
					    "entry '%s': a device node outside dev/ (--image-devices ships device "
					    "nodes under dev/ only)",
					    eq_quote(q, sizeof(q), e->path));
	}
	return EQ_OK;
}

static eq_err find_after(struct compose *c, struct eq_error *err)
{
	eq_err r = eq_image_check_devices(c->img, c->o->devices, err);
	if (r)
		return r;
	for (size_t i = 0; i < c->n; i++) {
		const struct eq_image_entry *e = eq_image_get(c->img, i);
		if (c->f.skel[i] && e->cls != EQ_IMAGE_OVERRIDE && e->cls != EQ_IMAGE_PACKAGE)
			continue; /* the skeleton places it */
		if (e->cls != EQ_IMAGE_PACKAGE || (c->f.last_name[i] != EQ_IMAGE_NO_PKG && !c->f.last_same[i]))
			c->after[i] = 1;
	}
	/* A hard-link group goes whole, or its members would be two inodes. */
	uint8_t *grp = eq_calloc((size_t)c->n_groups + 1, 1);
	if (!grp)
		return nomem(err);
	for (size_t i = 0; i < c->n; i++)
		if (c->after[i])
			grp[eq_image_get(c->img, i)->link_group] = 1;
	for (size_t i = 0; i < c->n; i++) {
		uint32_t g = eq_image_get(c->img, i)->link_group;
		if (g && grp[g])
			c->after[i] = 1;
	}
	eq_free(grp);
	return EQ_OK;
}

/* Appends what @fd holds (@e's data) to the data file, hashed: it must be
 * what the first read found. */
static eq_err spool(struct compose *c, size_t k, eq_read_fn rd, void *rctx, struct eq_error *err)
{
	char q[QMAX];
	const struct eq_image_entry *e = eq_image_get(c->img, k);
	struct eq_sha256 s;
	eq_sha256_init(&s);
	uint64_t got = 0;
	eq_err r = EQ_OK;
	for (;;) {
		size_t n = 0;
		if ((r = rd(rctx, c->buf, DATA_BUF, &n, err)) || !n)
			break;
		eq_sha256_update(&s, c->buf, n);
		got += n;
		if (got > e->size)
			break;
		if ((r = eq_write_all(c->fd, c->buf, n, err)))
			break;
	}
	if (r)
		return eq_error_prefix(err, r, "entry '%s'", eq_quote(q, sizeof(q), e->path));
	uint8_t sha[EQ_SHA256_LEN];
	eq_sha256_final(&s, sha);
	if (got != e->size || memcmp(sha, e->sha256, EQ_SHA256_LEN)) {
		char was[EQ_SHA256_HEX_LEN + 1], now[EQ_SHA256_HEX_LEN + 1];
		eq_hex_encode(e->sha256, EQ_SHA256_LEN, was);
		eq_hex_encode(sha, EQ_SHA256_LEN, now);
		return eq_error_set(
			err, EQ_ERR_STATE,
			"entry '%s': changed since the image was read (%" PRIu64 " bytes, SHA-256 %.16s..., "
			"then %" PRIu64 "%s bytes, %.16s...; the root filesystem must not change while it "
			"is published)",
			eq_quote(q, sizeof(q), e->path), e->size, was, got, got > e->size ? " or more" : "", now);
	}
	c->off[k] = c->end;
	c->end += got;
	c->got[k] = 1;
	return EQ_OK;
}

static eq_err archive_read_fn(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	struct archive *a = ctx;
	la_ssize_t n = archive_read_data(a, buf, len);
	if (n < 0)
		return eq_error_set(err, EQ_ERR_PARSE, "%s",
				    archive_error_string(a) ? archive_error_string(a) : "data");
	*ret_n = (size_t)n;
	return EQ_OK;
}

static eq_err tar_one(void *ctx, struct archive *a, struct archive_entry *ae, const char *path, struct eq_error *err)
{
	struct compose *c = ctx;
	if (archive_entry_hardlink(ae) || archive_entry_filetype(ae) != AE_IFREG)
		return EQ_OK;
	size_t k = eq_image_find(c->img, path);
	if (k == SIZE_MAX)
		return EQ_OK;
	k = data_of(c, k);
	if (!c->need[k] || c->got[k])
		return EQ_OK;
	return spool(c, k, archive_read_fn, a, err);
}

static eq_err read_data(struct compose *c, struct eq_error *err)
{
	char q[QMAX];
	struct stat st;
	eq_err r = EQ_OK;
	if (stat(c->o->rootfs, &st) < 0)
		return eq_error_errno(err, EQ_ERR_IO, "'%s'", c->o->rootfs);
	if (!S_ISDIR(st.st_mode)) {
		r = eqg_image_tar_walk(c->img, c->o->rootfs, tar_one, c, err);
	} else {
		int root = open(c->o->rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return eq_error_errno(err, EQ_ERR_IO, "cannot open '%s'", c->o->rootfs);
		for (size_t k = 0; k < c->n && !r; k++) {
			if (!c->need[k])
				continue;
			int fd = -1;
			/* The image's own paths: no symlink is on the way. */
			r = eq_open_beneath(root, eq_image_get(c->img, k)->path, O_RDONLY | O_NOFOLLOW, 0,
					    EQ_BENEATH_NO_SYMLINKS, &fd, err);
			if (!r) {
				r = spool(c, k, eq_fd_read, &fd, err);
				close(fd);
			}
		}
		close(root);
	}
	for (size_t k = 0; k < c->n && !r; k++)
		if (c->need[k] && !c->got[k])
			r = eq_error_set(err, EQ_ERR_STATE,
					 "entry '%s': no longer in the image (the root filesystem must not change "
					 "while it is published)",
					 eq_quote(q, sizeof(q), eq_image_get(c->img, k)->path));
	return r ? eq_error_prefix(err, r, "image '%s'", c->o->rootfs) : EQ_OK;
}

/* The component called @name in @out (made when new). */
static eq_err get_component(struct eq_image_components *out, const char *name, size_t first,
			    const struct eq_payload_limits *lim, struct eq_image_component **ret, struct eq_error *err)
{
	for (size_t i = first; i < out->n; i++)
		if (!strcmp(out->v[i].name, name)) {
			*ret = &out->v[i];
			return EQ_OK;
		}
	void *v = eq_realloc(out->v, (out->n + 1) * sizeof(*out->v));
	if (!v)
		return nomem(err);
	out->v = v;
	struct eq_image_component *o = &out->v[out->n];
	*o = (struct eq_image_component){.name = eq_strdup(name)};
	if (!o->name)
		return nomem(err);
	eq_err r = eq_payload_builder_new(lim, &o->b, err);
	if (r) {
		eq_free(o->name);
		return r;
	}
	out->n++;
	*ret = o;
	return EQ_OK;
}

static eq_err add_entry(struct compose *c, struct eq_image_component *comp, size_t i, struct eq_error *err)
{
	const struct eq_image_entry *e = eq_image_get(c->img, i);
	size_t d = data_of(c, i);
	struct eq_payload_entry pe = {
		.path = e->path,
		.type = e->type,
		.mode = e->mode,
		.uid = e->uid,
		.gid = e->gid,
		.link = e->link,
		.devmajor = e->devmajor,
		.devminor = e->devminor,
		.xattrs = e->xattrs,
		.n_xattrs = e->n_xattrs,
	};
	if (e->type == EQ_ENTRY_FILE && d != i) {
		pe.type = EQ_ENTRY_HARDLINK;
		pe.link = eq_image_get(c->img, d)->path;
	} else if (e->type == EQ_ENTRY_FILE) {
		pe.size = e->size;
		comp->bytes += e->size;
	}
	comp->entries++;
	return eq_payload_builder_add(comp->b, &pe, c->fd, c->off[i], err);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_comp(const void *a, const void *b)
{
	return strcmp(((const struct eq_image_component *)a)->name, ((const struct eq_image_component *)b)->name);
}

/* @v[0 .. *n) sorted, repeats freed. */
static void sort_unique(char **v, size_t *n)
{
	if (!*n)
		return;
	qsort(v, *n, sizeof(*v), cmp_str);
	size_t w = 1;
	for (size_t i = 1; i < *n; i++) {
		if (!strcmp(v[i], v[w - 1]))
			eq_free(v[i]);
		else
			v[w++] = v[i];
	}
	*n = w;
}

static eq_err make_lists(struct compose *c, struct eq_image_components *out, struct eq_error *err)
{
	struct eq_image_summary s;
	eq_image_classify(c->img, &s);
	size_t nr = c->f.n_remove + (size_t)s.missing, np = c->f.n_replace;
	out->remove = eq_calloc(nr ? nr : 1, sizeof(char *));
	out->replace = eq_calloc(np ? np : 1, sizeof(char *));
	if (!out->remove || !out->replace)
		return nomem(err);
	for (size_t i = 0; i < nr; i++) {
		const char *p;
		uint32_t pkg;
		if (i < c->f.n_remove)
			p = eqg_image_found_path(c->img, true, i);
		else
			eq_image_missing_get(c->img, i - c->f.n_remove, &p, &pkg);
		if (!(out->remove[out->n_remove] = eq_strdup(p)))
			return nomem(err);
		out->n_remove++;
	}
	sort_unique(out->remove, &out->n_remove);
	/* Disjoint: a path taken away is set aside too. */
	for (size_t i = 0; i < np; i++) {
		const char *p = eqg_image_found_path(c->img, false, i);
		if (bsearch(&p, out->remove, out->n_remove, sizeof(char *), cmp_str))
			continue;
		if (!(out->replace[out->n_replace] = eq_strdup(p)))
			return nomem(err);
		out->n_replace++;
	}
	sort_unique(out->replace, &out->n_replace);
	return EQ_OK;
}

static eq_err build(struct compose *c, struct eq_image_components *out, struct eq_error *err)
{
	eq_err r = EQ_OK;
	struct eq_image_component *comp = NULL;
	for (size_t i = 0; i < c->n && !r; i++)
		if (c->skel[i] && !(r = get_component(out, EQ_IMAGE_SKELETON, 0, c->f.lim, &comp, err)))
			r = add_entry(c, comp, i, err);
	out->n_before = out->n;
	for (size_t i = 0; i < c->n && !r; i++) {
		if (!c->after[i])
			continue;
		const struct eq_image_entry *e = eq_image_get(c->img, i);
		size_t d = data_of(c, i);
		EQ_AUTOFREE char *name = component_name(eq_image_get(c->img, d)->path, e->type == EQ_ENTRY_DIR);
		if (!name)
			return nomem(err);
		if (!(r = get_component(out, name, out->n_before, c->f.lim, &comp, err)))
			r = add_entry(c, comp, i, err);
	}
	if (!r && out->n - out->n_before > 1)
		qsort(out->v + out->n_before, out->n - out->n_before, sizeof(*out->v), cmp_comp);
	for (size_t i = 0; i < c->n; i++) {
		const struct eq_image_entry *e = eq_image_get(c->img, i);
		bool by_image = c->after[i] || (c->skel[i] && e->cls != EQ_IMAGE_PACKAGE);
		out->from_image += by_image;
		out->from_packages += !by_image;
	}
	return r;
}

eq_err eq_image_compose(struct eq_image *img, const struct eq_image_compose_opts *o, struct eq_image_components **ret,
			struct eq_error *err)
{
	struct compose c = {.img = img, .o = o, .n = eq_image_count(img), .fd = -1};
	eqg_image_found(img, &c.f);
	for (size_t i = 0; i < c.n; i++)
		if (eq_image_get(img, i)->link_group > c.n_groups)
			c.n_groups = eq_image_get(img, i)->link_group;
	size_t n1 = c.n ? c.n : 1;
	c.skel = eq_calloc(n1, 1);
	c.after = eq_calloc(n1, 1);
	c.need = eq_calloc(n1, 1);
	c.got = eq_calloc(n1, 1);
	c.off = eq_calloc(n1, sizeof(*c.off));
	c.gleader = eq_malloc(((size_t)c.n_groups + 1) * sizeof(*c.gleader));
	c.buf = eq_malloc(DATA_BUF);
	struct eq_image_components *out = eq_calloc(1, sizeof(*out));
	if (out)
		out->data_fd = -1;
	eq_err r = EQ_OK;
	char *tmp = NULL;
	if (!c.skel || !c.after || !c.need || !c.got || !c.off || !c.gleader || !c.buf || !out) {
		r = nomem(err);
		goto done;
	}
	for (size_t g = 0; g <= c.n_groups; g++)
		c.gleader[g] = SIZE_MAX;
	for (size_t i = 0; i < c.n; i++) {
		uint32_t g = eq_image_get(img, i)->link_group;
		size_t *l = &c.gleader[g];
		if (g && (*l == SIZE_MAX || strcmp(eq_image_get(img, i)->path, eq_image_get(img, *l)->path) < 0))
			*l = i;
	}
	if ((r = find_skeleton(&c, err)) || (r = find_after(&c, err)))
		goto done;
	for (size_t i = 0; i < c.n; i++) {
		const struct eq_image_entry *e = eq_image_get(img, i);
		if (c.after[i] && e->type == EQ_ENTRY_FILE && e->size)
			c.need[data_of(&c, i)] = 1;
	}
	tmp = eq_asprintf("%s/image-data-XXXXXX", o->tmpdir ? o->tmpdir : "/tmp");
	if (!tmp) {
		r = nomem(err);
		goto done;
	}
	c.fd = mkostemp(tmp, O_CLOEXEC);
	if (c.fd < 0) {
		r = eq_error_errno(err, EQ_ERR_IO, "cannot create '%s'", tmp);
		goto done;
	}
	(void)unlink(tmp);
	out->data_fd = c.fd;
	if ((r = read_data(&c, err)) || (r = build(&c, out, err)) || (r = make_lists(&c, out, err)))
		goto done;
done:
	eq_free(tmp);
	eq_free(c.skel);
	eq_free(c.after);
	eq_free(c.need);
	eq_free(c.got);
	eq_free(c.off);
	eq_free(c.gleader);
	eq_free(c.buf);
	if (r) {
		if (out && out->data_fd < 0 && c.fd >= 0)
			close(c.fd);
		eq_image_components_free(out);
		return r;
	}
	*ret = out;
	return EQ_OK;
}
