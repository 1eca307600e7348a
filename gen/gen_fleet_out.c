/*
 * Writing the fleet summary of gen_fleet.c: text for people, JSON for
 * tools, and one HTML page that needs nothing but itself (styles inline,
 * the chart an inline SVG, no script), so it can be mailed, archived by a
 * CI job or opened offline. Every text that came from a report (release
 * names, reasons) is escaped for the format it goes into.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <eq/gen_fleet.h>

/* Columns of a chart: enough for a smooth line, few enough for a page of
 * a million devices. */
#define CHART_COLUMNS 320
#define CHART_W 640
#define CHART_H 200
#define CHART_LEFT 48
#define CHART_BOTTOM 28
/* Releases charted per channel, newest first. */
#define CHARTS_PER_CHANNEL 6

double eq_fleet_rollback_share(const struct eq_fleet_release *r)
{
	size_t installed = r->t_installed.n;
	size_t seen = r->committed + r->rolled_back + r->trying;
	/* A device whose "installed" report was dropped from a full queue
	 * still installed it. */
	if (seen > installed)
		installed = seen;
	return installed ? (double)r->rolled_back / (double)installed : 0.0;
}

static void fmt_time(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t <= 0 || !gmtime_r(&tt, &tm) || !strftime(out, 32, "%Y-%m-%d %H:%M UTC", &tm))
		snprintf(out, 32, "-");
}

static double per_device(const struct eq_fleet_release *r)
{
	return r->devices ? (double)r->bytes_total / (double)r->devices : 0.0;
}

/* The image components' part of the download, in percent. */
static double component_share(const struct eq_fleet_release *r)
{
	return r->bytes_total ? 100.0 * (double)r->component_bytes_total / (double)r->bytes_total : 0.0;
}

/* ---- text --------------------------------------------------------------- */

/* Reasons are device-chosen bytes: control characters would forge lines. */
static void put_plain(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, out);
}

static void text_reasons(FILE *out, const char *what, const struct eq_fleet_reason *v, size_t n)
{
	if (!n)
		return;
	fprintf(out, "    %s:", what);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s %zu x \"", i ? ";" : "", v[i].devices);
		put_plain(out, v[i].text);
		fputc('"', out);
	}
	fputc('\n', out);
}

static void write_text(const struct eq_fleet *f, FILE *out)
{
	char a[32], b[32];
	fmt_time(f->first, a);
	fmt_time(f->last, b);
	fprintf(out, "%zu reports from %zu devices, %s to %s", f->reports, f->devices, a, b);
	if (f->anonymous)
		fprintf(out, "; %zu without a device id", f->anonymous);
	fputc('\n', out);
	if (f->unauthenticated)
		fprintf(out,
			"%zu reports not counted: no authenticated device identity (anyone who reaches the collector "
			"can write those; --unauthenticated counts them)\n",
			f->unauthenticated);
	if (f->uninventoried)
		fprintf(out, "%zu reports not counted: identity not in the inventory\n", f->uninventoried);
	if (f->bad) {
		fprintf(out, "%zu lines were not reports, e.g.:\n", f->bad);
		for (size_t i = 0; i < f->n_errors; i++) {
			fputs("  ", out);
			put_plain(out, f->errors[i]);
			fputc('\n', out);
		}
	}
	for (size_t c = 0; c < f->n_channels; c++) {
		const struct eq_fleet_channel *ch = &f->channels[c];
		fprintf(out, "board %s, channel %s\n", ch->board, ch->channel);
		for (size_t k = ch->n_releases; k-- > 0;) {
			const struct eq_fleet_release *r = &ch->releases[k];
			fprintf(out,
				"  release %" PRIu64 " '%s': %zu devices: %zu running it, %zu committed, %zu trying, "
				"%zu rolled back (%.1f %% of installs), %zu failed to install\n",
				r->number, r->release, r->devices, r->running, r->committed, r->trying, r->rolled_back,
				100.0 * eq_fleet_rollback_share(r), r->failed);
			text_reasons(out, "rolled back", r->rolled_back_reasons, r->n_rolled_back_reasons);
			text_reasons(out, "failed", r->failed_reasons, r->n_failed_reasons);
			eq_format_size((uint64_t)per_device(r), EQ_SIZE_NEAREST, a);
			eq_format_size(r->bytes_max, EQ_SIZE_NEAREST, b);
			fprintf(out, "    downloaded: %s per device on average, %s at most", a, b);
			if (r->component_bytes_total)
				fprintf(out, "; image components %.1f %% of it", component_share(r));
			fputc('\n', out);
		}
	}
}

