/*
 * The fixture of the image tests (test_gen_image.c, test_gen_image_compose.c):
 * a scratch folder per case and the trees, images and packages made in it.
 * Paths are relative to the folder; a failing step fails the case.
 */
#ifndef EQ_GEN_IMAGE_FIXTURE_H
#define EQ_GEN_IMAGE_FIXTURE_H

#include <eq/gen_image.h>

/* The case's scratch folder, made by setup() and removed by teardown(). */
extern char base[64];

int setup(void **state);
int teardown(void **state);
/* base/REL as a path; the last four stay valid. */
const char *at(const char *rel);
void mkdirs(const char *rel);
void put(const char *rel, const char *content);
void lnk(const char *target, const char *rel);
/* The image at base/REL (a folder or a tar). */
struct eq_image *load(const char *rel);
/* Attributes the tree base/REL as package @name. */
void attribute(struct eq_image *img, const char *name, const char *rel);

#endif
