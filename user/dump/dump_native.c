// SPDX-License-Identifier: GPL-2.0-only
/*
 * dump --native. The threads are held only while their registers, stack bytes and
 * Python frames are copied; libdw's work (opening each object, its CFI and symbols)
 * comes after they run again, so a dump stops the target for the time of a few reads
 * per thread, not for the time symbolisation takes. The objects are parsed by the
 * confined worker (native_worker.h), as record's are; for a core, which objects are
 * code and their build-ids are read here first (native_core.h), as its owner.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "dump/dump_native.h"
#include "base/hash.h"
#include "base/log.h"
#include "native/native_core.h"
#include "native/native_demangle.h"
#include "native/native_merge.h"
#include "native/native_regs.h"
#include "native/native_sym.h"
#include "native/native_worker.h"
#include "native/native_worker_proto.h"
#include "sample/thread_freeze.h"

#define DUMP_NATIVE_NAME 320	/* "function+0xOFF (object)", cut */

_Static_assert(DUMP_NATIVE_STACK <= NATIVE_WORKER_STACK_MAX, "a thread's copy goes to the worker");

struct dump_native {
	pid_t pid;
	int all;
	struct mem_core *core;	/* a core's threads, or else the live process's */
	struct thread_freeze *held;
	/* The worker, which parses the objects and names the frames. */
	struct native_worker *worker;
	struct native_worker_proc *wproc;
	struct native_worker_name wnames[NATIVE_MAX_FRAMES];
	struct native_demangle demangle;
	size_t stacks_left;	/* of DUMP_NATIVE_STACKS, for the threads still to copy */
	struct native_stack walk;
	struct native_merge_frame in[NATIVE_MAX_FRAMES];
	char names[NATIVE_MAX_FRAMES][DUMP_NATIVE_NAME];
	struct native_merge_item merged[NATIVE_MAX_FRAMES + DECODE_MAX_DEPTH];
	struct tb_item items[NATIVE_MAX_FRAMES + DECODE_MAX_DEPTH];
	char note[128];
};

int dump_native__new(pid_t pid, struct mem_core *core, int all, struct dump_native **out)
{
	struct dump_native *d = calloc(1, sizeof(*d));
	struct native_maps *maps;
	int err;

	if (!d)
		return -ENOMEM;
	d->pid = pid;
	d->stacks_left = DUMP_NATIVE_STACKS;
	d->all = all;
	d->core = core;
	err = native_worker__new(&d->worker);
	if (!err && core) {
		err = native_core__maps(core, &maps);
		if (!err)
			err = native_worker__core_proc(d->worker, maps, &d->wproc);
	} else if (!err) {
		err = native_worker__proc(d->worker, pid, &d->wproc);
	}
	if (err)
		goto fail;
	*out = d;
	return 0;
fail:
	dump_native__free(d);
	return err;
}

void dump_native__free(struct dump_native *d)
{
	if (!d)
		return;
	dump_native__release(d);
	thread_freeze__free(d->held);
	native_worker__proc_free(d->wproc);
	native_worker__free(d->worker);
	native_demangle__close(&d->demangle);
	free(d);
}

int dump_native__hold(struct dump_native *d)
{
	struct thread_freeze_stats st;
	pid_t tracer;
	int err;

	err = thread_freeze__all(d->pid, 0, &d->held, &tracer);
	switch (err) {
	case 0:
		thread_freeze__stats(d->held, &st);
		if (st.late)
			pr_warn("%u thread%s of process %d did not stop within %d ms (in an "
				"uninterruptible wait?): no native stack for %s\n", st.late,
				st.late == 1 ? "" : "s", (int)d->pid, THREAD_FREEZE_WAIT_MS,
				st.late == 1 ? "it" : "them");
		return 0;
	case -EBUSY:
		if (tracer)
			pr_warn("cannot hold process %d for its native stacks: it is traced by "
				"process %d (a debugger or strace?)\n", (int)d->pid, (int)tracer);
		else
			pr_warn("cannot hold process %d for its native stacks: it is traced by "
				"another process\n", (int)d->pid);
		return err;
	case -EPERM:
	case -EACCES:
		pr_warn("cannot hold process %d for its native stacks: ptrace not allowed "
			"(needs CAP_SYS_PTRACE, or see kernel.yama.ptrace_scope)\n", (int)d->pid);
		return err;
	case -ESRCH:
		pr_warn("no such process: %d\n", (int)d->pid);
		return err;
	default:
		pr_warn("cannot hold process %d for its native stacks: %s\n", (int)d->pid,
			strerror(-err));
		return err;
	}
}

void dump_native__release(struct dump_native *d)
{
	/* One in an uninterruptible wait is still seized: it is let go if it stops while
	 * the stacks are walked (each walk polls), else by the kernel as this process
	 * exits, without ever stopping. */
	if (thread_freeze__let_go(d->held))
		return;
	thread_freeze__free(d->held);
	d->held = NULL;
}

