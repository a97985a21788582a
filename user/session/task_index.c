// SPDX-License-Identifier: GPL-2.0-only
/* A target's tasks by their coroutine; see task_index.h. */
#include <errno.h>
#include <stdlib.h>

#include "session/task_index.h"
#include "base/vec.h"

void task_index__reset(struct task_index *x, uint64_t now)
{
	x->n = 0;
	x->built_ns = now;
}

int task_index__add(struct task_index *x, uint64_t coro, uint64_t task)
{
	if (vec__reserve((void **)&x->v, &x->cap, x->n + 1, sizeof(*x->v), 256))
		return -ENOMEM;
	x->v[x->n++] = (struct task_index_entry){ .coro = coro, .task = task };
	return 0;
}

static int by_coro(const void *a, const void *b)
{
	const struct task_index_entry *x = a, *y = b;

	return x->coro < y->coro ? -1 : x->coro > y->coro;
}

void task_index__done(struct task_index *x)
{
	if (x->n)
		qsort(x->v, x->n, sizeof(*x->v), by_coro);
}

int task_index__find(const struct task_index *x, uint64_t coro, uint64_t *task)
{
	return task_index__find_at(x, coro, 0, task);
}

int task_index__find_at(const struct task_index *x, uint64_t coro, size_t k, uint64_t *task)
{
	size_t lo = 0, hi = x->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->v[mid].coro < coro)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (k >= x->n - lo || x->v[lo + k].coro != coro)
		return -ENOENT;
	*task = x->v[lo + k].task;
	return 0;
}

void task_index__free(struct task_index *x)
{
	free(x->v);
	*x = (struct task_index){ 0 };
}
