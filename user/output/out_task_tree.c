// SPDX-License-Identifier: GPL-2.0-only
/*
 * The task tree writer. Task names come from the target's memory and are printed with
 * control characters escaped, like every other name dump prints.
 */
#include <errno.h>

#include "output/out_task_tree.h"
#include "output/out_traceback.h"
#include "base/text_safe.h"

/* Deeper than this, the awaits run in a circle (which asyncio does not allow). */
#define TREE_DEPTH_MAX 32

static const char *state_text(enum py_task_state s)
{
	switch (s) {
	case PY_TASK_RUNNING:
		return "running";
	case PY_TASK_PENDING:
		return "pending";
	case PY_TASK_DONE:
		return "done";
	case PY_TASK_CANCELLED:
		return "cancelled";
	default:
		return "state unknown";
	}
}

static int awaited_by(const struct py_task *t, uint64_t addr)
{
	for (uint32_t i = 0; i < t->nawaited_by; i++)
		if (t->awaited_by[i] == addr)
			return 1;
	return 0;
}

/* Whether any task of the list awaits @t. */
static int has_awaiter(const struct tt_task *all, size_t n, const struct py_task *t)
{
	for (size_t i = 0; i < n; i++)
		if (awaited_by(t, all[i].task->addr))
			return 1;
	return 0;
}

static void write_task(FILE *f, const struct strtab *strs, const struct tt_task *all, size_t n,
		       const struct tt_task *t, unsigned int depth)
{
	unsigned int indent = 2 + 4 * depth;

	fprintf(f, "%*sTask '", (int)indent, "");
	text_safe__put(f, t->task->name);
	fprintf(f, "' (%s)", state_text(t->task->state));
	if (t->task->nawaited_by > 1)
		fprintf(f, ", awaited by %u tasks", t->task->nawaited_by);
	fputc('\n', f);
	for (uint32_t i = 0; i < t->nframes; i++)
		out_traceback__frame(f, strs, &t->frames[i], indent + 2);
	if (t->task->truncated)
		fprintf(f, "%*s[more coroutines: the chain is cut here]\n", (int)indent + 2, "");
	if (t->incomplete)
		fprintf(f, "%*s[incomplete: a coroutine's frame could not be read]\n",
			(int)indent + 2, "");
	if (depth == TREE_DEPTH_MAX) {
		fprintf(f, "%*s[deeper awaits not shown]\n", (int)indent + 2, "");
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (awaited_by(all[i].task, t->task->addr))
			write_task(f, strs, all, n, &all[i], depth + 1);
}

int out_task_tree__write(FILE *f, const struct strtab *strs, const struct tt_task *t, size_t n,
			 const char *others)
{
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		/* The tasks come grouped by thread: a heading where a group begins. */
		if (i && t[i].tid == t[i - 1].tid)
			continue;
		while (i + k < n && t[i + k].tid == t[i].tid)
			k++;
		if (t[i].tid)
			fprintf(f, "\nThread %u: %zu asyncio task%s\n", t[i].tid, k,
				k == 1 ? "" : "s");
		else
			fprintf(f, "\n%s: %zu\n", others, k);
		for (size_t j = i; j < i + k; j++)
			if (!has_awaiter(t, n, t[j].task))
				write_task(f, strs, t, n, &t[j], 0);
	}
	return ferror(f) ? -EIO : 0;
}
