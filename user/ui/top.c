// SPDX-License-Identifier: GPL-2.0-only
/*
 * `pybpfprof top`: runs a sampling session and shows its function table (top_view.h)
 * once a second. On a terminal it takes the alternate screen and reads keys; otherwise
 * it prints a plain block a second. It ends with q, Ctrl-C, SIGTERM or the target's
 * exit, and says in one line on stderr what it saw.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/exitcodes.h"
#include "base/log.h"
#include "pbp_abi.h"
#include "session/session.h"
#include "ui/term.h"
#include "ui/top.h"
#include "ui/top_view.h"

#define REFRESH_NS 1000000000ull
/* The screen's first table comes sooner: an empty table says nothing. */
#define FIRST_REFRESH_NS 500000000ull
/* Short enough that keys and resizes feel immediate, long enough to cost nothing. */
#define POLL_MS 50
#define TEXT_ROWS 20
/* Messages held while the screen hides stderr, printed after it: a bound, since -vv
 * can log without end. */
#define HELD_MAX (64 * 1024)

/* The one piece of process-wide state: set by the signal handler, read by the loop. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

struct top_ctx {
	const struct top_opts *opts;
	struct session *session;
	struct top_view *view;
	enum top_sort key;
	int screen;		/* drawing on a terminal, not printing text blocks */
	int on_screen;		/* the terminal is ours until leave_screen() */
	int cols, rows;
	int quit;		/* q or Ctrl-C */
	char note[160];		/* the last message logged while the screen was up */
	char *held;		/* every such message, for after the screen */
	size_t held_len, held_lost;
	FILE *held_f;
};

/* While the screen is up, stderr is hidden behind it: keep messages for later. */
static int hold_message(void *arg, const char *msg)
{
	struct top_ctx *c = arg;

	snprintf(c->note, sizeof(c->note), "pybpfprof: %s", msg);
	c->note[strcspn(c->note, "\n")] = '\0';
	if (c->held_f && (size_t)ftell(c->held_f) + strlen(msg) < HELD_MAX)
		fprintf(c->held_f, "pybpfprof: %s", msg);
	else
		c->held_lost++;
	return 1;
}

static void release_messages(struct top_ctx *c)
{
	log__set_hook(NULL, NULL);
	if (!c->held_f)
		return;
	fclose(c->held_f);
	c->held_f = NULL;
	fwrite(c->held, 1, c->held_len, stderr);
	if (c->held_lost)
		pr_warn("(%zu more messages not shown)\n", c->held_lost);
	free(c->held);
	c->held = NULL;
}

static void header_of(struct top_ctx *c, const struct profile *p, struct top_header *h)
{
	struct session_status st;

	session__status(c->session, &st);
	*h = (struct top_header){
		.target = p->target,
		.note = c->note[0] ? c->note : NULL,
		.rate_hz = c->opts->session.rate_hz,
		.elapsed_s = st.elapsed_s,
		.samples = st.samples,
		.incomplete = st.incomplete,
		.drops = st.drops,
		.threads = st.threads,
		.processes = st.processes,
	};
}

/* One frame, built in memory and written at once: a half-drawn screen flickers. */
static int draw_screen(struct top_ctx *c)
{
	struct top_header h;
	struct profile p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return -ENOMEM;
	session__profile(c->session, &p);
	header_of(c, &p, &h);
	err = top_view__render_screen(c->view, &p, &h, c->key, c->cols, c->rows, TOP_ANSI, f);
	if (fclose(f) && !err)
		err = -ENOMEM;
	/* The terminal may be gone (hang-up): that ends the loop through SIGHUP, not here. */
	if (!err)
		term__write(buf, len);
	free(buf);
	return err;
}

static int print_block(struct top_ctx *c)
{
	struct top_header h;
	struct profile p;
	char clock[32];
	time_t t = time(NULL);
	struct tm tm;
	int err;

	session__profile(c->session, &p);
	header_of(c, &p, &h);
	localtime_r(&t, &tm);
	strftime(clock, sizeof(clock), "%Y-%m-%d %H:%M:%S", &tm);
	h.clock = clock;
	h.note = NULL;
	err = top_view__render_text(c->view, &p, &h, c->key, TEXT_ROWS, stdout);
	if (!err && fflush(stdout))
		err = -errno;
	return err;
}

static int update(struct top_ctx *c)
{
	struct profile p;

	session__profile(c->session, &p);
	return top_view__update(c->view, &p);
}

/* Returns whether the screen must be drawn again. */
static int read_keys(struct top_ctx *c)
{
	char keys[32];
	size_t n = term__read(keys, sizeof(keys));
	int redraw = 0;

	/* An escape sequence (arrows, function keys) arrives whole: none is ours. */
	if (!n || keys[0] == '\033')
		return 0;
	for (size_t i = 0; i < n; i++) {
		switch (keys[i]) {
		case 'o':
		case '1':
			redraw |= c->key != TOP_BY_OWN;
			c->key = TOP_BY_OWN;
			break;
		case 't':
		case '2':
			redraw |= c->key != TOP_BY_TOTAL;
			c->key = TOP_BY_TOTAL;
			break;
		case '\t':
			c->key = c->key == TOP_BY_OWN ? TOP_BY_TOTAL : TOP_BY_OWN;
			redraw = 1;
			break;
		case 'q':
		case 'Q':
		case 3:		/* Ctrl-C, a key in raw mode */
			c->quit = 1;
			return 0;
		case 26:	/* Ctrl-Z */
			term__suspend();
			redraw = 1;
			break;
		case 12:	/* Ctrl-L */
			redraw = 1;
			break;
		}
	}
	return redraw;
}

