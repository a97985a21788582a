// SPDX-License-Identifier: GPL-2.0-only
/* Threads seen, by (pid, tid): a hashmap over a dense array. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/hashmap.h"
#include "profile/thread_table.h"
#include "base/vec.h"

/* A thread's last on-CPU tick, by the same slot as its profile_thread, and how many
 * of its stacks were looked at for its Python name (THREAD_NAMED once it has it). */
struct thread_tick {
	uint32_t index;		/* UINT32_MAX: none yet */
	uint32_t stolen;	/* the same, of its last stolen time */
	uint8_t name_looks;
	size_t timeline;
};

#define THREAD_NAMED UINT8_MAX

struct thread_table {
	struct profile_thread *threads;
	struct thread_tick *ticks;
	size_t n, cap, ticks_cap;
	struct hashmap index;
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
	free(t->ticks);
	hashmap__free(&t->index);
	free(t);
}

static uint64_t key_hash(uint32_t pid, uint32_t tid)
{
	return hash_u64((uint64_t)pid << 32 | tid);
}

static uint64_t thread_hash(uint32_t idx, const void *ctx)
{
	const struct thread_table *t = ctx;

	return key_hash(t->threads[idx].pid, t->threads[idx].tid);
}

static bool thread_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct thread_table *t = ctx;
	const struct profile_thread *k = key;

	return t->threads[idx].pid == k->pid && t->threads[idx].tid == k->tid;
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

/* "thread TID (NAME)", or "thread TID" without a name. 0 or -ENOMEM. */
static int label_thread(struct strtab *strs, struct profile_thread *th)
{
	const char *name = th->name == PROFILE_NO_NAME ? NULL : strtab__get(strs, th->name);
	char buf[192];
	int64_t id;
	int len;

	len = name ? snprintf(buf, sizeof(buf), "thread %u (%s)", th->tid, name) :
		     snprintf(buf, sizeof(buf), "thread %u", th->tid);
	if (len < 0)
		return -EINVAL;
	id = strtab__intern(strs, buf, (size_t)len < sizeof(buf) ? (size_t)len : sizeof(buf) - 1);
	if (id < 0)
		return (int)id;
	th->label = (uint32_t)id;
	return 0;
}

int thread_table__see(struct thread_table *t, struct strtab *strs, uint32_t pid, uint32_t tid,
		      uint32_t *slot)
{
	const struct profile_thread key = { .pid = pid, .tid = tid };
	struct profile_thread *th;
	size_t i;
	int err;

	err = hashmap__grow(&t->index, 64, thread_hash, t);
	if (!err)
		err = vec__reserve((void **)&t->threads, &t->cap, t->n + 1, sizeof(*t->threads), 32);
	if (!err)
		err = vec__reserve((void **)&t->ticks, &t->ticks_cap, t->n + 1, sizeof(*t->ticks),
				   32);
	if (err)
		return err;
	i = hashmap__probe(&t->index, key_hash(pid, tid), thread_equal, &key, t);
	if (hashmap__used(&t->index, i)) {
		*slot = hashmap__at(&t->index, i);
		return 0;
	}
	th = &t->threads[t->n];
	th->pid = pid;
	th->tid = tid;
	err = name_thread(strs, pid, tid, &th->name);
	if (!err)
		err = label_thread(strs, th);
	if (err)
		return err;
	t->ticks[t->n] = (struct thread_tick){ .index = UINT32_MAX, .stolen = UINT32_MAX,
					       .timeline = SIZE_MAX };
	*slot = (uint32_t)t->n;
	hashmap__set(&t->index, i, (uint32_t)t->n++);
	return 0;
}

void thread_table__set_tick(struct thread_table *t, uint32_t slot, uint32_t index,
			    size_t timeline)
{
	if (slot >= t->n)
		return;
	t->ticks[slot].index = index;
	t->ticks[slot].timeline = timeline;
}

bool thread_table__wants_name(struct thread_table *t, uint32_t slot)
{
	if (slot >= t->n || t->ticks[slot].name_looks >= THREAD_NAME_LOOKS)
		return false;
	t->ticks[slot].name_looks++;
	return true;
}

int thread_table__name(struct thread_table *t, struct strtab *strs, uint32_t slot,
			uint32_t name)
{
	if (slot >= t->n)
		return -EINVAL;
	t->threads[slot].name = name;
	t->ticks[slot].name_looks = THREAD_NAMED;
	return label_thread(strs, &t->threads[slot]);
}

void thread_table__set_stolen(struct thread_table *t, uint32_t slot, uint32_t index)
{
	if (slot < t->n)
		t->ticks[slot].stolen = index;
}

/* The ticks entry of (@pid, @tid), or NULL if it was never seen. */
static const struct thread_tick *ticks_of(const struct thread_table *t, uint32_t pid,
					  uint32_t tid)
{
	const struct profile_thread key = { .pid = pid, .tid = tid };
	uint32_t i;

	if (hashmap__find(&t->index, key_hash(pid, tid), thread_equal, &key, t, &i))
		return NULL;
	return &t->ticks[i];
}

int thread_table__stolen(const struct thread_table *t, uint32_t pid, uint32_t tid,
			 uint32_t *index)
{
	const struct thread_tick *k = ticks_of(t, pid, tid);

	if (!k || k->stolen == UINT32_MAX)
		return -ENOENT;
	*index = k->stolen;
	return 0;
}

int thread_table__tick(const struct thread_table *t, uint32_t pid, uint32_t tid, uint32_t *index,
		       size_t *timeline)
{
	const struct thread_tick *k = ticks_of(t, pid, tid);

	if (!k || k->index == UINT32_MAX)
		return -ENOENT;
	*index = k->index;
	*timeline = k->timeline;
	return 0;
}

const struct profile_thread *thread_table__all(const struct thread_table *t, size_t *n)
{
	*n = t->n;
	return t->threads;
}
