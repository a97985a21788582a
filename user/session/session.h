/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A sampling session: the targets (a process, a command and, with subprocesses, the
 * Python processes they start), the sampler (BPF, or live memory), decoding, and the
 * aggregate the samples go to. `record` runs one and writes it at the end; `top` runs
 * one and shows it as it grows.
 */
#ifndef PBP_SESSION_H
#define PBP_SESSION_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/names.h"
#include "profile/profile.h"
#include "sample/sampler.h"
#include "session/stats.h"

struct proc_filter;

/* A process that became a target (@gone 0), or stopped being one (@gone 1). */
struct session_process {
	pid_t pid;
	const char *cmd;		/* its command line, cut short */
	const char *python_version;	/* "3.13.1" */
	uint32_t root_name;		/* strtab id of its "process PID COMMAND" frame */
	uint64_t start;			/* its start time: with pid, names one process */
};
typedef void (*session_process_fn)(void *ctx, const struct session_process *p, int gone);

/* What a profile measures. */
enum session_mode {
	SESSION_CPU,		/* on-CPU ticks, counted (the default) */
	SESSION_WALL,		/* on-CPU ticks and off-CPU intervals, in nanoseconds */
	SESSION_OFF_CPU,	/* off-CPU intervals only, in nanoseconds */
};

/* Off-CPU waits shorter than this many microseconds are drawn (see --min-block). */
#define SESSION_MIN_BLOCK_DEFAULT_US 100
/* Wall mode's leaf for time a thread was on a CPU while the hypervisor ran something
 * else (steal time, on a virtual machine), under the stack it was running. */
#define SESSION_STOLEN_LEAF "[stolen: the hypervisor took the CPU]"
#define SESSION_MIN_BLOCK_MAX_US 1000000	/* the BPF side scales by it without overflow */

/* A mode's name, "cpu", "wall" or "off-cpu"; and a name's mode: 0, or -EINVAL. */
static inline const char *session__mode_name(enum session_mode mode)
{
	return mode == SESSION_WALL ? "wall" : mode == SESSION_OFF_CPU ? "off-cpu" : "cpu";
}

