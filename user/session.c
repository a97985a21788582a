// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sampling session: find the target's interpreter, start the BPF sampler (or the
 * live one), decode and aggregate records as they arrive, follow the Python processes
 * the target starts when asked, and stop cleanly on every way out.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aggregate.h"
#include "clock.h"
#include "decode.h"
#include "descendants.h"
#include "exitcodes.h"
#include "frame_cache.h"
#include "interp.h"
#include "log.h"
#include "bpf_features.h"
#include "privs.h"
#include "proc.h"
#include "proc_filter.h"
#include "pythreads.h"
#include "sampler.h"
#include "sampler_live.h"
#include "session.h"
#include "spawn.h"
#include "stats.h"
#include "strtab.h"
#include "target.h"
#include "target_error.h"
#include "thread_table.h"
#include "vec.h"

#define FCACHE_EXPIRE_S 10.0
/* The table is rebuilt once it holds this much more than 1.5 times what the last
 * rebuild kept (see compact_strings()). */
#define STRS_SLACK_BYTES (1u << 20)
/* The timeline keeps its first samples up to this size (16 bytes each). */
#define TIMELINE_MAX_BYTES (64u << 20)
/* A burst of process events grows their array; past this it is given back. */
#define EVENTS_KEEP 1024
/* System-wide, exits come as events; this sweep catches any whose event was lost. */
#define SWEEP_NS 1000000000ull

/* The one piece of process-wide state: set by the signal handler, read by the loop. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

struct session {
	struct session_opts opts;
	struct strtab *strs;
	size_t strs_kept;	/* its size after the last rebuild */
	struct code_budget codes;	/* every target's caches count against these */
	struct frame_cache_budget fcaches;
	struct target_shared shared;
	int timeline_full;
	uint64_t strs_rebuilds;
	struct aggregate *agg;
	struct thread_table *threads;
	struct profile_sample *timeline;
	size_t ntimeline, timeline_cap;
	struct target **targets;	/* by pid */
	size_t ntargets;
	struct pbp_event *events;	/* taken in during a poll, handled after it */
	size_t nevents, events_cap;
	uint64_t swept_ns;
	uint64_t processes_seen, processes_skipped;
	struct descendants *children;	/* --subprocesses */
	struct sampler *sampler;
	int live_mode;
	struct spawn spawn;
	int spawned;
	struct stack *stack;
	struct agg_frame *frames;
	uint32_t incomplete_name, no_python_name;
	uint64_t delivered, bytes_copied, filtered, aggregated, incomplete;
	uint64_t lost;		/* records of a process we no longer follow */
	int fatal;		/* a negative errno that ends the run */
	uint64_t start_ns, expired_ns, gone_cpu_ns;
	uint64_t profile_ns;	/* when the current profile began: the start, or a reset */
	int64_t start_unix_ns;
	double elapsed_s;	/* fixed at session__stop */
	int stopped;
	uint32_t decode_delay_ms;	/* PBP_TEST_DECODE_DELAY_MS, for tests only */
	pid_t exec_pid;		/* the target asked for exec'd: watched for a new Python */
	char exec_prog[128];	/* what it exec'd, for the notices */
	char name[160];		/* "pid 123 (python3 app.py)" */
	struct run_stats totals;	/* of targets already gone */
};

void session__catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	/* No SA_RESTART: a poll must return so the loop sees the flag. A hang-up (the
	 * SSH session dropped) ends the run like SIGTERM, with what was sampled
	 * written; top and the agent give SIGHUP their own meaning after this. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int session__stop_signal(void)
{
	return stop_signal;
}

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

static int32_t frame_line(const struct session_opts *o, const struct decoded_frame *f)
{
	if (o->nolineno)
		return -1;
	return o->function_lines ? f->first_line : f->line;
}

static int add_to_timeline(struct session *s, uint64_t ts_ns, uint32_t index)
{
	if (s->ntimeline == TIMELINE_MAX_BYTES / sizeof(*s->timeline)) {
		if (!s->timeline_full)
			pr_warn("the timeline holds its first %zu samples (%u MiB): later ones "
				"count in the profile but are not placed in time\n", s->ntimeline,
				TIMELINE_MAX_BYTES >> 20);
		s->timeline_full = 1;
		return 0;
	}
	if (vec__reserve((void **)&s->timeline, &s->timeline_cap, s->ntimeline + 1,
			 sizeof(*s->timeline), 4096))
		return -ENOMEM;
	/* A record decoded late may predate the start by a tick: clamp, keep order. */
	s->timeline[s->ntimeline++] = (struct profile_sample){
		.t_ns = ts_ns > s->profile_ns ? ts_ns - s->profile_ns : 0,
		.stack = index,
	};
	return 0;
}

