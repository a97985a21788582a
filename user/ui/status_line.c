// SPDX-License-Identifier: GPL-2.0-only
/* The status line of `record`; see status_line.h. */
#include <errno.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fd.h"
#include "base/log.h"
#include "ui/status_line.h"

#define REDRAW_NS 250000000ull

static int erase_before_message(void *ctx, const char *msg)
{
	(void)msg;
	status_line__clear(ctx);
	return 0;
}

void status_line__init(struct status_line *sl, int fd)
{
	*sl = (struct status_line){ .fd = isatty(fd) ? fd : -1 };
	if (sl->fd >= 0)
		log__set_hook(erase_before_message, sl);
}

int status_line__due(const struct status_line *sl)
{
	return sl->fd >= 0 && (!sl->drawn_ns || clock__mono_ns() - sl->drawn_ns >= REDRAW_NS);
}

void status_line__show(struct status_line *sl, const struct session_status *st)
{
	struct winsize ws;
	char line[512], procs[32] = "";
	int width = 80, n;

	if (!status_line__due(sl))
		return;
	sl->drawn_ns = clock__mono_ns();
	if (!ioctl(sl->fd, TIOCGWINSZ, &ws) && ws.ws_col)
		width = ws.ws_col;
	if (st->processes > 1)
		snprintf(procs, sizeof(procs), ", %u processes", st->processes);
	n = snprintf(line, sizeof(line),
		     "\rpybpfprof: %.1f s, %llu sample%s (%llu incomplete, %llu dropped), "
		     "%u thread%s%s; Ctrl-C stops", st->elapsed_s,
		     (unsigned long long)st->samples, st->samples == 1 ? "" : "s",
		     (unsigned long long)st->incomplete,
		     (unsigned long long)st->drops, st->threads, st->threads == 1 ? "" : "s",
		     procs);
	if (n < 0)
		return;
	/* A line that wraps can no longer be redrawn with \r: cut it short of the edge. */
	if (n > width)
		n = width;
	if ((size_t)n > sizeof(line) - 4)
		n = sizeof(line) - 4;
	n += snprintf(line + n, sizeof(line) - n, "\033[K");
	/* Whole writes: a line cut short by a signal would leave the cursor mid-line. */
	(void)fd__write_all(sl->fd, line, n);
	sl->shown = 1;
}

void status_line__clear(struct status_line *sl)
{
	if (sl->fd < 0 || !sl->shown)
		return;
	(void)fd__write_all(sl->fd, "\r\033[K", 4);
	sl->shown = 0;
	sl->drawn_ns = 0;
}

void status_line__end(struct status_line *sl)
{
	status_line__clear(sl);
	if (sl->fd >= 0)
		log__set_hook(NULL, NULL);
	sl->fd = -1;
}
