/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * JSON string literals for the writers that emit JSON (speedscope, chrome). Names
 * come from the target's memory and the kernel, so nothing about them can be trusted
 * to be valid UTF-8 or free of quotes and control characters.
 */
#ifndef PBP_JSON_H
#define PBP_JSON_H

#include <stdio.h>

/*
 * Writes @s as a JSON string, quotes included. Valid UTF-8 passes through unchanged;
 * each byte that is not part of a valid sequence (including encoded surrogates, which
 * the decoder may produce from a str holding lone surrogates) becomes U+FFFD, so the
 * output is always valid UTF-8 that every JSON parser accepts.
 */
void json__string(FILE *f, const char *s);
/* The same without the quotes: one part of a string written in several. */
void json__chars(FILE *f, const char *s);

#endif