/* One decoded stack in, one aggregated stack out, unless --gil/--idle leave it out. */
static int add_stack(struct target *t, const struct stack *st)
{
	struct session *s = t->session;
	uint32_t n = 0, index;
	int err;

	if ((s->opts.gil && !(st->flags & PBP_TS_GIL)) ||
	    (!s->opts.idle && !(st->flags & PBP_TS_ON_CPU))) {
		s->filtered++;
		return 0;
	}
	if (s->opts.subprocesses || s->opts.system_wide)
		s->frames[n++] = (struct agg_frame){ .kind = AGG_PROCESS, .name = t->root_name };
	if (s->opts.threads) {
		s->frames[n].kind = AGG_THREAD;
		err = intern_fmt(s, &s->frames[n].name, "thread %u", st->tid);
		if (err)
			goto fail;
		n++;
	}
	if (st->gap != GAP_NONE)
		s->frames[n++] = (struct agg_frame){ .kind = AGG_MARKER,
						     .name = s->incomplete_name };
	else if (!st->depth)	/* only entry frames: the interpreter runs no Python code */
		s->frames[n++] = (struct agg_frame){ .kind = AGG_MARKER,
						     .name = s->no_python_name };
	for (uint32_t i = st->depth; i-- > 0;)
		s->frames[n++] = (struct agg_frame){
			.kind = AGG_PYTHON,
			.name = st->frames[i].qualname,
			.file = st->frames[i].filename,
			.line = frame_line(&s->opts, &st->frames[i]),
		};
	err = aggregate__add(s->agg, st->pid, st->tid, s->frames, n, 1, &index);
	if (!err)
		err = thread_table__see(s->threads, s->strs, st->pid, st->tid);
	if (!err && s->opts.timeline)
		err = add_to_timeline(s, st->ts_ns, index);
	if (err)
		goto fail;
	s->aggregated++;
	s->incomplete += st->gap != GAP_NONE;
	return 0;
fail:
	s->fatal = err;
	return err;
}

/* Where target @pid is in s->targets, or where it would go. */
static size_t target_slot(const struct session *s, uint32_t pid)
{
	size_t lo = 0, hi = s->ntargets;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uint32_t)s->targets[mid]->interp.pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Every record asks this: a binary search, not a scan, for hundreds of processes. */
static struct target *target_of(const struct session *s, uint32_t pid)
{
	size_t i = target_slot(s, pid);

	return i < s->ntargets && (uint32_t)s->targets[i]->interp.pid == pid ? s->targets[i] : NULL;
}

/* Ring-buffer callback. */
static int on_sample(void *arg, const void *rec, size_t len)
{
	const struct pbp_sample *hdr = rec;
	struct session *s = arg;
	struct target *t;

	s->delivered++;
	s->bytes_copied += len > sizeof(*hdr) ? len - sizeof(*hdr) : 0;
	t = len >= sizeof(*hdr) ? target_of(s, hdr->pid) : NULL;
	if (!t) {
		s->lost++;
		return 0;
	}
	if (decoder__decode(t->dec, rec, len, s->stack))
		return 0;
	return add_stack(t, s->stack);
}

/* Ring-buffer callback for process events. Acting on one may drain the ring buffer,
 * which must not happen from inside its own callback: they wait for the poll's end. */
static int on_event(void *arg, const struct pbp_event *ev)
{
	struct session *s = arg;

	if (vec__reserve((void **)&s->events, &s->events_cap, s->nevents + 1, sizeof(*s->events),
			 256)) {
		s->fatal = -ENOMEM;
		return -ENOMEM;
	}
	s->events[s->nevents++] = *ev;
	return 0;
}

/* Live sampler callback. */
static int on_live_stack(void *arg, struct stack *st)
{
	struct target *t = arg;

	t->session->delivered++;
	return add_stack(t, st);
}

/* The frame cache's entries go to the BPF map, where the sampler copies by them. */
static int publish_anchor(struct target *t, uint32_t tid, const struct pbp_fcache *fc)
{
	struct sampler *sampler = t->session->sampler;

	return sampler ? sampler__set_anchor(sampler, tid, fc) : 0;
}

static int start_live(struct target *t)
{
	struct live_sampler_cfg lc = {
		.interp = &t->interp,
		.live = &t->live,
		.dec = t->dec,
		.fcache = t->fcache,
		.rate_hz = t->session->opts.rate_hz,
		/* No verifier bounds user space: the whole stack, up to a sane size. */
		.stack_cap = LIVE_STACK_BYTES,
		.want_idle = t->session->opts.idle,
		.on_stack = on_live_stack,
		.ctx = t,
	};

	return live_sampler__new(&lc, &t->live_sampler);
}

/* Starts sampling prepared target @t, which the session then owns. */
static void tell(struct session *s, const struct target *t, int gone)
{
	char version[32];
	struct session_process p = {
		.pid = t->interp.pid,
		.cmd = t->cmd,
		.python_version = version,
		.root_name = t->root_name,
		.start = t->ident.start,
	};

	if (!s->opts.on_process)
		return;
	interp__version_str(t->interp.version_hex, version, sizeof(version));
	s->opts.on_process(s->opts.on_process_ctx, &p, gone);
}

static int target_enrol(struct session *s, struct target *t, uint64_t gil)
{
	struct target **targets;
	size_t at;
	int err;

	if (s->ntargets == PBP_TARGETS_MAX)
		return -ENOSPC;
	targets = realloc(s->targets, (s->ntargets + 1) * sizeof(*targets));
	if (!targets)
		return -ENOMEM;
	s->targets = targets;
	proc__cpu_ns(t->interp.pid, &t->cpu0);
	t->cpu = t->cpu0;
	err = s->live_mode ? start_live(t) : sampler__add_target(s->sampler, &t->interp, gil);
	if (err)
		return err;
	at = target_slot(s, t->interp.pid);
	memmove(&s->targets[at + 1], &s->targets[at], (s->ntargets - at) * sizeof(*s->targets));
	s->targets[at] = t;
	s->ntargets++;
	s->processes_seen++;
	tell(s, t, 0);
	return 0;
}

