/*
 * Fuzz target for the slot-record parser (agent/records.c): a record file
 * survives power cuts and may be damaged, and the agent reads it to decide
 * what to remove from a slot. A record that parses must write back to
 * bytes that parse to the same entries (the writer and the parser agree).
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/records.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const struct eq_rec_entry *a, const struct eq_rec_entry *b)
{
	return a->type == b->type && a->mode == b->mode && a->uid == b->uid && a->gid == b->gid && a->size == b->size &&
	       memcmp(a->sha256, b->sha256, EQ_SHA256_LEN) == 0 && strcmp(a->path, b->path) == 0 &&
	       !a->link == !b->link && (!a->link || strcmp(a->link, b->link) == 0) && a->devmajor == b->devmajor &&
	       a->devminor == b->devminor;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > (1u << 20))
		return 0;
	FILE *f = fmemopen((void *)(uintptr_t)data, size, "r");
	if (!f)
		abort();
	struct eq_rec_list l;
	struct eq_error e;
	eq_rec_list_init(&l);
	eq_err r = eq_rec_parse(f, "fuzz.files", &l, &e);
	fclose(f);
	if (r != EQ_OK) {
		if (l.n != 0)
			abort(); /* documented: left empty on failure */
		return 0;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *w = open_memstream(&text, &len);
	if (!w)
		abort();
	if (eq_rec_write_header(w, &e) != EQ_OK)
		abort();
	for (size_t i = 0; i < l.n; i++)
		if (eq_rec_write_entry(w, &l.v[i], &e) != EQ_OK)
			abort();
	fclose(w);
	struct eq_rec_list back;
	eq_rec_list_init(&back);
	FILE *g = fmemopen(text, len ? len : 1, "r");
	if (!g || eq_rec_parse(g, "back.files", &back, &e) != EQ_OK || back.n != l.n) {
		fprintf(stderr, "fuzz_records: a parsed record did not read back: %s\n", eq_error_msg(&e));
		abort();
	}
	fclose(g);
	for (size_t i = 0; i < l.n; i++)
		if (!same(&l.v[i], &back.v[i]))
			abort();
	eq_rec_list_done(&back);
	eq_rec_list_done(&l);
	free(text);
	return 0;
}
