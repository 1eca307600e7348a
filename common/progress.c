#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eq/common.h"

double eq_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void eq_progress_printer_init(struct eq_progress_printer *pp, int fd)
{
	pp->fd = fd;
	pp->tty = isatty(fd);
	pp->interval_s = pp->tty ? 0.2 : 5.0;
	pp->last_s = -1e9;
}

void eq_progress_print(const struct eq_progress *p, void *vctx)
{
	struct eq_progress_printer *pp = vctx;
	bool final = p->items_total && p->items_done == p->items_total;
	if (!final && p->elapsed_s - pp->last_s < pp->interval_s)
		return;
	pp->last_s = p->elapsed_s;
	char done[32], total[32], rate[32], left[32] = "?";
	eq_format_size(p->bytes_done, EQ_SIZE_NEAREST, done);
	eq_format_size(p->bytes_total, EQ_SIZE_NEAREST, total);
	double r = p->elapsed_s > 0 ? (double)p->bytes_done / p->elapsed_s : 0;
	eq_format_size((uint64_t)r, EQ_SIZE_NEAREST, rate);
	if (r > 0 && p->bytes_total >= p->bytes_done) {
		double secs = (double)(p->bytes_total - p->bytes_done) / r;
		snprintf(left, sizeof(left), "%.0fs", secs);
	} else if (r > 0 && p->items_done > 0 && p->items_total >= p->items_done) {
		double secs = p->elapsed_s / (double)p->items_done * (double)(p->items_total - p->items_done);
		snprintf(left, sizeof(left), "%.0fs", secs);
	}
	char line[256];
	if (p->bytes_total)
		snprintf(line, sizeof(line), "%s: %llu/%llu packages, %s of %s, %s/s, %s left%s%s", p->what,
			 (unsigned long long)p->items_done, (unsigned long long)p->items_total, done, total, rate, left,
			 p->item ? " - " : "", p->item ? p->item : "");
	else
		snprintf(line, sizeof(line), "%s: %llu/%llu packages, %s, %s/s, %s left%s%s", p->what,
			 (unsigned long long)p->items_done, (unsigned long long)p->items_total, done, rate, left,
			 p->item ? " - " : "", p->item ? p->item : "");
	if (pp->tty)
		dprintf(pp->fd, "\r\033[K%.*s", 200, line);
	else
		dprintf(pp->fd, "%s\n", line);
}

void eq_progress_printer_done(struct eq_progress_printer *pp)
{
	if (pp->tty)
		dprintf(pp->fd, "\n");
}
