// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>

#include "decode/asyncio_loop.h"

#define LOOP_QUALNAME "BaseEventLoop._run_once"
/* A suffix: the standard library is wherever the interpreter keeps it. */
#define LOOP_FILE "/asyncio/base_events.py"

int32_t asyncio_loop__frame(const struct strtab *strs, const struct stack *st)
{
	size_t len = strlen(LOOP_FILE);

	for (uint32_t i = 0; i < st->depth; i++) {
		const char *q = strtab__get(strs, st->frames[i].qualname), *f;

		if (!q || strcmp(q, LOOP_QUALNAME))
			continue;
		f = strtab__get(strs, st->frames[i].filename);
		if (f && strlen(f) >= len && !strcmp(f + strlen(f) - len, LOOP_FILE))
			return (int32_t)i;
	}
	return -1;
}
