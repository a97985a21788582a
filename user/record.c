// SPDX-License-Identifier: GPL-2.0-only
/*
 * The record session: check privileges, find the target's interpreter, start the BPF
 * sampler, decode and aggregate records as they arrive, and on every way out (time up,
 * target gone, SIGINT/SIGTERM) drain what was sampled and write it.
 */
#include <errno.h>
#include <signal.h>
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
#include "exitcodes.h"
#include "frame_cache.h"
#include "interp.h"
#include "log.h"
#include "privs.h"
#include "proc.h"
#include "pythreads.h"
#include "record.h"
#include "sampler.h"
#include "sampler_live.h"
#include "spawn.h"
#include "stats.h"
#include "strtab.h"
#include "target_error.h"
#include "thread_table.h"

#define FCACHE_EXPIRE_S 10.0

/* The one piece of process-wide state: set by the signal handler, read by the loop. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

struct record_ctx {
	const struct record_opts *opts;
	struct py_interp interp;
	struct mem_live live;
	struct strtab *strs;
	struct decoder *dec;
	struct frame_cache *fcache;
	int anchors;		/* this run uses (and resets) last_profiled_frame */
	struct aggregate *agg;
	struct thread_table *threads;
	struct profile_sample *timeline;	/* when the writer wants one */
	size_t ntimeline, timeline_cap;
	uint64_t start_ns;			/* CLOCK_MONOTONIC of the start */
	int64_t start_unix_ns;
	struct sampler *sampler;
	struct live_sampler *live_sampler;	/* instead of sampler: --no-bpf */
	struct spawn spawn;
	int spawned;
	struct stack *stack;
	struct agg_frame *frames;
	uint32_t incomplete_name;
	uint32_t no_python_name;
	uint64_t delivered, bytes_copied, filtered;
	int fatal;		/* a negative errno that ends the run */
	FILE *out;
	char out_path[4096];
	char target[160];	/* "pid 123 (python3 app.py)" */
	struct run_stats stats;
};

static double now_s(void)
{
	return clock__mono_ns() / 1e9;
}

static int intern_fmt(struct record_ctx *c, uint32_t *id, const char *fmt, unsigned int v)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), fmt, v);
	int64_t r = strtab__intern(c->strs, buf, n);

	if (r < 0)
		return (int)r;
	*id = (uint32_t)r;
	return 0;
}

static int32_t frame_line(const struct record_opts *o, const struct decoded_frame *f)
{
	if (o->nolineno)
		return -1;
	return o->function_lines ? f->first_line : f->line;
}

static int add_to_timeline(struct record_ctx *c, uint64_t ts_ns, uint32_t index)
{
	if (c->ntimeline == c->timeline_cap) {
		size_t cap = c->timeline_cap ? c->timeline_cap * 2 : 4096;
		struct profile_sample *t = realloc(c->timeline, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		c->timeline = t;
		c->timeline_cap = cap;
	}
	/* A record decoded late may predate the start by a tick: clamp, keep order. */
	c->timeline[c->ntimeline++] = (struct profile_sample){
		.t_ns = ts_ns > c->start_ns ? ts_ns - c->start_ns : 0,
		.stack = index,
	};
	return 0;
}

/* One decoded stack in, one aggregated stack out, unless --gil/--idle leave it out. */
static int add_stack(struct record_ctx *c, const struct stack *st)
{
	uint32_t n = 0, index;
	int err;

	if ((c->opts->gil && !(st->flags & PBP_TS_GIL)) ||
	    (!c->opts->idle && !(st->flags & PBP_TS_ON_CPU))) {
		c->filtered++;
		return 0;
	}
	if (c->opts->threads) {
		c->frames[n].kind = AGG_THREAD;
		err = intern_fmt(c, &c->frames[n].name, "thread %u", st->tid);
		if (err)
			goto fail;
		n++;
	}
	if (st->gap != GAP_NONE)
		c->frames[n++] = (struct agg_frame){ .kind = AGG_MARKER,
						     .name = c->incomplete_name };
	else if (!st->depth)	/* only entry frames: the interpreter runs no Python code */
		c->frames[n++] = (struct agg_frame){ .kind = AGG_MARKER,
						     .name = c->no_python_name };
	for (uint32_t i = st->depth; i-- > 0;)
		c->frames[n++] = (struct agg_frame){
			.kind = AGG_PYTHON,
			.name = st->frames[i].qualname,
			.file = st->frames[i].filename,
			.line = frame_line(c->opts, &st->frames[i]),
		};
	err = aggregate__add(c->agg, st->pid, st->tid, c->frames, n, 1, &index);
	if (!err)
		err = thread_table__see(c->threads, c->strs, st->pid, st->tid);
	if (!err && c->opts->writer->timeline)
		err = add_to_timeline(c, st->ts_ns, index);
	if (!err)
		return 0;
fail:
	c->fatal = err;
	return err;
}

/* Ring-buffer callback. */
static int on_sample(void *arg, const void *rec, size_t len)
{
	struct record_ctx *c = arg;

	c->delivered++;
	c->bytes_copied += len > sizeof(struct pbp_sample) ? len - sizeof(struct pbp_sample) : 0;
	if (decoder__decode(c->dec, rec, len, c->stack))
		return 0;
	return add_stack(c, c->stack);
}

/* Live sampler callback. */
static int on_live_stack(void *arg, struct stack *st)
{
	struct record_ctx *c = arg;

	c->delivered++;
	return add_stack(c, st);
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
		return "this kernel lacks BPF perf-event programs or ring buffers (Linux 5.8+)";
	default:
		return "starting the BPF sampler failed";
	}
}

