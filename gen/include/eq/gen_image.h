/*
 * eq_gen, image analysis (gen_image.c): a built root filesystem read into an
 * entry list and each entry attributed to the package that ships it, or
 * classified as something only the image has. The base of image mode
 * (issue 31): what no package ships becomes image components. Part of the
 * eq_gen library (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_IMAGE_H
#define EQ_GEN_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>
#include <eq/delta.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Symlinks followed while resolving one path, as the kernel's MAXSYMLINKS:
 * more is a loop. */
#define EQ_IMAGE_MAX_FOLLOW 40u

/*
 * What an image entry is to the release:
 *  - PACKAGE: at least one package ships an identical entry at the same
 *    resolved path (type, mode, owner, size, content, link target, device
 *    numbers, xattrs, and hard-linked with the same paths);
 *  - OVERRIDE: a package ships the path but no package's entry is
 *    identical (a file the install scripts edited, /etc/shells);
 *  - the rest no package ships, by type: FILE (regular, not empty), EMPTY
 *    (regular, 0 bytes), SYMLINK, DEVICE (character or block), FIFO, DIR.
 */
enum eq_image_class {
	EQ_IMAGE_PACKAGE,
	EQ_IMAGE_OVERRIDE,
	EQ_IMAGE_FILE,
	EQ_IMAGE_EMPTY,
	EQ_IMAGE_SYMLINK,
	EQ_IMAGE_DEVICE,
	EQ_IMAGE_FIFO,
	EQ_IMAGE_DIR,
};
#define EQ_IMAGE_CLASSES 8
/* "package", "override", "file", "empty", "symlink", "device", "fifo",
 * "dir" (static text; "?" out of range). */
EQ_API const char *eq_image_class_name(enum eq_image_class c);

/* Package index of an entry no package claims. */
#define EQ_IMAGE_NO_PKG UINT32_MAX

/*
 * One entry of the image (plain value struct, owned by the image). Paths
 * are relative ("usr/bin/bash"), the root is not an entry. A hard link is
 * not an entry type here: every member of a hard-link group is an
 * EQ_ENTRY_FILE with the group's data and the same link_group.
 */
struct eq_image_entry {
	char *path;
	enum eq_entry_type type; /* never EQ_ENTRY_HARDLINK */
	uint32_t mode;           /* 07777 bits */
	uint32_t uid, gid;
	uint64_t size;                 /* regular files */
	uint8_t sha256[EQ_SHA256_LEN]; /* regular files: content */
	char *link;                    /* symlinks: target as stored, else NULL */
	uint32_t devmajor, devminor;   /* device nodes */
	struct eq_xattr *xattrs;       /* sorted by name */
	size_t n_xattrs;
	uint8_t xattr_sha256[EQ_SHA256_LEN]; /* digest of the xattrs, zero without */
	uint32_t link_group;                 /* 0: none; else members share it */
	/* Filled by eq_image_attribute(): */
	enum eq_image_class cls;
	uint32_t pkg;    /* PACKAGE: first package with an identical entry;
			   * OVERRIDE: first package shipping the path;
			   * else EQ_IMAGE_NO_PKG */
	uint32_t n_pkgs; /* packages with an identical entry */
};

/* An image: its entries and what the packages added so far made of them. */
struct eq_image;

/*
 * Loads the root filesystem @path: a folder (walked without following any
 * symlink; xattrs read with it) or a file, read as a possibly compressed
 * tar (gzip, xz, zstd, bzip2, lzma; GNU or pax, SCHILY.xattr kept). The
 * image's own symlinks are then checked: each must resolve inside the image
 * within EQ_IMAGE_MAX_FOLLOW links (".." stops at the image root and an
 * absolute target starts there, as the device resolves them).
 * Refused, with the entry named (EQ_ERR_UNSUPPORTED unless said):
 *  - sockets; a libarchive warning (lost metadata: EQ_ERR_PARSE);
 *  - any entry under proc/ or sys/, or proc or sys as anything but a
 *    folder (a mount point must be empty in an image; EQ_ERR_UNSAFE);
 *  - paths with empty, "." or ".." components, a hard link whose target is
 *    not an earlier regular file of the image (an absolute one names an
 *    image path), an entry under a non-folder (EQ_ERR_UNSAFE);
 *  - an entry twice (EQ_ERR_PARSE), a symlink loop (EQ_ERR_UNSAFE);
 *  - entries, path length, file size and total size beyond @limits (NULL:
 *    eq_payload_limits defaults; EQ_ERR_LIMIT).
 * A corrupt or truncated tar is EQ_ERR_PARSE. Every message starts with
 * @path. On success *ret is new; free it with eq_image_free().
 */
