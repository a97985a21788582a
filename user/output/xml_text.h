/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Text from a target (names, paths, source lines) written into XML or HTML: escaped,
 * and valid UTF-8 whatever the bytes were, so that one bad byte cannot make the whole
 * page unreadable or inject markup.
 */
#ifndef PBP_XML_TEXT_H
#define PBP_XML_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Tabs stay tabs (source lines); every other control character becomes U+FFFD. */
#define XML_TEXT_TABS 1u

/*
 * Writes @len bytes of @s escaped for XML text and attribute values alike. If it has
 * more than @max characters, the first @max - 2 and ".." are written instead.
 */
void xml_text__put(FILE *f, const char *s, size_t len, size_t max, unsigned int flags);

#endif