/* Stops following target @i, which has exited: what it sampled stays. */
static void target_detach(struct session *s, size_t i)
{
	struct target *t = s->targets[i];

	if (s->sampler) {
		sampler__remove_target(s->sampler, t->interp.pid);
		/* Its records still in flight are decoded while its decoder lives. */
		sampler__drain(s->sampler);
	}
	tell(s, t, 1);
	target__add_stats(t, &s->totals);
	s->gone_cpu_ns += t->cpu > t->cpu0 ? t->cpu - t->cpu0 : 0;
	memmove(&s->targets[i], &s->targets[i + 1], (s->ntargets - i - 1) * sizeof(*s->targets));
	s->ntargets--;
	pr_info("stopped following pid %d: %zu processes profiled now\n", (int)t->interp.pid,
		s->ntargets);
	target__free(t);
}

static int target_error(pid_t pid, int err, const struct py_interp *in)
{
	char missing[64];

	return target_error__report(pid, err, in,
				    privs__missing_bpf(missing, sizeof(missing)) ? missing : NULL);
}

/* Why the BPF sampler could not start, for the fallback notice. */
static const char *sampler_failure(int err)
{
	switch (err) {
	case -EPERM:
		return "the kernel refused to load or attach the BPF program (lockdown, "
		       "seccomp or missing capabilities)";
	case -EACCES:
		return "the kernel's BPF verifier rejected the program (rerun with -vv for "
		       "its log)";
	case -ENOENT:
	case -ENODEV:
	case -EOPNOTSUPP:
	case -ENOSYS:
	case -EINVAL:
		return "this kernel lacks a BPF feature the sampler needs (Linux 5.17 or "
		       "later)";
	default:
		return "starting the BPF sampler failed";
	}
}

/* Why BPF cannot be used on this host, or NULL if it may be. */
static const char *bpf_unavailable(char *buf, size_t len)
{
	char missing[128];

	if (privs__missing_bpf(missing, sizeof(missing))) {
		snprintf(buf, len, "missing %s", missing);
		return buf;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing)";
	return bpf_features__missing(buf, len);
}

static int new_sampler(struct session *s)
{
	struct sampler_cfg sc = {
		.rate_hz = s->opts.rate_hz,
		.stack_cap = s->opts.stack_cap,
		.ringbuf_bytes = s->opts.ringbuf_mb << 20,
		.frame_cache = !s->opts.no_frame_cache,
		.every_exec = s->opts.system_wide,
		.on_sample = on_sample,
		/* Taken in every mode, so the ring buffer never fills with events of a
		 * forking target; outside -a only a target's exec is acted on. */
		.on_event = on_event,
		.ctx = s,
	};

	return sampler__new(&sc, &s->sampler);
}

/* BPF when it can run, else live memory with a notice; --no-bpf asks for the latter. */
static int choose_sampler(struct session *s, struct target *first)
{
	const struct session_opts *o = &s->opts;
	const char *why = NULL;
	char buf[192];
	uint64_t gil = 0;
	int err;

	if (pythreads__gil(&first->live.base, &first->interp, &gil) && o->gil) {
		interp__version_str(first->interp.version_hex, buf, sizeof(buf));
		pr_warn("--gil: pybpfprof does not know where CPython %s keeps its GIL state\n",
			buf);
		return EXIT_UNSUPPORTED;
	}
	first->session = s;
	err = target__prepare(first, &s->shared, !o->no_frame_cache, publish_anchor);
	if (err)
		goto fail;
	if (!o->no_bpf) {
		why = bpf_unavailable(buf, sizeof(buf));
		if (!why) {
			err = s->sampler ? 0 : new_sampler(s);
			if (!err)
				err = target_enrol(s, first, gil);
			if (!err) {
				if (o->idle)
					pr_warn("--idle has no effect with BPF sampling, which sees "
						"only threads on a CPU; add --no-bpf for a wall-clock "
						"view\n");
				return 0;
			}
			if (err == -ENOMEM)
				goto fail;
			sampler__free(s->sampler);
			s->sampler = NULL;
			why = sampler_failure(err);
		}
		pr_warn("BPF is not available (%s): sampling from user space instead, as "
			"with --no-bpf\n", why);
	}
	s->live_mode = 1;
	err = target_enrol(s, first, gil);
	if (!err)
		return 0;
fail:
	pr_warn("starting to sample pid %d: %s\n", (int)first->interp.pid, strerror(-err));
	return EXIT_RUNTIME;
}

