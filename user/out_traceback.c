// SPDX-License-Identifier: GPL-2.0-only
/*
 * The traceback writer. Names come from the target's memory, so they are printed with
 * control characters escaped: a crafted file name cannot forge lines of the dump.
 */
#include <errno.h>

#include "out_traceback.h"
#include "text_safe.h"

static const char *const gap_text[GAP_MAX] = {
	[GAP_NONE] = "",
	[GAP_UNREADABLE] = "a frame could not be read",
	[GAP_BAD_FRAME] = "a frame is not valid",
	[GAP_BAD_CODE] = "a frame's code object is not valid",
	[GAP_STALE_CODE] = "a code object was freed while being read",
	[GAP_TOO_DEEP] = "the stack is deeper than the frames followed",
	[GAP_BAD_RECORD] = "the thread state is malformed",
	[GAP_NO_BOTTOM] = "the frame chain ends before the thread's first frame",
	[GAP_TORN] = "the stack kept changing while it was read",
};

int out_traceback__thread(FILE *f, const struct strtab *strs, const struct tb_thread *t)
{
	static const char *const cpu[] = {
		[TB_CPU_UNKNOWN] = "on-CPU state unknown",
		[TB_CPU_ON] = "on CPU",
		[TB_CPU_IDLE] = "idle",
	};
	const struct stack *st = t->st;

	fprintf(f, "Thread %u (%s%s):\n", t->tid, cpu[t->cpu],
		t->gil == PYTHREAD_GIL_HELD ? ", holds the GIL" : "");
	if (!st || (!st->depth && st->gap == GAP_NONE))
		fputs("  (no Python frames)\n", f);
	for (uint32_t i = 0; st && i < st->depth; i++) {
		const struct decoded_frame *fr = &st->frames[i];

		fputs("  File \"", f);
		text_safe__put(f, strtab__get(strs, fr->filename));
		if (fr->line >= 0)
			fprintf(f, "\", line %d, in ", fr->line);
		else
			fputs("\", line ?, in ", f);
		text_safe__put(f, strtab__get(strs, fr->qualname));
		fputc('\n', f);
	}
	if (st && st->gap != GAP_NONE && st->gap < GAP_MAX)
		fprintf(f, "  [incomplete: %s]\n", gap_text[st->gap]);
	return ferror(f) ? -EIO : 0;
}
