/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside a sampling session: the state its files share and what each offers the
 * others. session.c starts, polls, stops and counts; session_targets.c keeps the
 * table of targets; session_enrol.c takes processes in; session_follow.c follows the
 * processes the targets start, exec and end; session_tasks.c and session_native.c
 * place a sample under its task and among its C frames; session_sink.c turns decoded
 * stacks into the aggregate and the timeline; session_waits.c charges the waits open
 * at a profile's end. Nothing outside these files includes it.
 */
#ifndef PBP_SESSION_PRIV_H
#define PBP_SESSION_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/aggregate.h"
#include "decode/decode_gap.h"
#include "session/descendants.h"
#include "native/native_merge.h"
#include "native/native_unwind.h"
#include "session/offcpu_class.h"
#include "pbp_abi.h"
#include "profile/profile.h"
#include "sample/sampler.h"
#include "session/session.h"
#include "session/spawn.h"
#include "session/stats.h"
#include "session/target.h"
#include "profile/thread_table.h"

/* session_sink.c's: where stacks go on their way to the aggregate and the timeline,
 * and what it counted of them. Only the sink writes it; session.c reads the counts. */
struct session_sink {
	struct stack *stack;
	struct agg_frame *frames;	/* one stack's, root first */
	struct task_link *chain;	/* one sample's task chain, SESSION_TASK_CHAIN_MAX */
	struct profile_sample *timeline;
	size_t ntimeline, timeline_cap;
	int timeline_full;
	uint32_t incomplete_name, no_python_name, idle_name;
	uint32_t stolen_name;		/* SESSION_STOLEN_LEAF once interned, else UINT32_MAX */
	uint64_t stolen_ns;		/* wall mode: the hypervisor's, charged */
	/* The frames of the on-CPU stack add_stack() aggregated last, still in frames[],
	 * and its thread's slot; 0: none (left out, or a wait since). */
	uint32_t shaped, shaped_slot;
	struct offcpu_classifier offcpu;
	uint64_t on_cpu_ns;			/* wall and off-CPU modes: what was kept */
	uint64_t off_cpu_ns[OFFCPU_MAX];
	uint64_t off_cpu_records;
	uint64_t cpu_carry_ns;		/* cpu mode on the tick: CPU time short of a period */
	uint64_t cpu_periods;		/* ... and the periods counted */
	/* Preemptions whose stack is in the aggregate and whose length is owed by a
	 * pbp_off_end: few at once, one per thread at most. */
	struct pending_wait {
		uint32_t tid;
		uint32_t index;		/* aggregate__add() index */
		enum offcpu_class k;
		size_t timeline;	/* its timeline entry; SIZE_MAX: none */
	} *pending;
	size_t npending, pending_cap;
	uint64_t delivered, bytes_copied, filtered, aggregated, incomplete;
	/* Of the stacks aggregated: why the incomplete ones are, and those off a CPU
	 * (waits, and in live sampling idle threads, whose time is idle_ns). What the
	 * summary counts, so that its numbers add up to the profile's. */
	uint64_t gaps[GAP_MAX], aggregated_off_cpu, idle_ns;
	uint64_t ticks_delivered;	/* records of on-CPU ticks, against the expected */
	uint64_t lost;		/* records of a process we no longer follow */
};

/* session_tasks.c's: --async. */
struct session_tasks {
	/* samples in a task made the task's stack, and those that could not be (the
	 * task had ended, or its coroutine was not in the stack) */
	uint64_t placed, unplaced;
	uint64_t swept_ns;	/* the last sweep of suspended tasks */
	uint64_t suspended_ns;	/* the time charged to them */
	struct task_link *chain;	/* a sweep's chain, SESSION_TASK_CHAIN_MAX */
};

/* session_targets.c's: the table of targets, and what it keeps of those that left it. */
struct session_targets {
	struct target **v;	/* by pid */
	size_t n;
	uint64_t processes_seen;	/* every target it has held */
	uint64_t gone_cpu_ns;	/* the CPU time of those gone, for the samples expected */
};

/* session_waits.c's: the waits open at a profile's end. */
struct session_waits {
	uint64_t open_waits;		/* waits still open at a profile's end, charged */
	uint64_t open_waits_lost;	/* ... and those whose thread could not be read */
	/* When they were last charged: session__reset_profile() begins the next profile
	 * there, and clears it. */
	uint64_t closed_ns;
};

