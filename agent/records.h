/*
 * Slot records (private to eq_agent): the per-package file lists a slot
 * keeps under EQ_SLOT_RECORD_DIR/packages/<name>.files. Format in
 * docs/internals/slot-records.md:
 *
 *   eqota-files 1
 *   TYPE MODE UID GID SIZE SHA256 PATH [EXTRA]
 *
 * one line per payload entry, in payload order (strcmp of PATH, strictly
 * increasing). EXTRA is the symlink target (l), the hard link's first path
 * (h) or "MAJOR:MINOR" (c, b), and absent for f, d, p.
 */
#ifndef EQ_AGENT_RECORDS_H
#define EQ_AGENT_RECORDS_H

#include <stdio.h>

#include <eq/common.h>
#include <eq/delta.h>

#define EQ_REC_MAGIC "eqota-files 1"
/* Same caps as the payload reader's defaults, so every payload we accept
 * gets a record we can read back. */
#define EQ_REC_MAX_PATH 4096u
#define EQ_REC_MAX_ENTRIES 1000000u
/* Worst case: two fields of EQ_REC_MAX_PATH bytes, each byte encoded as %XX,
 * plus the fixed fields. */
#define EQ_REC_MAX_LINE (2u * 3u * EQ_REC_MAX_PATH + 256u)

struct eq_rec_entry {
	char type; /* 'f' 'd' 'l' 'h' 'c' 'b' 'p' */
	uint32_t mode, uid, gid;
	uint64_t size;                 /* 'f' only, else 0 */
	uint8_t sha256[EQ_SHA256_LEN]; /* 'f' only: SHA-256 of the data */
	char *path;                    /* decoded, owned by the list */
	char *link;                    /* 'l' target, 'h' first path; owned; NULL otherwise */
	uint32_t devmajor, devminor;   /* 'c' 'b' */
};

/* A whole record in memory (one package's list at a time). Caller-owned
 * struct: eq_rec_list_init() cannot fail, eq_rec_list_done() frees all. */
struct eq_rec_list {
	struct eq_rec_entry *v;
	size_t n, cap;
};

void eq_rec_list_init(struct eq_rec_list *l);
void eq_rec_list_done(struct eq_rec_list *l);

/*
 * Parses a record from @f; @name (the file name) and the line number start
 * every message: "bash.files:7: SHA256: expected 64 lower-case hex digits".
 * EQ_ERR_PARSE (malformed line, order, a hard link to no earlier file),
 * EQ_ERR_LIMIT (line longer than EQ_REC_MAX_LINE, more than
 * EQ_REC_MAX_ENTRIES lines), EQ_ERR_UNSAFE (absolute path, "..", "."),
 * EQ_ERR_IO, EQ_ERR_NOMEM. On success *ret is filled (free with
 * eq_rec_list_done()); on failure it is left empty.
 */
eq_err eq_rec_parse(FILE *f, const char *name, struct eq_rec_list *ret, struct eq_error *err) EQ_MUST_CHECK;

/* eq_rec_parse() of the file at @path; EQ_ERR_NOTFOUND when missing,
 * EQ_ERR_UNSAFE when @path is a symlink or not a regular file (its last
 * component is never followed). */
eq_err eq_rec_load(const char *path, struct eq_rec_list *ret, struct eq_error *err) EQ_MUST_CHECK;
/* The same with @path relative to directory @dirfd (or AT_FDCWD). */
eq_err eq_rec_load_at(int dirfd, const char *path, struct eq_rec_list *ret, struct eq_error *err) EQ_MUST_CHECK;

/* Writes the magic line / one entry line. EQ_ERR_IO. */
eq_err eq_rec_write_header(FILE *f, struct eq_error *err) EQ_MUST_CHECK;
eq_err eq_rec_write_entry(FILE *f, const struct eq_rec_entry *e, struct eq_error *err) EQ_MUST_CHECK;

/*
 * Reads a payload from @src and writes its record (magic line included) to
 * @out, hashing each file's data; streams, so memory does not depend on the
 * payload. *ret_entries (may be NULL) receives the number of entries.
 * Errors of the payload reader, EQ_ERR_IO for @out.
 */
eq_err eq_rec_from_payload(eq_read_fn src, void *src_ctx, const struct eq_payload_limits *lim, FILE *out,
			   uint64_t *ret_entries, struct eq_error *err) EQ_MUST_CHECK;

#endif
