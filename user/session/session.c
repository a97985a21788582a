// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sampling session's life: find the target's interpreter, start the BPF sampler
 * (or the live one), poll it, stop cleanly on every way out, and count the run. The
 * targets, the processes followed and the sink for stacks have files of their own
 * (session_priv.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profile/aggregate.h"
#include "base/clock.h"
#include "decode/decoder.h"
#include "session/descendants.h"
#include "base/exitcodes.h"
#include "decode/frame_cache.h"
#include "cpython/py_interp.h"
#include "base/log.h"
#include "sample/bpf_features.h"
#include "base/privs.h"
#include "base/proc.h"
#include "cpython/py_threads.h"
#include "sample/sampler.h"
#include "sample/sampler_live.h"
#include "sample/sampler_tasks.h"
#include "session/session.h"
#include "session/session_priv.h"
#include "session/spawn.h"
#include "session/stats.h"
#include "base/strtab.h"
#include "session/target.h"
#include "session/target_error.h"
#include "profile/thread_table.h"

#define FCACHE_EXPIRE_S 10.0
/* The table is rebuilt once it holds this much more than 1.5 times what the last
 * rebuild kept (see compact_strings()). */
#define STRS_SLACK_BYTES (1u << 20)

/* The signal the caller's handler took to stop the run, or 0. */
static int stop_signal(const struct session *s)
{
	return s->opts.stop_signal ? *s->opts.stop_signal : 0;
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

/*
 * --native cannot fall back to live sampling: the C stack is copied by the BPF program
 * at the sample, and reading it from user space would mean stopping the thread. So
 * the run is refused before anything starts rather than run without what was asked.
 */
static int native_needs_bpf(const struct session_opts *o, char *buf, size_t len)
{
	const char *why = o->native && !o->no_bpf ? bpf_unavailable(buf, len) : NULL;

	if (!why)
		return 0;
	pr_warn("--native needs BPF (the C stack is copied by the BPF program), but %s\n", why);
	return strncmp(why, "missing", 7) ? EXIT_KERNEL : EXIT_PRIVILEGES;
}

static int new_sampler(struct session *s)
{
	struct sampler_cfg sc = {
		.rate_hz = s->opts.rate_hz,
		.stack_cap = s->opts.stack_cap,
		.ringbuf_bytes = s->opts.ringbuf_mb << 20,
		/* --async on 3.11-3.13 reads the running task after the sample: a
		 * handler's task often ends within milliseconds. One process's samples
		 * are few enough to be woken for each; -a's are not. */
		.wake_each = s->opts.async_tasks && !s->opts.system_wide,
		.frame_cache = !s->opts.no_frame_cache,
		.every_exec = s->opts.system_wide,
		.on_cpu = s->opts.mode != SESSION_OFF_CPU,
		.clock = s->opts.clock,
		/* One process's ticks need not interrupt every CPU; -a samples them all. */
		.per_target = !s->opts.system_wide,
		.off_cpu = s->opts.mode != SESSION_CPU,
		.min_block_ns = (uint64_t)s->opts.min_block_us * 1000,
		.native_stack = !s->opts.native ? 0 :
				s->opts.native_stack ? s->opts.native_stack : PBP_NATIVE_STACK_DEFAULT,
		.native_fp_stack = s->opts.native_stack ? s->opts.native_stack :
							  PBP_NATIVE_FP_STACK_DEFAULT,
		.threads_max = s->opts.system_wide ? 0 : SAMPLER_THREADS_TARGETED,
		.on_sample = session_sink__on_sample,
		/* Taken in every mode, so the ring buffer never fills with events of a
		 * forking target; outside -a only a target's exec is acted on. */
		.on_event = session_follow__on_event,
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

	if (py_threads__gil(&first->live.base, &first->interp, &gil) && o->gil) {
		py_interp__version_str(first->interp.version_hex, buf, sizeof(buf));
		pr_warn("--gil: pybpfprof does not know where CPython %s keeps its GIL state\n",
			buf);
		return EXIT_UNSUPPORTED;
	}
	first->session = s;
	err = target__prepare(first, &s->shared, !o->no_frame_cache,
			      session_targets__publish_anchor, session_targets__code_known);
	if (err)
		goto fail;
	if (!o->no_bpf) {
		why = bpf_unavailable(buf, sizeof(buf));
		if (!why) {
			err = s->sampler ? 0 : new_sampler(s);
			if (!err)
				err = session_enrol__target(s, first, gil);
			if (!err) {
				if (o->idle)
					pr_warn("--idle has no effect with BPF sampling, which sees "
						"only threads on a CPU; add --no-bpf for a wall-clock "
						"view\n");
				return 0;
			}
			if (err == -ENOMEM)
				goto fail;
			if (err == -ECANCELED)
				return EXIT_KERNEL;
			sampler__free(s->sampler);
			s->sampler = NULL;
			why = sampler_failure(err);
			if (o->native) {
				pr_warn("--native needs BPF (the C stack is copied by the BPF "
					"program), but %s\n", why);
				return err == -EPERM ? EXIT_PRIVILEGES : EXIT_KERNEL;
			}
		}
		pr_warn("BPF is not available (%s): sampling from user space instead, as "
			"with --no-bpf\n", why);
	}
	s->live_mode = 1;
	err = session_enrol__target(s, first, gil);
	if (!err)
		return 0;
fail:
	pr_warn("starting to sample pid %d: %s\n", (int)first->interp.pid, strerror(-err));
	return EXIT_RUNTIME;
}

/* A process not named like a Python that runs this long after its exec, with
 * --subprocesses, is taken for a parent (a shell, a supervisor), not a wrapper. */
#define PARENT_AFTER_NS 200000000ull
/* How far below a process that is no Python one is looked for, to name it. */
#define CHILD_DEPTH 3
#define CHILD_LOOKS 64

struct python_below {
	pid_t found;
	unsigned int depth, found_depth, looks;
};

static int look_below(pid_t pid, void *arg)
{
	struct python_below *b = arg;
	struct py_interp *in;
	struct mem_live live;
	int err;

	if (b->looks++ >= CHILD_LOOKS)
		return 1;
	in = malloc(sizeof(*in));
	if (!in)
		return -ENOMEM;
	mem_live__init(&live, pid);
	err = py_interp__find(pid, &live.base, in);
	free(in);
	/* An old CPython is one too: -p on it says which. */
	if (!err || err == -ENOTSUP) {
		b->found = pid;
		b->found_depth = b->depth;
		return 1;
	}
	if (b->depth + 1 >= CHILD_DEPTH)
		return 0;
	b->depth++;
	err = proc__children(pid, look_below, b);
	b->depth--;
	return err == -ESRCH ? 0 : err;
}

/*
 * -p on a process that is no CPython: a wrapper or a shell whose child is one is the
 * commonest slip, so a Python below it (the first found, depth first, a few levels
 * down) is named.
 */
static int not_python(pid_t pid, const struct py_interp *in)
{
	struct python_below b = { 0 };

	proc__children(pid, look_below, &b);
	if (!b.found)
		return target_error(pid, -ENOENT, in);
	pr_warn("process %d is not a CPython process; its %s %d is: use -p %d or "
		"--subprocesses\n", (int)pid, b.found_depth ? "descendant" : "child",
		(int)b.found, (int)b.found);
	return EXIT_NOT_PYTHON;
}

/* Finds the interpreter: of the given PID, or of the command once it execs one. */
static int find_first(struct session *s, struct target *t)
{
	const struct session_opts *o = &s->opts;
	const struct spawn_wait wait = {
		.deadline_ns = o->deadline_ns,
		.stop = o->stop_signal,
		/* With --subprocesses a wrapper that execs at once (env, chroot) is still
		 * followed from its exec; one that runs on (a shell) is a parent. */
		.exec_patience_ns = o->subprocesses ? PARENT_AFTER_NS : 0,
	};
	int err;

	if (!o->cmd) {
		mem_live__init(&t->live, o->pid);
		target__identify(t);
		err = py_interp__find(o->pid, &t->live.base, &t->interp);
		if (err == -ENOENT && o->subprocesses) {
			s->parent_pid = o->pid;
			return 0;
		}
		if (err == -ENOENT)
			return not_python(o->pid, &t->interp);
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
	err = spawn__wait_python(&s->spawn, &wait, &t->live.base, &t->interp);
	if ((err == -EAGAIN || err == -ENOENT) && o->subprocesses) {
		spawn__release(&s->spawn);
		if (!s->spawn.exited) {
			s->parent_pid = s->spawn.pid;
			return 0;
		}
		err = -ECHILD;
	}
	if (err == -ECHILD) {
		pr_warn("%s exited before running any CPython code (status %d)\n", o->cmd[0],
			WIFEXITED(s->spawn.status) ? WEXITSTATUS(s->spawn.status) : -1);
		return EXIT_NOT_PYTHON;
	}
	if (err == -ETIMEDOUT) {
		/* As after a -d that ended a profile: the command runs on to its end,
		 * untraced, and is waited for. */
		spawn__release(&s->spawn);
		pr_warn("no CPython code ran in the command's first %g s (-d): nothing "
			"profiled; %s runs on to its end\n", o->duration_s, o->cmd[0]);
		session__report_command(session__wait_command(s));
		return EXIT_NOT_PYTHON;
	}
	if (err == -EINTR) {
		spawn__stop(&s->spawn, stop_signal(s), 3000);
		pr_warn("stopped by signal %d before %s ran any CPython code\n", stop_signal(s),
			o->cmd[0]);
		return EXIT_NOT_PYTHON;
	}
	return err ? target_error(s->spawn.pid, err, &t->interp) : 0;
}

/*
 * --subprocesses on a target that is no Python: no first target, so the sampler is
 * chosen on its own (BPF when it can run), and the target is watched like a child of
 * itself, so that an exec into a Python makes it a target, and its children are found.
 */
static int start_parent(struct session *s)
{
	pid_t pid = s->parent_pid;
	const char *why = NULL;
	char buf[192], cmd[128];
	int err;

	if (!s->opts.no_bpf) {
		why = bpf_unavailable(buf, sizeof(buf));
		if (!why && !s->sampler) {
			err = new_sampler(s);
			if (err == -ENOMEM) {
				pr_warn("starting the sampler: %s\n", strerror(-err));
				return EXIT_RUNTIME;
			}
			if (err == -ECANCELED)
				return EXIT_KERNEL;
			if (err)
				why = sampler_failure(err);
		}
		if (why)
			pr_warn("BPF is not available (%s): sampling from user space instead, as "
				"with --no-bpf\n", why);
	}
	s->live_mode = !s->sampler;
	err = descendants__watch(s->follow.children, pid);
	if (err) {
		pr_warn("following child processes: %s\n", strerror(-err));
		return EXIT_RUNTIME;
	}
	if (proc__cmdline(pid, cmd, sizeof(cmd)) || !cmd[0])
		snprintf(cmd, sizeof(cmd), "?");
	snprintf(s->name, sizeof(s->name), "pid %d (%s)", (int)pid, cmd);
	s->totals.pid = pid;
	pr_info("pid %d (%s) is not a Python: profiling the Python processes it starts, at "
		"%u Hz%s\n", (int)pid, cmd, s->opts.rate_hz, s->live_mode ? " from user space" : "");
	return 0;
}

static int scan_one(pid_t pid, void *arg)
{
	int r = session_enrol__consider(pid, arg);

	return r < 0 ? r : 0;
}

static int setup(struct session *s)
{
	s->strs = strtab__new();
	s->agg = aggregate__new();
	s->threads = thread_table__new();
	s->sink.stack = malloc(sizeof(*s->sink.stack));
	/* Process, thread, wait and two marker frames (a gap, a native walk's cut), the
	 * task chain's, and the stack's with its native frames. */
	s->sink.frames = calloc(DECODE_MAX_DEPTH + 5 + SESSION_TASK_CHAIN_MAX * (1 + PY_TASK_FRAMES_MAX) +
				NATIVE_MAX_FRAMES, sizeof(*s->sink.frames));
	if (s->opts.async_tasks) {
		s->sink.chain = calloc(SESSION_TASK_CHAIN_MAX, sizeof(*s->sink.chain));
		s->tasks.chain = calloc(SESSION_TASK_CHAIN_MAX, sizeof(*s->tasks.chain));
	}
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
	if (!s->strs || !s->agg || !s->threads || !s->sink.stack || !s->sink.frames ||
	    !s->shared.scratch || (s->opts.async_tasks && (!s->sink.chain || !s->tasks.chain)))
		return -ENOMEM;
	/* Without --subprocesses it watches only a target that exec'd. */
	s->follow.children = s->opts.system_wide ?
		descendants__new(session_targets__is_target, session_enrol__consider, s, 0) :
		descendants__new(session_targets__is_target, session_enrol__adopt, s,
				 s->opts.subprocesses);
	if (!s->follow.children)
		return -ENOMEM;
	if (strtab__intern(s->strs, "[incomplete]", 12) != 0 ||
	    strtab__intern(s->strs, "[no Python frame]", 17) != 1 ||
	    strtab__intern(s->strs, "[off-CPU]", 9) != 2)
		return -ENOMEM;
	s->sink.incomplete_name = 0;
	s->sink.no_python_name = 1;
	s->sink.idle_name = 2;
	s->sink.stolen_name = UINT32_MAX;
	if (s->opts.native)
		return session_native__new(s);
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
	if (err == -ECANCELED)
		return EXIT_KERNEL;
	if (err) {
		pr_warn("-a needs BPF, but %s\n", sampler_failure(err));
		return err == -ENOMEM ? EXIT_RUNTIME : err == -EPERM ? EXIT_PRIVILEGES : EXIT_KERNEL;
	}
	if (privs__missing_ptrace())
		pr_warn("without CAP_SYS_PTRACE, -a can read only processes of uid %d that hold "
			"no capability it lacks: containers and other users' processes are left "
			"out\n", (int)geteuid());
	err = proc__pids(scan_one, s);
	if (err) {
		pr_warn("scanning /proc for Python processes: %s\n", strerror(-err));
		return EXIT_RUNTIME;
	}
	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "this host");
	host[sizeof(host) - 1] = '\0';
	snprintf(s->name, sizeof(s->name), "all processes on %s", host);
	pr_info("profiling %zu Python process%s, and those that start, at %u Hz\n",
		s->targets.n, s->targets.n == 1 ? "" : "es", s->opts.rate_hz);
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
	code = native_needs_bpf(o, buf, sizeof(buf));
	if (code)
		goto fail;
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
	if (s->parent_pid) {
		code = start_parent(s);
		if (code)
			goto fail;
		goto started;
	}
	code = choose_sampler(s, first);
	if (code)
		goto fail;
	first = NULL;	/* the session's now */
	/* The run is named after the process asked for, even once it has gone. */
	py_interp__version_str(s->targets.v[0]->interp.version_hex, s->totals.python_version,
			    sizeof(s->totals.python_version));
	s->totals.pid = s->targets.v[0]->interp.pid;
	snprintf(s->name, sizeof(s->name), "pid %d (%s)", (int)s->targets.v[0]->interp.pid,
		 s->targets.v[0]->cmd);
	pr_info("profiling pid %d (%s) at %u Hz%s\n", (int)s->targets.v[0]->interp.pid,
		s->targets.v[0]->interp.path, o->rate_hz, s->live_mode ? " from user space" : "");
	if (s->spawned)
		spawn__release(&s->spawn);
started:
	target__free(first);	/* NULL once the session holds it; unused by -a */
	s->decode_delay_ms = test_decode_delay_ms();
	s->start_ns = s->expired_ns = s->follow.swept_ns = s->profile_ns = clock__mono_ns();
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

static int poll_live(struct session *s, int timeout_ms)
{
	struct timespec ts;
	int err = 0, r;

	if (s->targets.n == 1)
		return sampler_live__poll(s->targets.v[0]->sampler_live, timeout_ms);
	/* Several processes: take each one's due ticks, then sleep about half a tick. */
	for (size_t i = 0; i < s->targets.n; i++) {
		r = sampler_live__poll(s->targets.v[i]->sampler_live, 0);
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

int session__poll(struct session *s, int timeout_ms)
{
	int err = 0;

	test_delay(s);
	/* With no target left but one being watched, the poll is the loop's sleep. */
	if (s->targets.n || s->opts.system_wide || s->parent_pid ||
	    descendants__pending(s->follow.children))
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
		err = session_follow__host(s);
		if (err) {
			pr_warn("following processes: %s\n", strerror(-err));
			return err;
		}
	}
	err = session_follow__targets(s);
	if (err)
		return err;
	session_native__refresh(s);
	for (size_t i = 0; s->opts.async_tasks && i < s->targets.n; i++)
		session_tasks__look(s, s->targets.v[i]);
	session_tasks__sweep(s, 0, session_sink__add_task_wait);
	if (s->fatal)
		return s->fatal;
	/* Threads come and go in long runs: forget those gone quiet. */
	if (clock__mono_ns() - s->expired_ns > FCACHE_EXPIRE_S * 1e9) {
		s->expired_ns = clock__mono_ns();
		for (size_t i = 0; i < s->targets.n; i++)
			if (s->targets.v[i]->fcache)
				frame_cache__expire(s->targets.v[i]->fcache,
						    s->expired_ns - (uint64_t)(FCACHE_EXPIRE_S * 1e9));
	}
	return 0;
}

int session__close_waits(struct session *s)
{
	/* A stopped session charged them as it stopped, up to its end. */
	if (s->stopped)
		return 0;
	session_tasks__sweep(s, 1, session_sink__add_task_wait);
	return session_waits__close(s);
}

void session__stop(struct session *s)
{
	if (s->stopped)
		return;
	s->stopped = 1;
	s->elapsed_s = (clock__mono_ns() - s->start_ns) / 1e9;
	if (s->sampler) {
		/* Open waits first: they are charged up to this instant, the profile's
		 * end, however long stopping and draining take. */
		if (session_waits__close(s) == -ENOMEM)
			s->fatal = -ENOMEM;
		session_tasks__sweep(s, 1, session_sink__add_task_wait);
		sampler__stop(s->sampler);
		sampler__drain(s->sampler);
	}
	for (size_t i = 0; i < s->targets.n; i++)
		if (!session_targets__gone(s, s->targets.v[i]))
			target__clear_anchors(s->targets.v[i]);
	if (s->spawned && !s->spawn.exited && stop_signal(s))
		spawn__stop(&s->spawn, stop_signal(s), 3000);
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
	/* The fixed names first: they keep ids 0, 1 and 2. */
	strtab_remap__id(&map, &s->sink.incomplete_name);
	strtab_remap__id(&map, &s->sink.no_python_name);
	strtab_remap__id(&map, &s->sink.idle_name);
	if (s->sink.stolen_name != UINT32_MAX)
		strtab_remap__id(&map, &s->sink.stolen_name);
	session_native__remap(s, &map);
	for (size_t i = 0; i < s->targets.n; i++)
		target__remap_strings(s->targets.v[i], &map);
	strtab_remap__finish(&map);
	s->strs_kept = strtab__bytes(s->strs);
	s->strs_rebuilds++;
	pr_debug("string table rebuilt: %zu bytes, was %zu\n", s->strs_kept, before);
}

int session__reset_profile(struct session *s)
{
	struct aggregate *agg = aggregate__new();
	struct thread_table *threads = thread_table__new();
	uint64_t now;

	if (!agg || !threads) {
		aggregate__free(agg);
		thread_table__free(threads);
		return -ENOMEM;
	}
	aggregate__free(s->agg);
	thread_table__free(s->threads);
	s->agg = agg;
	s->threads = threads;
	s->sink.ntimeline = 0;
	s->sink.timeline_full = 0;
	s->sink.npending = 0;	/* their stacks went with the old aggregate */
	/* The waits still open were charged up to the cut: the next profile begins
	 * there, not after the last one was written out. */
	now = clock__mono_ns();
	s->profile_ns = s->waits.closed_ns > s->profile_ns && s->waits.closed_ns <= now ?
			s->waits.closed_ns : now;
	s->start_unix_ns = clock__real_ns() - (int64_t)(now - s->profile_ns);
	s->waits.closed_ns = 0;
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
	uint64_t drops = s->sink.lost;
	size_t nthreads;

	if (s->sampler) {
		uint64_t c[PBP_C_MAX];

		sampler__counters(s->sampler, c);
		drops += c[PBP_C_RINGBUF_DROPS];
	}
	*st = (struct session_status){
		.elapsed_s = session__elapsed(s),
		.samples = s->sink.aggregated,
		.incomplete = s->sink.incomplete,
		.drops = drops,
		.processes = (uint32_t)s->targets.n,	/* at most PBP_TARGETS_MAX */
		.processes_seen = s->targets.processes_seen,
		.processes_skipped = s->enrol.processes_skipped,
	};
	thread_table__all(s->threads, &nthreads);
	st->threads = (uint32_t)nthreads;
}

void session__profile(const struct session *s, struct profile *p)
{
	*p = (struct profile){
		.agg = s->agg,
		.strs = s->strs,
		.timeline = s->sink.timeline,
		.ntimeline = s->sink.ntimeline,
		.target = s->name,
		.start_unix_ns = s->start_unix_ns,
		.duration_ns = (s->stopped ? s->start_ns + (uint64_t)(s->elapsed_s * 1e9)
					   : clock__mono_ns()) - s->profile_ns,
		.rate_hz = s->opts.rate_hz,
		.period_ns = s->opts.mode == SESSION_CPU ? 1000000000ull / s->opts.rate_hz : 1,
		.unit = s->opts.mode == SESSION_CPU ? PROFILE_TICKS : PROFILE_NS,
		.mode = session__mode_name(s->opts.mode),
	};
	p->threads = thread_table__all(s->threads, &p->nthreads);
	p->sources = session_sources__all(s, &p->nsources);
}

int session__read_sources(struct session *s)
{
	return session_sources__read(s);
}

void session__stats(const struct session *s, struct run_stats *st)
{
	uint64_t cpu_ns = s->targets.gone_cpu_ns;
	uint32_t late, held;

	*st = s->totals;
	for (size_t i = 0; i < s->targets.n; i++) {
		target__add_stats(s->targets.v[i], st);
		cpu_ns += s->targets.v[i]->cpu > s->targets.v[i]->cpu0 ?
			  s->targets.v[i]->cpu - s->targets.v[i]->cpu0 : 0;
	}
	st->rate_hz = s->opts.rate_hz;
	st->duration_s = s->elapsed_s;
	st->samples_delivered = s->sink.delivered;
	st->ticks_delivered = s->sink.ticks_delivered;
	st->samples_filtered = s->sink.filtered;
	st->filtered_by = s->opts.gil ? "--gil" : "--mode";
	st->samples_counted = s->sink.cpu_periods;
	/* The profile's stacks, not the decoder's work: it also reads threads that end
	 * up in no sample (open waits at the end) and stacks that are left out. */
	st->samples = s->sink.aggregated;
	st->samples_decoded = s->sink.aggregated - s->sink.incomplete;
	st->samples_incomplete = s->sink.incomplete;
	memcpy(st->samples_gaps, s->sink.gaps, sizeof(st->samples_gaps));
	st->samples_off_cpu = s->sink.aggregated_off_cpu;
	st->idle_ns = s->sink.idle_ns;
	st->command_status = s->spawned && s->spawn.exited ? s->spawn.status : -1;
	st->processes = s->targets.processes_seen;
	st->processes_skipped = s->enrol.processes_skipped;
	if (s->follow.children)
		descendants__counts(s->follow.children, &st->process_looks,
				    &st->process_looks_deferred);
	st->code_cache_bytes = s->codes.bytes;
	st->code_cache_entries = s->codes.entries;
	st->frame_cache_bytes = s->fcaches.bytes;
	st->strings = s->strs ? strtab__count(s->strs) : 0;
	st->string_bytes = s->strs ? strtab__bytes(s->strs) : 0;
	st->string_rebuilds = s->strs_rebuilds;
	st->profile_mode = session__mode_name(s->opts.mode);
	st->on_cpu_ns = s->sink.on_cpu_ns;
	memcpy(st->off_cpu_ns, s->sink.off_cpu_ns, sizeof(st->off_cpu_ns));
	st->off_cpu_records = s->sink.off_cpu_records;
	st->off_cpu_open_waits = s->waits.open_waits;
	st->off_cpu_open_waits_lost = s->waits.open_waits_lost;
	st->on_cpu_rest_lost_ns = s->cpu_rest_lost_ns;
	st->stolen_ns = s->sink.stolen_ns;
	st->stolen_rest_lost_ns = s->stolen_rest_lost_ns;
	st->async_task_samples = s->tasks.placed;
	st->async_unplaced = s->tasks.unplaced;
	st->async_suspended_ns = s->tasks.suspended_ns;
	session_native__stats(s, st);
	if (s->live_mode) {
		st->mode = "live";
		/* One tick samples every thread; the rate is per tick, in wall-clock time. */
		st->samples_expected = (uint64_t)(s->elapsed_s * s->opts.rate_hz + 0.5);
		return;
	}
	st->mode = "bpf";
	st->tick_hz = sampler__tick_hz(s->sampler);
	st->clock = st->tick_hz ? "tick" : s->opts.clock == SAMPLER_CLOCK_THREAD ? "thread" :
		    "timer";
	st->samples_expected = (uint64_t)(cpu_ns / 1e9 * s->opts.rate_hz + 0.5);
	st->bpf_bytes_copied = s->sink.bytes_copied;
	sampler__counters(s->sampler, st->bpf);
	sampler__prog_stats(s->sampler, &st->bpf_run_ns, &st->bpf_run_cnt);
	sampler__switch_stats(s->sampler, &st->switch_run_ns, &st->switch_run_cnt);
	sampler__late_threads(s->sampler, &late, &held);
	st->attach_late_threads = late;
	st->attach_late_threads_held = held;
}

/* Live sampling's holds not yet let go (sampler_live__let_go_late()): 1 while any is. */
static int live_late(struct session *s)
{
	int late = 0;

	for (size_t i = 0; i < s->targets.n; i++)
		if (s->targets.v[i]->sampler_live)
			late |= sampler_live__let_go_late(s->targets.v[i]->sampler_live);
	return late;
}

int session__wait_command(struct session *s)
{
	const struct timespec nap = { .tv_nsec = SAMPLER_TASKS_POLL_MS * 1000000L };

	if (!s->spawned)
		return -1;
	while (!s->spawn.exited) {
		/* A signal while we wait is meant for the command: pass it on. */
		if (stop_signal(s)) {
			spawn__stop(&s->spawn, stop_signal(s), 3000);
			break;
		}
		/* A thread still held since an attach is let go when it stops, or a
		 * command that waits for it would never end, nor this wait. */
		if ((s->sampler && sampler__let_go_late(s->sampler)) || live_late(s)) {
			if (!spawn__reap(&s->spawn))
				nanosleep(&nap, NULL);
			continue;
		}
		if (waitpid(s->spawn.pid, &s->spawn.status, 0) == s->spawn.pid ||
		    errno != EINTR)
			s->spawn.exited = 1;
	}
	return s->spawn.status;
}

void session__report_command(int status)
{
	if (status < 0)
		return;
	if (WIFEXITED(status))
		pr_warn("command exited with status %d\n", WEXITSTATUS(status));
	else
		pr_warn("command was killed by signal %d\n", WTERMSIG(status));
}

int session__command_running(const struct session *s)
{
	return s->spawned && !s->spawn.exited;
}

void session__free(struct session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->targets.n; i++)
		target__free(s->targets.v[i]);
	free(s->targets.v);
	free(s->follow.events);
	descendants__free(s->follow.children);
	sampler__free(s->sampler);
	aggregate__free(s->agg);
	session_sources__free(s);
	thread_table__free(s->threads);
	free(s->sink.timeline);
	free(s->sink.pending);
	free(s->shared.scratch);
	strtab__free(s->strs);
	free(s->sink.stack);
	free(s->sink.frames);
	free(s->sink.chain);
	free(s->tasks.chain);
	session_native__free(s);
	free(s);
}