static int open_output(struct record_ctx *c, pid_t pid)
{
	const char *path = c->opts->output;
	char comm[32] = "python";
	struct tm tm;
	time_t t = time(NULL);

	if (path && !strcmp(path, "-")) {
		c->out = stdout;
		snprintf(c->out_path, sizeof(c->out_path), "standard output");
		return 0;
	}
	if (!path) {
		proc__comm(pid, comm, sizeof(comm));
		for (char *p = comm; *p; p++)
			if (*p == '/' || *p == ' ')
				*p = '_';
		localtime_r(&t, &tm);
		snprintf(c->out_path, sizeof(c->out_path),
			 "pybpfprof-%s-%d-%04d%02d%02d-%02d%02d%02d%s", comm, (int)pid,
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, c->opts->writer->suffix);
	} else {
		snprintf(c->out_path, sizeof(c->out_path), "%s", path);
	}
	c->out = fopen(c->out_path, "w");
	if (!c->out) {
		int err = -errno;

		pr_warn("cannot write %s: %s\n", c->out_path, strerror(-err));
		return err;
	}
	return 0;
}

/* Frame-cache hooks: the BPF map, and the anchor in the target's thread state. */
static int publish_anchor(void *arg, uint32_t tid, const struct pbp_fcache *fc)
{
	struct record_ctx *c = arg;

	return c->sampler ? sampler__set_anchor(c->sampler, tid, fc) : 0;
}

static int write_anchor(void *arg, uint64_t tstate, uint64_t frame)
{
	struct record_ctx *c = arg;

	return mem_live__write(&c->live, tstate + c->interp.off.ts_last_profiled_frame, &frame,
			       sizeof(frame));
}

static int clear_anchor(const struct pythread *t, void *arg)
{
	write_anchor(arg, t->tstate, 0);
	return 0;
}

/*
 * An anchor left by an earlier profiler (or by us, killed) would be taken for one we
 * wrote; clear every thread's at the start, and leave none behind at the end.
 */
static void clear_anchors(struct record_ctx *c)
{
	if (c->anchors)
		pythreads__walk(&c->live.base, &c->interp, clear_anchor, c);
}

static int setup(struct record_ctx *c)
{
	struct decoder_cfg dc = { 0 };
	struct frame_cache_hooks hooks = {
		.publish = publish_anchor,
		.write_anchor = write_anchor,
		.ctx = c,
	};
	int err;

	c->strs = strtab__new();
	c->agg = aggregate__new();
	c->threads = thread_table__new();
	c->stack = malloc(sizeof(*c->stack));
	c->frames = calloc(DECODE_MAX_DEPTH + 2, sizeof(*c->frames));
	if (!c->strs || !c->agg || !c->threads || !c->stack || !c->frames)
		return -ENOMEM;
	if (strtab__intern(c->strs, "[incomplete]", 12) != 0 ||
	    strtab__intern(c->strs, "[no Python frame]", 17) != 1)
		return -ENOMEM;
	c->incomplete_name = 0;
	c->no_python_name = 1;
	if (!c->opts->no_frame_cache) {
		c->anchors = c->interp.off.ts_last_profiled_frame != PBP_OFF_NONE &&
			     c->interp.off.ts_last_profiled_frame_seq != PBP_OFF_NONE;
		err = frame_cache__new(&c->interp.off, c->anchors, &hooks, &c->fcache);
		if (err)
			return err;
		clear_anchors(c);
	}
	dc.interp = &c->interp;
	dc.live = &c->live.base;
	dc.strs = c->strs;
	dc.fcache = c->fcache;
	return decoder__new(&dc, &c->dec);
}

