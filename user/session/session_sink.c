// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where a session's decoded stacks go: each becomes one aggregated stack, under the
 * process and thread frames the options ask for, and, for the formats that place
 * samples in time, one entry of the timeline.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/aggregate.h"
#include "decode/decoder.h"
#include "base/log.h"
#include "cpython/py_thread_name.h"
#include "session/session_frame.h"
#include "session/session_priv.h"
#include "base/strtab.h"
#include "profile/thread_table.h"
#include "base/vec.h"

/* The timeline keeps its first samples up to this size (16 bytes each). */
#define TIMELINE_MAX_BYTES (64u << 20)

static int intern_fmt(struct session *s, uint32_t *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int intern_fmt(struct session *s, uint32_t *id, const char *fmt, ...)
{
	char buf[192];
	va_list ap;
	int64_t r;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	r = strtab__intern(s->strs, buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	if (r < 0)
		return (int)r;
	*id = (uint32_t)r;
	return 0;
}

static int add_to_timeline(struct session *s, uint64_t ts_ns, uint32_t index, uint64_t weight_ns)
{
	if (s->sink.ntimeline == TIMELINE_MAX_BYTES / sizeof(*s->sink.timeline)) {
		if (!s->sink.timeline_full)
			pr_warn("the timeline holds its first %zu samples (%u MiB): later ones "
				"count in the profile but are not placed in time\n", s->sink.ntimeline,
				TIMELINE_MAX_BYTES >> 20);
		s->sink.timeline_full = 1;
		return 0;
	}
	if (vec__reserve((void **)&s->sink.timeline, &s->sink.timeline_cap, s->sink.ntimeline + 1,
			 sizeof(*s->sink.timeline), 4096))
		return -ENOMEM;
	/* A record decoded late may predate the start by a tick: clamp, keep order. */
	s->sink.timeline[s->sink.ntimeline++] = (struct profile_sample){
		.t_ns = ts_ns > s->profile_ns ? ts_ns - s->profile_ns : 0,
		.weight_ns = weight_ns,
		.stack = index,
	};
	return 0;
}

/*
 * Whether a stack is left out: --gil keeps ticks of the GIL's holder; off-CPU mode
 * only waits; live sampling sees threads off a CPU too, which --idle, wall and
 * off-CPU modes keep. @wait is set for the off-CPU intervals BPF measured.
 */
static int left_out(const struct session *s, const struct stack *st, int wait)
{
	const struct session_opts *o = &s->opts;
	int on_cpu = !!(st->flags & PBP_TS_ON_CPU);

	if (wait)
		return o->mode == SESSION_CPU;
	if (o->gil && !(st->flags & PBP_TS_GIL))
		return 1;
	if (o->mode == SESSION_OFF_CPU)
		return on_cpu || !s->live_mode;
	return !on_cpu && !o->idle && o->mode == SESSION_CPU;
}

/*
 * Where a stack starts in time: a wait where it began; in wall and off-CPU modes an
 * on-CPU tick stands for the CPU time before it, so it starts that much earlier.
 */
static uint64_t timeline_start(const struct session *s, const struct stack *st,
			       uint64_t weight, uint32_t wait)
{
	if (wait || s->opts.mode == SESSION_CPU || weight > st->ts_ns)
		return st->ts_ns;
	return st->ts_ns - weight;
}

/* A weight in nanoseconds: cpu mode counts periods of the rate, the others time. */
static uint64_t weight_ns(const struct session *s, uint64_t weight)
{
	return s->opts.mode == SESSION_CPU ? weight * 1000000000ull / s->opts.rate_hz : weight;
}

/* The --threads frame of thread @tid, in @slot of the thread table: its key is the tid,
 * what it reads is the thread's label (profile__name()). */
static int thread_frame(struct session *s, uint32_t tid, uint32_t slot, struct agg_frame *fr)
{
	*fr = (struct agg_frame){ .kind = AGG_THREAD, .line = (int32_t)slot };
	return intern_fmt(s, &fr->name, "thread %u", tid);
}

/*
 * Names the thread in @slot by its Python name, when its complete stack @st shows it
 * (decoder__thread_name()), or "MainThread", the name threading gives the main thread
 * (a later rename of the main thread is not seen). Otherwise it keeps the kernel's.
 * 0 or -ENOMEM.
 */
static int python_name(struct target *t, const struct stack *st, uint32_t slot)
{
	struct session *s = t->session;
	char name[PY_THREAD_NAME_MAX];
	int64_t id;

	if (decoder__thread_name(t->dec, st, name, sizeof(name))) {
		if (st->tid != st->pid)
			return 0;
		snprintf(name, sizeof(name), PY_THREAD_NAME_MAIN);
	}
	id = strtab__intern(s->strs, name, strlen(name));
	if (id < 0)
		return (int)id;
	return thread_table__name(s->threads, s->strs, slot, (uint32_t)id);
}

/*
 * One decoded stack in, one aggregated stack out, unless left_out(). @weight is what
 * it counts for; @wait, if not 0, the strtab id of the off-CPU leaf it ends in.
 */
static int add_stack(struct target *t, const struct stack *st, uint64_t weight, uint32_t wait,
		     uint32_t *index_out)
{
	struct session *s = t->session;
	uint32_t n = 0, index, slot, nlinks, depth = st->depth;
	size_t tl = SIZE_MAX;
	int err, idle = 0;

	s->sink.shaped = 0;
	if (left_out(s, st, !!wait)) {
		s->sink.filtered++;
		return 0;
	}
	/* Before the task chain, which may decode more: the frames' addresses are those
	 * of the stack decoded last. */
	err = thread_table__see(s->threads, s->strs, st->pid, st->tid, &slot);
	if (!err && st->gap == GAP_NONE && st->depth && thread_table__wants_name(s->threads, slot))
		err = python_name(t, st, slot);
	if (err)
		goto fail;
	/* Live sampling cannot tell why a thread is off a CPU, only that it is. */
	if (!wait && s->opts.mode != SESSION_CPU && !(st->flags & PBP_TS_ON_CPU)) {
		wait = s->sink.idle_name;
		idle = 1;
	}
	if (s->opts.subprocesses || s->opts.system_wide)
		s->sink.frames[n++] = (struct agg_frame){ .kind = AGG_PROCESS, .name = t->root_name };
	if (s->opts.threads) {
		err = thread_frame(s, st->tid, slot, &s->sink.frames[n++]);
		if (err)
			goto fail;
	}
	if (s->opts.async_tasks && !session_tasks__chain(t, st, s->sink.chain, &nlinks, &depth)) {
		/* The tasks awaiting it, root first, in place of the event loop's frames. */
		for (uint32_t k = nlinks; k-- > 0;) {
			const struct task_link *l = &s->sink.chain[k];

			s->sink.frames[n++] = (struct agg_frame){ .kind = AGG_TASK, .name = l->name };
			for (uint32_t i = 0; i < l->nframes; i++)
				s->sink.frames[n++] = session_frame__python(&s->opts, &l->frames[i]);
		}
	} else if (st->gap != GAP_NONE) {
		s->sink.frames[n++] = (struct agg_frame){ .kind = AGG_MARKER,
						     .name = s->sink.incomplete_name };
	} else if (!st->depth) {	/* only entry frames: the interpreter runs no Python code */
		s->sink.frames[n++] = (struct agg_frame){ .kind = AGG_MARKER,
						     .name = s->sink.no_python_name };
	}
	err = session_native__frames(t, st, depth, s->sink.frames, &n);
	if (err == -ENOMEM)
		goto fail;
	for (uint32_t i = depth; err && i-- > 0;)
		s->sink.frames[n++] = session_frame__python(&s->opts, &st->frames[i]);
	if (wait)
		s->sink.frames[n++] = (struct agg_frame){ .kind = AGG_WAIT, .name = wait };
	err = aggregate__add(s->agg, st->pid, st->tid, s->sink.frames, n, weight, &index);
	if (!err && s->opts.timeline) {
		tl = s->sink.ntimeline;
		err = add_to_timeline(s, timeline_start(s, st, weight, wait), index,
				      weight_ns(s, weight));
	}
	if (err)
		goto fail;
	if (!wait) {
		s->sink.shaped = n;
		s->sink.shaped_slot = slot;
	}
	s->sink.aggregated++;
	s->sink.incomplete += st->gap != GAP_NONE;
	s->sink.gaps[st->gap < GAP_MAX ? st->gap : GAP_NONE]++;
	s->sink.aggregated_off_cpu += !!wait;
	if (idle)
		s->sink.idle_ns += weight;
	if (!wait && s->opts.mode != SESSION_CPU)
		s->sink.on_cpu_ns += weight;
	/* Where an exiting thread's last CPU time goes (session_sink__add_cpu_rest). */
	if (!wait)
		thread_table__set_tick(s->threads, slot, index, s->sink.ntimeline > tl ? tl : SIZE_MAX);
	if (index_out)
		*index_out = index;
	return 0;
fail:
	s->fatal = err;
	return err;
}

/* What one tick stands for: a count, or its period in time. */
static uint64_t tick_weight(const struct session *s)
{
	return s->opts.mode == SESSION_CPU ? 1 : 1000000000ull / s->opts.rate_hz;
}

/*
 * The weight of @ns of CPU time: itself, except in cpu mode, where it is counted in
 * periods of the rate and the rest carried to the next. Only the scheduler's tick
 * times cpu-mode samples so: each carries the time its thread ran since its previous
 * one, ticks that fell on other threads included, so that a thread switched out
 * between ticks is not under-counted.
 */
static uint64_t cpu_weight(struct session *s, uint64_t ns)
{
	uint64_t period = 1000000000ull / s->opts.rate_hz, n;

	if (s->opts.mode != SESSION_CPU)
		return ns;
	s->sink.cpu_carry_ns += ns;
	n = s->sink.cpu_carry_ns / period;
	s->sink.cpu_carry_ns -= n * period;
	s->sink.cpu_periods += n;
	return n;
}

/* The preemption of thread @tid still owed a length, or NULL. */
static struct pending_wait *pending_of(struct session *s, uint32_t tid)
{
	for (size_t i = 0; i < s->sink.npending; i++)
		if (s->sink.pending[i].tid == tid)
			return &s->sink.pending[i];
	return NULL;
}

/* Remembers that stack @index of a preemption waits for its length. */
static int expect_length(struct session *s, uint32_t tid, uint32_t index, enum offcpu_class k,
			 size_t timeline)
{
	struct pending_wait *p = pending_of(s, tid);

	/* An end lost with a full ring buffer leaves the entry behind; the thread's
	 * next preemption takes its place. */
	if (!p) {
		if (vec__reserve((void **)&s->sink.pending, &s->sink.pending_cap, s->sink.npending + 1,
				 sizeof(*s->sink.pending), 16))
			return -ENOMEM;
		p = &s->sink.pending[s->sink.npending++];
	}
	*p = (struct pending_wait){ .tid = tid, .index = index, .k = k, .timeline = timeline };
	return 0;
}

/* An off-CPU interval, charged to the stack it blocked in under a leaf naming why. */
int session_sink__add_wait(struct target *t, const struct pbp_sample *hdr,
			   const struct stack *st)
{
	struct session *s = t->session;
	enum offcpu_class k = offcpu_class__of(hdr);
	char name[64];
	uint32_t id, index = UINT32_MAX;	/* stays so when the stack is left out */
	size_t tl = s->sink.ntimeline;
	int err;

	offcpu_class__name(&s->sink.offcpu, hdr, name, sizeof(name));
	err = intern_fmt(s, &id, "%s", name);
	if (err)
		goto fail;
	s->sink.off_cpu_records++;
	s->sink.off_cpu_ns[k] += hdr->off_ns;
	err = add_stack(t, st, hdr->off_ns, id, &index);
	if (err || !(hdr->flags & PBP_SF_OFF_PENDING) || index == UINT32_MAX)
		return err;
	err = expect_length(s, st->tid, index, k, s->sink.ntimeline > tl ? tl : SIZE_MAX);
	if (!err)
		return 0;
fail:
	s->fatal = err;
	return err;
}

/* The length of a preemption whose stack came before. */
static void add_length(struct session *s, const struct pbp_off_end *end)
{
	struct pending_wait *p = pending_of(s, end->tid);

	if (!p)
		return;
	aggregate__add_to(s->agg, p->index, end->off_ns);
	if (p->timeline < s->sink.ntimeline)
		s->sink.timeline[p->timeline].weight_ns = end->off_ns;
	s->sink.off_cpu_ns[p->k] += end->off_ns;
	*p = s->sink.pending[--s->sink.npending];
}

/*
 * Wall mode: what the hypervisor took from a tick's thread since its previous tick,
 * under the stack that tick was just aggregated as (its frames are still in the
 * sink's buffer, which keeps a slot for a leaf). It is time the thread was on a CPU
 * and ran nothing, which its CPU time leaves out; without it a thread's profile falls
 * short of its life. Not a sample of its own: no counter of samples moves.
 */
static int add_stolen(struct session *s, const struct stack *st, uint64_t ns)
{
	uint32_t n = s->sink.shaped, index;
	int64_t id;
	int err;

	if (!ns || s->opts.mode != SESSION_WALL || !n)
		return 0;
	if (s->sink.stolen_name == UINT32_MAX) {
		id = strtab__intern(s->strs, SESSION_STOLEN_LEAF, strlen(SESSION_STOLEN_LEAF));
		if (id < 0) {
			err = (int)id;
			goto fail;
		}
		s->sink.stolen_name = (uint32_t)id;
	}
	s->sink.frames[n++] = (struct agg_frame){ .kind = AGG_WAIT, .name = s->sink.stolen_name };
	err = aggregate__add(s->agg, st->pid, st->tid, s->sink.frames, n, ns, &index);
	if (!err && s->opts.timeline)
		err = add_to_timeline(s, st->ts_ns, index, weight_ns(s, ns));
	if (err)
		goto fail;
	s->sink.stolen_ns += ns;
	thread_table__set_stolen(s->threads, s->sink.shaped_slot, index);
	return 0;
fail:
	s->fatal = err;
	return err;
}

/* ... and the part of it after a thread's last tick, at its exit or the profile's end:
 * under the stack where it last had time stolen, as its CPU time's rest goes under its
 * last tick's. */
void session_sink__add_stolen_rest(struct session *s, uint32_t pid, uint32_t tid, uint64_t ns)
{
	uint32_t index;

	if (!ns || s->opts.mode != SESSION_WALL)
		return;
	if (thread_table__stolen(s->threads, pid, tid, &index)) {
		s->stolen_rest_lost_ns += ns;
		return;
	}
	aggregate__add_to(s->agg, index, ns);
	s->sink.stolen_ns += ns;
}

int session_sink__add_cpu_rest(struct session *s, uint32_t pid, uint32_t tid, uint64_t ns)
{
	uint32_t index;
	size_t tl;
	uint64_t w;

	if (thread_table__tick(s->threads, pid, tid, &index, &tl))
		return -ENOENT;
	w = cpu_weight(s, ns);
	aggregate__add_to(s->agg, index, w);
	if (tl < s->sink.ntimeline)
		s->sink.timeline[tl].weight_ns += weight_ns(s, w);
	if (s->opts.mode != SESSION_CPU)
		s->sink.on_cpu_ns += ns;
	return 0;
}

/* Ring-buffer callback. */
int session_sink__on_sample(void *arg, const void *rec, size_t len)
{
	const struct pbp_sample *hdr = rec;
	struct session *s = arg;
	struct target *t;
	uint64_t weight;
	int err;

	if (len >= sizeof(struct pbp_off_end) && hdr->hdr_len == sizeof(struct pbp_off_end)) {
		add_length(s, rec);
		return 0;
	}
	if (len >= sizeof(struct pbp_cpu_rest) && hdr->hdr_len == sizeof(struct pbp_cpu_rest)) {
		const struct pbp_cpu_rest *r = rec;

		if (r->cpu_ns && session_sink__add_cpu_rest(s, r->pid, r->tid, r->cpu_ns))
			s->cpu_rest_lost_ns += r->cpu_ns;
		session_sink__add_stolen_rest(s, r->pid, r->tid, r->stolen_ns);
		return 0;
	}
	s->sink.delivered++;
	s->sink.ticks_delivered += len >= sizeof(*hdr) && !(hdr->flags & PBP_SF_OFF_CPU);
	s->sink.bytes_copied += len > sizeof(*hdr) ? len - sizeof(*hdr) : 0;
	t = len >= sizeof(*hdr) ? session_targets__of(s, hdr->pid) : NULL;
	if (!t) {
		s->sink.lost++;
		return 0;
	}
	if (decoder__decode(t->dec, rec, len, s->sink.stack))
		return 0;
	if (hdr->flags & PBP_SF_OFF_CPU)
		return session_sink__add_wait(t, hdr, s->sink.stack);
	if (!(hdr->flags & PBP_SF_CPU_TIMED))
		return add_stack(t, s->sink.stack, tick_weight(s), 0, NULL);
	weight = cpu_weight(s, hdr->off_ns);
	/* Cpu mode, less than a period so far: it counts with the next sample. */
	if (!weight && s->opts.mode == SESSION_CPU)
		return 0;
	err = add_stack(t, s->sink.stack, weight, 0, NULL);
	return err ? err : add_stolen(s, s->sink.stack, hdr->off_real_ns);
}

/* Live sampler callback. */
int session_sink__on_live_stack(void *arg, struct stack *st)
{
	struct target *t = arg;

	t->session->sink.delivered++;
	return add_stack(t, st, tick_weight(t->session), 0, NULL);
}

int session_sink__add_task_wait(struct target *t, uint32_t tid, const struct task_link *chain,
				uint32_t n, uint64_t ns)
{
	struct session *s = t->session;
	uint32_t depth = 0, index, slot;
	int64_t leaf;
	int err;

	leaf = strtab__intern(s->strs, "[task suspended]", 16);
	if (leaf < 0) {
		err = (int)leaf;
		goto fail;
	}
	err = thread_table__see(s->threads, s->strs, (uint32_t)t->interp.pid, tid, &slot);
	if (err)
		goto fail;
	if (s->opts.subprocesses || s->opts.system_wide)
		s->sink.frames[depth++] = (struct agg_frame){ .kind = AGG_PROCESS, .name = t->root_name };
	if (s->opts.threads) {
		err = thread_frame(s, tid, slot, &s->sink.frames[depth++]);
		if (err)
			goto fail;
	}
	for (uint32_t k = n; k-- > 0;) {
		s->sink.frames[depth++] = (struct agg_frame){ .kind = AGG_TASK, .name = chain[k].name };
		for (uint32_t i = 0; i < chain[k].nframes; i++)
			s->sink.frames[depth++] = session_frame__python(&s->opts, &chain[k].frames[i]);
	}
	s->sink.frames[depth++] = (struct agg_frame){ .kind = AGG_WAIT, .name = (uint32_t)leaf };
	err = aggregate__add(s->agg, (uint32_t)t->interp.pid, tid, s->sink.frames, depth, ns, &index);
	if (!err)
		return 0;
fail:
	s->fatal = err;
	return err;
}

int session_sink__add_cpu(struct target *t, struct stack *st, uint64_t ns)
{
	st->flags |= PBP_TS_ON_CPU;
	return add_stack(t, st, ns, 0, NULL);
}
