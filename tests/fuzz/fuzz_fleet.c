/*
 * Fuzz target for the fleet summary's report reader (gen/
 * gen_fleet.c): the input is a report file as a collector stored it, lines
 * any device (or anyone reaching the collector) wrote. It is read and
 * written in all three formats.
 *
 * Beyond "no crash": every line is either a report or a bad line; the
 * devices' counts per release add up (running, committed and the last-word
 * counts never exceed the devices); no text from the input reaches the
 * HTML page unescaped (no '<' other than the page's own tags).
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/gen_fleet.h>

/* Lines without "auth" counted, by the sender's device id. */
static const struct eq_fleet_opts unauth = {.unauthenticated = true};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/eq-fuzz-fleet-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 0;
	bool ok = write(fd, data, size) == (ssize_t)size;
	close(fd);
	struct eq_fleet *f = NULL;
	struct eq_error e;
	const char *files[] = {path};
	if (ok && eq_fleet_read(files, 1, &unauth, &f, &e) == EQ_OK) {
		check(f->reports + f->bad <= f->lines);
		for (size_t c = 0; c < f->n_channels; c++) {
			for (size_t k = 0; k < f->channels[c].n_releases; k++) {
				const struct eq_fleet_release *r = &f->channels[c].releases[k];
				check(r->running <= r->devices && r->committed <= r->devices);
				check(r->trying + r->rolled_back + r->failed <= r->devices);
				double s = eq_fleet_rollback_share(r);
				check(s >= 0 && s <= 1);
			}
		}
		char *buf = NULL;
		size_t len = 0;
		for (int fmt = EQ_FLEET_TEXT; fmt <= EQ_FLEET_HTML; fmt++) {
			FILE *out = open_memstream(&buf, &len);
			check(out != NULL);
			check(eq_fleet_write(f, (enum eq_fleet_format)fmt, 0, out, &e) == EQ_OK);
			fclose(out);
			if (fmt == EQ_FLEET_HTML) {
				/* The page's own tags only: "<" starts a known tag. */
				static const char *const tags[] = {
					"<!DOCTYPE", "<html",  "<head", "<meta", "<title", "</title",   "<style",
					"</style",   "</head", "<body", "<h1",   "</h1",   "<p",        "</p",
					"<span",     "</span", "<h2",   "</h2",  "<table", "</table",   "<tr",
					"</tr",      "<th",    "</th",  "<td",   "</td",   "<h3",       "</h3",
					"<svg",      "</svg",  "<rect", "<text", "</text", "<polyline", "<ul",
					"</ul",      "<li",    "</li",  "<code", "</code", "</body",    "</html"};
				for (const char *p = buf; (p = strchr(p, '<')); p++) {
					bool known = false;
					for (size_t t = 0; t < sizeof(tags) / sizeof(tags[0]) && !known; t++) {
						size_t tl = strlen(tags[t]);
						known = !strncmp(p, tags[t], tl) && (p[tl] == ' ' || p[tl] == '>');
					}
					check(known);
				}
			}
			free(buf);
			buf = NULL;
		}
		eq_fleet_free(f);
	}
	unlink(path);
	return 0;
}