/* Finds the interpreter: of the given PID, or of the command once it execs one. */
static int find_first(struct session *s, struct target *t)
{
	const struct session_opts *o = &s->opts;
	int err;

	if (!o->cmd) {
		mem_live__init(&t->live, o->pid);
		target__identify(t);
		err = interp__find(o->pid, &t->live.base, &t->interp);
		return err ? target_error(o->pid, err, &t->interp) : 0;
	}
	err = spawn__start(o->cmd, &s->spawn);
	if (err && s->spawn.trace_failed) {
		pr_warn("cannot trace %s to catch its first Python code: %s (is pybpfprof "
			"itself being traced, or ptrace restricted?)\n", o->cmd[0], strerror(-err));
		return EXIT_RUNTIME;
	}
	if (err) {
		pr_warn("cannot run %s: %s\n", o->cmd[0], strerror(-err));
		return err == -ENOENT || err == -ENOTDIR ? EXIT_CMD_NOTFOUND : EXIT_CMD_NOEXEC;
	}
	s->spawned = 1;
	mem_live__init(&t->live, s->spawn.pid);
	err = spawn__wait_python(&s->spawn, &t->live.base, &t->interp);
	if (err == -ECHILD) {
		pr_warn("%s exited before running any CPython code (status %d)\n", o->cmd[0],
			WIFEXITED(s->spawn.status) ? WEXITSTATUS(s->spawn.status) : -1);
		return EXIT_NOT_PYTHON;
	}
	return err ? target_error(s->spawn.pid, err, &t->interp) : 0;
}

/* ---- children ------------------------------------------------------------------ */

static int is_target(pid_t pid, void *arg)
{
	return target_of(arg, pid) != NULL;
}

/* Whether there is room for one more target; says once when there is not. */
static int room_for(struct session *s, pid_t pid)
{
	uint32_t max = s->opts.max_processes ? s->opts.max_processes : PBP_TARGETS_MAX;
	char cmd[128];

	if (s->ntargets < max)
		return 1;
	if (!s->processes_skipped++) {
		if (proc__cmdline(pid, cmd, sizeof(cmd)))
			snprintf(cmd, sizeof(cmd), "?");
		pr_warn("%u processes are being profiled, the most %s: pid %d (%s) and "
			"further new ones are not, until some exit\n", max,
			s->opts.max_processes ? "--max-processes allows" : "one run can follow",
			(int)pid, cmd);
	}
	return 0;
}

/* Makes @pid a target if it runs a CPython we can read; 1 if it does now (or never
 * will: no room), 0 if not (yet). */
static int adopt(pid_t pid, void *arg)
{
	struct session *s = arg;
	struct target *t = calloc(1, sizeof(*t));
	char version[32];
	uint64_t gil = 0;
	int err;

	if (!t)
		return -ENOMEM;
	mem_live__init(&t->live, pid);
	target__identify(t);
	t->found_ns = clock__mono_ns();
	err = interp__find(pid, &t->live.base, &t->interp);
	if (err) {
		if (err == -ENOTSUP) {
			interp__version_str(t->interp.version_hex, version, sizeof(version));
			pr_info("pid %d runs CPython %s, which pybpfprof does not read\n",
				(int)pid, version);
		}
		target__free(t);
		return 0;	/* not (yet) Python */
	}
	/* The command line is read once, by target__prepare(), unless it is for the
	 * notice that there is no room. */
	if (s->opts.system_wide && !room_for(s, pid)) {
		target__free(t);
		return 1;
	}
	pythreads__gil(&t->live.base, &t->interp, &gil);
	t->session = s;
	err = target__prepare(t, &s->shared, !s->opts.no_frame_cache, publish_anchor);
	if (!err)
		err = target_enrol(s, t, gil);
	if (err) {
		pr_warn("cannot follow pid %d: %s\n", (int)pid, strerror(-err));
		target__free(t);
		return err == -ENOMEM ? err : 1;	/* 1: not to be tried again */
	}
	pr_info("following pid %d (%s)\n", (int)pid, t->cmd);
	if (pid == s->exec_pid) {
		pr_warn("pid %d exec'd %s, a Python: profiling it on\n", (int)pid, s->exec_prog);
		s->exec_pid = 0;
	}
	if (s->opts.system_wide) {
		interp__version_str(t->interp.version_hex, version, sizeof(version));
		if (!s->totals.python_version[0])
			snprintf(s->totals.python_version, sizeof(s->totals.python_version), "%s",
				 version);
		else if (strcmp(s->totals.python_version, version))
			snprintf(s->totals.python_version, sizeof(s->totals.python_version),
				 "several");
	}
	return 1;
}

/* System-wide: @pid is adopted if the filters take it. */
static int consider(pid_t pid, void *arg)
{
	struct session *s = arg;
	int r;

	if (pid == getpid() || target_of(s, pid))
		return 1;
	r = proc_filter__match(s->opts.filter, pid);
	if (r != 1)
		return 1;	/* not wanted, or gone; an exec brings it back */
	return adopt(pid, s);
}

static int scan_one(pid_t pid, void *arg)
{
	int r = consider(pid, arg);

	return r < 0 ? r : 0;
}

static int watch_children(struct session *s)
{
	int err = 0;

	if (s->spawned && !s->spawn.exited)
		err = descendants__scan(s->children, s->spawn.pid);
	for (size_t i = 0; !err && i < s->ntargets; i++)
		err = descendants__scan(s->children, s->targets[i]->interp.pid);
	return err ? err : descendants__step(s->children);
}