/* session_follow.c's: the processes followed as they come, exec and go. */
struct session_follow {
	struct pbp_event *events;	/* taken in during a poll, handled after it */
	size_t nevents, events_cap;
	uint64_t swept_ns;	/* -a: the last sweep for exits whose event was lost */
	/* --subprocesses, -a, a target's exec; session.c makes it, with session_enrol.c's
	 * callbacks, which this file may not call. */
	struct descendants *children;
	/* The target asked for exec'd: watched for a new Python; session_enrol.c clears it
	 * once it adopts one. */
	pid_t exec_pid;
	char exec_prog[128];	/* what it exec'd, for the notices */
};

/* session_enrol.c's. */
struct session_enrol {
	uint64_t processes_skipped;	/* -a: left out for want of room */
};

/*
 * What several files write, or every file reads, is here at the top; what one file
 * writes is in that file's own struct below it, and what only session.c uses is last.
 */
struct session {
	struct session_opts opts;
	struct strtab *strs;
	struct code_budget codes;	/* every target's caches count against these */
	struct frame_cache_budget fcaches;
	struct target_shared shared;
	struct aggregate *agg;
	struct thread_table *threads;
	struct sampler *sampler;
	int live_mode;
	int fatal;		/* a negative errno that ends the run */
	uint64_t profile_ns;	/* when the current profile began: the start, or a reset */
	/* The command; reaped by whichever file sees it end (session_targets.c,
	 * session_follow.c). */
	struct spawn spawn;
	int spawned;
	/* --subprocesses: the process asked for (or the command), which is no Python: a
	 * parent whose Python descendants are the targets; the run lasts while it lives. */
	pid_t parent_pid;
	/* CPU after a thread's last tick, with no tick: counted by the sink as records
	 * come and by the waits at a profile's end. */
	uint64_t cpu_rest_lost_ns;
	uint64_t stolen_rest_lost_ns;	/* stolen after a thread's last tick, nowhere to go */
	char name[160];		/* "pid 123 (python3 app.py)" */
	/* Of targets already gone (session_targets.c); session.c and session_enrol.c name
	 * the run's pid and Python in it. */
	struct run_stats totals;

	struct session_sources *sources;	/* opts.sources */
	struct session_targets targets;
	struct session_native *native;	/* --native */
	struct session_tasks tasks;
	struct session_sink sink;
	struct session_waits waits;
	struct session_follow follow;
	struct session_enrol enrol;

	size_t strs_kept;	/* the string table's size after its last rebuild */
	uint64_t strs_rebuilds;
	uint64_t start_ns, expired_ns;
	int64_t start_unix_ns;
	double elapsed_s;	/* fixed at session__stop */
	int stopped;
	uint32_t decode_delay_ms;	/* PBP_TEST_DECODE_DELAY_MS, for tests only */
};

/*
 * What each file offers the others, in the order they may call: a file calls only the
 * sections before its own (make check-layers holds session/ to ORDER_session in the
 * Makefile).
 * The table knows nothing of tasks or native frames; tasks and native walks shape
 * frames into buffers their callers hand them; the sink alone writes the aggregate
 * and the timeline; enrolment and session.c wire them together.
 */

/* session_targets.c: the targets, sorted by pid. */
size_t session_targets__slot(const struct session *s, uint32_t pid);
struct target *session_targets__of(const struct session *s, uint32_t pid);
void session_targets__code_known(struct target *t, uint64_t code, uint64_t fp, uint32_t flags);
int session_targets__publish_anchor(struct target *t, uint32_t tid,
				    const struct pbp_fcache *fc);
int session_targets__reserve(struct session *s);
void session_targets__insert(struct session *s, struct target *t);
void session_targets__detach(struct session *s, size_t i);
int session_targets__gone(struct session *s, struct target *t);
/* The descendants callback (descendants.h) that asks whether @pid is one; @arg is the
 * session. */
int session_targets__is_target(pid_t pid, void *arg);

/* session_native.c: --native (see there). */
int session_native__new(struct session *s);
void session_native__free(struct session *s);
/* Readies target @t for native unwinding, if the session has --native. */
int session_native__target(struct session *s, struct target *t);
/* Keeps the native targets' maps current while they live (native_proc__refresh). */
void session_native__refresh(struct session *s);
void session_native__remap(struct session *s, struct strtab_remap *map);
/*
 * Appends @st's frames, root first, to @out from *@n, native and Python interleaved,
 * of which @keep Python frames (innermost first) are the stack's own; @out has room for
 * a whole stack (the sink's frame buffer). 0; -ENOENT when the caller is to add the
 * Python frames itself (no native snapshot, or one that cannot be unwound or matched:
 * a marker may then have been added); -ENOMEM.
 */
