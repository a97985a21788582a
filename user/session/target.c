// SPDX-License-Identifier: GPL-2.0-only
/* One profiled process; see target.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/proc.h"
#include "cpython/py_threads.h"
#include "base/structbuf.h"
#include "session/target.h"

/*
 * Whether @tstate is, right now, a thread state of this very process linked into its
 * interpreter's thread list, and that of thread @ns_tid (as the target's namespace
 * numbers it). The memory is not at stake (only a state CPython never frees is written
 * into, see tstate_static()): the anchor must not go to a state the thread has left,
 * reset for another thread or never used. The link is checked from the neighbour's
 * side: prev->next, or the list head, must name it; a state's own prev/next are not
 * cleared when it is unlinked.
 */
static int tstate_live(struct target *t, uint32_t ns_tid, uint64_t tstate)
{
	const struct py_offsets *o = &t->interp.off;
	uint8_t ts[1024];
	uint64_t need = 0, prev, back, link, native, interp;
	struct structbuf b;
	const uint64_t fields[] = { o->ts_next, o->ts_interp, o->ts_native_thread_id };

	if (proc__same(t->interp.pid, &t->ident))
		return -ESRCH;
	/* struct _ts starts "prev, next" in every version read (3.11 - 3.15). */
	if (o->ts_next == PBP_OFF_NONE || o->ts_next < 8 || (tstate & 7))
		return -ESRCH;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (fields[i] == PBP_OFF_NONE)
			return -ESRCH;
		if (fields[i] + 8 > need)
			need = fields[i] + 8;
	}
	if (need > sizeof(ts) || mem__read(&t->live.base, tstate, ts, need))
		return -ESRCH;
	b = structbuf__of(ts, need);
	if (structbuf__u64(&b, o->ts_native_thread_id, &native) || native != ns_tid ||
	    structbuf__u64(&b, o->ts_next - 8, &prev) ||
	    structbuf__u64(&b, o->ts_interp, &interp))
		return -ESRCH;
	if (prev)
		link = prev + o->ts_next;
	else if (o->interp_threads_head != PBP_OFF_NONE && interp)
		link = interp + o->interp_threads_head;
	else
		return -ESRCH;
	if ((prev & 7) || mem__read_u64(&t->live.base, link, &back) || back != tstate)
		return -ESRCH;
	return 0;
}

/*
 * Whether the anchor of the thread state at @tstate lies inside _PyRuntime, in the
 * main interpreter's first thread state (_initial_thread, the main thread's): CPython
 * never frees that one, it resets it in place. Every other thread state is heap memory
 * that its thread frees as it exits, at any instant: no check made before a write can
 * keep that write out of memory already freed and reused (docs/frame-cache.md,
 * "Writing into a live process").
 */
static int tstate_static(const struct target *t, uint64_t tstate)
{
	uint64_t rt = t->interp.runtime, size = t->interp.off.runtime_size;
	uint64_t at = tstate + t->interp.off.ts_last_profiled_frame;

	if (!rt || size < 8 || at < tstate || at < rt)
		return 0;
	return at - rt <= size - 8;
}

/*
 * Test-only: PBP_TEST_ANCHOR_WRITE_DELAY_US=N puts N microseconds between the check
 * that a thread state is live and the write, as preemption may on a loaded host, so
 * that a test can show the write goes nowhere a thread may free meanwhile; not meant
 * for use otherwise, so not in --help.
 */
static void test_write_delay(void)
{
	const char *v = getenv("PBP_TEST_ANCHOR_WRITE_DELAY_US");
	unsigned long us = v ? strtoul(v, NULL, 10) : 0;
	struct timespec ts = { .tv_nsec = (long)(us > 100000 ? 100000 : us) * 1000 };

	if (us)
		nanosleep(&ts, NULL);
}

static int write_anchor(void *arg, uint32_t ns_tid, uint64_t tstate, uint64_t frame)
{
	struct target *t = arg;
	int err;

	if (!tstate_static(t, tstate))
		return -EPERM;
	err = tstate_live(t, ns_tid, tstate);
	if (err)
		return err;
	test_write_delay();
	return mem_live__write(&t->live, tstate + t->interp.off.ts_last_profiled_frame, &frame,
			       sizeof(frame));
}