EQ_API eq_err eq_image_load(const char *path, const struct eq_payload_limits *limits, struct eq_image **ret,
			    struct eq_error *err) EQ_MUST_CHECK;

/* Frees the image and everything it handed out; NULL is a no-op. */
EQ_API void eq_image_free(struct eq_image *img);

/* The number of entries, and entry @i (< count), owned by @img. Entries
 * keep the order they were read in (a folder: sorted by path). */
EQ_API size_t eq_image_count(const struct eq_image *img);
EQ_API const struct eq_image_entry *eq_image_get(const struct eq_image *img, size_t i);
/* The index of the entry at exactly @path, or SIZE_MAX. */
EQ_API size_t eq_image_find(const struct eq_image *img, const char *path);

/*
 * The path @path (relative, as a package names it) resolves to in the
 * image: every symlink of the image met on the way is followed, the last
 * component only if @follow_last ("bin/bash" -> "usr/bin/bash" with the
 * image's "bin -> usr/bin"; a package's folder "bin" -> "usr/bin").
 * Components the image does not have are kept as they are. The result is
 * relative, "" for the root. EQ_ERR_UNSAFE for a loop (the symlink named),
 * EQ_ERR_LIMIT for a result longer than the path cap. On success *ret is
 * new; the caller frees it with eq_free().
 */
EQ_API eq_err eq_image_resolve(const struct eq_image *img, const char *path, bool follow_last, char **ret,
			       struct eq_error *err) EQ_MUST_CHECK;

/*
 * Attributes the entries of package @name (its payload builder @b, as
 * eq_pkg_get_builder() gives it; the builder is written, not changed) to
 * the image. Each package entry is resolved (folders with follow_last) and
 * compared with the image's entry there; entries the image lacks are
 * recorded as missing. Call it once per package, then eq_image_classify().
 * @name is copied. Errors name the package and the entry.
 */
EQ_API eq_err eq_image_attribute(struct eq_image *img, const char *name, struct eq_payload_builder *b,
				 struct eq_error *err) EQ_MUST_CHECK;

/* The counts eq_image_classify() fills (plain value struct). */
struct eq_image_summary {
	uint64_t entries;                    /* of the image */
	uint64_t by_class[EQ_IMAGE_CLASSES]; /* entries of each class */
	uint64_t packages;                   /* packages attributed */
	uint64_t package_entries;            /* entries of their payloads */
	uint64_t missing;                    /* package entries the image lacks */
	uint64_t image_bytes;                /* regular files of FILE and OVERRIDE entries
				 * (a hard-link group once): image components */
	uint64_t package_bytes;              /* the same for PACKAGE entries */
};

/* Sets every entry's class from what eq_image_attribute() found and fills
 * *ret. May be called again after more packages. Cannot fail. */
EQ_API void eq_image_classify(struct eq_image *img, struct eq_image_summary *ret);

/* The name of package @i (in the order attributed), owned by @img; NULL
 * past the end. */
EQ_API const char *eq_image_pkg_name(const struct eq_image *img, uint32_t i);

/* Package entry @i (< summary.missing) the image does not have: its path
 * as the package ships it and the package index. Owned by @img. */
EQ_API void eq_image_missing_get(const struct eq_image *img, size_t i, const char **ret_path, uint32_t *ret_pkg);