int session_native__frames(struct target *t, const struct stack *st, uint32_t keep,
			   struct agg_frame *out, uint32_t *n);
/* Adds the walks' counters to @st. */
void session_native__stats(const struct session *s, struct run_stats *st);

/* session_tasks.c: --async (see there). */
#define SESSION_TASK_CHAIN_MAX 8	/* tasks in one await chain, the running one first */
struct task_link {
	uint32_t name;			/* strtab id of "task NAME" */
	uint32_t nframes;		/* an awaiter's suspended frames, outermost first */
	struct decoded_frame frames[PY_TASK_FRAMES_MAX];
};
/* Looks for target @t's asyncio layout if it is due (--async), and once found, has
 * BPF send its samples' running tasks. */
void session_tasks__look(struct session *s, struct target *t);
/*
 * For @st, a sample in a task: @chain[0..*n) the task and the tasks awaiting it, each
 * awaiting the next, and *@keep how many of st's frames (innermost first) are the
 * task's own. -ENOENT when the sample is not in a task, or its coroutine is not in the
 * stack; -ESTALE when the task has ended since. The stack then stays the thread's.
 */
int session_tasks__chain(struct target *t, const struct stack *st, struct task_link *chain,
			 uint32_t *n, uint32_t *keep);
/* A suspended task's wait, found by a sweep: @ns of it under @chain[n-1] ... @chain[0],
 * in thread @tid. The sweep's caller decides where it goes (session_sink.c); a negative
 * errno ends the sweep. */
typedef int (*session_task_wait_fn)(struct target *t, uint32_t tid,
				    const struct task_link *chain, uint32_t n, uint64_t ns);
/* Wall and off-CPU modes: hands @on_wait every suspended task and the time since the
 * last sweep, if SESSION_TASK_SWEEP_NS has passed or @now_anyway (a profile's end). */
#define SESSION_TASK_SWEEP_NS 100000000ull
void session_tasks__sweep(struct session *s, int now_anyway, session_task_wait_fn on_wait);

/* session_sink.c: the sampler callbacks that decode a record and aggregate it. */
int session_sink__on_sample(void *arg, const void *rec, size_t len);
int session_sink__on_live_stack(void *arg, struct stack *st);
int session_sink__add_wait(struct target *t, const struct pbp_sample *hdr,
			   const struct stack *st);
/* Wall mode, and cpu mode on the tick: CPU time thread @tid used after its last tick
 * in this profile, counted under that tick's stack; -ENOENT if it had none. */
int session_sink__add_cpu_rest(struct session *s, uint32_t pid, uint32_t tid, uint64_t ns);
/* Wall mode: time the hypervisor took from thread @tid after its last tick, under the
 * stack where it last had time stolen; counted lost if it never had. */
void session_sink__add_stolen_rest(struct session *s, uint32_t pid, uint32_t tid, uint64_t ns);
/* @ns of a suspended task's time: under @chain[n-1] ... @chain[0] (each link's task
 * and frames), in thread @tid, ending in "[task suspended]". */
int session_sink__add_task_wait(struct target *t, uint32_t tid, const struct task_link *chain,
				uint32_t n, uint64_t ns);
/* Wall mode: @ns of CPU time under stack @st, read live. */
int session_sink__add_cpu(struct target *t, struct stack *st, uint64_t ns);

/* session_waits.c: charges the waits still open now to the profile (see there). */
int session_waits__close(struct session *s);

/* session_follow.c: processes coming, exec'ing and going. */
int session_follow__on_event(void *arg, const struct pbp_event *ev);
int session_follow__host(struct session *s);
/* Without -a, after each poll: 0 to go on, 1 once the run is over, or a negative errno. */
int session_follow__targets(struct session *s);

/* session_enrol.c: a process becomes a target. The descendants callbacks
 * (descendants.h); @arg is the session. */
int session_enrol__target(struct session *s, struct target *t, uint64_t gil);
int session_enrol__adopt(pid_t pid, void *arg);
int session_enrol__consider(pid_t pid, void *arg);

/* session_sources.c's: the source files the profile's Python frames name, read from
 * each target's root at the end (opts.sources). */
struct session_sources;
/* Keeps a way into @t's root, which outlives the process, for session_sources__read(). */
void session_sources__target(struct session *s, const struct target *t);
/* Reads the files the aggregate's Python frames name, once, within the caps; what
 * cannot be read is left out (the heatmap says so). 0 or -ENOMEM. */
int session_sources__read(struct session *s);
/* What session_sources__read() kept, for the profile. */
const struct profile_source *session_sources__all(const struct session *s, size_t *n);
void session_sources__free(struct session *s);

#endif