static void teardown(struct record_ctx *c)
{
	sampler__free(c->sampler);
	live_sampler__free(c->live_sampler);
	decoder__free(c->dec);
	frame_cache__free(c->fcache);
	aggregate__free(c->agg);
	thread_table__free(c->threads);
	free(c->timeline);
	strtab__free(c->strs);
	free(c->stack);
	free(c->frames);
	if (c->out && c->out != stdout)
		fclose(c->out);
}

/* Finds the interpreter: of the given PID, or of the command once it execs one. */
static int find_target(struct record_ctx *c)
{
	const struct record_opts *o = c->opts;
	int err;

	if (!o->cmd) {
		mem_live__init(&c->live, o->pid);
		err = interp__find(o->pid, &c->live.base, &c->interp);
		return err ? target_error(o->pid, err, &c->interp) : 0;
	}
	err = spawn__start(o->cmd, &c->spawn);
	if (err && c->spawn.trace_failed) {
		pr_warn("cannot trace %s to catch its first Python code: %s (is pybpfprof "
			"itself being traced, or ptrace restricted?)\n", o->cmd[0], strerror(-err));
		return EXIT_RUNTIME;
	}
	if (err) {
		pr_warn("cannot run %s: %s\n", o->cmd[0], strerror(-err));
		return err == -ENOENT || err == -ENOTDIR ? EXIT_CMD_NOTFOUND : EXIT_CMD_NOEXEC;
	}
	c->spawned = 1;
	mem_live__init(&c->live, c->spawn.pid);
	err = spawn__wait_python(&c->spawn, &c->live.base, &c->interp);
	if (err == -ECHILD) {
		pr_warn("%s exited before running any CPython code (status %d)\n", o->cmd[0],
			WIFEXITED(c->spawn.status) ? WEXITSTATUS(c->spawn.status) : -1);
		return EXIT_NOT_PYTHON;
	}
	if (err) {
		int code = target_error(c->spawn.pid, err, &c->interp);

		spawn__stop(&c->spawn, SIGKILL, 0);
		return code;
	}
	return 0;
}

static void name_target(struct record_ctx *c)
{
	char cmd[128];

	if (proc__cmdline(c->interp.pid, cmd, sizeof(cmd)))
		snprintf(cmd, sizeof(cmd), "%.*s", (int)sizeof(cmd) - 1, c->interp.path);
	snprintf(c->target, sizeof(c->target), "pid %d (%s)", (int)c->interp.pid, cmd);
}

static int target_gone(struct record_ctx *c)
{
	if (c->spawned)
		return spawn__reap(&c->spawn);
	return proc__alive(c->interp.pid) != 0;
}

static void finish_stats(struct record_ctx *c, double elapsed, uint64_t cpu_ns)
{
	struct run_stats *s = &c->stats;
	const struct decode_stats *d = decoder__stats(c->dec);

	interp__version_str(c->interp.version_hex, s->python_version,
			    sizeof(s->python_version));
	s->pid = c->interp.pid;
	s->rate_hz = c->opts->rate_hz;
	s->duration_s = elapsed;
	s->samples_delivered = c->delivered;
	s->samples_filtered = c->filtered;
	s->samples_decoded = d->complete;
	s->samples_incomplete = d->incomplete;
	s->decode = *d;
	if (c->fcache)
		s->fcache = *frame_cache__stats(c->fcache);
	s->codes = *decoder__code_stats(c->dec);
	s->mem = *decoder__mem_stats(c->dec);
	s->command_status = c->spawned && c->spawn.exited ? c->spawn.status : -1;
	if (c->live_sampler) {
		const struct live_sampler_stats *l = live_sampler__stats(c->live_sampler);

		s->mode = "live";
		s->live = *l;
		/* One tick samples every thread; the rate is per tick, in wall-clock time. */
		s->samples_expected = (uint64_t)(elapsed * c->opts->rate_hz + 0.5);
		return;
	}
	s->mode = "bpf";
	s->samples_expected = (uint64_t)(cpu_ns / 1e9 * c->opts->rate_hz + 0.5);
	s->bpf_bytes_copied = c->bytes_copied;
	sampler__counters(c->sampler, s->bpf);
	sampler__prog_stats(c->sampler, &s->bpf_run_ns, &s->bpf_run_cnt);
}

