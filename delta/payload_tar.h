/*
 * Private to the payload code (payload_write.c, payload_read.c,
 * payload_extract.c): the tar layout and helpers the three share. The
 * format itself is described in docs/internals/payload.md.
 */
#ifndef EQ_PAYLOAD_TAR_H
#define EQ_PAYLOAD_TAR_H

#include <eq/delta.h>

#define TAR_BLOCK 512u

/* ustar header field offsets and widths (POSIX.1-2001 ustar). */
#define TAR_NAME_OFF 0
#define TAR_NAME_LEN 100
#define TAR_MODE_OFF 100
#define TAR_UID_OFF 108
#define TAR_GID_OFF 116
#define TAR_ID_LEN 8
#define TAR_SIZE_OFF 124
#define TAR_SIZE_LEN 12
#define TAR_MTIME_OFF 136
#define TAR_CHKSUM_OFF 148
#define TAR_CHKSUM_LEN 8
#define TAR_TYPE_OFF 156
#define TAR_LINK_OFF 157
#define TAR_LINK_LEN 100
#define TAR_MAGIC_OFF 257
#define TAR_VERSION_OFF 263
#define TAR_UNAME_OFF 265
#define TAR_GNAME_OFF 297
#define TAR_OWNER_LEN 32
#define TAR_DEVMAJOR_OFF 329
#define TAR_DEVMINOR_OFF 337
#define TAR_PREFIX_OFF 345
#define TAR_PREFIX_LEN 155

/* Largest values the fixed-width octal fields hold (7 and 11 digits). */
#define TAR_OCTAL7_MAX 07777777ull
#define TAR_OCTAL11_MAX 077777777777ull

/* Fixed name of every pax extended header we write; readers ignore it. */
#define TAR_PAX_NAME "PaxHeader"
#define TAR_PAX_XATTR "SCHILY.xattr."

/* Paths and strings quoted in error messages are cut to this length. */
#define TAR_QUOTE_MAX 160

/* Sum of the header bytes with the checksum field read as spaces. */
unsigned tar_checksum(const uint8_t block[TAR_BLOCK]);

/* Writes @v as width-1 zero-padded octal digits and a NUL; @v must fit. */
void tar_put_octal(uint8_t *field, size_t width, uint64_t v);


/*
 * Checks a relative payload path (the form struct eq_payload_entry uses):
 * not empty, not absolute, no empty, "." or ".." components. Returns NULL
 * when fine or a static description of the first problem.
 */
const char *tar_path_problem(const char *path);

/* A set of borrowed C strings (the caller keeps them alive), for duplicate
 * and membership checks over many paths. */
struct tar_strset {
	const char **slots;
	size_t cap;
	size_t n;
};
void tar_strset_init(struct tar_strset *s);
void tar_strset_done(struct tar_strset *s);
bool tar_strset_has(const struct tar_strset *s, const char *key);
/* Adds @key; *ret_added is false if it was already there. */
eq_err tar_strset_add(struct tar_strset *s, const char *key, bool *ret_added, struct eq_error *err) EQ_MUST_CHECK;

/* Limits with every zero field replaced by its default. */

/* Extract's view into the reader: hash everything consumed from now on,
 * the hash so far, and the byte offset of the current entry's header. */
void tar_reader_hash_enable(struct eq_payload_reader *r);
void tar_reader_hash_final(struct eq_payload_reader *r, uint8_t out[EQ_SHA256_LEN]);
uint64_t tar_reader_entry_offset(const struct eq_payload_reader *r);

#endif