/* Returns whether the window changed size. */
static int resized(struct top_ctx *c)
{
	int cols, rows;

	term__size(&cols, &rows);
	if (cols == c->cols && rows == c->rows)
		return 0;
	c->cols = cols;
	c->rows = rows;
	return 1;
}

/* 0 when the run ended as the user wanted, 1 when the target exited, or a negative
 * errno. */
static int run(struct top_ctx *c)
{
	uint64_t next = clock__mono_ns() + (c->screen ? FIRST_REFRESH_NS : REFRESH_NS);
	int err = 0, redraw = c->screen;

	while (!c->quit && !stop_signal) {
		if (redraw) {
			err = draw_screen(c);
			if (err)
				goto fail;
		}
		/* Its errors are the session's to print. */
		err = session__poll(c->session, POLL_MS);
		if (err)
			return err;
		redraw = c->screen && (read_keys(c) | resized(c));
		if (clock__mono_ns() < next)
			continue;
		/* Behind (a stopped process, a slow poll): the next second starts now. */
		next = next + REFRESH_NS > clock__mono_ns() ? next + REFRESH_NS
							     : clock__mono_ns() + REFRESH_NS;
		/* Waits still open count up to now: a thread blocked all along would
		 * otherwise show only once it woke. */
		err = session__close_waits(c->session);
		if (!err)
			err = update(c);
		if (!err && !c->screen)
			err = print_block(c);
		if (err)
			goto fail;
		redraw = c->screen;
	}
	return 0;
fail:
	pr_warn("%s the table: %s\n", c->screen ? "drawing" : "printing", strerror(-err));
	return err;
}

/* What the user reads once the screen is gone: what was seen, and why it ended. */
static void summary(struct top_ctx *c, int exited)
{
	const struct top_row *best = NULL;
	struct session_status st;
	struct profile p;
	const char *where;
	char hot[256] = "";

	session__status(c->session, &st);
	session__profile(c->session, &p);
	/* What came in since the last refresh, and what the stop drained, counts too. */
	if (top_view__update(c->view, &p))
		return;
	for (size_t i = 0; i < top_view__count(c->view); i++) {
		const struct top_row *r = top_view__row(c->view, i);

		if (!best || r->own > best->own)
			best = r;
	}
	where = best ? top_view__row_file(&p, best) : NULL;
	if (best && best->own)
		snprintf(hot, sizeof(hot), "; most own time: %s%s%s%s, %.1f%%",
			 strtab__get(p.strs, best->name), where ? " (" : "", where ? where : "",
			 where ? ")" : "", 100.0 * best->own / aggregate__total(p.agg));
	pr_warn("%s: %llu sample%s in %.1f s (%llu incomplete, %llu dropped)%s%s\n", p.target,
		(unsigned long long)st.samples, st.samples == 1 ? "" : "s", st.elapsed_s, (unsigned long long)st.incomplete,
		(unsigned long long)st.drops, hot, exited ? "; the target exited" : "");
}

static void session_opts_of(const struct top_opts *o, struct session_opts *so)
{
	*so = o->session;
	so->stack_cap = PBP_STACK_DEFAULT;
	so->ringbuf_mb = 16;
	/* A table of functions: lines would only split them. */
	so->nolineno = 1;
}

static int take_screen(struct top_ctx *c)
{
	int err = term__enter(STDIN_FILENO, STDOUT_FILENO);

	if (err) {
		pr_warn("cannot set up the terminal: %s\n", strerror(-err));
		return err;
	}
	c->on_screen = 1;
	c->held_f = open_memstream(&c->held, &c->held_len);
	log__set_hook(hold_message, c);
	resized(c);
	return 0;
}

static void leave_screen(struct top_ctx *c)
{
	if (!c->on_screen)
		return;
	c->on_screen = 0;
	term__leave();
	release_messages(c);
}

int top__run(const struct top_opts *o)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };
	struct top_ctx c = { .opts = o, .key = TOP_BY_OWN };
	struct session_opts so;
	int code, err;

	/* No SA_RESTART: a poll must return so the loop sees the flag. SIGHUP (the
	 * terminal went away) ends the view as SIGTERM does. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	session_opts_of(o, &so);
	code = session__start(&so, &c.session);
	if (code)
		goto cleanup;
	code = EXIT_RUNTIME;
	if (top_view__new(&c.view)) {
		pr_warn("out of memory\n");
		goto cleanup;
	}
	c.screen = isatty(STDOUT_FILENO);
	if (c.screen && take_screen(&c))
		goto cleanup;
	err = run(&c);
	leave_screen(&c);
	session__stop(c.session);
	if (err < 0)
		goto cleanup;
	summary(&c, err == 1);
	code = EXIT_OK;
cleanup:
	leave_screen(&c);
	top_view__free(c.view);
	session__free(c.session);
	return code;
}
