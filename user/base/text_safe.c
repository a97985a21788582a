// SPDX-License-Identifier: GPL-2.0-only
/* Target-controlled text made safe for a terminal; see text_safe.h. */
#include "base/text_safe.h"

size_t text_safe__next(const unsigned char *s, int *printable)
{
	size_t len = *s < 0x80 ? 1 : *s >= 0xc2 && *s <= 0xdf ? 2 : *s >= 0xe0 && *s <= 0xef ? 3
		     : *s >= 0xf0 && *s <= 0xf4 ? 4 : 0;

	*printable = len == 1 ? *s >= 0x20 && *s != 0x7f : len > 1;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			*printable = 0;
			return 1;
		}
	}
	if (len == 2 && s[0] == 0xc2 && s[1] < 0xa0)
		*printable = 0;	/* C1: one character */
	return len ? len : 1;
}

void text_safe__scrub(char *s)
{
	unsigned char *u = (unsigned char *)s;

	while (*u) {
		int ok;
		size_t len = text_safe__next(u, &ok);

		for (size_t i = 0; i < len; i++, u++)
			if (!ok)
				*u = '?';
	}
}

void text_safe__put(FILE *f, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		int ok;
		size_t len = text_safe__next(u, &ok);

		for (size_t i = 0; i < len; i++, u++) {
			if (ok)
				fputc(*u, f);
			else
				fprintf(f, "\\x%02x", *u);
		}
	}
}
