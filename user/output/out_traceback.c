// SPDX-License-Identifier: GPL-2.0-only
/*
 * The traceback writer. Names come from the target's memory, so they are printed with
 * control characters escaped: a crafted file name cannot forge lines of the dump.
 */
#include <errno.h>

#include "decode/decode_gap.h"
#include "output/out_traceback.h"
#include "base/text_safe.h"

void out_traceback__frame(FILE *f, const struct strtab *strs, const struct decoded_frame *fr,
			  unsigned int indent)
{
	fprintf(f, "%*sFile \"", (int)indent, "");
	text_safe__put(f, strtab__get(strs, fr->filename));
	if (fr->line >= 0)
		fprintf(f, "\", line %d, in ", fr->line);
	else
		fputs("\", line ?, in ", f);
	text_safe__put(f, strtab__get(strs, fr->qualname));
	fputc('\n', f);
}

int out_traceback__thread(FILE *f, const struct strtab *strs, const struct tb_thread *t)
{
	static const char *const cpu[] = {
		[TB_CPU_UNKNOWN] = "on-CPU state unknown",
		[TB_CPU_ON] = "on CPU",
		[TB_CPU_IDLE] = "idle",
	};
	const struct stack *st = t->st;

	fprintf(f, "Thread %u ", t->tid);
	if (t->name) {
		fputc('"', f);
		text_safe__put(f, t->name);
		fputs("\" ", f);
	}
	fprintf(f, "(%s%s):\n", cpu[t->cpu], t->gil == PY_THREAD_GIL_HELD ? ", holds the GIL" : "");
	if ((!st || (!st->depth && st->gap == GAP_NONE)) && !t->nitems)
		fputs("  (no Python frames)\n", f);
	for (uint32_t i = 0; t->items && i < t->nitems; i++) {
		const struct tb_item *it = &t->items[i];

		if (!it->native) {
			if (st && it->index < st->depth)
				out_traceback__frame(f, strs, &st->frames[it->index], 2);
			continue;
		}
		fputs("  native: ", f);
		text_safe__put(f, it->text);
		fputc('\n', f);
	}
	for (uint32_t i = 0; !t->items && st && i < st->depth; i++)
		out_traceback__frame(f, strs, &st->frames[i], 2);
	if (t->native_note)
		fprintf(f, "  [native: %s]\n", t->native_note);
	if (st && st->gap != GAP_NONE)
		fprintf(f, "  [incomplete: %s]\n", decode_gap__text(st->gap));
	return ferror(f) ? -EIO : 0;
}