/*
 * The whole check behind `eqota-gen image-check`: loads @image_path, reads
 * every package file of @packages_dir (eq_gen_list_packages(), eq_pkg_read()
 * with @limits), attributes them in file order and classifies. Errors
 * name the image or the package file. On success *ret is new (free it with
 * eq_image_free()) and *ret_summary filled.
 */
EQ_API eq_err eq_image_check(const char *image_path, const char *packages_dir, const struct eq_payload_limits *limits,
			     struct eq_image **ret, struct eq_image_summary *ret_summary,
			     struct eq_error *err) EQ_MUST_CHECK;

/* ---- image components (gen_image_compose.c) ---------------------------- */

/* Names of the image components (docs/manifest-format.md "image"). */
#define EQ_IMAGE_SKELETON "eqota-image-skeleton"
#define EQ_IMAGE_TOP "eqota-image-top"
#define EQ_IMAGE_PREFIX "eqota-image."

/* Whether @name is one of the names image components take: a real package
 * may not have it. */
EQ_API bool eq_image_is_component_name(const char *name);

/* One image component: a payload of image entries (plain value struct). */
struct eq_image_component {
	char *name;
	struct eq_payload_builder *b; /* its entries; data read from the components' data file */
	uint64_t entries;
	uint64_t bytes; /* of regular files' data (a hard-link group once) */
};

/*
 * What turns a release into the image (DESIGN31.md): the components
 * @v[0 .. n_before) go before the packages (the skeleton), the rest after
 * them, in this order; @replace and @remove are package paths as the
 * packages ship them (sorted, unique, disjoint). Everything is owned by
 * the struct (eq_image_components_free()).
 */
struct eq_image_components {
	struct eq_image_component *v;
	size_t n, n_before;
	char **replace, **remove;
	size_t n_replace, n_remove;
	uint64_t from_packages; /* image entries the packages place */
	uint64_t from_image;    /* image entries only components place */
	int data_fd;            /* the regular files' data the builders read */
};

struct eq_image_compose_opts {
	const char *rootfs; /* what eq_image_load() read: folder or tar */
	const char *tmpdir; /* where the data file is made (unlinked at once) */
	bool devices;       /* device nodes allowed (then only under dev/) */
};

/*
 * Computes the components of @img, to which every package of the release
 * was attributed (eq_image_attribute()) and which was classified
 * (eq_image_classify()):
 *  - the skeleton (EQ_IMAGE_SKELETON): the image's symlinks that package
 *    paths lead through, the folders on the way to them and the folders
 *    they lead to;
 *  - after the packages, grouped by the top folder of the path
 *    (EQ_IMAGE_PREFIX + folder; a name outside [A-Za-z0-9._+-] or longer
 *    than 100 bytes becomes "x" + 16 hex of its SHA-256; non-folders
 *    directly at the root: EQ_IMAGE_TOP): every entry not class PACKAGE
 *    and not in the skeleton, package folders whose metadata the last
 *    package (name order) shipping them does not give, and every member of
 *    a hard-link group with any such member (in the component of the
 *    group's first path).
 * Regular files' data is read from @o->rootfs again into one temporary
 * file and must hash to what eq_image_load() read (EQ_ERR_STATE naming the
 * entry: the image changed). Device nodes are refused (EQ_ERR_UNSAFE, the
 * entry named) unless @o->devices, and then anywhere but under dev/.
 * On success *ret is new; free it with eq_image_components_free().
 */
EQ_API eq_err eq_image_compose(struct eq_image *img, const struct eq_image_compose_opts *o,
			       struct eq_image_components **ret, struct eq_error *err) EQ_MUST_CHECK;

/* The device node rule of eq_image_compose() alone, so that a publish
 * refuses the image before any package is read. */
EQ_API eq_err eq_image_check_devices(const struct eq_image *img, bool devices, struct eq_error *err) EQ_MUST_CHECK;

/* Frees @c, its builders and data file; NULL is a no-op. */
EQ_API void eq_image_components_free(struct eq_image_components *c);

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_IMAGE_H */