static int write_results(struct record_ctx *c)
{
	struct profile p = {
		.agg = c->agg,
		.strs = c->strs,
		.timeline = c->timeline,
		.ntimeline = c->ntimeline,
		.target = c->target,
		.start_unix_ns = c->start_unix_ns,
		.duration_ns = (uint64_t)(c->stats.duration_s * 1e9),
		.rate_hz = c->opts->rate_hz,
		.period_ns = 1000000000ull / c->opts->rate_hz,
	};
	int err;

	p.threads = thread_table__all(c->threads, &p.nthreads);
	err = c->opts->writer->write(c->out, &p);

	if (!err && fflush(c->out))
		err = -errno;
	if (err) {
		pr_warn("writing %s: %s\n", c->out_path, strerror(-err));
		return EXIT_RUNTIME;
	}
	if (c->opts->stats_file) {
		err = stats__write_json(c->opts->stats_file, &c->stats);
		if (err) {
			pr_warn("writing %s: %s\n", c->opts->stats_file, strerror(-err));
			return EXIT_RUNTIME;
		}
	}
	return EXIT_OK;
}

static void report_end(struct record_ctx *c)
{
	const struct run_stats *s = &c->stats;

	stats__summary(stderr, s);
	if (!aggregate__total(c->agg) && c->live_sampler)
		pr_warn("no samples: no Python thread of the target was %s while profiled "
			"(%llu left out%s)\n", c->opts->idle ? "seen" : "on a CPU",
			(unsigned long long)(c->filtered + s->live.threads_idle_skipped),
			c->opts->idle ? "" : "; --idle keeps idle threads");
	else if (!aggregate__total(c->agg))
		pr_warn("no samples: the target ran no Python code on a CPU while profiled "
			"(%llu ticks found no Python thread, %llu no Python frame%s)\n",
			(unsigned long long)s->bpf[PBP_C_NO_TSTATE],
			(unsigned long long)s->bpf[PBP_C_NO_FRAME],
			c->filtered ? ", others left out by --gil" : "");
	if (c->out != stdout)
		pr_warn("wrote %s\n", c->out_path);
	if (s->command_status >= 0) {
		if (WIFEXITED(s->command_status))
			pr_warn("command exited with status %d\n", WEXITSTATUS(s->command_status));
		else
			pr_warn("command was killed by signal %d\n", WTERMSIG(s->command_status));
	}
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	/* No SA_RESTART: the poll must return so the loop sees the flag. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
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
	return NULL;
}

static int start_bpf(struct record_ctx *c, uint64_t gil)
{
	struct sampler_cfg sc = {
		.rate_hz = c->opts->rate_hz,
		.stack_cap = c->opts->stack_cap,
		.ringbuf_bytes = c->opts->ringbuf_mb << 20,
		.frame_cache = !c->opts->no_frame_cache,
		.on_sample = on_sample,
		.ctx = c,
	};
	int err = sampler__new(&sc, &c->sampler);

	if (!err)
		err = sampler__add_target(c->sampler, &c->interp, gil);
	if (err) {
		sampler__free(c->sampler);
		c->sampler = NULL;
	}
	return err;
}

static int start_live(struct record_ctx *c)
{
	struct live_sampler_cfg lc = {
		.interp = &c->interp,
		.live = &c->live,
		.dec = c->dec,
		.fcache = c->fcache,
		.rate_hz = c->opts->rate_hz,
		/* No verifier bounds user space: the whole stack, up to a sane size. */
		.stack_cap = LIVE_STACK_BYTES,
		.want_idle = c->opts->idle,
		.on_stack = on_live_stack,
		.ctx = c,
	};

	return live_sampler__new(&lc, &c->live_sampler);
}

