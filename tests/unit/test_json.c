// SPDX-License-Identifier: GPL-2.0-only
/*
 * json__string() on the names a target can hand us: quotes, backslashes, control
 * characters, valid UTF-8 of every length, and bytes that are not UTF-8 (overlong
 * forms, encoded surrogates, truncated sequences, stray continuation bytes, values
 * past U+10FFFF). The output must be valid JSON and valid UTF-8 whatever comes in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

static const struct {
	const char *in, *out;
} cases[] = {
	{ "", "\"\"" },
	{ "plain <module>", "\"plain <module>\"" },
	{ "q\"uote\\back", "\"q\\\"uote\\\\back\"" },
	{ "nl\ntab\tcr\r", "\"nl\\ntab\\tcr\\r\"" },
	{ "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"" },
	{ "f\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8d", "\"f\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8d\"" },
	{ "\xef\xbf\xbf\xf4\x8f\xbf\xbf", "\"\xef\xbf\xbf\xf4\x8f\xbf\xbf\"" },	/* the edges */
	{ "latin1 \xe9!", "\"latin1 \\ufffd!\"" },
	{ "overlong \xc0\xaf \xe0\x80\xaf", "\"overlong \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd\"" },
	{ "surrogate \xed\xa0\x80", "\"surrogate \\ufffd\\ufffd\\ufffd\"" },
	{ "too big \xf4\x90\x80\x80", "\"too big \\ufffd\\ufffd\\ufffd\\ufffd\"" },
	{ "cut \xe2\x82", "\"cut \\ufffd\\ufffd\"" },
	{ "stray \x80\xbf", "\"stray \\ufffd\\ufffd\"" },
	{ "\xf5\xff", "\"\\ufffd\\ufffd\"" },
};

int main(void)
{
	int failed = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (!f)
			return 2;
		json__string(f, cases[i].in);
		fclose(f);
		if (strcmp(buf, cases[i].out)) {
			fprintf(stderr, "case %zu: got %s, want %s\n", i, buf, cases[i].out);
			failed = 1;
		}
		free(buf);
	}
	printf("json: %s\n", failed ? "FAILED" : "ok");
	return failed;
}