static int clear_anchor(const struct py_thread *th, void *arg)
{
	write_anchor(arg, th->tid, th->tstate, 0);
	return 0;
}

/*
 * An anchor left by an earlier profiler (or by us, killed) would be taken for one we
 * wrote; clear every thread's at the start, and leave none behind at the end.
 */
void target__clear_anchors(struct target *t)
{
	if (t->anchors && !proc__same(t->interp.pid, &t->ident))
		py_threads__walk(&t->live.base, &t->interp, clear_anchor, t);
}

static int publish_anchor(void *arg, uint32_t tid, const struct pbp_fcache *fc)
{
	struct target *t = arg;

	return t->publish(t, tid, fc);
}

static void code_known(void *arg, uint64_t code, uint64_t fp, uint32_t flags)
{
	struct target *t = arg;

	t->code_known(t, code, fp, flags);
}

int target__prepare(struct target *t, const struct target_shared *shared, int frame_cache,
		    target_publish_fn publish, target_code_fn known)
{
	struct decoder_cfg dc = {
		.strs = shared->strs,
		.code_budget = shared->codes,
		.scratch = shared->scratch,
		.code_known = known ? code_known : NULL,
		.ctx = t,
	};
	struct frame_cache_hooks hooks = {
		.publish = publish_anchor,
		.write_anchor = write_anchor,
		.ctx = t,
	};
	char root[192];
	int64_t id;
	int err, n;

	if (!t->ident.start)
		target__identify(t);
	if (proc__cmdline(t->interp.pid, t->cmd, sizeof(t->cmd)))
		snprintf(t->cmd, sizeof(t->cmd), "%.*s", (int)sizeof(t->cmd) - 1, t->interp.path);
	n = snprintf(root, sizeof(root), "process %d %s", (int)t->interp.pid, t->cmd);
	id = strtab__intern(shared->strs, root, n < (int)sizeof(root) ? (size_t)n : sizeof(root) - 1);
	if (id < 0)
		return (int)id;
	t->root_name = (uint32_t)id;
	t->publish = publish;
	t->code_known = known;
	if (frame_cache) {
		t->anchors = t->interp.off.ts_last_profiled_frame != PBP_OFF_NONE &&
			     t->interp.off.ts_last_profiled_frame_seq != PBP_OFF_NONE;
		err = frame_cache__new(&t->interp.off, t->anchors, &hooks, shared->frames,
				       &t->fcache);
		if (err)
			return err;
		target__clear_anchors(t);
	}
	dc.interp = &t->interp;
	dc.live = &t->live.base;
	dc.fcache = t->fcache;
	return decoder__new(&dc, &t->dec);
}

int target__identify(struct target *t)
{
	return proc__identity(t->interp.pid ? t->interp.pid : t->live.pid, &t->ident);
}

int target__same(const struct target *t)
{
	return proc__same(t->interp.pid, &t->ident);
}

static void add_counters(uint64_t *dst, const uint64_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] += src[i];
}

/* The stats structs are flat uint64_t counters: summed field by field. */
#define ADD_STATS(dst, src) \
	add_counters((uint64_t *)(dst), (const uint64_t *)(src), sizeof(*(src)) / sizeof(uint64_t))

void target__add_stats(const struct target *t, struct run_stats *sum)
{
	ADD_STATS(&sum->decode, decoder__stats(t->dec));
	ADD_STATS(&sum->codes, decoder__code_stats(t->dec));
	ADD_STATS(&sum->mem, decoder__mem_stats(t->dec));
	if (t->fcache)
		ADD_STATS(&sum->fcache, frame_cache__stats(t->fcache));
	if (t->sampler_live)
		ADD_STATS(&sum->live, sampler_live__stats(t->sampler_live));
}

void target__remap_strings(struct target *t, struct strtab_remap *map)
{
	strtab_remap__id(map, &t->root_name);
	if (t->dec)
		decoder__remap_strings(t->dec, map);
	if (t->fcache)
		frame_cache__remap_strings(t->fcache, map);
}

void target__free(struct target *t)
{
	if (!t)
		return;
	sampler_live__free(t->sampler_live);
	decoder__free(t->dec);
	frame_cache__free(t->fcache);
	free(t->tids);
	task_index__free(&t->tasks);
	task_index__free(&t->task_refs);
	native_worker__proc_free(t->native);
	free(t);
}
