/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The terminal of `top`: the alternate screen, keys read as they are typed without
 * echo, and the window size. The terminal is given back as it was on every way out:
 * term__leave() on a normal return, and here, on a crash or abort, before the signal
 * takes its course.
 */
#ifndef PBP_TERM_H
#define PBP_TERM_H

#include <stddef.h>

/*
 * Switches @out_fd to the alternate screen and, when @in_fd is a terminal, puts it in
 * raw mode: no echo, no line editing, and Ctrl-C, Ctrl-Z arrive as keys (bytes 3, 26).
 * Returns 0 or a negative errno.
 */
int term__enter(int in_fd, int out_fd);
/* Restores what term__enter() changed; safe to call twice. */
void term__leave(void);
/* The window size, re-read on every call (the user may resize at any time). */
void term__size(int *cols, int *rows);
/* The bytes typed since the last call, up to @len: 0 when none. */
size_t term__read(char *buf, size_t len);
/* Ctrl-Z: gives the terminal back, stops the process as the shell expects, and takes
 * the terminal again once continued. */
void term__suspend(void);
/* Writes all of @buf to the screen. */
int term__write(const char *buf, size_t len);

#endif
