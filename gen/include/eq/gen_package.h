/*
 * eq_gen, package reader (gen_package.c): .deb, .ipk, .rpm and tarballs into
 * canonical payloads. Part of the eq_gen library (<eq/gen.h> includes every
 * part).
 */
#ifndef EQ_GEN_PACKAGE_H
#define EQ_GEN_PACKAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>
#include <eq/delta.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Container formats eq_pkg_read() understands. */
enum eq_pkg_format {
	EQ_PKG_DEB,     /* ar: debian-binary, control.tar.*, data.tar.* */
	EQ_PKG_IPK,     /* the same members, in an ar or in a (gzipped) tar */
	EQ_PKG_RPM,     /* lead + headers + cpio payload */
	EQ_PKG_TARBALL, /* a plain (compressed) tar of the installed tree */
};

/* Caps on package metadata. */
#define EQ_PKG_CONTROL_MAX (1024u * 1024u) /* bytes of a control file */
#define EQ_PKG_FIELD_MAX 255               /* bytes of name, version, arch */
#define EQ_PKG_DEPENDS_MAX (64u * 1024u)   /* bytes of the depends string */

/*
 * Metadata of one package (plain value struct). All strings are owned by
 * the struct, never NULL after a successful read (depends may be ""), and
 * freed by eq_pkg_info_done().
 *   name, version, arch: from the control file (.deb, .ipk: Package,
 *     Version, Architecture); from the file name for .rpm
 *     ("NAME-VERSION-RELEASE.ARCH.rpm", version = "VERSION-RELEASE") and
 *     tarballs ("NAME_VERSION.tar.*" or "NAME-VERSION.tar.*", arch "all");
 *   depends: Pre-Depends then Depends joined with ", ", continuation lines
 *     folded to single spaces ("" for .rpm and tarballs);
 *   file: the path the package was read from.
 */
struct eq_pkg_info {
	enum eq_pkg_format format;
	char *name;
	char *version;
	char *arch;
	char *depends;
	char *file;
};

/* Frees the strings and zeroes @i; safe on a zeroed or half-filled struct. */
EQ_API void eq_pkg_info_done(struct eq_pkg_info *i);

/*
 * A package read into memory: its metadata and a payload builder whose
 * regular files point into one private, already unlinked spool file.
 */
struct eq_pkg;

/*
 * Reads the package file @path. The format is recognised from the content:
 * ar magic (.deb, or .ipk when the name ends in ".ipk"), RPM lead, else a
 * possibly compressed tar (an .ipk container when the name ends in ".ipk",
 * a tarball otherwise). Only in-process decompressors are used (gzip, xz,
 * lzma, bzip2, zstd); a libarchive warning is an error, since it means lost
 * metadata. Hard-link groups are normalised: the smallest path (strcmp
 * order) holds the data, the others link to it, whatever the archive did.
 * Every data entry goes into the payload: paths lose a leading "./" or "/",
 * the root entry is skipped, numeric owners, mode (setuid etc.), symlinks,
 * hard links, device nodes, FIFOs and xattrs (pax SCHILY.xattr) are kept;
 * timestamps and owner names are dropped. File data is spooled into one
 * unlinked temporary file in $TMPDIR (else /var/tmp).
 * @limits (NULL: defaults) caps entries, path length, file and total sizes.
 * Errors name @path and, where it applies, the member and entry:
 * EQ_ERR_PARSE (corrupt or truncated archive, bad control file),
 * EQ_ERR_UNSUPPORTED (sockets, unknown format), EQ_ERR_UNSAFE (".." in a
 * path), EQ_ERR_LIMIT, EQ_ERR_IO, EQ_ERR_NOTFOUND (no such file, or no
 * data.tar/control member). On success *ret is new; free with eq_pkg_free().
 */
EQ_API eq_err eq_pkg_read(const char *path, const struct eq_payload_limits *limits, struct eq_pkg **ret,
			  struct eq_error *err) EQ_MUST_CHECK;

/* Frees the package, its builder and its spool file; NULL is a no-op. */
EQ_API void eq_pkg_free(struct eq_pkg *p);

/* The package's metadata, owned by @p. */
EQ_API const struct eq_pkg_info *eq_pkg_get_info(const struct eq_pkg *p);

/* The package's payload builder, owned by @p (for adding nothing more;
 * eq_payload_builder_count() and the like). */
EQ_API struct eq_payload_builder *eq_pkg_get_builder(struct eq_pkg *p);

/*
 * Writes the canonical payload to @sink (eq_payload_builder_write() over
 * the spool file) and returns its SHA-256 (the package's outhash for
 * EQ_PAYLOAD_METHOD) and size. May be called more than once.
 */
EQ_API eq_err eq_pkg_write_payload(struct eq_pkg *p, eq_write_fn sink, void *sink_ctx,
				   uint8_t ret_sha256[EQ_SHA256_LEN], uint64_t *ret_size,
				   struct eq_error *err) EQ_MUST_CHECK;

/*
 * The default taskhash of a package that comes without one: the SHA-256
 * (lower-case hex into @ret_hex) of the bytes
 *   "eqota-taskhash-v1" NUL name NUL version NUL arch NUL depends NUL
 *   payload-sha256-hex
 * (no trailing NUL; a NULL string counts as ""). The payload hash is part of
 * it because the taskhash -> unihash mapping is write-once: a taskhash that
 * ignored the content would keep a changed package on its old unihash.
 */
EQ_API void eq_pkg_default_taskhash(const struct eq_pkg_info *info, const uint8_t payload_sha256[EQ_SHA256_LEN],
				    char ret_hex[EQ_SHA256_HEX_LEN + 1]);

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_PACKAGE_H */