/* ---- JSON --------------------------------------------------------------- */

static void json_reasons(FILE *out, const char *key, const struct eq_fleet_reason *v, size_t n)
{
	fprintf(out, ",\"%s\":[", key);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s{\"reason\":", i ? "," : "");
		eq_json_put_str(out, v[i].text);
		fprintf(out, ",\"devices\":%zu}", v[i].devices);
	}
	fputc(']', out);
}

static void write_json(const struct eq_fleet *f, int64_t now, FILE *out)
{
	fprintf(out,
		"{\"schema\":\"" EQ_FLEET_JSON_SCHEMA "\",\"generated\":%lld,\"lines\":%zu,\"reports\":%zu,\"bad\":%zu,"
		"\"anonymous\":%zu,\"unauthenticated\":%zu,\"uninventoried\":%zu,\"devices\":%zu,\"first\":%lld,\"last\":%lld,\"errors\":[",
		(long long)now, f->lines, f->reports, f->bad, f->anonymous, f->unauthenticated, f->uninventoried,
		f->devices, (long long)f->first, (long long)f->last);
	for (size_t i = 0; i < f->n_errors; i++) {
		fputs(i ? "," : "", out);
		eq_json_put_str(out, f->errors[i]);
	}
	fputs("],\"channels\":[", out);
	for (size_t c = 0; c < f->n_channels; c++) {
		const struct eq_fleet_channel *ch = &f->channels[c];
		fprintf(out, "%s{\"board\":\"%s\",\"channel\":\"%s\",\"releases\":[", c ? "," : "", ch->board,
			ch->channel);
		for (size_t k = 0; k < ch->n_releases; k++) {
			const struct eq_fleet_release *r = &ch->releases[k];
			fprintf(out,
				"%s{\"number\":%" PRIu64 ",\"release\":\"%s\",\"devices\":%zu,\"running\":%zu,"
				"\"committed\":%zu,\"trying\":%zu,\"rolled_back\":%zu,\"failed\":%zu,"
				"\"rollback_share\":%.4f,\"bytes_total\":%" PRIu64 ",\"bytes_max\":%" PRIu64
				",\"component_bytes_total\":%" PRIu64,
				k ? "," : "", r->number, r->release, r->devices, r->running, r->committed, r->trying,
				r->rolled_back, r->failed, eq_fleet_rollback_share(r), r->bytes_total, r->bytes_max,
				r->component_bytes_total);
			json_reasons(out, "rolled_back_reasons", r->rolled_back_reasons, r->n_rolled_back_reasons);
			json_reasons(out, "failed_reasons", r->failed_reasons, r->n_failed_reasons);
			fputc('}', out);
		}
		fputs("]}", out);
	}
	fputs("]}\n", out);
}

/* ---- HTML --------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at @p (1..4), 0 if none. */
static size_t utf8_len(const unsigned char *p)
{
	if (p[0] < 0x80)
		return 1;
	size_t n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

static void put_html(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_len(p);
		if (n == 0) {
			fputs("&#xfffd;", out);
			p++;
			continue;
		}
		if (n > 1) {
			fwrite(p, 1, n, out);
			p += n;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fputs("&#xfffd;", out);
			else
				fputc(*p, out);
		}
		p++;
	}
}