/* Room for a thread's copy under the budget of all of them: how much, or 0. */
static size_t stack_room(struct dump_native *d, struct dump_native_capture *cap)
{
	size_t room = d->stacks_left < DUMP_NATIVE_STACK ? d->stacks_left : DUMP_NATIVE_STACK;

	cap->stack = room ? malloc(room) : NULL;
	return cap->stack ? room : 0;
}

/* Gives back what the copy left unused, and charges the budget what it holds. */
static void stack_done(struct dump_native *d, struct dump_native_capture *cap)
{
	uint8_t *p;

	if (!cap->stack_len) {
		free(cap->stack);
		cap->stack = NULL;
	} else if ((p = realloc(cap->stack, cap->stack_len))) {
		cap->stack = p;
	}
	d->stacks_left -= cap->stack_len;
}

int dump_native__capture(struct dump_native *d, struct mem_live *mem, pid_t tid,
			 struct dump_native_capture *cap)
{
	size_t room;
	int err;

	*cap = (struct dump_native_capture){ 0 };
	err = thread_freeze__regs(d->held, tid, cap->regs, &cap->regs_mask);
	if (err)
		return err;
	room = stack_room(d, cap);
	if (!room)
		return d->stacks_left ? -ENOMEM : 0;
	/* From RSP up to the end of the stack's mapping, or the room. */
	err = mem_live__read_prefix(mem, cap->regs[NATIVE_REG_RSP], cap->stack, room,
				    &cap->stack_len);
	stack_done(d, cap);
	return err;
}

int dump_native__capture_core(struct dump_native *d, pid_t tid,
			      struct dump_native_capture *cap)
{
	struct mem_source *mem = mem_core__mem(d->core);
	struct user_regs_struct r;
	uint64_t at;
	size_t room;
	int err;

	*cap = (struct dump_native_capture){ 0 };
	err = mem_core__thread_regs(d->core, tid, &r);
	if (err)
		return -ESRCH;
	cap->regs_mask = native_regs__from_user(&r, cap->regs);
	room = stack_room(d, cap);
	if (!room)
		return d->stacks_left ? -ENOMEM : 0;
	/* Page by page up to the first the core lacks (or the room). */
	at = cap->regs[NATIVE_REG_RSP];
	while (cap->stack_len < room) {
		size_t n = 4096 - (size_t)(at & 4095);

		if (n > room - cap->stack_len)
			n = room - cap->stack_len;
		if (mem__read(mem, at, cap->stack + cap->stack_len, n))
			break;
		cap->stack_len += n;
		at += n;
	}
	stack_done(d, cap);
	return 0;
}

void dump_native__capture_free(struct dump_native_capture *cap)
{
	free(cap->stack);
	free(cap->frames);
	free(cap->runs);
	*cap = (struct dump_native_capture){ 0 };
}

int dump_native__keep_stack(struct dump_native_capture *cap, const struct stack *st)
{
	if (!st)
		return 0;
	cap->frames = malloc((st->depth ? st->depth : 1) * sizeof(*cap->frames));
	cap->runs = malloc((st->nruns ? st->nruns : 1) * sizeof(*cap->runs));
	if (!cap->frames || !cap->runs)
		return -ENOMEM;
	memcpy(cap->frames, st->frames, st->depth * sizeof(*cap->frames));
	memcpy(cap->runs, st->runs, st->nruns * sizeof(*cap->runs));
	cap->depth = st->depth;
	cap->nruns = st->nruns;
	cap->gap = st->gap;
	cap->python = 1;
	return 0;
}

const struct stack *dump_native__kept_stack(const struct dump_native_capture *cap,
					    struct stack *into)
{
	if (!cap->python)
		return NULL;
	memcpy(into->frames, cap->frames, cap->depth * sizeof(*cap->frames));
	memcpy(into->runs, cap->runs, cap->nruns * sizeof(*cap->runs));
	into->depth = cap->depth;
	into->nruns = cap->nruns;
	into->gap = cap->gap;
	return into;
}

/* The worker's names of walked frame @i, C++ names demangled (into *@demangled, to be
 * freed): 0, or -ENOENT for a frame in no known object. */
static int worker_name(struct dump_native *d, uint32_t i, struct native_symbol *sym,
		       char **demangled)
{
	const struct native_worker_name *nm = &d->wnames[i];

	*sym = nm->sym;
	if (native_demangle__in_place(&d->demangle, &sym->function, demangled))
		return -ENOMEM;
	return nm->known ? 0 : -ENOENT;
}

