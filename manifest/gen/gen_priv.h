/*
 * Helpers shared by the eq_gen sources; not part of the public gen.h.
 */
#ifndef EQ_GEN_PRIV_H
#define EQ_GEN_PRIV_H

/*
 * Splits the next blank-separated (space or tab) field off the line *p:
 * returns it NUL-terminated in place and moves *p past it; NULL when only
 * blanks are left. For the line formats of build indexes and owner files.
 */
char *eqg_next_field(char **p);

#endif