static int setup(struct session *s)
{
	s->strs = strtab__new();
	s->agg = aggregate__new();
	s->threads = thread_table__new();
	s->stack = malloc(sizeof(*s->stack));
	s->frames = calloc(DECODE_MAX_DEPTH + 3, sizeof(*s->frames));
	s->codes = (struct code_budget){ .per_cache = CODE_CACHE_BYTES_DEFAULT,
					 .total = CODE_CACHE_TOTAL_DEFAULT };
	s->fcaches = (struct frame_cache_budget){ .per_cache = FRAME_CACHE_BYTES_DEFAULT,
						  .total = FRAME_CACHE_TOTAL_DEFAULT };
	s->shared = (struct target_shared){
		.strs = s->strs,
		.codes = &s->codes,
		.frames = &s->fcaches,
		.scratch = malloc(sizeof(*s->shared.scratch)),
	};
	if (!s->strs || !s->agg || !s->threads || !s->stack || !s->frames || !s->shared.scratch)
		return -ENOMEM;
	/* Without --subprocesses it watches only a target that exec'd. */
	s->children = s->opts.system_wide ? descendants__new(is_target, consider, s, 0)
					  : descendants__new(is_target, adopt, s, s->opts.subprocesses);
	if (!s->children)
		return -ENOMEM;
	if (strtab__intern(s->strs, "[incomplete]", 12) != 0 ||
	    strtab__intern(s->strs, "[no Python frame]", 17) != 1)
		return -ENOMEM;
	s->incomplete_name = 0;
	s->no_python_name = 1;
	return 0;
}

/*
 * -a: the exec tracepoint reports every new image from the moment the program is
 * attached, so processes are scanned only after that: none can fall between the two.
 */
static int start_system_wide(struct session *s)
{
	char buf[192], host[64];
	const char *why;
	int err;

	why = bpf_unavailable(buf, sizeof(buf));
	if (why) {
		pr_warn("-a needs BPF, but %s\n", why);
		return strncmp(why, "missing", 7) ? EXIT_KERNEL : EXIT_PRIVILEGES;
	}
	err = new_sampler(s);
	if (err) {
		pr_warn("-a needs BPF, but %s\n", sampler_failure(err));
		return err == -ENOMEM ? EXIT_RUNTIME : err == -EPERM ? EXIT_PRIVILEGES : EXIT_KERNEL;
	}
	err = proc__pids(scan_one, s);
	if (err) {
		pr_warn("scanning /proc for Python processes: %s\n", strerror(-err));
		return EXIT_RUNTIME;
	}
	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "this host");
	host[sizeof(host) - 1] = '\0';
	snprintf(s->name, sizeof(s->name), "all processes on %s", host);
	pr_info("profiling %zu Python processes, and those that start, at %u Hz\n",
		s->ntargets, s->opts.rate_hz);
	return 0;
}

/*
 * Test-only: PBP_TEST_DECODE_DELAY_MS=N makes the loop sleep N ms before each read of
 * the ring buffer, so records are decoded that much after BPF took them, as when the
 * consumer lags on a loaded host. Lets a test exercise decisions taken on old records
 * (docs/frame-cache.md); not meant for use otherwise, so not in --help.
 */
static uint32_t test_decode_delay_ms(void)
{
	const char *v = getenv("PBP_TEST_DECODE_DELAY_MS");
	unsigned long ms = v ? strtoul(v, NULL, 10) : 0;

	return ms > 10000 ? 10000 : (uint32_t)ms;
}

static void test_delay(const struct session *s)
{
	struct timespec ts = {
		.tv_sec = s->decode_delay_ms / 1000,
		.tv_nsec = (long)(s->decode_delay_ms % 1000) * 1000000,
	};

	if (s->decode_delay_ms)
		nanosleep(&ts, NULL);
}

int session__start(const struct session_opts *o, struct session **out)
{
	struct session *s = calloc(1, sizeof(*s));
	struct target *first = calloc(1, sizeof(*first));
	int code = EXIT_RUNTIME, err;
	char buf[192];

	*out = NULL;
	if (!s || !first) {
		pr_warn("out of memory\n");
		goto fail;
	}
	s->opts = *o;
	if (o->system_wide) {
		code = EXIT_RUNTIME;
		if (setup(s)) {
			pr_warn("out of memory\n");
			goto fail;
		}
		code = start_system_wide(s);
		if (code)
			goto fail;
		goto started;
	}
	if (o->pid && proc__alive(o->pid)) {
		pr_warn("no such process: %d\n", (int)o->pid);
		code = EXIT_NO_PROCESS;
		goto fail;
	}
	/* A command with a shared libpython runs before its interpreter can be found (the
	 * loader maps it): load BPF first, so that the seconds a verifier may take on a
	 * busy host are not cut from the start of the profile. A failure here is reported
	 * when the sampler is chosen. */
	if (o->cmd && !o->no_bpf && !bpf_unavailable(buf, sizeof(buf)))
		new_sampler(s);
	code = find_first(s, first);
	if (code)
		goto fail;
	err = setup(s);
	if (err) {
		pr_warn("setting up the decoder: %s\n", strerror(-err));
		code = EXIT_RUNTIME;
		goto fail;
	}
	code = choose_sampler(s, first);
	if (code)
		goto fail;
	first = NULL;	/* the session's now */
	/* The run is named after the process asked for, even once it has gone. */
	interp__version_str(s->targets[0]->interp.version_hex, s->totals.python_version,
			    sizeof(s->totals.python_version));
	s->totals.pid = s->targets[0]->interp.pid;
	snprintf(s->name, sizeof(s->name), "pid %d (%s)", (int)s->targets[0]->interp.pid,
		 s->targets[0]->cmd);
	pr_info("profiling pid %d (%s) at %u Hz%s\n", (int)s->targets[0]->interp.pid,
		s->targets[0]->interp.path, o->rate_hz, s->live_mode ? " from user space" : "");
	if (s->spawned)
		spawn__release(&s->spawn);
started:
	target__free(first);	/* NULL once the session holds it; unused by -a */
	s->decode_delay_ms = test_decode_delay_ms();
	s->start_ns = s->expired_ns = s->swept_ns = s->profile_ns = clock__mono_ns();
	s->start_unix_ns = clock__real_ns();
	*out = s;
	return 0;
fail:
	target__free(first);
	if (s && s->spawned && !s->spawn.exited)
		spawn__stop(&s->spawn, SIGKILL, 0);
	session__free(s);
	return code;
}

