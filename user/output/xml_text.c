// SPDX-License-Identifier: GPL-2.0-only
/* Escaped, valid UTF-8 text for XML and HTML; see xml_text.h. */
#include <stdint.h>

#include "output/xml_text.h"

/*
 * The length of the UTF-8 sequence at @s (@len > 0 bytes left) and its code point in
 * *@cp: whatever is not valid UTF-8, or is not allowed in XML, becomes U+FFFD.
 */
static size_t utf8_next(const unsigned char *s, size_t len, uint32_t *cp, unsigned int flags)
{
	uint32_t c = s[0], min;
	size_t n;

	*cp = 0xfffd;
	if (c < 0x80) {
		*cp = c < 0x20 && !(c == '\t' && (flags & XML_TEXT_TABS)) ? 0xfffd : c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, c &= 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, c &= 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, c &= 0x07, min = 0x10000;
	} else {
		return 1;
	}
	if (n > len)
		return 1;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 1;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c >= min && c <= 0x10ffff && (c < 0xd800 || c > 0xdfff) && c != 0xfffe &&
	    c != 0xffff)
		*cp = c;
	return n;
}

void xml_text__put(FILE *f, const char *s, size_t len, size_t max, unsigned int flags)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t chars = 0, keep;
	uint32_t cp;

	for (size_t i = 0; i < len && chars <= max; chars++)
		i += utf8_next(u + i, len - i, &cp, flags);
	keep = chars > max ? max - 2 : chars;
	for (size_t i = 0, k = 0; k < keep; k++) {
		size_t n = utf8_next(u + i, len - i, &cp, flags);

		switch (cp) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		case 0xfffd: fputs("\xef\xbf\xbd", f); break;
		default: fwrite(u + i, 1, n, f);
		}
		i += n;
	}
	if (keep < chars)
		fputs("..", f);
}