/* BPF when it can run, else live memory with a notice; --no-bpf asks for the latter. */
static int start_sampling(struct record_ctx *c)
{
	const struct record_opts *o = c->opts;
	const char *why = NULL;
	char buf[192];
	uint64_t gil = 0;
	int err;

	if (pythreads__gil(&c->live.base, &c->interp, &gil) && o->gil) {
		interp__version_str(c->interp.version_hex, buf, sizeof(buf));
		pr_warn("--gil: pybpfprof does not know where CPython %s keeps its GIL state\n",
			buf);
		return EXIT_UNSUPPORTED;
	}
	if (!o->no_bpf) {
		why = bpf_unavailable(buf, sizeof(buf));
		if (!why) {
			err = start_bpf(c, gil);
			if (!err) {
				if (o->idle)
					pr_warn("--idle has no effect with BPF sampling, which sees "
						"only threads on a CPU; add --no-bpf for a wall-clock "
						"view\n");
				return 0;
			}
			why = sampler_failure(err);
		}
		pr_warn("BPF is not available (%s): sampling from user space instead, as "
			"with --no-bpf\n", why);
	}
	err = start_live(c);
	if (err) {
		pr_warn("starting the live sampler: %s\n", strerror(-err));
		return EXIT_RUNTIME;
	}
	return 0;
}

static int poll_samples(struct record_ctx *c)
{
	if (c->live_sampler)
		return live_sampler__poll(c->live_sampler, 20);
	return sampler__poll(c->sampler, 20);
}

int record__run(const struct record_opts *o)
{
	struct record_ctx *c = calloc(1, sizeof(*c));
	double start, elapsed, expired;
	uint64_t cpu0 = 0, cpu = 0;
	int code, err;

	if (!c) {
		pr_warn("out of memory\n");
		return EXIT_RUNTIME;
	}
	c->opts = o;
	if (o->pid && proc__alive(o->pid)) {
		pr_warn("no such process: %d\n", (int)o->pid);
		code = EXIT_NO_PROCESS;
		goto out;
	}
	if (o->pid && open_output(c, o->pid)) {
		code = EXIT_RUNTIME;
		goto out;
	}
	install_signals();
	code = find_target(c);
	if (code)
		goto out;
	if (!c->out && open_output(c, c->interp.pid)) {
		code = EXIT_RUNTIME;
		goto out;
	}
	name_target(c);
	err = setup(c);
	if (err) {
		pr_warn("setting up the decoder: %s\n", strerror(-err));
		code = EXIT_RUNTIME;
		goto out;
	}
	code = start_sampling(c);
	if (code)
		goto out;
	pr_info("profiling pid %d (%s) at %u Hz%s\n", (int)c->interp.pid, c->interp.path,
		o->rate_hz, c->live_sampler ? " from user space" : "");
	if (c->spawned)
		spawn__release(&c->spawn);

	start = expired = now_s();
	c->start_ns = clock__mono_ns();
	c->start_unix_ns = clock__real_ns();
	proc__cpu_ns(c->interp.pid, &cpu0);
	cpu = cpu0;
	while (!stop_signal && !c->fatal) {
		err = poll_samples(c);
		if (err < 0 && err != -EINTR && err != -ESRCH && !c->fatal) {
			pr_warn("reading samples: %s\n", strerror(-err));
			break;
		}
		if (o->duration_s > 0 && now_s() - start >= o->duration_s)
			break;
		if (err == -ESRCH || target_gone(c))
			break;
		proc__cpu_ns(c->interp.pid, &cpu);
		/* Threads come and go in long runs: forget those gone quiet. */
		if (c->fcache && now_s() - expired > FCACHE_EXPIRE_S) {
			expired = now_s();
			frame_cache__expire(c->fcache,
					    (uint64_t)((expired - FCACHE_EXPIRE_S) * 1e9));
		}
	}
	elapsed = now_s() - start;
	if (c->sampler) {
		sampler__stop(c->sampler);
		sampler__drain(c->sampler);
	}
	if (!target_gone(c))
		clear_anchors(c);
	if (c->fatal)
		pr_warn("aggregating samples: %s\n", strerror(-c->fatal));
	if (c->spawned && !c->spawn.exited && stop_signal)
		spawn__stop(&c->spawn, stop_signal, 3000);
	finish_stats(c, elapsed, cpu > cpu0 ? cpu - cpu0 : 0);
	code = write_results(c);
	report_end(c);
	if (c->spawned && !c->spawn.exited) {
		/* The profile is safe on disk; now the command runs to its end, as
		 * without the profiler. */
		waitpid(c->spawn.pid, &c->spawn.status, 0);
		c->spawn.exited = 1;
		pr_warn("command exited with status %d\n",
			WIFEXITED(c->spawn.status) ? WEXITSTATUS(c->spawn.status) : -1);
	}
out:
	if (c->spawned && !c->spawn.exited && code)
		spawn__stop(&c->spawn, SIGKILL, 0);
	teardown(c);
	free(c);
	return code;
}