static inline int session__parse_mode(const char *name, enum session_mode *mode)
{
	for (enum session_mode m = SESSION_CPU; m <= SESSION_OFF_CPU; m++) {
		if (!strcmp(name, session__mode_name(m))) {
			*mode = m;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * --native-stack SIZE: bytes ("16384") or KiB ("16K"), PBP_NATIVE_STACK_MIN to
 * PBP_NATIVE_STACK_MAX, rounded up to 8 (the stack copy's unit). 0, or -EINVAL.
 */
static inline int session__parse_native_stack(const char *s, uint32_t *bytes)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if ((*end == 'K' || *end == 'k') && v <= PBP_NATIVE_STACK_MAX) {
		v *= 1024;
		end++;
	}
	if (*end || v < PBP_NATIVE_STACK_MIN || v > PBP_NATIVE_STACK_MAX)
		return -EINVAL;
	*bytes = (uint32_t)((v + 7) & ~7ull);
	return 0;
}

/* --native-unwind: how a target's native frames are found. */
enum session_native_unwind {
	SESSION_UNWIND_DEFAULT,	/* not said: auto */
	SESSION_UNWIND_AUTO,	/* fp where the interpreter keeps frame pointers, else dwarf */
	SESSION_UNWIND_DWARF,	/* copy the stack, unwind it with CFI */
	SESSION_UNWIND_FP,	/* walk frame pointers in BPF, checked with CFI */
};

static inline int session__parse_native_unwind(const char *name, enum session_native_unwind *u)
{
	static const char *const names[] = { "auto", "dwarf", "fp" };
	int i = names__index(names, NAMES_N(names), name);

	if (i < 0)
		return i;
	*u = (enum session_native_unwind)(SESSION_UNWIND_AUTO + i);
	return 0;
}

struct session_opts {
	pid_t pid;		/* 0 when a command is given */
	char **cmd;		/* NULL-terminated argv after "--" */
	uint32_t rate_hz;
	uint32_t stack_cap;
	uint32_t ringbuf_mb;
	int no_bpf;		/* sample from user space, never load BPF */
	int no_hold;		/* live: report a torn thread incomplete, never hold it */
	int idle;		/* keep samples of threads not on a CPU (live mode) */
	enum session_mode mode;
	uint32_t min_block_us;	/* off-CPU: shorter intervals are sampled, unbiased */
	int gil;		/* keep only samples of the thread holding the GIL */
	int async_tasks;	/* --async: a sample in an asyncio task is the task's stack */
	int native;		/* --native: each sample also carries user registers and stack */
	uint32_t native_stack;	/* ... this many bytes of it (0: PBP_NATIVE_STACK_DEFAULT, or
				 * PBP_NATIVE_FP_STACK_DEFAULT beside a frame-pointer walk) */
	enum session_native_unwind native_unwind;
	enum sampler_clock clock;	/* --clock */
	int native_all;		/* --native-all: the interpreter's own C frames too */
	int no_frame_cache;
	int threads;		/* a frame "thread TID" under the root */
	int nolineno;		/* aggregate by function, not by line */
	int function_lines;	/* each frame at its function's first line */
	int subprocesses;	/* also profile the Python processes the target starts */
	int timeline;		/* keep every sample's time (chrome, speedscope) */
	int sources;		/* read the sampled source files at the end (pbp, heatmap) */
	int system_wide;	/* -a: every CPython process on the host (BPF only) */
	const struct proc_filter *filter;	/* -a: which of them; NULL: all */
	uint32_t max_processes;	/* -a: at most this many at once; 0: as many as fit */
	session_process_fn on_process;	/* optional */
	void *on_process_ctx;
	/* Set by the caller's handler to the signal that asked it to stop; the command
	 * after "--" gets that signal too. NULL: the caller catches none. */
	const volatile sig_atomic_t *stop_signal;
	/* -d: clock__mono_ns() at which the run ends, the wait for the command's first
	 * Python code included; 0: none. @duration_s is the same as given, for messages. */
	uint64_t deadline_ns;
	double duration_s;
};

struct session_status {
	double elapsed_s;
	uint64_t samples;	/* aggregated */
	uint64_t incomplete;
	uint64_t drops;		/* lost before decoding: ring buffer full, copy failed */
	uint32_t threads;	/* threads seen so far */
	uint32_t processes;	/* targets alive now */
	uint64_t processes_seen;	/* every process that was a target */
	uint64_t processes_skipped;	/* not profiled: --max-processes was reached */
};

struct session;

/*
 * Finds the target and starts sampling it. Returns an exit status (exitcodes.h): 0
 * with *@out set, or the status to exit with after a one-line message was printed.
 */
int session__start(const struct session_opts *o, struct session **out);
/*
 * Takes in what was sampled, waiting up to @timeout_ms. Returns 0 to go on, 1 once
 * every target has exited, or a negative errno that ends the session (printed).
 */
int session__poll(struct session *s, int timeout_ms);
/*
 * Wall and off-CPU modes: charges the waits still open now to the profile, up to now,
 * with the stacks their threads blocked in; the rest of each goes to the next profile.
 * session__stop() does it too, at the end; after it this does nothing. 0, or -ENOMEM.
 */
int session__close_waits(struct session *s);
/* Stops sampling and takes in whatever is still in flight; passes a stop signal on to
 * the command. */
void session__stop(struct session *s);
/* Seconds since sampling began (fixed at session__stop()); cheap, unlike the status. */
double session__elapsed(const struct session *s);
/* Counts so far; reads the BPF counters, so not for every poll. */
void session__status(const struct session *s, struct session_status *st);
/* The profile so far; valid until the next session__poll(). */
void session__profile(const struct session *s, struct profile *p);
/* With opts.sources, once sampling has stopped: reads the source files the profile's
 * Python frames name, which session__profile() then gives (0 or -ENOMEM). */
int session__read_sources(struct session *s);
/*
 * Starts a new profile: forgets the samples and threads so far (strings stay) and
 * restarts the profile's clock, as the agent does at every period.
 */
int session__reset_profile(struct session *s);
/* How many entries the BPF maps hold now (all zero without BPF). */
void session__map_entries(const struct session *s, struct sampler_maps *m);
/* The process asked for (or the command's Python). */
pid_t session__pid(const struct session *s);
/* The run's statistics (after session__stop(): final). */
void session__stats(const struct session *s, struct run_stats *st);
/* Whether the command after "--" still runs; its wait status once it has ended (waits
 * for it, or for as long as a stop signal gives it), -1 if there is none. */
int session__command_running(const struct session *s);
int session__wait_command(struct session *s);
/* Says how the command ended, from its wait status; nothing for -1. */
void session__report_command(int status);
void session__free(struct session *s);

#endif
