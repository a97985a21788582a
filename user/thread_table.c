// SPDX-License-Identifier: GPL-2.0-only
/* Threads seen, by (pid, tid): an open-addressing index over a dense array. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "thread_table.h"

struct thread_table {
	struct profile_thread *threads;
	size_t n, cap;
	uint32_t *slots;	/* index + 1; 0 = empty */
	size_t nslots;
};

struct thread_table *thread_table__new(void)
{
	return calloc(1, sizeof(struct thread_table));
}

void thread_table__free(struct thread_table *t)
{
	if (!t)
		return;
	free(t->threads);
	free(t->slots);
	free(t);
}

static size_t slot_of(uint32_t pid, uint32_t tid, size_t nslots)
{
	return hash_u64((uint64_t)pid << 32 | tid) & (nslots - 1);
}

static int grow(struct thread_table *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 64;
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	struct profile_thread *threads;

	if (!slots)
		return -ENOMEM;
	threads = realloc(t->threads, nslots / 2 * sizeof(*threads));
	if (!threads) {
		free(slots);
		return -ENOMEM;
	}
	for (size_t k = 0; k < t->n; k++) {
		size_t i = slot_of(threads[k].pid, threads[k].tid, nslots);

		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = (uint32_t)(k + 1);
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	t->threads = threads;
	t->cap = nslots / 2;
	return 0;
}

/* The kernel's name of the thread, or PROFILE_NO_NAME once it has gone. */
static int name_thread(struct strtab *strs, uint32_t pid, uint32_t tid, uint32_t *name)
{
	char path[64], comm[32];
	FILE *f;
	int64_t id;
	size_t len;

	*name = PROFILE_NO_NAME;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	len = fread(comm, 1, sizeof(comm) - 1, f);
	fclose(f);
	while (len && (comm[len - 1] == '\n' || comm[len - 1] == 0))
		len--;
	if (!len)
		return 0;
	id = strtab__intern(strs, comm, len);
	if (id < 0)
		return (int)id;
	*name = (uint32_t)id;
	return 0;
}

int thread_table__see(struct thread_table *t, struct strtab *strs, uint32_t pid, uint32_t tid)
{
	struct profile_thread *th;
	size_t i;
	int err;

	if (t->n == t->cap) {
		err = grow(t);
		if (err)
			return err;
	}
	for (i = slot_of(pid, tid, t->nslots); t->slots[i]; i = (i + 1) & (t->nslots - 1)) {
		th = &t->threads[t->slots[i] - 1];
		if (th->pid == pid && th->tid == tid)
			return 0;
	}
	th = &t->threads[t->n];
	th->pid = pid;
	th->tid = tid;
	err = name_thread(strs, pid, tid, &th->name);
	if (err)
		return err;
	t->slots[i] = (uint32_t)++t->n;
	return 0;
}

const struct profile_thread *thread_table__all(const struct thread_table *t, size_t *n)
{
	*n = t->n;
	return t->threads;
}