/* ---- the loop ------------------------------------------------------------------ */

static int target_gone(struct session *s, struct target *t)
{
	if (s->spawned && t->interp.pid == s->spawn.pid && spawn__reap(&s->spawn))
		return 1;
	return target__same(t) == -ESRCH;
}

/*
 * Target @i exec'd another program: its interpreter (and every address we know in it)
 * is gone, though the process is not. What it sampled stays; the new image is watched
 * like a new process and adopted if it is a Python, else the run ends when the watch
 * gives up on it (see session__poll).
 */
static int follow_exec(struct session *s, size_t i)
{
	pid_t pid = s->targets[i]->interp.pid;
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, s->exec_prog, sizeof(s->exec_prog) - 1);
	s->exec_prog[n > 0 ? n : 0] = '\0';
	if (n <= 0)
		snprintf(s->exec_prog, sizeof(s->exec_prog), "another program");
	pr_info("pid %d exec'd %s\n", (int)pid, s->exec_prog);
	target_detach(s, i);
	s->exec_pid = pid;
	return descendants__watch(s->children, pid);
}

static int poll_live(struct session *s, int timeout_ms)
{
	struct timespec ts;
	int err = 0, r;

	if (s->ntargets == 1)
		return live_sampler__poll(s->targets[0]->live_sampler, timeout_ms);
	/* Several processes: take each one's due ticks, then sleep about half a tick. */
	for (size_t i = 0; i < s->ntargets; i++) {
		r = live_sampler__poll(s->targets[i]->live_sampler, 0);
		if (r < 0 && r != -ESRCH && !err)
			err = r;
	}
	if (err)
		return err;
	r = 500 / (int)s->opts.rate_hz;
	r = r < 1 ? 1 : r > timeout_ms ? timeout_ms : r;
	ts.tv_sec = r / 1000;
	ts.tv_nsec = (long)(r % 1000) * 1000000;
	return nanosleep(&ts, NULL) ? -errno : 0;
}

/* System-wide: acts on the process events the poll took in, and sweeps for exits
 * now and then. */
static int follow_host(struct session *s)
{
	uint64_t now;
	int err = 0;

	/* Detaching drains the ring buffer, which may add events: index, don't point. */
	for (size_t i = 0; !err && i < s->nevents; i++) {
		struct pbp_event ev = s->events[i];
		size_t at = target_slot(s, ev.pid);
		int known = at < s->ntargets && (uint32_t)s->targets[at]->interp.pid == ev.pid;

		if (ev.type == PBP_EV_EXIT) {
			if (known && target_gone(s, s->targets[at]))
				target_detach(s, at);
			continue;
		}
		/* A target's exec takes its interpreter away; the new image may have one.
		 * But the watch may have found that image's interpreter already, before
		 * the event was read: an exec older than the look changes nothing. */
		if (known && ev.type == PBP_EV_EXEC) {
			if (ev.ts_ns < s->targets[at]->found_ns)
				continue;
			target_detach(s, at);
		}
		err = descendants__watch(s->children, ev.pid);
	}
	s->nevents = 0;
	if (s->events_cap > EVENTS_KEEP) {
		free(s->events);
		s->events = NULL;
		s->events_cap = 0;
	}
	if (!err)
		err = descendants__step(s->children);
	now = clock__mono_ns();
	if (err || now - s->swept_ns < SWEEP_NS)
		return err;
	s->swept_ns = now;
	for (size_t i = s->ntargets; i-- > 0;) {
		if (target_gone(s, s->targets[i]))
			target_detach(s, i);
		else
			proc__cpu_ns(s->targets[i]->interp.pid, &s->targets[i]->cpu);
	}
	return 0;
}

