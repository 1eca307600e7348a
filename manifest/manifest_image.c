/*
 * The image of a format-2 manifest (issue 31): which packages are image
 * components and which package paths the image replaced or removed. Model,
 * validation, and the "image" member's JSON (read and written).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "manifest_priv.h"

/* One allocation per list: the pointer array followed by the strings. */
struct eqm_list {
	const char **v;
	size_t n;
};

struct eqm_image {
	struct eq_manifest_image pub;
	struct eqm_list before, after, replace, remove;
	/* before + after, sorted, for eq_manifest_is_component(). */
	struct eqm_list names_sorted;
};

static void list_free(struct eqm_list *l)
{
	eq_free(l->v);
	l->v = NULL;
	l->n = 0;
}

static eq_err list_copy(struct eqm_list *l, const char *const *v, size_t n, struct eq_error *err)
{
	size_t bytes = (n + 1) * sizeof(char *);
	for (size_t i = 0; i < n; i++)
		bytes += strlen(v[i]) + 1;
	void *mem = eq_malloc(bytes);
	if (!mem)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	const char **out = mem;
	char *s = (char *)mem + (n + 1) * sizeof(char *);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(v[i]) + 1;
		memcpy(s, v[i], len);
		out[i] = s;
		s += len;
	}
	out[n] = NULL;
	l->v = out;
	l->n = n;
	return EQ_OK;
}

void eqm_image_free(struct eqm_image *img)
{
	if (!img)
		return;
	list_free(&img->before);
	list_free(&img->after);
	list_free(&img->replace);
	list_free(&img->remove);
	eq_free(img->names_sorted.v);
	eq_free(img);
}

/* Valid UTF-8 without overlongs, surrogates or code points past U+10FFFF:
 * the device's JSON scanner refuses anything else, so the publisher must. */
static bool utf8_ok(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s, n;
		uint32_t cp;
		if (c < 0x80) {
			s++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1, cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2, cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3, cp = c & 0x07;
		} else {
			return false;
		}
		for (unsigned i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		s += n + 1;
	}
	return true;
}

/* NULL when @p is a valid path of image.replace/remove, else why not;
 * *unsafe tells a path that could leave its folder. */
static const char *check_image_path(const char *p, bool *unsafe)
{
	*unsafe = false;
	size_t len = strlen(p);
	if (len == 0)
		return "empty";
	if (len > EQ_MANIFEST_IMAGE_PATH_MAX)
		return "longer than 4096 bytes";
	if (p[0] == '/') {
		*unsafe = true;
		return "absolute";
	}
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return "holds a control character";
	if (!utf8_ok((const unsigned char *)p))
		return "is not UTF-8";
	for (const char *c = p;;) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);
		if (n == 0)
			return "has an empty component";
		if (n == 1 && c[0] == '.')
			return "has a '.' component";
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			*unsafe = true;
			return "has a '..' component";
		}
		if (!e)
			break;
		c = e + 1;
	}
	return NULL;
}

