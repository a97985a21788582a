// SPDX-License-Identifier: GPL-2.0-only
/* The terminal of `top`; see term.h. Plain ANSI escapes: any terminal of the last
 * thirty years knows them, and they need no terminfo database. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "base/fd.h"
#include "ui/term.h"

/* Alternate screen, cursor hidden, no line wrap (a line drawn too wide is cut, never
 * folded onto the next), screen cleared; and back. */
#define ENTER_SEQ "\033[?1049h\033[?25l\033[?7l\033[2J"
#define LEAVE_SEQ "\033[?7h\033[?25h\033[?1049l"

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGQUIT };
#define NFATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))

/*
 * Process-wide because a crash handler must reach it: a terminal left in raw mode on
 * the alternate screen is unusable until the user types `reset` blind.
 */
static struct {
	int in_fd, out_fd;
	int raw;		/* in_fd's saved mode must be restored */
	int active;		/* out_fd shows the alternate screen */
	struct termios saved;
	struct sigaction old[NFATAL];
} term_ctx = { -1, -1 };

/* Async-signal-safe: tcsetattr() and write() only. */
static void restore(void)
{
	if (term_ctx.raw)
		tcsetattr(term_ctx.in_fd, TCSANOW, &term_ctx.saved);
	if (term_ctx.active && write(term_ctx.out_fd, LEAVE_SEQ, sizeof(LEAVE_SEQ) - 1) < 0) {
		/* nothing more to do on the way down */
	}
	term_ctx.raw = term_ctx.active = 0;
}

static void on_fatal(int sig)
{
	restore();
	/* Hand the signal to whoever had it (the default action, or a sanitizer's
	 * report): re-raised, it is delivered as this handler returns. */
	for (size_t i = 0; i < NFATAL; i++)
		if (fatal_signals[i] == sig)
			sigaction(sig, &term_ctx.old[i], NULL);
	raise(sig);
}

int term__write(const char *buf, size_t len)
{
	return fd__write_all(term_ctx.out_fd, buf, len);
}

static int make_raw(void)
{
	struct termios t = term_ctx.saved;

	t.c_lflag &= ~(ICANON | ECHO | ISIG | IEXTEN);
	t.c_iflag &= ~(IXON | ICRNL);
	t.c_cc[VMIN] = 0;	/* read() returns at once, with or without a key */
	t.c_cc[VTIME] = 0;
	if (tcsetattr(term_ctx.in_fd, TCSANOW, &t))
		return -errno;
	term_ctx.raw = 1;
	return 0;
}

static int take(void)
{
	int err;

	if (term_ctx.in_fd >= 0) {
		err = make_raw();
		if (err)
			return err;
	}
	term_ctx.active = 1;
	err = term__write(ENTER_SEQ, sizeof(ENTER_SEQ) - 1);
	if (err)
		restore();
	return err;
}

int term__enter(int in_fd, int out_fd)
{
	struct sigaction sa = { .sa_handler = on_fatal };

	term_ctx.out_fd = out_fd;
	term_ctx.in_fd = -1;
	if (isatty(in_fd) && !tcgetattr(in_fd, &term_ctx.saved))
		term_ctx.in_fd = in_fd;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFATAL; i++)
		sigaction(fatal_signals[i], &sa, &term_ctx.old[i]);
	return take();
}

void term__leave(void)
{
	restore();
	if (term_ctx.out_fd < 0)
		return;
	for (size_t i = 0; i < NFATAL; i++)
		sigaction(fatal_signals[i], &term_ctx.old[i], NULL);
	term_ctx.out_fd = term_ctx.in_fd = -1;
}

void term__size(int *cols, int *rows)
{
	struct winsize ws;

	*cols = 80;
	*rows = 24;
	if (!ioctl(term_ctx.out_fd, TIOCGWINSZ, &ws) && ws.ws_col && ws.ws_row) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

size_t term__read(char *buf, size_t len)
{
	ssize_t n;

	if (term_ctx.in_fd < 0)
		return 0;
	do
		n = read(term_ctx.in_fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n > 0 ? (size_t)n : 0;
}

void term__suspend(void)
{
	restore();
	/* SIGTSTP's default action stops us; raise() returns once the shell continues
	 * us (at once, if our process group is orphaned and the kernel discards it). */
	raise(SIGTSTP);
	take();
}