/* Names walked frame @i into d->names[i] and gives it its object for the merge. */
static int name_frame(struct dump_native *d, uint32_t i)
{
	const struct native_frame *f = &d->walk.frames[i];
	struct native_symbol sym;
	char *demangled = NULL;
	int err;

	err = worker_name(d, i, &sym, &demangled);
	if (err && err != -ENOENT) {
		free(demangled);
		return err;
	}
	native_sym__format(&sym, d->names[i], sizeof(d->names[i]));
	free(demangled);
	/* Any id will do, so long as 0 is "no object". */
	d->in[i] = (struct native_merge_frame){
		.sp = f->sp,
		.module = err ? 0 : (uint32_t)(hash_bytes(sym.module, strlen(sym.module)) | 1),
	};
	return 0;
}

/* Why a C stack ends short of the thread's start; NULL if it does not. */
static const char *end_note(enum native_end end)
{
	switch (end) {
	case NATIVE_END_OUTERMOST:
		return NULL;
	case NATIVE_END_STACK_COPY:
		return "the C stack ends here: deeper than the copy of it";
	case NATIVE_END_NO_CFI:
		return "the C stack ends here: code without unwind information";
	case NATIVE_END_BOUND:
		return "the C stack ends here: the frame limit";
	default:
		return "the C stack ends here: a frame that does not hold together";
	}
}

/* The Python frames alone, as items. */
static void python_only(struct dump_native *d, const struct stack *st, struct tb_thread *tb)
{
	uint32_t n = 0;

	for (uint32_t i = 0; st && i < st->depth && n < DECODE_MAX_DEPTH; i++)
		d->items[n++] = (struct tb_item){ .index = i };
	tb->items = d->items;
	tb->nitems = n;
}

static int walk_and_merge(struct dump_native *d, const struct dump_native_capture *cap,
			  const struct stack *st, struct tb_thread *tb)
{
	struct native_snapshot snap = {
		.tid = tb->tid,
		.regs_mask = cap->regs_mask,
		.stack = cap->stack,
		.stack_len = cap->stack_len,
	};
	enum native_merge_result result;
	struct native_merge_in in;
	uint32_t n;
	int err;

	memcpy(snap.regs, cap->regs, sizeof(snap.regs));
	err = native_worker__walk(d->wproc, &snap, NULL, NATIVE_MAX_FRAMES, clock__mono_ns(),
				  &d->walk, d->wnames);
	if (err == -ENOMEM)
		return err;
	if (err == -ETIMEDOUT || err == -ECHILD || err == -EPROTO) {
		snprintf(d->note, sizeof(d->note), "not unwound: the parsing worker failed (%s)",
			 strerror(-err));
		return -ENOENT;
	}
	if (err) {
		snprintf(d->note, sizeof(d->note), "not unwound: the process's maps cannot be "
			 "read (%s)", strerror(-err));
		return -ENOENT;
	}
	for (uint32_t i = 0; i < d->walk.n; i++) {
		err = name_frame(d, i);
		if (err)
			return err;
	}
	in = (struct native_merge_in){
		.frames = d->in,
		.nframes = d->walk.n,
		.complete = d->walk.end == NATIVE_END_OUTERMOST,
		.runs = st ? st->runs : NULL,
		.nruns = st ? st->nruns : 0,
		.all = d->all,
	};
	err = native_merge__interleave(&in, d->merged, sizeof(d->merged) / sizeof(d->merged[0]),
				       &n, &result);
	if (err) {
		snprintf(d->note, sizeof(d->note), "not merged: %s", strerror(-err));
		return -ENOENT;
	}
	if (result == NATIVE_MERGE_UNMATCHED) {
		snprintf(d->note, sizeof(d->note), "the C stack does not match the Python "
			 "frames; Python frames only");
		return -ENOENT;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct native_merge_item *it = &d->merged[i];

		d->items[i] = it->kind == NATIVE_MERGE_NATIVE ?
			(struct tb_item){ .native = 1, .text = d->names[it->index] } :
			(struct tb_item){ .index = it->index };
	}
	tb->items = d->items;
	tb->nitems = n;
	tb->native_note = end_note(d->walk.end);
	if (!tb->native_note && result == NATIVE_MERGE_CUT)
		tb->native_note = "the C stack ends before the outer Python frames' callers";
	return 0;
}

int dump_native__frames(struct dump_native *d, const struct dump_native_capture *cap,
			const struct stack *st, struct tb_thread *tb)
{
	int err;

	tb->items = NULL;
	tb->nitems = 0;
	tb->native_note = NULL;
	if (d->held)
		dump_native__release(d);
	if (!cap->regs_mask) {
		python_only(d, st, tb);
		tb->native_note = "not unwound: the thread was not held";
		return 0;
	}
	err = walk_and_merge(d, cap, st, tb);
	if (err == -ENOENT) {
		python_only(d, st, tb);
		tb->native_note = d->note;
		return 0;
	}
	return err;
}
