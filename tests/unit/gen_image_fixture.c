/* The image tests' fixture (gen_image_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/common.h>
#include <eq/delta.h>

#include "gen_image_fixture.h"

char base[64];

int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/eq-image-XXXXXX");
	if (!mkdtemp(base))
		return -1;
	return 0;
}

int teardown(void **state)
{
	(void)state;
	struct eq_error e;
	return eq_rm_rf(base, &e) ? -1 : 0;
}

const char *at(const char *rel)
{
	static char buf[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", base, rel);
	return buf[k];
}

void mkdirs(const char *rel)
{
	struct eq_error e;
	assert_int_equal(eq_mkdir_p(at(rel), 0755, &e), EQ_OK);
}

void put(const char *rel, const char *content)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	struct eq_error e;
	assert_int_equal(eq_write_all(fd, content, strlen(content), &e), EQ_OK);
	close(fd);
}

void lnk(const char *target, const char *rel)
{
	assert_int_equal(symlink(target, at(rel)), 0);
}

struct eq_image *load(const char *rel)
{
	struct eq_image *img = NULL;
	struct eq_error e;
	eq_err r = eq_image_load(at(rel), NULL, &img, &e);
	if (r)
		fail_msg("eq_image_load: %s", eq_error_msg(&e));
	return img;
}

void attribute(struct eq_image *img, const char *name, const char *rel)
{
	struct eq_payload_builder *b = NULL;
	struct eq_error e;
	assert_int_equal(eq_payload_builder_new(NULL, &b, &e), EQ_OK);
	assert_int_equal(eq_payload_builder_add_tree(b, at(rel), &e), EQ_OK);
	eq_err r = eq_image_attribute(img, name, b, &e);
	eq_payload_builder_free(b);
	if (r)
		fail_msg("eq_image_attribute: %s", eq_error_msg(&e));
}