static eq_err check_paths(const char *key, const char *const *v, size_t n, eq_err bad, struct eq_error *err)
{
	if (n > EQ_MANIFEST_MAX_IMAGE_PATHS)
		return eq_error_set(err, EQ_ERR_LIMIT, "image.%s: more than %u paths", key,
				    EQ_MANIFEST_MAX_IMAGE_PATHS);
	for (size_t i = 0; i < n; i++) {
		bool unsafe;
		const char *why = check_image_path(v[i], &unsafe);
		char q[96];
		if (why)
			return eq_error_set(err, unsafe ? EQ_ERR_UNSAFE : bad, "image.%s[%zu]: '%s' %s", key, i,
					    eq_quote(q, sizeof(q), v[i]), why);
		if (i > 0 && strcmp(v[i - 1], v[i]) >= 0)
			return eq_error_set(err, bad, "image.%s[%zu]: '%s' %s", key, i, eq_quote(q, sizeof(q), v[i]),
					    strcmp(v[i - 1], v[i])
						    ? "is not after the path before it (sorted by byte order)"
						    : "is listed twice");
	}
	return EQ_OK;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool eq_manifest_path_listed(const char *const *list, size_t n, const char *path)
{
	if (!list || !path)
		return false;
	return bsearch(&path, list, n, sizeof(*list), cmp_str) != NULL;
}

static eq_err check_image(const struct eq_manifest_image *in, eq_err bad, struct eq_error *err)
{
	if (in->n_before + in->n_after > EQ_MANIFEST_MAX_COMPONENTS)
		return eq_error_set(err, EQ_ERR_LIMIT, "image: more than %u components", EQ_MANIFEST_MAX_COMPONENTS);
	for (int l = 0; l < 2; l++) {
		const char *const *v = l ? in->after : in->before;
		size_t n = l ? in->n_after : in->n_before;
		for (size_t i = 0; i < n; i++) {
			const char *why = v[i] ? eqm_check_package_name(v[i]) : "is missing";
			if (why) {
				char q[160];
				return eq_error_set(err, bad, "image.%s[%zu]: '%s' %s", l ? "after" : "before", i,
						    eq_quote(q, sizeof(q), v[i] ? v[i] : ""), why);
			}
		}
	}
	eq_err r;
	if ((r = check_paths("replace", in->replace, in->n_replace, bad, err)) ||
	    (r = check_paths("remove", in->remove, in->n_remove, bad, err)))
		return r;
	/* Disjoint: a path is either replaced (the image has its own entry
	 * there) or removed, never both. */
	for (size_t i = 0; i < in->n_remove; i++)
		if (eq_manifest_path_listed(in->replace, in->n_replace, in->remove[i])) {
			char q[96];
			return eq_error_set(err, bad, "image.remove[%zu]: '%s' is in image.replace too", i,
					    eq_quote(q, sizeof(q), in->remove[i]));
		}
	return EQ_OK;
}

static eq_err make_image(const struct eq_manifest_image *in, eq_err bad, struct eqm_image **ret, struct eq_error *err)
{
	eq_err r = check_image(in, bad, err);
	if (r)
		return r;
	struct eqm_image *img = eq_calloc(1, sizeof(*img));
	if (!img)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	if ((r = list_copy(&img->before, in->before, in->n_before, err)) ||
	    (r = list_copy(&img->after, in->after, in->n_after, err)) ||
	    (r = list_copy(&img->replace, in->replace, in->n_replace, err)) ||
	    (r = list_copy(&img->remove, in->remove, in->n_remove, err))) {
		eqm_image_free(img);
		return r;
	}
	size_t nn = img->before.n + img->after.n;
	img->names_sorted.v = eq_malloc((nn + 1) * sizeof(char *));
	if (!img->names_sorted.v) {
		eqm_image_free(img);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	memcpy(img->names_sorted.v, img->before.v, img->before.n * sizeof(char *));
	memcpy(img->names_sorted.v + img->before.n, img->after.v, img->after.n * sizeof(char *));
	img->names_sorted.n = nn;
	qsort(img->names_sorted.v, nn, sizeof(char *), cmp_str);
	for (size_t i = 1; i < nn; i++)
		if (strcmp(img->names_sorted.v[i - 1], img->names_sorted.v[i]) == 0) {
			char q[160];
			r = eq_error_set(err, bad, "image: component '%s' is named twice",
					 eq_quote(q, sizeof(q), img->names_sorted.v[i]));
			eqm_image_free(img);
			return r;
		}
	img->pub = (struct eq_manifest_image){
		.before = img->before.v,
		.n_before = img->before.n,
		.after = img->after.v,
		.n_after = img->after.n,
		.replace = img->replace.v,
		.n_replace = img->replace.n,
		.remove = img->remove.v,
		.n_remove = img->remove.n,
	};
	*ret = img;
	return EQ_OK;
}

eq_err eq_manifest_set_image(struct eq_manifest *m, const struct eq_manifest_image *in, struct eq_error *err)
{
	assert(m && in);
	struct eqm_image *img = NULL;
	eq_err r = make_image(in, EQ_ERR_INVAL, &img, err);
	if (r)
		return r;
	eqm_image_free(m->image);
	m->image = img;
	return EQ_OK;
}

const struct eq_manifest_image *eq_manifest_get_image(const struct eq_manifest *m)
{
	return m && m->image ? &m->image->pub : NULL;
}

bool eq_manifest_is_component(const struct eq_manifest *m, const char *name)
{
	if (!m || !m->image)
		return false;
	return eq_manifest_path_listed(m->image->names_sorted.v, m->image->names_sorted.n, name);
}

eq_err eqm_image_check_packages(const struct eq_manifest *m, eq_err bad, struct eq_error *err)
{
	if (!m->image)
		return EQ_OK;
	for (int l = 0; l < 2; l++) {
		const struct eqm_list *li = l ? &m->image->after : &m->image->before;
		for (size_t i = 0; i < li->n; i++)
			if (!eq_manifest_find_package(m, li->v[i])) {
				char q[160];
				return eq_error_set(err, bad, "image.%s[%zu]: '%s' is not a package of the manifest",
						    l ? "after" : "before", i, eq_quote(q, sizeof(q), li->v[i]));
			}
	}
	return EQ_OK;
}

/* ---- JSON ------------------------------------------------------------------ */

static eq_err parse_list(const cJSON *arr, const char *key, bool names, const char ***ret_v, size_t *ret_n,
			 struct eq_error *err)
{
	size_t n = (size_t)cJSON_GetArraySize(arr);
	const char **v = eq_calloc(n + 1, sizeof(char *));
	if (!v)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	size_t i = 0;
	for (const cJSON *c = arr->child; c; c = c->next, i++) {
		if (!cJSON_IsString(c)) {
			eq_free(v);
			return eq_error_set(err, EQ_ERR_PARSE, "image.%s[%zu]: expected a string", key, i);
		}
		if (names && eqm_check_package_name(c->valuestring)) {
			char q[160];
			eq_err r = eq_error_set(err, EQ_ERR_PARSE, "image.%s[%zu]: '%s' %s", key, i,
						eq_quote(q, sizeof(q), c->valuestring),
						eqm_check_package_name(c->valuestring));
			eq_free(v);
			return r;
		}
		v[i] = c->valuestring;
	}
	*ret_v = v;
	*ret_n = i;
	return EQ_OK;
}

eq_err eqm_image_parse(struct eq_manifest *m, const cJSON *obj, struct eq_error *err)
{
	static const struct eqm_field fields[] = {
		{"before", EQM_ARRAY}, {"after", EQM_ARRAY}, {"replace", EQM_ARRAY}, {"remove", EQM_ARRAY}};
	const cJSON *it[4];
	eq_err r = eqm_fields(obj, "image", fields, 4, it, err);
	if (r)
		return r;
	const char **lists[4] = {0};
	size_t counts[4] = {0};
	for (int i = 0; i < 4 && !r; i++)
		r = parse_list(it[i], fields[i].key, i < 2, &lists[i], &counts[i], err);
	struct eqm_image *img = NULL;
	if (!r) {
		struct eq_manifest_image in = {
			.before = lists[0],
			.n_before = counts[0],
			.after = lists[1],
			.n_after = counts[1],
			.replace = lists[2],
			.n_replace = counts[2],
			.remove = lists[3],
			.n_remove = counts[3],
		};
		r = make_image(&in, EQ_ERR_PARSE, &img, err);
	}
	for (int i = 0; i < 4; i++)
		eq_free(lists[i]);
	if (r)
		return r;
	eqm_image_free(m->image);
	m->image = img;
	return EQ_OK;
}

/* A JSON string: '"' and '\\' escaped; the model refuses control
 * characters and invalid UTF-8, so nothing else needs it. */
static eq_err put_string(struct eq_buf *b, const char *s, struct eq_error *err)
{
	eq_err r = eq_buf_append(b, "\"", 1, err);
	while (!r && *s) {
		size_t n = strcspn(s, "\"\\");
		if (n)
			r = eq_buf_append(b, s, n, err);
		s += n;
		if (!r && *s) {
			char esc[2] = {'\\', *s};
			r = eq_buf_append(b, esc, 2, err);
			s++;
		}
	}
	return r ? r : eq_buf_append(b, "\"", 1, err);
}

static eq_err put_list(struct eq_buf *b, const char *key, const struct eqm_list *l, bool last, struct eq_error *err)
{
	eq_err r = eq_buf_printf(b, err, "    \"%s\": [%s", key, l->n ? "\n" : "");
	for (size_t i = 0; !r && i < l->n; i++) {
		r = eq_buf_append(b, "      ", 6, err);
		if (!r)
			r = put_string(b, l->v[i], err);
		if (!r)
			r = eq_buf_printf(b, err, "%s\n", i + 1 < l->n ? "," : "");
	}
	return r ? r : eq_buf_printf(b, err, "%s]%s\n", l->n ? "    " : "", last ? "" : ",");
}

eq_err eqm_image_write(struct eq_buf *b, const struct eq_manifest *m, struct eq_error *err)
{
	const struct eqm_image *img = m->image;
	eq_err r = eq_buf_printf(b, err, "  \"image\": {\n");
	if (!r)
		r = put_list(b, "before", &img->before, false, err);
	if (!r)
		r = put_list(b, "after", &img->after, false, err);
	if (!r)
		r = put_list(b, "replace", &img->replace, false, err);
	if (!r)
		r = put_list(b, "remove", &img->remove, true, err);
	return r ? r : eq_buf_printf(b, err, "  }\n");
}