/* How many of the sorted times @t are at most @x. */
static size_t count_upto(const struct eq_fleet_times *t, int64_t x)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->v[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void chart_line(FILE *out, const struct eq_fleet_times *t, int64_t t0, int64_t t1, size_t ymax, const char *cls)
{
	if (!t->n)
		return;
	fprintf(out, "<polyline class=\"%s\" points=\"", cls);
	double pw = CHART_W - CHART_LEFT - 8, ph = CHART_H - CHART_BOTTOM - 8;
	for (int c = 0; c <= CHART_COLUMNS; c++) {
		int64_t x = t0 + (int64_t)((double)(t1 - t0) * c / CHART_COLUMNS);
		size_t y = count_upto(t, x);
		fprintf(out, "%s%.1f,%.1f", c ? " " : "", CHART_LEFT + pw * c / CHART_COLUMNS,
			8 + ph - ph * (double)y / (double)ymax);
	}
	fputs("\"/>\n", out);
}

static void chart(FILE *out, const struct eq_fleet_release *r)
{
	const struct eq_fleet_times *ts[] = {&r->t_installed, &r->t_committed, &r->t_rolled_back};
	int64_t t0 = 0, t1 = 0;
	size_t ymax = 1;
	for (size_t i = 0; i < 3; i++) {
		if (!ts[i]->n)
			continue;
		if (!t0 || ts[i]->v[0] < t0)
			t0 = ts[i]->v[0];
		if (ts[i]->v[ts[i]->n - 1] > t1)
			t1 = ts[i]->v[ts[i]->n - 1];
		if (ts[i]->n > ymax)
			ymax = ts[i]->n;
	}
	if (!t0)
		return;
	if (t1 <= t0)
		t1 = t0 + 60;
	/* A little room after the last report, so its step shows. */
	t1 += (t1 - t0) / 20 + 1;
	char a[32], b[32];
	fmt_time(t0, a);
	fmt_time(t1, b);
	fprintf(out,
		"<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
		"aria-label=\"devices over time\">\n",
		CHART_W, CHART_H, CHART_W, CHART_H);
	fprintf(out, "<rect class=\"plot\" x=\"%d\" y=\"8\" width=\"%d\" height=\"%d\"/>\n", CHART_LEFT,
		CHART_W - CHART_LEFT - 8, CHART_H - CHART_BOTTOM - 8);
	fprintf(out, "<text x=\"%d\" y=\"16\" text-anchor=\"end\">%zu</text>\n", CHART_LEFT - 4, ymax);
	fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n", CHART_LEFT - 4, CHART_H - CHART_BOTTOM);
	fprintf(out, "<text x=\"%d\" y=\"%d\">%s</text>\n", CHART_LEFT, CHART_H - 8, a);
	fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", CHART_W - 8, CHART_H - 8, b);
	chart_line(out, &r->t_installed, t0, t1, ymax, "installed");
	chart_line(out, &r->t_committed, t0, t1, ymax, "committed");
	chart_line(out, &r->t_rolled_back, t0, t1, ymax, "rolledback");
	fputs("</svg>\n", out);
}

static void html_reasons(FILE *out, const char *what, const struct eq_fleet_reason *v, size_t n)
{
	if (!n)
		return;
	fprintf(out, "<p class=\"reasons\">%s:</p><ul>\n", what);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "<li>%zu &times; <code>", v[i].devices);
		put_html(out, v[i].text);
		fputs("</code></li>\n", out);
	}
	fputs("</ul>\n", out);
}

static const char css[] =
	"body{font:14px/1.4 sans-serif;margin:24px;color:#1b1f24;background:#fff}"
	"h1{font-size:20px}h2{font-size:16px;margin-top:28px}h3{font-size:14px;margin:18px 0 4px}"
	"table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid #d0d7de;text-align:right}"
	"th:first-child,td:first-child{text-align:left}.bad{color:#b42318}"
	".chart text{font:11px sans-serif;fill:#57606a}.plot{fill:#f6f8fa;stroke:#d0d7de}"
	"polyline{fill:none;stroke-width:2.5}.installed{stroke:#1f6feb}.committed{stroke:#1a7f37}"
	".rolledback{stroke:#cf222e}.key{display:inline-block;width:14px;height:4px;margin:0 4px 2px 12px}"
	"code{background:#f6f8fa;padding:1px 4px}";

