/*
 * Helpers shared by the eq_gen sources; not part of the public gen.h.
 */
#ifndef EQ_GEN_PRIV_H
#define EQ_GEN_PRIV_H

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

#endif