int session__poll(struct session *s, int timeout_ms)
{
	int err = 0;

	test_delay(s);
	/* With no target left but one being watched, the poll is the loop's sleep. */
	if (s->ntargets || s->opts.system_wide || descendants__pending(s->children))
		err = s->live_mode ? poll_live(s, timeout_ms) : sampler__poll(s->sampler, timeout_ms);
	if (s->fatal) {
		pr_warn("aggregating samples: %s\n", strerror(-s->fatal));
		return s->fatal;
	}
	if (err < 0 && err != -EINTR && err != -ESRCH) {
		pr_warn("reading samples: %s\n", strerror(-err));
		return err;
	}
	if (s->opts.system_wide) {
		err = follow_host(s);
		if (err) {
			pr_warn("following processes: %s\n", strerror(-err));
			return err;
		}
	}
	for (size_t i = 0; !s->opts.system_wide && i < s->nevents; i++) {
		/* Detaching drains the ring buffer, which may add events: copy, don't point. */
		struct pbp_event ev = s->events[i];
		size_t at = target_slot(s, ev.pid);

		/* A target's exec: its addresses are gone (an exec older than the target's
		 * adoption is the one that made it). */
		if (ev.type == PBP_EV_EXEC && at < s->ntargets &&
		    (uint32_t)s->targets[at]->interp.pid == ev.pid &&
		    ev.ts_ns >= s->targets[at]->found_ns) {
			err = follow_exec(s, at);
			if (err)
				return err;
		}
	}
	if (!s->opts.system_wide)
		s->nevents = 0;
	for (size_t i = 0; !s->opts.system_wide && i < s->ntargets;) {
		struct target *t = s->targets[i];

		if (!target_gone(s, t)) {
			if (target__same(t) == -ENOEXEC) {
				err = follow_exec(s, i);
				if (err)
					return err;
				continue;
			}
			proc__cpu_ns(t->interp.pid, &t->cpu);
			i++;
			continue;
		}
		/* The first target's decoder stays for the end: its last records are
		 * drained at the stop, and its stats name the run. */
		if (!s->opts.subprocesses)
			return 1;
		target_detach(s, i);
	}
	if (s->opts.subprocesses) {
		err = watch_children(s);
		if (err) {
			pr_warn("following child processes: %s\n", strerror(-err));
			return err;
		}
		if (!s->ntargets && !descendants__pending(s->children))
			return 1;
	} else if (s->exec_pid) {
		err = descendants__step(s->children);
		if (err)
			return err;
		if (!s->ntargets && !descendants__pending(s->children)) {
			if (proc__alive(s->exec_pid) != 0)
				pr_warn("pid %d exec'd %s and exited before any Python showed in "
					"it\n", (int)s->exec_pid, s->exec_prog);
			else
				pr_warn("pid %d exec'd %s, which is not a Python pybpfprof "
					"reads: stopping\n", (int)s->exec_pid, s->exec_prog);
			return 1;
		}
	}
	/* Threads come and go in long runs: forget those gone quiet. */
	if (clock__mono_ns() - s->expired_ns > FCACHE_EXPIRE_S * 1e9) {
		s->expired_ns = clock__mono_ns();
		for (size_t i = 0; i < s->ntargets; i++)
			if (s->targets[i]->fcache)
				frame_cache__expire(s->targets[i]->fcache,
						    s->expired_ns - (uint64_t)(FCACHE_EXPIRE_S * 1e9));
	}
	return 0;
}

void session__stop(struct session *s)
{
	if (s->stopped)
		return;
	s->stopped = 1;
	s->elapsed_s = (clock__mono_ns() - s->start_ns) / 1e9;
	if (s->sampler) {
		sampler__stop(s->sampler);
		sampler__drain(s->sampler);
	}
	for (size_t i = 0; i < s->ntargets; i++)
		if (!target_gone(s, s->targets[i]))
			target__clear_anchors(s->targets[i]);
	if (s->spawned && !s->spawn.exited && stop_signal)
		spawn__stop(&s->spawn, stop_signal, 3000);
}

/*
 * Between two profiles only the targets hold string ids (their names, code caches and
 * frame caches). Once the table has grown by half since the last rebuild it is rebuilt
 * from theirs, so the strings of processes gone and of code evicted go too; growth by
 * a factor keeps the cost, a pass over what is kept, in proportion to what was added.
 */
static void compact_strings(struct session *s)
{
	struct strtab_remap map;
	size_t before = strtab__bytes(s->strs);

	if (before <= s->strs_kept + s->strs_kept / 2 + STRS_SLACK_BYTES)
		return;
	if (strtab_remap__init(&map, s->strs)) {
		pr_debug("no memory to rebuild the string table: it stays as it is\n");
		return;
	}
	/* The fixed names first: they keep ids 0 and 1. */
	strtab_remap__id(&map, &s->incomplete_name);
	strtab_remap__id(&map, &s->no_python_name);
	for (size_t i = 0; i < s->ntargets; i++)
		target__remap_strings(s->targets[i], &map);
	strtab_remap__finish(&map);
	s->strs_kept = strtab__bytes(s->strs);
	s->strs_rebuilds++;
	pr_debug("string table rebuilt: %zu bytes, was %zu\n", s->strs_kept, before);
}