static void write_html(const struct eq_fleet *f, int64_t now, FILE *out)
{
	char a[32], b[32], g[32];
	fmt_time(f->first, a);
	fmt_time(f->last, b);
	fmt_time(now, g);
	fprintf(out,
		"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
		"<title>eqota fleet</title>\n<style>%s</style></head><body>\n"
		"<h1>eqota fleet</h1>\n<p>%zu reports from %zu devices, %s to %s (summary of %s).",
		css, f->reports, f->devices, a, b, g);
	if (f->bad)
		fprintf(out, " <span class=\"bad\">%zu lines were not reports.</span>", f->bad);
	if (f->unauthenticated)
		fprintf(out,
			" <span class=\"bad\">%zu reports without an authenticated device identity, not counted.</span>",
			f->unauthenticated);
	if (f->uninventoried)
		fprintf(out, " %zu reports of identities not in the inventory, not counted.", f->uninventoried);
	fputs("</p>\n", out);
	for (size_t c = 0; c < f->n_channels; c++) {
		const struct eq_fleet_channel *ch = &f->channels[c];
		fprintf(out, "<h2>board %s, channel %s</h2>\n", ch->board, ch->channel);
		fputs("<table><tr><th>release</th><th>devices</th><th>running</th><th>committed</th><th>trying</th>"
		      "<th>rolled back</th><th>failed</th><th>per device</th><th>image components</th></tr>\n",
		      out);
		for (size_t k = ch->n_releases; k-- > 0;) {
			const struct eq_fleet_release *r = &ch->releases[k];
			eq_format_size((uint64_t)per_device(r), EQ_SIZE_NEAREST, a);
			fprintf(out,
				"<tr><td>%" PRIu64 " %s</td><td>%zu</td><td>%zu</td><td>%zu</td><td>%zu</td>"
				"<td%s>%zu (%.1f %%)</td><td>%zu</td><td>%s</td><td>%.1f %%</td></tr>\n",
				r->number, r->release, r->devices, r->running, r->committed, r->trying,
				r->rolled_back ? " class=\"bad\"" : "", r->rolled_back,
				100.0 * eq_fleet_rollback_share(r), r->failed, a, component_share(r));
		}
		fputs("</table>\n", out);
		size_t shown = 0;
		for (size_t k = ch->n_releases; k-- > 0 && shown < CHARTS_PER_CHANNEL; shown++) {
			const struct eq_fleet_release *r = &ch->releases[k];
			fprintf(out, "<h3>release %" PRIu64 " %s</h3>\n", r->number, r->release);
			fputs("<p><span class=\"key installed\" style=\"background:#1f6feb\"></span>installed"
			      "<span class=\"key\" style=\"background:#1a7f37\"></span>committed"
			      "<span class=\"key\" style=\"background:#cf222e\"></span>rolled back</p>\n",
			      out);
			chart(out, r);
			html_reasons(out, "Rolled back", r->rolled_back_reasons, r->n_rolled_back_reasons);
			html_reasons(out, "Failed to install", r->failed_reasons, r->n_failed_reasons);
		}
	}
	fputs("</body></html>\n", out);
}

eq_err eq_fleet_write(const struct eq_fleet *f, enum eq_fleet_format fmt, int64_t now, FILE *out, struct eq_error *err)
{
	switch (fmt) {
	case EQ_FLEET_TEXT: write_text(f, out); break;
	case EQ_FLEET_JSON: write_json(f, now, out); break;
	case EQ_FLEET_HTML: write_html(f, now, out); break;
	}
	if (fflush(out) != 0 || ferror(out))
		return eq_error_errno(err, EQ_ERR_IO, "cannot write the fleet summary");
	return EQ_OK;
}
