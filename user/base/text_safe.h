/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Text that came from a target (names in its memory, its command line) on its way to
 * a terminal or a log: a control character (C0 such as ESC, DEL, or C1 such as CSI
 * U+009B) could drive the reader's terminal, and broken UTF-8 could hide one.
 */
#ifndef PBP_TEXT_SAFE_H
#define PBP_TEXT_SAFE_H

#include <stddef.h>
#include <stdio.h>

/* The length in bytes of the character at @s (1 for a broken UTF-8 byte), and in
 * *printable whether a terminal may be given it as is. */
size_t text_safe__next(const unsigned char *s, int *printable);
/* Replaces every byte of every character that is not printable with '?', in place. */
void text_safe__scrub(char *s);
/* Writes @s to @f with every byte of a character that is not printable as \xNN. */
void text_safe__put(FILE *f, const char *s);

#endif
