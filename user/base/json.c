// SPDX-License-Identifier: GPL-2.0-only
/* JSON string escaping; see json.h. */
#include <stddef.h>

#include "base/json.h"

/* Length of the valid UTF-8 sequence at @s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0. The terminating NUL is never a
 * continuation byte, so this cannot read past the end of @s. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	/* The second byte carries the range checks for the lead bytes at the edges. */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

void json__chars(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str, *run = s;

	while (*s) {
		size_t n = utf8_len(s);

		if (n && *s >= 0x20 && *s != '"' && *s != '\\' && *s != 0x7f) {
			s += n;
			continue;
		}
		fwrite(run, 1, (size_t)(s - run), f);
		if (!n)
			fputs("\\ufffd", f);
		else if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '\t')
			fputs("\\t", f);
		else if (*s == '\r')
			fputs("\\r", f);
		else
			fprintf(f, "\\u%04x", *s);
		run = ++s;
	}
	fwrite(run, 1, (size_t)(s - run), f);
}

void json__string(FILE *f, const char *s)
{
	fputc('"', f);
	json__chars(f, s);
	fputc('"', f);
}