int session__reset_profile(struct session *s)
{
	struct aggregate *agg = aggregate__new();
	struct thread_table *threads = thread_table__new();

	if (!agg || !threads) {
		aggregate__free(agg);
		thread_table__free(threads);
		return -ENOMEM;
	}
	aggregate__free(s->agg);
	thread_table__free(s->threads);
	s->agg = agg;
	s->threads = threads;
	s->ntimeline = 0;
	s->timeline_full = 0;
	s->profile_ns = clock__mono_ns();
	s->start_unix_ns = clock__real_ns();
	compact_strings(s);
	return 0;
}

void session__map_entries(const struct session *s, struct sampler_maps *m)
{
	*m = (struct sampler_maps){ 0 };
	if (s->sampler)
		sampler__map_entries(s->sampler, m);
}

pid_t session__pid(const struct session *s)
{
	return s->totals.pid;
}

double session__elapsed(const struct session *s)
{
	return s->stopped ? s->elapsed_s : (clock__mono_ns() - s->start_ns) / 1e9;
}

void session__status(const struct session *s, struct session_status *st)
{
	uint64_t drops = s->lost;
	size_t nthreads;

	if (s->sampler) {
		uint64_t c[PBP_C_MAX];

		sampler__counters(s->sampler, c);
		drops += c[PBP_C_RINGBUF_DROPS];
	}
	*st = (struct session_status){
		.elapsed_s = session__elapsed(s),
		.samples = s->aggregated,
		.incomplete = s->incomplete,
		.drops = drops,
		.processes = (uint32_t)s->ntargets,	/* at most PBP_TARGETS_MAX */
		.processes_seen = s->processes_seen,
		.processes_skipped = s->processes_skipped,
	};
	thread_table__all(s->threads, &nthreads);
	st->threads = (uint32_t)nthreads;
}

void session__profile(const struct session *s, struct profile *p)
{
	*p = (struct profile){
		.agg = s->agg,
		.strs = s->strs,
		.timeline = s->timeline,
		.ntimeline = s->ntimeline,
		.target = s->name,
		.start_unix_ns = s->start_unix_ns,
		.duration_ns = (s->stopped ? s->start_ns + (uint64_t)(s->elapsed_s * 1e9)
					   : clock__mono_ns()) - s->profile_ns,
		.rate_hz = s->opts.rate_hz,
		.period_ns = 1000000000ull / s->opts.rate_hz,
	};
	p->threads = thread_table__all(s->threads, &p->nthreads);
}

void session__stats(const struct session *s, struct run_stats *st)
{
	uint64_t cpu_ns = s->gone_cpu_ns;

	*st = s->totals;
	for (size_t i = 0; i < s->ntargets; i++) {
		target__add_stats(s->targets[i], st);
		cpu_ns += s->targets[i]->cpu > s->targets[i]->cpu0 ?
			  s->targets[i]->cpu - s->targets[i]->cpu0 : 0;
	}
	st->rate_hz = s->opts.rate_hz;
	st->duration_s = s->elapsed_s;
	st->samples_delivered = s->delivered;
	st->samples_filtered = s->filtered;
	st->samples_decoded = st->decode.complete;
	st->samples_incomplete = st->decode.incomplete;
	st->command_status = s->spawned && s->spawn.exited ? s->spawn.status : -1;
	st->processes = s->processes_seen;
	st->processes_skipped = s->processes_skipped;
	if (s->children)
		descendants__counts(s->children, &st->process_looks, &st->process_looks_deferred);
	st->code_cache_bytes = s->codes.bytes;
	st->code_cache_entries = s->codes.entries;
	st->frame_cache_bytes = s->fcaches.bytes;
	st->strings = s->strs ? strtab__count(s->strs) : 0;
	st->string_bytes = s->strs ? strtab__bytes(s->strs) : 0;
	st->string_rebuilds = s->strs_rebuilds;
	if (s->live_mode) {
		st->mode = "live";
		/* One tick samples every thread; the rate is per tick, in wall-clock time. */
		st->samples_expected = (uint64_t)(s->elapsed_s * s->opts.rate_hz + 0.5);
		return;
	}
	st->mode = "bpf";
	st->samples_expected = (uint64_t)(cpu_ns / 1e9 * s->opts.rate_hz + 0.5);
	st->bpf_bytes_copied = s->bytes_copied;
	sampler__counters(s->sampler, st->bpf);
	sampler__prog_stats(s->sampler, &st->bpf_run_ns, &st->bpf_run_cnt);
}

int session__wait_command(struct session *s)
{
	if (!s->spawned)
		return -1;
	while (!s->spawn.exited) {
		/* A signal while we wait is meant for the command: pass it on. */
		if (stop_signal) {
			spawn__stop(&s->spawn, stop_signal, 3000);
			break;
		}
		if (waitpid(s->spawn.pid, &s->spawn.status, 0) == s->spawn.pid ||
		    errno != EINTR)
			s->spawn.exited = 1;
	}
	return s->spawn.status;
}

int session__command_running(const struct session *s)
{
	return s->spawned && !s->spawn.exited;
}

void session__free(struct session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ntargets; i++)
		target__free(s->targets[i]);
	free(s->targets);
	free(s->events);
	descendants__free(s->children);
	sampler__free(s->sampler);
	aggregate__free(s->agg);
	thread_table__free(s->threads);
	free(s->timeline);
	free(s->shared.scratch);
	strtab__free(s->strs);
	free(s->stack);
	free(s->frames);
	free(s);
}
