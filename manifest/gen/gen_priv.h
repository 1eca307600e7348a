/*
 * Helpers shared by the eq_gen sources; not part of the public gen.h.
 */
#ifndef EQ_GEN_PRIV_H
#define EQ_GEN_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include <eq/gen.h>

/*
 * Splits the next line off the text *p: returns it NUL-terminated in place,
 * without its "\n" or "\r\n", and moves *p past it; NULL at the end of the
 * text (a last line without a newline is still returned).
 */
char *eqg_next_line(char **p);

/*
 * Splits the next blank-separated (space or tab) field off the line *p:
 * returns it NUL-terminated in place and moves *p past it; NULL when only
 * blanks are left. For the line formats of build indexes and owner files.
 */
char *eqg_next_field(char **p);

/*
 * Writes what saves devices most of the manifest download beside the
 * channel's manifest in @dir: manifest.json.zst and deltas from the
 * manifests of the last releases in @hist (of @repo/@board/@channel). @json
 * are the new manifest's bytes, also in @rdir/manifest.json.
 */
eq_err eqg_manifest_companions(const char *repo, const char *board, const char *channel,
			       const struct eq_repo_history *hist, const char *dir, const char *rdir,
			       const uint8_t *json, size_t json_len, struct eq_error *err);

#endif
